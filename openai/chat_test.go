package openai_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"image"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func pngURI(t *testing.T) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

func TestChatCompletionsErrors(t *testing.T) {
	img := pngURI(t)
	user := func(content string) string { return `[{"role":"user","content":` + content + `}]` }
	imgParts := func(url string) string {
		return user(`[{"type":"text","text":"what?"},{"type":"image_url","image_url":{"url":"` + url + `"}}]`)
	}
	req := func(model, messages, extra string) string {
		return `{"model":"` + model + `","messages":` + messages + extra + `}`
	}
	hi := user(`"hi"`)
	consentTenant := &auth.Tenant{ID: "acme", Settings: auth.Settings{CloudDocConsent: true}}
	doc := `,"attachments":[{"kind":"document","doc_name":"plan.txt","content":"secret plan"}]`
	tests := []struct {
		name   string
		body   string
		tenant *auth.Tenant
		status int
		code   errcat.Code
		param  string // "" means null
	}{
		{"invalid JSON", `{"model":"lm-4-scout",`, nil, 400, errcat.InvalidJSON, ""},
		{"missing messages", `{"model":"lm-4-scout"}`, nil, 400, errcat.MissingField, "messages"},
		{"missing model", `{"messages":` + hi + `}`, nil, 400, errcat.MissingField, "model"},
		{"messages not an array", req("lm-4-scout", `{"role":"user"}`, ""), nil, 400, errcat.InvalidField, "messages"},
		{"bad role", req("lm-4-scout", `[{"role":"robot","content":"x"}]`, ""), nil, 400, errcat.InvalidField, "messages"},
		{"model not allowed", req("lm-text", hi, ""), &auth.Tenant{ID: "acme", Models: []string{"lm-4-scout"}}, 400, errcat.ModelNotInAllowlist, "model"},
		{"unknown model", req("gpt-5", hi, ""), nil, 400, errcat.ModelNotInAllowlist, "model"},
		{"embeddings model", req("lm-embed", hi, ""), nil, 400, errcat.ModelNotInAllowlist, "model"},
		{"temperature", req("lm-4-scout", hi, `,"temperature":2.1`), nil, 400, errcat.InvalidField, "temperature"},
		{"max_tokens zero", req("lm-4-scout", hi, `,"max_tokens":0`), nil, 400, errcat.MaxTokensBelowMinimum, "max_tokens"},
		{"http image", req("lm-4-scout", imgParts("https://example.com/cat.jpg"), ""), nil, 400, errcat.ImageURLNotSupported, "messages[].content[].image_url.url"},
		{"data uri without mime", req("lm-4-scout", imgParts("data:;base64,iVBORw0KGgo="), ""), nil, 400, errcat.ImageDecodeError, "messages[].content[].image_url.url"},
		{"not an image", req("lm-4-scout", imgParts("data:image/png;base64,aGVsbG8gd29ybGQ="), ""), nil, 400, errcat.ImageDecodeError, "messages[].content[].image_url.url"},
		{"bad base64", req("lm-4-scout", imgParts("data:image/png;base64,%%%%"), ""), nil, 400, errcat.ImageBase64Invalid, "messages[].content[].image_url.url"},
		{"image to text model", req("lm-text", imgParts(img), ""), nil, 400, errcat.ModelNotVisionCapable, "messages[].content[].image_url"},
		{"image attachment to text model", req("lm-text", hi, `,"attachments":[{"kind":"image","url":"`+img+`"}]`), nil, 400, errcat.ModelNotVisionCapable, "messages[].content[].image_url"},
		{"tool call arguments", req("lm-4-scout", `[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{"}}]}]`, ""),
			nil, 400, errcat.ToolCallArgumentsInvalid, "messages[].tool_calls[].function.arguments"},
		{"context window", req("lm-text", user(`"`+strings.Repeat("word ", 100)+`"`), ""), nil, 400, errcat.ContextWindowExceeded, "messages"},
		{"content hash", req("lm-4-scout", hi, `,"attachments":[{"kind":"document","doc_name":"a","content":"b","content_hash":"sha256:abc"}]`), nil, 400, errcat.InvalidField, "attachments[0].content_hash"},
		{"cloud consent", req("lm-4-scout", hi, doc), consentTenant, 409, errcat.CloudConsentRequired, "attachments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := backend()
			s := newService(up)
			tenant := tt.tenant
			if tenant == nil {
				tenant = allTenants
			}
			w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", tt.body, tenant, nil))
			e := decodeEnvelope(t, w)
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			got := []any{w.Code, e.Error.Code, param, w.Header().Get("Content-Type")}
			want := []any{tt.status, string(tt.code), tt.param, "application/json"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("status, code, param, content type mismatch (-want +got):\n%s\nbody: %s", diff, w.Body)
			}
			if n := up.Calls(); n != 0 {
				t.Errorf("upstream called %d times for a refused request", n)
			}
		})
	}
}

func TestChatCompletionsForwardsVerbatim(t *testing.T) {
	up := backend()
	s := newService(up)
	body := `{"messages":[{"role":"user","content":"hi"}],"user":"end-user-7","x_vendor":{"k":[1,2.50,null]},"model":"lm-4-scout","n":1}`
	w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", body, allTenants, nil))
	if w.Code != 200 || w.Body.String() != asAlias(completionJSON, "lm-4-scout") || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("answer %d %q %v, want 200 and the completion verbatim but for its model", w.Code, w.Body, w.Header())
	}
	for _, h := range []string{"GW-Notice", "Gw-Applied", "X-Rust-Api-Applied"} {
		if v := w.Header().Get(h); v != "" {
			t.Errorf("header %s = %q, want none", h, v)
		}
	}
	calls := up.Received()
	if len(calls) != 1 {
		t.Fatalf("%d upstream calls, want 1", len(calls))
	}
	got := calls[0].Req
	want := upstream.Request{
		Alias: "lm-4-scout", Path: "/chat/completions", RequestID: testkit.RequestID,
		Body: []byte(`{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}],"user":"end-user-7","x_vendor":{"k":[1,2.50,null]},"n":1}`),
	}
	if diff := cmp.Diff(want, got, cmp.Transformer("string", func(b []byte) string { return string(b) })); diff != "" {
		t.Errorf("upstream request mismatch (-want +got):\n%s", diff)
	}
}

func TestChatCompletionsFloorsMaxTokens(t *testing.T) {
	up := backend()
	s := newService(up)
	body := `{"model":"lm-reason","max_tokens":16,"messages":[{"role":"user","content":"think"}]}`
	w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", body, allTenants, nil))
	got := []string{w.Header().Get("gw-applied"), w.Header().Get("x-rust-api-applied"), string(up.Received()[0].Req.Body)}
	want := []string{"max_tokens_floored=200", "max_tokens_floored=200",
		`{"model":"lm-reason","max_tokens":200,"messages":[{"role":"user","content":"think"}]}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers and upstream body mismatch (-want +got):\n%s", diff)
	}
}

func TestChatCompletionsInjection(t *testing.T) {
	type injectCall struct{ Tenant, User string }
	var calls []injectCall
	inject := func(_ context.Context, tenant, user string) (string, error) {
		calls = append(calls, injectCall{tenant, user})
		return "Memory:\n- prefers metric units", nil
	}
	body := `{"model":"lm-4-scout","messages":[{"role":"user","content":"weather?"}]}`
	up := backend()
	s := newService(up, func(c *openai.Config) { c.Inject = inject })

	testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", body, allTenants, http.Header{"Gw-User-Id": {"alice"}}))
	testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", body, allTenants, nil))

	if diff := cmp.Diff([]injectCall{{"acme", "alice"}}, calls); diff != "" {
		t.Errorf("Inject calls mismatch (-want +got):\n%s", diff)
	}
	got := []string{string(up.Received()[0].Req.Body), string(up.Received()[1].Req.Body)}
	want := []string{
		`{"model":"lm-4-scout","messages":[{"role":"system","content":"Memory:\n- prefers metric units"},{"role":"user","content":"weather?"}]}`,
		body,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upstream bodies mismatch (-want +got):\n%s", diff)
	}

	t.Run("inject failure", func(t *testing.T) {
		up := backend()
		s := newService(up, func(c *openai.Config) {
			c.Inject = func(context.Context, string, string) (string, error) { return "", errcat.Storage(errors.New("bolt")) }
		})
		w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", body, allTenants, http.Header{"Gw-User-Id": {"alice"}}))
		if e := decodeEnvelope(t, w); w.Code != 500 || e.Error.Code != "storage_error" || up.Calls() != 0 {
			t.Errorf("answer %d %s, %d upstream calls; want 500 storage_error and no call", w.Code, w.Body, up.Calls())
		}
	})
}

func TestChatCompletionsAttachments(t *testing.T) {
	img := pngURI(t)
	up := backend()
	s := newService(up)
	body := `{"model":"lm-4-scout","messages":[{"role":"user","content":"compare these"}],"attachments":[` +
		`{"kind":"image","url":"` + img + `"},{"kind":"document","doc_name":"plan.txt","content":"step 1\nstep 2"}]}`
	w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", body, allTenants, nil))
	if w.Code != 200 {
		t.Fatalf("answer %d %s", w.Code, w.Body)
	}
	want := `{"model":"lm-4-scout","messages":[{"role":"user","content":[{"type":"text","text":"compare these"},` +
		`{"type":"image_url","image_url":{"url":"` + img + `"}},{"type":"text","text":"Document plan.txt:\nstep 1\nstep 2"}]}]}`
	if diff := cmp.Diff(want, string(up.Received()[0].Req.Body)); diff != "" {
		t.Errorf("upstream body mismatch (-want +got):\n%s", diff)
	}
}

func TestChatCompletionsConsentFlow(t *testing.T) {
	tenant := &auth.Tenant{ID: "acme", Settings: auth.Settings{CloudDocConsent: true}}
	hash := preflight.DocumentHash("secret plan")
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"summarise"}],` +
			`"attachments":[{"kind":"document","doc_name":"plan.txt","content":"secret plan"}]}`
	}
	type step struct {
		name   string
		model  string
		header string
		status int
	}
	run := func(t *testing.T, s *openai.Service, steps []step) {
		for _, st := range steps {
			var h http.Header
			if st.header != "" {
				h = http.Header{"Gw-Cloud-Consent": {st.header}}
			}
			w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", body(st.model), tenant, h))
			if w.Code != st.status {
				t.Fatalf("%s: status %d, want %d (%s)", st.name, w.Code, st.status, w.Body)
			}
			if w.Code == 409 {
				e := decodeEnvelope(t, w)
				want := []map[string]string{{"content_hash": hash, "doc_name": "plan.txt"}}
				if diff := cmp.Diff(want, e.RequiredConsents); diff != "" || e.GWCode != "cloud_consent_required" || e.Error.Type != "conflict_error" {
					t.Errorf("%s: 409 body %s; required_consents mismatch (-want +got):\n%s", st.name, w.Body, diff)
				}
			}
		}
	}
	t.Run("persisted", func(t *testing.T) {
		s := newService(backend(), func(c *openai.Config) { c.Store = memstore.New() })
		run(t, s, []step{
			{"local model needs no consent", "lm-4-scout-local", "", 200},
			{"cloud chain without consent", "lm-4-scout", "", 409},
			{"consent for this request", "lm-4-scout", hash, 200},
			{"not persisted", "lm-4-scout", "", 409},
			{"consent persisted", "lm-4-scout", "sha256:0000, " + hash + ";persist", 200},
			{"grant remembered", "lm-4-scout", "", 200},
		})
	})
	t.Run("no store: persist ignored", func(t *testing.T) {
		s := newService(backend())
		run(t, s, []step{
			{"consent persisted", "lm-4-scout", hash + ";persist", 200},
			{"not remembered", "lm-4-scout", "", 409},
		})
	})
}

func TestChatCompletionsUpstreamErrors(t *testing.T) {
	tests := []struct {
		name       string
		err        error
		status     int
		code       errcat.Code
		message    string
		retryAfter string
	}{
		{"4xx passed on", &errcat.Error{Code: errcat.UpstreamBadRequest, Status: 422, Message: "messages[1]: unsupported"}, 422, errcat.UpstreamBadRequest, "messages[1]: unsupported", ""},
		{"429 passed on", &errcat.Error{Code: errcat.UpstreamBadRequest, Status: 429, Message: "slow down", RetryAfter: 7}, 429, errcat.UpstreamBadRequest, "slow down", "7"},
		{"5xx", errcat.New(errcat.UpstreamError, "", "The upstream answered 500."), 502, errcat.UpstreamError, "The upstream answered 500.", ""},
		{"timeout", errcat.New(errcat.UpstreamTimeout, "", "t"), 504, errcat.UpstreamTimeout, "t", ""},
		{"unavailable", errcat.New(errcat.UpstreamUnavailable, "", "u"), 503, errcat.UpstreamUnavailable, "u", ""},
		{"quota", errcat.New(errcat.ModelQuotaExhausted, "", "q"), 429, errcat.ModelQuotaExhausted, "q", ""},
		{"cloudB quota", &errcat.Error{Code: errcat.CloudBDailyQuotaExhausted, Param: "model", Message: "d", RetryAfter: 3600,
			Extra: map[string]any{"available_fallbacks": []string{"lm-4-scout-local"}}}, 429, errcat.CloudBDailyQuotaExhausted, "d", "3600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newService(backend(testkit.Fail(tt.err)))
			w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions",
				`{"model":"lm-reason","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, allTenants, nil))
			e := decodeEnvelope(t, w)
			got := []any{w.Code, e.Error.Code, e.Error.Message, w.Header().Get("Retry-After"), w.Header().Get("Gw-Applied")}
			want := []any{tt.status, string(tt.code), tt.message, tt.retryAfter, ""}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("status, code, message, Retry-After, gw-applied mismatch (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("unexpected error", func(t *testing.T) {
		s := newService(backend(testkit.Fail(errors.New("dial tcp 10.1.2.3:443: key sk-live"))))
		w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", `{"model":"lm-4-scout","messages":[{"role":"user","content":"x"}]}`, allTenants, nil))
		if w.Code != 500 || strings.Contains(w.Body.String(), "sk-live") {
			t.Errorf("answer %d %s, want a 500 internal_error without detail", w.Code, w.Body)
		}
	})
}

const chunk = `{"id":"chatcmpl-s1","object":"chat.completion.chunk","created":1700000100,"model":"scout-cloud","choices":[%s]}`

func chunkOf(choices string) string { return strings.Replace(chunk, "%s", choices, 1) }

var streamTranscript = "data: " + chunkOf(`{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}`) + "\n\n" +
	"data: " + chunkOf(`{"index":0,"delta":{"content":"Bonjour"},"finish_reason":null}`) + "\n\n" +
	"data: " + chunkOf(`{"index":0,"delta":{"content":" 👋"},"finish_reason":null}`) + "\n\n" +
	"data: " + chunkOf(`{"index":0,"delta":{},"finish_reason":"stop"}`) + "\n\n" +
	"data: [DONE]\n\n"

func TestChatCompletionsStream(t *testing.T) {
	up := backend(func() (*upstream.Response, error) {
		resp, _ := testkit.Stream(streamTranscript)()
		resp.Fallback, resp.Provider, resp.RouterAlias = true, "cloudA", "scout-cloud"
		return resp, nil
	})
	s := newService(up)
	body := `{"model":"lm-reason","stream":true,"max_tokens":10,"messages":[{"role":"user","content":"hello"}]}`
	w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions", body, allTenants, nil))
	testkit.Golden(t, "chat_stream.golden", w.Body.String(), *update)
	got := []any{w.Code, w.Header().Get("Content-Type"), w.Header().Get("Cache-Control"), w.Header().Get("Gw-Applied"),
		w.Header().Get("X-Rust-Api-Applied"), up.Received()[0].Req.Stream}
	want := []any{200, "text/event-stream", "no-cache", "max_tokens_floored=200", "max_tokens_floored=200", true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream answer mismatch (-want +got):\n%s", diff)
	}
	// The backend_fallback notice, shaped like a chunk of this stream, before [DONE].
	events := testkit.ParseSSE(t, w.Body.String())
	notice := events[len(events)-2]
	if notice.Type != "gw.notice" {
		t.Fatalf("event before [DONE] = %+v", notice)
	}
	var n struct {
		ID      string                         `json:"id"`
		Object  string                         `json:"object"`
		Created int64                          `json:"created"`
		Model   string                         `json:"model"`
		Choices []any                          `json:"choices"`
		Notice  struct{ Code, Message string } `json:"gw_notice"`
	}
	if err := json.Unmarshal([]byte(notice.Data), &n); err != nil {
		t.Fatal(err)
	}
	if n.ID != "chatcmpl-s1" || n.Object != "chat.completion.chunk" || n.Created != 1700000100 || n.Model != "lm-reason" ||
		n.Choices == nil || len(n.Choices) != 0 || n.Notice.Code != "backend_fallback" || !strings.Contains(n.Notice.Message, "scout-cloud") {
		t.Errorf("gw.notice = %+v", n)
	}
}

func TestChatCompletionsJSONNotice(t *testing.T) {
	up := backend(func() (*upstream.Response, error) {
		resp, _ := testkit.JSON(completionJSON)()
		resp.Fallback = true
		return resp, nil
	})
	w := testkit.Record(newService(up).ChatCompletions, request("POST", "/v1/chat/completions",
		`{"model":"lm-4-scout","messages":[{"role":"user","content":"x"}]}`, allTenants, nil))
	if got := w.Header().Get("GW-Notice"); got != "backend_fallback" || w.Body.String() != asAlias(completionJSON, "lm-4-scout") {
		t.Errorf("GW-Notice %q body %s; want backend_fallback and the completion", got, w.Body)
	}
}

func TestChatCompletionsCutStream(t *testing.T) {
	cut := strings.TrimSuffix(streamTranscript, "data: [DONE]\n\n")
	s := newService(backend(testkit.Stream(cut)))
	w := testkit.Record(s.ChatCompletions, request("POST", "/v1/chat/completions",
		`{"model":"lm-4-scout","stream":true,"messages":[{"role":"user","content":"x"}]}`, allTenants, nil))
	out := w.Body.String()
	events := testkit.ParseSSE(t, out)
	last := events[len(events)-1]
	if w.Code != 200 || strings.Contains(out, "[DONE]") || last.Type != "gw.error" || !strings.HasPrefix(last.Data, `{"error":{`) ||
		!strings.Contains(last.Data, `"code":"upstream_error"`) {
		t.Errorf("stream %q; want the chunks, then gw.error upstream_error and no [DONE]", out)
	}
}
