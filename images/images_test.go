package images_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/images"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/tenantconfig"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

// imageItem is one image of a generation answer, list or GET.
type imageItem struct {
	ID            string    `json:"id"`
	Object        string    `json:"object"`
	CreatedAt     time.Time `json:"created_at"`
	ExpiresAt     time.Time `json:"expires_at"`
	TTLHours      int       `json:"ttl_hours"`
	Model         string    `json:"model"`
	MimeType      string    `json:"mime_type"`
	Bytes         int       `json:"bytes"`
	RevisedPrompt string    `json:"revised_prompt"`
	URL           string    `json:"url"`
	B64JSON       string    `json:"b64_json"`
}

type imageAnswer struct {
	Created int64           `json:"created"`
	Data    []imageItem     `json:"data"`
	Usage   json.RawMessage `json:"usage"`
}

type imageList struct {
	Object  string      `json:"object"`
	Data    []imageItem `json:"data"`
	Limit   int         `json:"limit"`
	Offset  int         `json:"offset"`
	HasMore bool        `json:"has_more"`
}

// pngMagic starts every PNG file.
var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func (e *env) generate(t *testing.T, tenant *auth.Tenant, body string) *httptest.ResponseRecorder {
	t.Helper()
	return testkit.Record(e.svc.Generate, request("POST", "/v1/images/generations", body, tenant, ""))
}

// mustGenerate generates and decodes a successful answer.
func (e *env) mustGenerate(t *testing.T, tenant *auth.Tenant, body string) imageAnswer {
	t.Helper()
	w := e.generate(t, tenant, body)
	if w.Code != http.StatusOK {
		t.Fatalf("generate %s: status %d: %s", body, w.Code, w.Body.String())
	}
	var a imageAnswer
	if err := json.Unmarshal(w.Body.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func (e *env) getImage(tenant *auth.Tenant, id string) *httptest.ResponseRecorder {
	return testkit.Record(e.svc.Get, request("GET", "/v1/images/"+id, "", tenant, id))
}

func (e *env) imageContent(tenant *auth.Tenant, id string) *httptest.ResponseRecorder {
	return testkit.Record(e.svc.Content, request("GET", "/v1/images/"+id+"/content", "", tenant, id))
}

func (e *env) deleteImage(tenant *auth.Tenant, id string) *httptest.ResponseRecorder {
	return testkit.Record(e.svc.Delete, request("DELETE", "/v1/images/"+id, "", tenant, id))
}

func (e *env) listImages(t *testing.T, tenant *auth.Tenant, query string) imageList {
	t.Helper()
	w := testkit.Record(e.svc.List, request("GET", "/v1/images"+query, "", tenant, ""))
	if w.Code != http.StatusOK {
		t.Fatalf("list: status %d: %s", w.Code, w.Body.String())
	}
	var l imageList
	if err := json.Unmarshal(w.Body.Bytes(), &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func idsOf(items []imageItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

// bucketSizes counts the keys of the image buckets.
func (e *env) bucketSizes(t *testing.T) map[string]int {
	t.Helper()
	sizes := map[string]int{}
	err := e.st.View(context.Background(), func(tx store.Tx) error {
		clear(sizes) // the store may run the callback again
		for _, b := range []string{"img/meta", "img/data", "img/expiry", "img/rate"} {
			err := tx.Scan([]byte(b), nil, false, func(_, _ []byte) (bool, error) {
				sizes[b]++
				return true, nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sizes
}

// setTenantConfig writes a tenant config key through PUT /v1/tenant/config.
func (e *env) setTenantConfig(t *testing.T, tenant *auth.Tenant, key string, value int) {
	t.Helper()
	cfg := tenantconfig.NewService(e.st, e.cat)
	body := fmt.Sprintf(`{"key":%q,"value":%d}`, key, value)
	if w := testkit.Record(cfg.Put, request("PUT", "/v1/tenant/config", body, tenant, "")); w.Code != 200 {
		t.Fatalf("tenant config %s=%d: %d %s", key, value, w.Code, w.Body.String())
	}
}

// cappedTenant has image_gen_rate_per_hour 3 and image_max_ttl_hours 24.
var cappedTenant = &auth.Tenant{ID: "capped", ConfigCaps: map[string]int{"image_gen_rate_per_hour": 3, "image_max_ttl_hours": 24}}

func TestImageGenerationsErrors(t *testing.T) {
	noImage := &auth.Tenant{ID: "acme", Models: []string{"lm-4-scout", "lm-embed"}}
	tests := []struct {
		name   string
		body   string
		tenant *auth.Tenant
		want   apiErr
	}{
		{"invalid JSON", `{"prompt":`, nil, apiErr{400, "invalid_json", "<null>"}},
		{"not an object", `"a cat"`, nil, apiErr{400, "invalid_json", "<null>"}},
		{"model not a string", `{"model":1,"prompt":"a cat"}`, nil, apiErr{400, "invalid_field", "model"}},
		{"empty model", `{"model":"","prompt":"a cat"}`, nil, apiErr{400, "missing_field", "model"}},
		{"chat model", `{"model":"lm-4-scout","prompt":"a cat"}`, nil, apiErr{400, "model_not_in_allowlist", "model"}},
		{"embeddings model", `{"model":"lm-embed","prompt":"a cat"}`, nil, apiErr{400, "model_not_in_allowlist", "model"}},
		{"unknown model", `{"model":"dall-e-3","prompt":"a cat"}`, nil, apiErr{400, "model_not_in_allowlist", "model"}},
		{"not in tenant allowlist", `{"model":"lm-image","prompt":"a cat"}`, noImage, apiErr{400, "model_not_in_allowlist", "model"}},
		{"no default model for the tenant", `{"prompt":"a cat"}`, noImage, apiErr{400, "missing_field", "model"}},
		{"missing prompt", `{"model":"lm-image"}`, nil, apiErr{400, "missing_field", "prompt"}},
		{"null prompt", `{"prompt":null}`, nil, apiErr{400, "missing_field", "prompt"}},
		{"prompt not a string", `{"prompt":["a"]}`, nil, apiErr{400, "invalid_field", "prompt"}},
		{"n 0", `{"prompt":"a cat","n":0}`, nil, apiErr{400, "invalid_field", "n"}},
		{"n 11", `{"prompt":"a cat","n":11}`, nil, apiErr{400, "invalid_field", "n"}},
		{"n fractional", `{"prompt":"a cat","n":1.5}`, nil, apiErr{400, "invalid_field", "n"}},
		{"n a string", `{"prompt":"a cat","n":"2"}`, nil, apiErr{400, "invalid_field", "n"}},
		{"n over the hourly rate", `{"prompt":"a cat","n":4}`, cappedTenant, apiErr{400, "invalid_field", "n"}},
		{"ttl 0", `{"prompt":"a cat","ttl_hours":0}`, nil, apiErr{400, "invalid_field", "ttl_hours"}},
		{"ttl negative", `{"prompt":"a cat","ttl_hours":-1}`, nil, apiErr{400, "invalid_field", "ttl_hours"}},
		{"ttl over the default max 168", `{"prompt":"a cat","ttl_hours":169}`, nil, apiErr{400, "invalid_field", "ttl_hours"}},
		{"ttl over the tenant's max 24", `{"prompt":"a cat","ttl_hours":25}`, cappedTenant, apiErr{400, "invalid_field", "ttl_hours"}},
		{"ttl fractional", `{"prompt":"a cat","ttl_hours":1.5}`, nil, apiErr{400, "invalid_field", "ttl_hours"}},
		{"ttl a string", `{"prompt":"a cat","ttl_hours":"12"}`, nil, apiErr{400, "invalid_field", "ttl_hours"}},
		{"response_format unknown", `{"prompt":"a cat","response_format":"png"}`, nil, apiErr{400, "invalid_field", "response_format"}},
		{"stream", `{"prompt":"a cat","stream":true}`, nil, apiErr{400, "invalid_field", "stream"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tenant := tt.tenant
			if tenant == nil {
				tenant = acme
			}
			wantErr(t, e.generate(t, tenant, tt.body), tt.want)
			if n := e.backend.CallCount(); n != 0 {
				t.Errorf("upstream got %d calls, want none", n)
			}
			if got := e.bucketSizes(t); len(got) != 0 {
				t.Errorf("store holds %v after a refused request", got)
			}
		})
	}
}

func TestImageGenerationsUpstreamErrors(t *testing.T) {
	tests := []struct {
		name  string
		reply upstreamtest.Reply
		want  apiErr
	}{
		{"4xx passed on", upstreamtest.Reply{Status: 400, ErrorMessage: "unsafe prompt"}, apiErr{400, "upstream_bad_request", "<null>"}},
		{"5xx", upstreamtest.Reply{Status: 500}, apiErr{502, "upstream_error", "<null>"}},
		{"not JSON", upstreamtest.Reply{Body: []byte("<html>")}, apiErr{502, "upstream_error", "<null>"}},
		{"no images", upstreamtest.Reply{Body: []byte(`{"created":1,"data":[]}`)}, apiErr{502, "upstream_error", "<null>"}},
		{"url instead of b64_json", upstreamtest.Reply{Body: []byte(`{"created":1,"data":[{"url":"https://x/y.png"}]}`)},
			apiErr{502, "upstream_error", "<null>"}},
		{"bad base64", upstreamtest.Reply{Body: []byte(`{"created":1,"data":[{"b64_json":"%%%"}]}`)}, apiErr{502, "upstream_error", "<null>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, upstreamtest.WithReply(tt.reply))
			wantErr(t, e.generate(t, cappedTenant, `{"prompt":"a cat","n":3}`), tt.want)
			// Nothing stored, and the reservation was returned: the full
			// hourly budget is still there.
			if got := e.bucketSizes(t); len(got) != 0 {
				t.Errorf("store holds %v after a failed generation", got)
			}
			e.backend.SetReply(upstreamtest.Reply{})
			e.mustGenerate(t, cappedTenant, `{"prompt":"a cat","n":3}`)
		})
	}
}

func TestImageGenerationsStorageError(t *testing.T) {
	e := newEnv(t)
	e.st.FailNext(errors.New("disk on fire"))
	wantErr(t, e.generate(t, acme, `{"prompt":"a cat"}`), apiErr{500, "storage_error", "<null>"})
}

func TestImageGenerate(t *testing.T) {
	e := newEnv(t)
	a := e.mustGenerate(t, acme,
		`{"prompt":"a cat","size":"256x256","n":2,"ttl_hours":3,"response_format":"b64_json","user":"u-1"}`)

	// The upstream call: the default image alias's first backend (cloudA),
	// b64_json asked for, ttl_hours not forwarded, the rest verbatim.
	calls := e.backend.Calls()
	if len(calls) != 1 {
		t.Fatalf("upstream got %d calls, want 1", len(calls))
	}
	if calls[0].Path != "/v1/images/generations" || calls[0].Model != "lm-diffusion-xl" {
		t.Errorf("upstream call %s model %q", calls[0].Path, calls[0].Model)
	}
	var sent map[string]any
	if err := json.Unmarshal(calls[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	wantSent := map[string]any{"model": "lm-diffusion-xl", "prompt": "a cat", "size": "256x256", "n": 2.0,
		"response_format": "b64_json", "user": "u-1"}
	if diff := cmp.Diff(wantSent, sent); diff != "" {
		t.Errorf("upstream body mismatch (-want +got):\n%s", diff)
	}

	if a.Created != t0.Unix() || len(a.Data) != 2 || a.Data[0].ID == a.Data[1].ID {
		t.Fatalf("answer created %d with %d images %v", a.Created, len(a.Data), idsOf(a.Data))
	}
	for _, img := range a.Data {
		raw, err := base64.StdEncoding.DecodeString(img.B64JSON)
		if err != nil || !bytes.HasPrefix(raw, pngMagic) {
			t.Errorf("b64_json is not a PNG: %v", err)
		}
		want := imageItem{ID: img.ID, Object: "image", CreatedAt: t0, ExpiresAt: t0.Add(3 * time.Hour),
			TTLHours: 3, Model: "lm-image", MimeType: "image/png", Bytes: len(raw), B64JSON: img.B64JSON}
		if diff := cmp.Diff(want, img); diff != "" {
			t.Errorf("image mismatch (-want +got):\n%s", diff)
		}
		if !strings.HasPrefix(img.ID, "img_") {
			t.Errorf("id %q", img.ID)
		}

		// GET: the same metadata and data.
		w := e.getImage(acme, img.ID)
		var got imageItem
		if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != 200 || err != nil {
			t.Fatalf("GET: %d %s", w.Code, w.Body.String())
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET mismatch (-want +got):\n%s", diff)
		}
		// The content endpoint: the bytes.
		w = e.imageContent(acme, img.ID)
		if w.Code != 200 || w.Header().Get("Content-Type") != "image/png" || !bytes.Equal(w.Body.Bytes(), raw) {
			t.Errorf("content: %d %q %d bytes", w.Code, w.Header().Get("Content-Type"), w.Body.Len())
		}
	}
	l := e.listImages(t, acme, "")
	for i := range l.Data {
		if l.Data[i].B64JSON != "" || l.Data[i].URL != "" {
			t.Errorf("list item carries data: %+v", l.Data[i])
		}
	}
	if len(l.Data) != 2 || l.Object != "list" || l.Limit != 50 || l.HasMore {
		t.Errorf("list: %+v", l)
	}
}

func TestImageGenerateURL(t *testing.T) {
	tests := []struct {
		name   string
		target string // request URI as the gateway saw it
		header http.Header
		tls    bool
		want   string // URL with {id}
	}{
		{"plain", "/v1/images/generations", nil, false, "http://example.com/v1/images/{id}/content"},
		{"TLS", "/v1/images/generations", nil, true, "https://example.com/v1/images/{id}/content"},
		{"forwarded", "/v1/images/generations",
			http.Header{"X-Forwarded-Proto": {"https"}, "X-Forwarded-Host": {"gw.example.org, inner"}}, false,
			"https://gw.example.org/v1/images/{id}/content"},
		{"mounted under a prefix", "/ai/v1/images/generations", nil, false, "http://example.com/ai/v1/images/{id}/content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			r := request("POST", tt.target, `{"prompt":"a cat"}`, acme, "")
			for k, v := range tt.header {
				r.Header[k] = v
			}
			r.URL.Path = "/v1/images/generations" // as http.StripPrefix leaves it
			if tt.tls {
				r.TLS = &tls.ConnectionState{}
			}
			w := testkit.Record(e.svc.Generate, r)
			var a imageAnswer
			if err := json.Unmarshal(w.Body.Bytes(), &a); w.Code != 200 || err != nil || len(a.Data) != 1 {
				t.Fatalf("status %d: %s", w.Code, w.Body.String())
			}
			img := a.Data[0]
			if want := strings.ReplaceAll(tt.want, "{id}", img.ID); img.URL != want || img.B64JSON != "" {
				t.Errorf("url %q b64_json %.10q, want url %q only", img.URL, img.B64JSON, want)
			}
			if img.TTLHours != 12 || !img.ExpiresAt.Equal(t0.Add(12*time.Hour)) {
				t.Errorf("default ttl: %d, expires %v", img.TTLHours, img.ExpiresAt)
			}
		})
	}
}

func TestImageTTL(t *testing.T) {
	tests := []struct {
		name   string
		tenant *auth.Tenant
		stored int // image_max_ttl_hours written by the tenant; 0: none
		body   string
		want   int // ttl_hours; 0: invalid_field
	}{
		{"default", acme, 0, `{"prompt":"p"}`, 12},
		{"null is the default", acme, 0, `{"prompt":"p","ttl_hours":null}`, 12},
		{"minimum", acme, 0, `{"prompt":"p","ttl_hours":1}`, 1},
		{"default maximum 168", acme, 0, `{"prompt":"p","ttl_hours":168}`, 168},
		{"over the default maximum", acme, 0, `{"prompt":"p","ttl_hours":169}`, 0},
		{"capped maximum 24", cappedTenant, 0, `{"prompt":"p","ttl_hours":24}`, 24},
		{"stored maximum 6: default lowered", acme, 6, `{"prompt":"p"}`, 6},
		{"stored maximum 6", acme, 6, `{"prompt":"p","ttl_hours":6}`, 6},
		{"over the stored maximum", acme, 6, `{"prompt":"p","ttl_hours":7}`, 0},
		{"stored maximum 720 (hard cap)", acme, 720, `{"prompt":"p","ttl_hours":720}`, 720},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if tt.stored > 0 {
				e.setTenantConfig(t, tt.tenant, "image_max_ttl_hours", tt.stored)
			}
			w := e.generate(t, tt.tenant, tt.body)
			if tt.want == 0 {
				wantErr(t, w, apiErr{400, "invalid_field", "ttl_hours"})
				return
			}
			var a imageAnswer
			if err := json.Unmarshal(w.Body.Bytes(), &a); w.Code != 200 || err != nil {
				t.Fatalf("status %d: %s", w.Code, w.Body.String())
			}
			img := a.Data[0]
			if img.TTLHours != tt.want || !img.ExpiresAt.Equal(t0.Add(time.Duration(tt.want)*time.Hour)) {
				t.Errorf("ttl_hours %d expires_at %v, want %d h", img.TTLHours, img.ExpiresAt, tt.want)
			}
		})
	}
}

func TestImageExpiry(t *testing.T) {
	e := newEnv(t)
	img := e.mustGenerate(t, acme, `{"prompt":"p","ttl_hours":1}`).Data[0]

	e.clk.Set(t0.Add(time.Hour - time.Nanosecond))
	if w := e.getImage(acme, img.ID); w.Code != 200 {
		t.Fatalf("just before expiry: %d %s", w.Code, w.Body.String())
	}
	if l := e.listImages(t, acme, ""); len(l.Data) != 1 {
		t.Errorf("just before expiry the list has %d images", len(l.Data))
	}

	e.clk.Set(t0.Add(time.Hour)) // expires_at == now: expired
	notFound := apiErr{404, "image_not_found", "id"}
	wantErr(t, e.getImage(acme, img.ID), notFound)
	wantErr(t, e.imageContent(acme, img.ID), notFound)
	wantErr(t, e.deleteImage(acme, img.ID), notFound)
	if l := e.listImages(t, acme, ""); len(l.Data) != 0 {
		t.Errorf("at expiry the list has %d images", len(l.Data))
	}
}

func TestImageNotFound(t *testing.T) {
	e := newEnv(t)
	img := e.mustGenerate(t, acme, `{"prompt":"p"}`).Data[0]
	other := &auth.Tenant{ID: "globex"}
	notFound := apiErr{404, "image_not_found", "id"}
	for _, tt := range []struct {
		name   string
		tenant *auth.Tenant
		id     string
	}{
		{"other tenant", other, img.ID},
		{"unknown id", acme, "img_00000000000000000000000000000000"},
		{"empty id", acme, ""},
		{"very long id", acme, strings.Repeat("x", 40000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, e.getImage(tt.tenant, tt.id), notFound)
			wantErr(t, e.imageContent(tt.tenant, tt.id), notFound)
			wantErr(t, e.deleteImage(tt.tenant, tt.id), notFound)
		})
	}
	if l := e.listImages(t, other, ""); len(l.Data) != 0 {
		t.Errorf("other tenant lists %v", idsOf(l.Data))
	}
	// The owner still has it.
	if w := e.getImage(acme, img.ID); w.Code != 200 {
		t.Errorf("owner GET after others' attempts: %d", w.Code)
	}
}

func TestImageDelete(t *testing.T) {
	e := newEnv(t)
	a := e.mustGenerate(t, acme, `{"prompt":"p","n":2}`)
	w := e.deleteImage(acme, a.Data[0].ID)
	want := map[string]any{"id": a.Data[0].ID, "object": "image", "deleted": true}
	var got map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatalf("DELETE %d %q: %v", w.Code, w.Body.String(), err)
	}
	if diff := cmp.Diff(want, got); w.Code != 200 || diff != "" {
		t.Errorf("DELETE %d mismatch (-want +got):\n%s", w.Code, diff)
	}
	wantErr(t, e.getImage(acme, a.Data[0].ID), apiErr{404, "image_not_found", "id"})
	wantErr(t, e.deleteImage(acme, a.Data[0].ID), apiErr{404, "image_not_found", "id"})
	if got := idsOf(e.listImages(t, acme, "").Data); !cmp.Equal(got, []string{a.Data[1].ID}) {
		t.Errorf("list after delete: %v", got)
	}
	wantSizes := map[string]int{"img/meta": 1, "img/data": 1, "img/expiry": 1, "img/rate": 1}
	if diff := cmp.Diff(wantSizes, e.bucketSizes(t)); diff != "" {
		t.Errorf("buckets mismatch (-want +got):\n%s", diff)
	}
}

func TestImageList(t *testing.T) {
	e := newEnv(t)
	var made []string // oldest first
	for i := range 3 {
		made = append(made, e.mustGenerate(t, acme, `{"prompt":"p`+strconv.Itoa(i)+`"}`).Data[0].ID)
		e.clk.Advance(time.Minute)
	}
	other := e.mustGenerate(t, &auth.Tenant{ID: "globex"}, `{"prompt":"theirs"}`).Data[0].ID
	newest := []string{made[2], made[1], made[0]}

	tests := []struct {
		query string
		want  []string
		more  bool
	}{
		{"", newest, false},
		{"?limit=2", newest[:2], true},
		{"?limit=2&offset=2", newest[2:], false},
		{"?limit=3", newest, false},
		{"?offset=3", []string{}, false},
		{"?limit=500&offset=1", newest[1:], false},
	}
	for _, tt := range tests {
		t.Run("query "+tt.query, func(t *testing.T) {
			l := e.listImages(t, acme, tt.query)
			if diff := cmp.Diff(tt.want, idsOf(l.Data)); diff != "" || l.HasMore != tt.more {
				t.Errorf("has_more %v, ids mismatch (-want +got):\n%s", l.HasMore, diff)
			}
		})
	}
	if got := idsOf(e.listImages(t, &auth.Tenant{ID: "globex"}, "").Data); !cmp.Equal(got, []string{other}) {
		t.Errorf("globex lists %v", got)
	}

	for _, tt := range []struct {
		query string
		want  apiErr
	}{
		{"?limit=0", apiErr{400, "invalid_field", "query.limit"}},
		{"?limit=501", apiErr{400, "invalid_field", "query.limit"}},
		{"?limit=ten", apiErr{400, "invalid_field", "query.limit"}},
		{"?offset=-1", apiErr{400, "invalid_field", "query.offset"}},
		{"?offset=x", apiErr{400, "invalid_field", "query.offset"}},
	} {
		t.Run("bad "+tt.query, func(t *testing.T) {
			wantErr(t, testkit.Record(e.svc.List, request("GET", "/v1/images"+tt.query, "", acme, "")), tt.want)
		})
	}
}

func TestImagePurge(t *testing.T) {
	lifted := &auth.Tenant{ID: "lifted", ConfigCaps: map[string]int{"image_gen_rate_per_hour": 1000}}
	e := newEnv(t)
	e.setTenantConfig(t, lifted, "image_gen_rate_per_hour", 1000)
	ctx := context.Background()
	// 300 images of one hour (more than one purge batch), in two tenants, and
	// 2 images of two hours.
	for range 29 {
		e.mustGenerate(t, lifted, `{"prompt":"p","n":10,"ttl_hours":1}`)
	}
	e.mustGenerate(t, acme, `{"prompt":"p","n":10,"ttl_hours":1}`)
	keep := e.mustGenerate(t, acme, `{"prompt":"p","n":2,"ttl_hours":2}`)

	if n, err := e.svc.PurgeExpired(ctx); n != 0 || err != nil {
		t.Fatalf("PurgeExpired before expiry = %d, %v; want 0", n, err)
	}
	e.clk.Set(t0.Add(time.Hour - time.Nanosecond))
	if n, err := e.svc.PurgeExpired(ctx); n != 0 || err != nil {
		t.Fatalf("PurgeExpired just before expiry = %d, %v; want 0", n, err)
	}

	e.clk.Set(t0.Add(time.Hour))
	if n, err := e.svc.PurgeExpired(ctx); n != 300 || err != nil {
		t.Fatalf("PurgeExpired at expiry = %d, %v; want 300", n, err)
	}
	// The rate ledger left the window too.
	want := map[string]int{"img/meta": 2, "img/data": 2, "img/expiry": 2}
	if diff := cmp.Diff(want, e.bucketSizes(t)); diff != "" {
		t.Errorf("buckets after the first purge mismatch (-want +got):\n%s", diff)
	}
	if got := idsOf(e.listImages(t, acme, "").Data); len(got) != 2 {
		t.Errorf("kept images: %v, want %v", got, idsOf(keep.Data))
	}

	e.clk.Set(t0.Add(2 * time.Hour))
	if n, err := e.svc.PurgeExpired(ctx); n != 2 || err != nil {
		t.Fatalf("second PurgeExpired = %d, %v; want 2", n, err)
	}
	if got := e.bucketSizes(t); len(got) != 0 {
		t.Errorf("buckets after the last purge: %v", got)
	}

	e.st.FailNext(errors.New("disk on fire"))
	if _, err := e.svc.PurgeExpired(ctx); err == nil {
		t.Error("PurgeExpired with a failing store: nil error")
	}
}

// TestImagePurger: New starts a purger that purges at once and then every
// PurgeInterval (0 means one minute); Close stops it and waits for it.
func TestImagePurger(t *testing.T) {
	e := newEnv(t)
	stored := func() int { return e.bucketSizes(t)["img/meta"] }
	waitPurged := func(t *testing.T) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); stored() != 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("expired image not purged within 5 s")
			}
		}
	}
	// Close waits for the purger to return; a second Close returns at once.
	closeTwice := func(t *testing.T, s *images.Service) {
		t.Helper()
		for range 2 {
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}
	}

	// Expired before New: the first purge, at New, takes it, also with the
	// default interval of one minute.
	e.mustGenerate(t, acme, `{"prompt":"p","ttl_hours":1}`)
	e.clk.Advance(time.Hour)
	s := e.start(t, 0)
	waitPurged(t)
	closeTwice(t, s)

	// Expiring while the purger runs: a later round takes it.
	s = e.start(t, 5*time.Millisecond)
	e.mustGenerate(t, acme, `{"prompt":"p","ttl_hours":1}`)
	e.clk.Advance(time.Hour)
	waitPurged(t)
	closeTwice(t, s)

	// Closed, it purges no more.
	e.mustGenerate(t, acme, `{"prompt":"p","ttl_hours":1}`)
	e.clk.Advance(time.Hour)
	time.Sleep(50 * time.Millisecond)
	if n := stored(); n != 1 {
		t.Errorf("after Close, %d images stored, want the expired one", n)
	}
}

func TestImageRate(t *testing.T) {
	e := newEnv(t)
	quota := func(t *testing.T, w *httptest.ResponseRecorder, retryAfter string) {
		t.Helper()
		wantErr(t, w, apiErr{429, "model_quota_exhausted", "<null>"})
		if got := w.Header().Get("Retry-After"); got != retryAfter {
			t.Errorf("Retry-After = %q, want %q", got, retryAfter)
		}
	}
	// Budget 3 per sliding hour.
	e.mustGenerate(t, cappedTenant, `{"prompt":"p","n":2}`) // t0: 2
	e.clk.Advance(10 * time.Minute)
	quota(t, e.generate(t, cappedTenant, `{"prompt":"p","n":2}`), "3000") // the t0 images leave at t0+1h
	e.mustGenerate(t, cappedTenant, `{"prompt":"p"}`)                     // t0+10m: 1, total 3
	quota(t, e.generate(t, cappedTenant, `{"prompt":"p"}`), "3000")

	// Another tenant has its own budget.
	e.mustGenerate(t, &auth.Tenant{ID: "other", ConfigCaps: cappedTenant.ConfigCaps}, `{"prompt":"p","n":3}`)

	e.clk.Set(t0.Add(time.Hour - time.Second))
	quota(t, e.generate(t, cappedTenant, `{"prompt":"p","n":2}`), "1")
	e.clk.Set(t0.Add(time.Hour)) // the t0 images left the window
	e.mustGenerate(t, cappedTenant, `{"prompt":"p","n":2}`)
	// Now t0+10m: 1 and t0+1h: 2; three images need both to leave.
	quota(t, e.generate(t, cappedTenant, `{"prompt":"p","n":3}`), "3600")
	// Deleting images does not give budget back.
	for _, img := range e.listImages(t, cappedTenant, "").Data {
		e.deleteImage(cappedTenant, img.ID)
	}
	quota(t, e.generate(t, cappedTenant, `{"prompt":"p"}`), "600")
}

func TestImageRateChargesDelivered(t *testing.T) {
	one := `{"created":1,"data":[{"b64_json":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==","revised_prompt":"a fine cat"}],"usage":{"total_tokens":5}}`
	e := newEnv(t, upstreamtest.WithScript(upstreamtest.Reply{Body: []byte(one)}))
	a := e.mustGenerate(t, cappedTenant, `{"prompt":"p","n":3}`)
	if len(a.Data) != 1 || a.Data[0].RevisedPrompt != "a fine cat" || string(a.Usage) != `{"total_tokens":5}` {
		t.Fatalf("answer: %+v", a)
	}
	// Charged 1 of 3: two more fit.
	e.mustGenerate(t, cappedTenant, `{"prompt":"p","n":2}`)
	wantErr(t, e.generate(t, cappedTenant, `{"prompt":"p"}`), apiErr{429, "model_quota_exhausted", "<null>"})
}

func TestImageRateConcurrent(t *testing.T) {
	e := newEnv(t, upstreamtest.WithReply(upstreamtest.Reply{Latency: 20 * time.Millisecond}))
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		status = map[int]int{}
	)
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := e.generate(t, cappedTenant, `{"prompt":"p"}`)
			mu.Lock()
			status[w.Code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if diff := cmp.Diff(map[int]int{200: 3, 429: 7}, status); diff != "" {
		t.Errorf("statuses mismatch (-want +got):\n%s", diff)
	}
}

func TestImageStorageErrors(t *testing.T) {
	e := newEnv(t)
	img := e.mustGenerate(t, acme, `{"prompt":"p"}`).Data[0]
	storageErr := apiErr{500, "storage_error", "<null>"}
	disk := errors.New("disk on fire")

	// The write of the generated images fails (the second Update: the first
	// one reserves).
	updates := 0
	e.st.FailWith(func(op string) error {
		if op == "Update" {
			if updates++; updates == 2 {
				return disk
			}
		}
		return nil
	})
	wantErr(t, e.generate(t, acme, `{"prompt":"p"}`), storageErr)
	e.st.FailWith(nil)

	for name, h := range map[string]func() *httptest.ResponseRecorder{
		"list": func() *httptest.ResponseRecorder {
			return testkit.Record(e.svc.List, request("GET", "/v1/images", "", acme, ""))
		},
		"get":     func() *httptest.ResponseRecorder { return e.getImage(acme, img.ID) },
		"content": func() *httptest.ResponseRecorder { return e.imageContent(acme, img.ID) },
		"delete":  func() *httptest.ResponseRecorder { return e.deleteImage(acme, img.ID) },
	} {
		t.Run(name, func(t *testing.T) {
			e.st.FailNext(disk)
			wantErr(t, h(), storageErr)
		})
	}
	if l := e.listImages(t, acme, ""); len(l.Data) != 1 {
		t.Errorf("after the failures the tenant has %d images, want 1", len(l.Data))
	}
}

// TestGenerateReportsUsage: a metered generation reports the upstream's usage
// to the request's meter, also when the answer's images are unusable.
func TestGenerateReportsUsage(t *testing.T) {
	usage := `"usage":{"input_tokens":50,"output_tokens":4160,"total_tokens":4210}`
	for _, tc := range []struct {
		name, body string
		status     int
	}{
		{"images", `{"created":1,"data":[{"b64_json":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="}],` + usage + `}`, http.StatusOK},
		{"no images", `{"created":1,"data":[],` + usage + `}`, http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, upstreamtest.WithScript(upstreamtest.Reply{Body: []byte(tc.body)}))
			r := request("POST", "/v1/images/generations", `{"prompt":"p"}`, acme, "")
			info := httpx.InfoFrom(r.Context())
			info.Meter.Start()
			info.Meter.Call("lm-image", "local") // the root's upstream wrapper does this
			if w := testkit.Record(e.svc.Generate, r); w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			got := info.Meter.Totals()
			if got.InputTokens != 50 || got.OutputTokens != 4160 || got.UsageMissing {
				t.Errorf("meter totals %+v, want 50 input and 4160 output tokens", got)
			}
		})
	}
}
