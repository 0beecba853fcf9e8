package httpx_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/google/go-cmp/cmp"
)

func TestQueryInt(t *testing.T) {
	tests := []struct {
		query      string
		hi         int
		want       int
		param, msg string // of the invalid_field error; "" for none
	}{
		{query: "", hi: 50, want: 5},
		{query: "k=1", hi: 50, want: 1},
		{query: "k=50", hi: 50, want: 50},
		{query: "k=0", hi: 50, param: "query.k", msg: "k must be an integer from 1 to 50."},
		{query: "k=51", hi: 50, param: "query.k", msg: "k must be an integer from 1 to 50."},
		{query: "k=", hi: 50, param: "query.k", msg: "k must be an integer from 1 to 50."},
		{query: "k=x", hi: 50, param: "query.k", msg: "k must be an integer from 1 to 50."},
		{query: "k=1000000", hi: -1, want: 1000000},
		{query: "k=0", hi: -1, param: "query.k", msg: "k must be an integer of at least 1."},
	}
	for _, tt := range tests {
		got, err := httpx.QueryInt(httptest.NewRequest("GET", "/?"+tt.query, nil), "k", 5, 1, tt.hi)
		if tt.param == "" {
			if err != nil || got != tt.want {
				t.Errorf("QueryInt(%q) = %d, %v; want %d", tt.query, got, err, tt.want)
			}
			continue
		}
		e := errcat.As(err)
		if e == nil || e.Code != errcat.InvalidField || e.Param != tt.param || e.Message != tt.msg {
			t.Errorf("QueryInt(%q) error = %v; want invalid_field %s %q", tt.query, err, tt.param, tt.msg)
		}
	}
}

func TestFieldName(t *testing.T) {
	for param, want := range map[string]string{
		"body.documents[3]": "documents[3]",
		"query.limit":       "limit",
		"arguments.a.b":     "b",
		"key":               "key",
		"":                  "",
	} {
		if got := httpx.FieldName(param); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", param, got, want)
		}
	}
}

func TestWindow(t *testing.T) {
	for _, tt := range []struct {
		page    httpx.Page
		entries int
		want    []int
		more    bool
	}{
		{httpx.Page{Limit: 2}, 5, []int{0, 1}, true},
		{httpx.Page{Limit: 2, Offset: 3}, 5, []int{3, 4}, false},
		{httpx.Page{Limit: 2, Offset: 2}, 5, []int{2, 3}, true},
		{httpx.Page{Limit: 5}, 5, []int{0, 1, 2, 3, 4}, false},
		{httpx.Page{Limit: 1, Offset: 9}, 5, nil, false},
	} {
		w := httpx.Window{Page: tt.page}
		var got []int
		for i := range tt.entries { // a scan of the entries 0, 1, ...
			if w.Skip() {
				continue
			}
			if w.Full(len(got)) {
				break
			}
			got = append(got, i)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" || w.More != tt.more {
			t.Errorf("%+v: page mismatch (-want +got):\n%s\nMore = %v, want %v", tt.page, diff, w.More, tt.more)
		}
	}
}

func TestParsePage(t *testing.T) {
	const (
		limitMsg  = "limit must be an integer from 1 to 500."
		offsetMsg = "offset must be an integer of at least 0."
	)
	tests := []struct {
		query      string
		want       httpx.Page
		param, msg string // of the invalid_field error; "" for none
	}{
		{query: "", want: httpx.Page{Limit: 50, Offset: 0}},
		{query: "x=1", want: httpx.Page{Limit: 50, Offset: 0}},
		{query: "limit=1", want: httpx.Page{Limit: 1, Offset: 0}},
		{query: "limit=500&offset=7", want: httpx.Page{Limit: 500, Offset: 7}},
		{query: "offset=0", want: httpx.Page{Limit: 50, Offset: 0}},
		{query: "offset=1000000", want: httpx.Page{Limit: 50, Offset: 1000000}},
		{query: "limit=%2B5", want: httpx.Page{Limit: 5, Offset: 0}}, // strconv.Atoi accepts a sign
		{query: "limit=3&limit=x", want: httpx.Page{Limit: 3, Offset: 0}},
		{query: "limit=0", param: "query.limit", msg: limitMsg},
		{query: "limit=501", param: "query.limit", msg: limitMsg},
		{query: "limit=-1", param: "query.limit", msg: limitMsg},
		{query: "limit=", param: "query.limit", msg: limitMsg},
		{query: "limit=abc", param: "query.limit", msg: limitMsg},
		{query: "limit=1.5", param: "query.limit", msg: limitMsg},
		{query: "limit=0&offset=-1", param: "query.limit", msg: limitMsg},
		{query: "offset=-1", param: "query.offset", msg: offsetMsg},
		{query: "offset=", param: "query.offset", msg: offsetMsg},
		{query: "limit=10&offset=x", param: "query.offset", msg: offsetMsg},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/?"+tt.query, nil)
		got, err := httpx.ParsePage(r)
		if tt.param == "" {
			if err != nil {
				t.Errorf("ParsePage(%q) error = %v", tt.query, err)
				continue
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParsePage(%q) mismatch (-want +got):\n%s", tt.query, diff)
			}
			continue
		}
		e := errcat.As(err)
		if e == nil || e.Code != errcat.InvalidField || e.Param != tt.param || e.Message != tt.msg {
			t.Errorf("ParsePage(%q) = %+v, %v; want invalid_field %s %q", tt.query, got, err, tt.param, tt.msg)
		}
	}
}

func TestWriteList(t *testing.T) {
	type item struct {
		ID string `json:"id"`
	}
	tests := []struct {
		name string
		page httpx.Page
		data []item
		more bool
		want string
	}{
		{"items", httpx.Page{Limit: 2, Offset: 4}, []item{{"a"}, {"b"}}, true,
			`{"object":"list","data":[{"id":"a"},{"id":"b"}],"limit":2,"offset":4,"has_more":true}` + "\n"},
		{"empty", httpx.Page{Limit: 50}, []item{}, false,
			`{"object":"list","data":[],"limit":50,"offset":0,"has_more":false}` + "\n"},
		{"nil", httpx.Page{Limit: 50}, nil, false,
			`{"object":"list","data":null,"limit":50,"offset":0,"has_more":false}` + "\n"},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		httpx.WriteList(w, tt.page, tt.data, tt.more)
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: status %d, Content-Type %q; want 200 application/json", tt.name, w.Code, w.Header().Get("Content-Type"))
		}
		if diff := cmp.Diff(tt.want, w.Body.String()); diff != "" {
			t.Errorf("%s: WriteList body mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestHandleList(t *testing.T) {
	notFound := errcat.New(errcat.AgentNotFound, "name", "No such agent.")
	tests := []struct {
		name, query string
		resolveErr  error
		listErr     error
		wantStatus  int
		wantBody    string // a prefix of the body
	}{
		{"page", "limit=2&offset=1", nil, nil, 200,
			`{"object":"list","data":["acme:2:1"],"limit":2,"offset":1,"has_more":true}`},
		{"resolve fails before the page is read", "limit=0", notFound, nil, 404, `{"error":{"type":"not_found_error","code":"agent_not_found"`},
		{"bad page", "limit=0", nil, nil, 400, `{"error":{"type":"invalid_request_error","code":"invalid_field"`},
		{"list fails", "", nil, errcat.Storage(errors.New("disk on fire")), 500, `{"error":{"type":"api_error","code":"storage_error"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/?"+tt.query, nil)
			resolve := func(*http.Request) (string, error) { return "acme", tt.resolveErr }
			httpx.HandleList(w, r, resolve, func(_ context.Context, tenant string, pg httpx.Page) ([]string, bool, error) {
				if tt.listErr != nil {
					return nil, false, tt.listErr
				}
				return []string{fmt.Sprintf("%s:%d:%d", tenant, pg.Limit, pg.Offset)}, true, nil
			})
			if body := w.Body.String(); w.Code != tt.wantStatus || !strings.HasPrefix(body, tt.wantBody) {
				t.Errorf("HandleList = %d %s; want %d %s...", w.Code, body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}
