package httpx_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
)

type sample struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Small *int32 `json:"small"`
	Tiny  uint8  `json:"tiny"`
	Inner struct {
		Flag bool `json:"flag"`
	} `json:"inner"`
}

func TestDecode(t *testing.T) {
	tests := []struct {
		body       string
		code       errcat.Code
		param      string
		limitBytes int64
	}{
		{body: `{"name":"a","count":1,"inner":{"flag":true}}`},
		{body: `{"name":"a","extra":1}`, code: errcat.InvalidField, param: "body.extra"},
		{body: `{"user_id":"u"}`, code: errcat.InvalidField, param: "body.user_id"},
		{body: `{"count":"x"}`, code: errcat.InvalidField, param: "body.count"},
		{body: `{"inner":{"flag":1}}`, code: errcat.InvalidField, param: "body.inner.flag"},
		{body: `[1]`, code: errcat.InvalidJSON},
		{body: `{"name":"a"} {}`, code: errcat.InvalidJSON},
		{body: `{"name":`, code: errcat.InvalidJSON},
		{body: ``, code: errcat.InvalidJSON},
		{body: `{"name":"` + strings.Repeat("x", 100) + `"}`, code: errcat.BodyTooLarge, limitBytes: 50},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/", strings.NewReader(tt.body))
		if tt.limitBytes > 0 {
			r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, tt.limitBytes)
		}
		var v sample
		err := httpx.Decode(r, &v)
		if tt.code == "" {
			if err != nil {
				t.Errorf("Decode(%s) = %v", tt.body, err)
			}
			continue
		}
		e := errcat.As(err)
		if err == nil || e.Code != tt.code || e.Param != tt.param {
			t.Errorf("Decode(%.40s) = %v; want %s %q", tt.body, err, tt.code, tt.param)
		}
	}
}

func TestDecodeNumberMessages(t *testing.T) {
	tests := []struct{ body, param, msg string }{
		{`{"small":3000000000}`, "body.small", "Field small must be an integer from -2147483648 to 2147483647."},
		{`{"small":1.5}`, "body.small", "Field small must be an integer from -2147483648 to 2147483647."},
		{`{"tiny":-1}`, "body.tiny", "Field tiny must be an integer from 0 to 255."},
		{`{"small":"7"}`, "body.small", "Field small must be of JSON type number."},
		{`{"name":7}`, "body.name", "Field name must be of JSON type string."},
	}
	for _, tt := range tests {
		var v sample
		e := errcat.As(httpx.DecodeBytes([]byte(tt.body), &v))
		if e == nil || e.Code != errcat.InvalidField || e.Param != tt.param || e.Message != tt.msg {
			t.Errorf("DecodeBytes(%s) = %+v; want invalid_field %s %q", tt.body, e, tt.param, tt.msg)
		}
	}
}

func TestRejectUserIDQuery(t *testing.T) {
	for q, want := range map[string]bool{"user_id=a": true, "user%5Fid=a": true, "x=user_id": false, "limit=1": false} {
		r := httptest.NewRequest("GET", "/?"+q, nil)
		if got := httpx.RejectUserIDQuery(r) != nil; got != want {
			t.Errorf("RejectUserIDQuery(%s) rejected = %v, want %v", q, got, want)
		}
	}
}

// TestRefuseUnknown: the first member (in name order) that no list knows is
// invalid_field naming it, with its reason or the API's name; "" is named
// as JSON spells it; known members pass.
func TestRefuseUnknown(t *testing.T) {
	reasons := map[string]string{"top_k": "no such sampling on the backends"}
	for _, tc := range []struct {
		body, param, says string
	}{
		{`{"model":"m","stream":true}`, "", ""},
		{`{"zeta":1,"top_k":2,"model":"m"}`, "top_k", "no such sampling on the backends"},
		{`{"frob":1,"model":"m"}`, "frob", "not a member of the Test API that the gateway knows"},
		{`{"":1}`, `""`, "not a member"},
	} {
		var top map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.body), &top); err != nil {
			t.Fatal(err)
		}
		err := httpx.RefuseUnknown(top, "the Test API", reasons, []string{"model"}, []string{"stream"})
		if tc.param == "" {
			if err != nil {
				t.Errorf("%s: %v, want nil", tc.body, err)
			}
			continue
		}
		e := errcat.As(err)
		if e.Code != errcat.InvalidField || e.Param != tc.param || !strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: %s %q %q, want invalid_field %q saying %q", tc.body, e.Code, e.Param, e.Message, tc.param, tc.says)
		}
	}
}
