package upstream_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

func TestModelRewrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want string // exact body the backend receives; "" means compare as JSON with wantJSON
		json string
	}{
		{name: "fast path", body: `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}],"stream":false}`,
			want: `{"model":"` + scoutLocal + `","messages":[{"role":"user","content":"hi"}],"stream":false}`},
		{name: "fast path, model only", body: `{"model":"lm-4-scout"}`, want: `{"model":"` + scoutLocal + `"}`},
		{name: "model not first", body: `{"messages":[{"role":"user","content":"{\"model\":\"x\"}"}],"model":"lm-4-scout","temperature":0.5}`,
			json: `{"messages":[{"role":"user","content":"{\"model\":\"x\"}"}],"model":"` + scoutLocal + `","temperature":0.5}`},
		{name: "escaped model", body: `{"model":"lm-4-\u0073cout","n":1}`, json: `{"model":"` + scoutLocal + `","n":1}`},
		{name: "spaces", body: ` { "model" : "lm-4-scout" , "n" : 1 } `, json: `{"model":"` + scoutLocal + `","n":1}`},
		{name: "no model", body: `{"messages":[]}`, json: `{"messages":[],"model":"` + scoutLocal + `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			local := upstreamtest.New(t)
			r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
			if _, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: []byte(tt.body)}); err != nil {
				t.Fatalf("Do: %v", err)
			}
			got := string(local.Calls()[0].Body)
			if tt.want != "" {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("body mismatch (-want +got):\n%s", diff)
				}
				return
			}
			var w, g any
			if err := json.Unmarshal([]byte(tt.json), &w); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(got), &g); err != nil {
				t.Fatalf("backend got invalid JSON %s: %v", got, err)
			}
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestModelRewritePerBackend(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 500}))
	cloudA := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 503}))
	cloudB := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL, CloudBURL: cloudB.URL})
	if _, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout")}); err != nil {
		t.Fatalf("Do: %v", err)
	}
	got := []string{local.Calls()[0].Model, cloudA.Calls()[0].Model, cloudB.Calls()[0].Model}
	if diff := cmp.Diff([]string{scoutLocal, scoutCloudA, scoutCloudB}, got); diff != "" {
		t.Errorf("models sent mismatch (-want +got):\n%s", diff)
	}
}

func TestInvalidJSONBody(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
	_, err := r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: []byte(`[1,2]`)})
	if got := asErr(t, err).Code; got != errcat.InvalidJSON {
		t.Errorf("code = %s, want invalid_json", got)
	}
	if n := local.CallCount(); n != 0 {
		t.Errorf("backend got %d calls, want 0", n)
	}
}

// multipartBody builds an audio upload with a model field and a file.
func multipartBody(t *testing.T, model string) ([]byte, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if model != "" {
		w.WriteField("model", model)
	}
	f, _ := w.CreateFormFile("file", "hello.wav")
	f.Write([]byte("RIFF....WAVEfmt audio bytes"))
	w.WriteField("language", "en")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

func TestMultipartModelRewrite(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		streamed bool
		model    string
	}{{"buffered", false, "lm-transcribe"}, {"streamed", true, "lm-transcribe"}, {"model added", false, ""}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Content: "hello"}))
			r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
			body, ct := multipartBody(t, tt.model)
			req := &upstream.Request{Alias: "lm-transcribe", Path: "/audio/transcriptions", ContentType: ct, Body: body}
			if tt.streamed {
				req.Body, req.BodyReader = nil, bytes.NewReader(body)
			}
			_, got, err := doRead(t, r, req)
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			if string(got) != `{"text":"hello"}` {
				t.Errorf("answer = %s", got)
			}
			call := local.Calls()[0]
			fields := formFields(t, call.Header.Get("Content-Type"), call.Body)
			want := map[string]string{"model": "lm-whisper:large-v3-turbo", "file": "RIFF....WAVEfmt audio bytes", "language": "en"}
			if diff := cmp.Diff(want, fields); diff != "" {
				t.Errorf("form mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func formFields(t *testing.T, contentType string, body []byte) map[string]string {
	t.Helper()
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		t.Fatalf("content type %q: %v", contentType, err)
	}
	out := map[string]string{}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("multipart: %v", err)
		}
		v, _ := io.ReadAll(p)
		out[p.FormName()] = string(v)
	}
}

// A multipart body the model field cannot be rewritten in is invalid_json, not
// a connection failure, whether it is buffered or streamed (where it fails
// only while the transport sends it), and no other backend is tried.
func TestMalformedMultipartBody(t *testing.T) {
	t.Parallel()
	body, ct := multipartBody(t, "lm-transcribe")
	headerCut := bytes.Index(body, []byte("Content-Disposition: form-data; name=\"file\"")) + len("Content-Di")
	for _, tt := range []struct {
		name string
		body []byte
	}{
		{"cut in a part header", body[:headerCut]},
		{"cut in the file", body[:bytes.Index(body, []byte("RIFF"))+4]},
		{"no closing boundary", body[:len(body)-len("--\r\n")-30]},
		{"header without colon", bytes.Replace(body, []byte("Content-Type: application/octet-stream"), []byte("Content-Type application/octet-stream"), 1)},
		{"cut at the end of a part header", body[:bytes.Index(body, []byte("Content-Type: application/octet-stream"))]},
		{"cut before a part's blank line", body[:bytes.Index(body, []byte("RIFF"))-2]},
		{"cut after a part", body[:bytes.LastIndex(body, []byte("\r\n--"))]},
		{"cut after a delimiter", body[:bytes.LastIndex(body, []byte("--\r\n"))]},
	} {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streamed=%v", tt.name, streamed), func(t *testing.T) {
				t.Parallel()
				local := upstreamtest.New(t)
				cloudA := upstreamtest.New(t)
				r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL})
				req := &upstream.Request{Alias: "lm-transcribe", Path: "/audio/transcriptions", ContentType: ct, Body: tt.body}
				if streamed {
					req.Body, req.BodyReader = nil, bytes.NewReader(tt.body)
				}
				_, err := r.Do(t.Context(), req)
				if got := asErr(t, err).Code; got != errcat.InvalidJSON {
					t.Errorf("code = %s (%v), want invalid_json", got, err)
				}
				if n := cloudA.CallCount(); n != 0 {
					t.Errorf("cloudA got %d calls, want 0", n)
				}
			})
		}
	}
}

// A close delimiter in a read of its own, or split across reads, or followed
// by an epilogue, ends a whole body.
func TestMultipartCloseDelimiter(t *testing.T) {
	t.Parallel()
	body, ct := multipartBody(t, "lm-transcribe")
	local := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
	for _, tt := range []struct {
		name string
		src  io.Reader
	}{
		{"one byte at a time", iotest.OneByteReader(bytes.NewReader(body))},
		{"half at a time", io.MultiReader(bytes.NewReader(body[:len(body)-9]), bytes.NewReader(body[len(body)-9:]))},
		{"epilogue", io.MultiReader(bytes.NewReader(body), strings.NewReader("an epilogue\r\n"))},
	} {
		if _, _, err := doRead(t, r, &upstream.Request{Alias: "lm-transcribe", Path: "/audio/transcriptions",
			ContentType: ct, BodyReader: tt.src}); err != nil {
			t.Errorf("%s: Do: %v", tt.name, err)
		}
	}
}

func TestStreamedBodyIsNotResent(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 500}))
	cloudA := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL})
	body, ct := multipartBody(t, "lm-transcribe")
	_, err := r.Do(t.Context(), &upstream.Request{Alias: "lm-transcribe", Path: "/audio/transcriptions",
		ContentType: ct, BodyReader: bytes.NewReader(body)})
	if got := asErr(t, err).Code; got != errcat.UpstreamError {
		t.Errorf("code = %s, want upstream_error", got)
	}
	if n := cloudA.CallCount(); n != 0 {
		t.Errorf("cloudA got %d calls for a consumed streamed body, want 0", n)
	}

	// A streamed body that was never read (connection refused) moves on.
	r2, _ := newRouter(t, upstream.Backends{LocalURL: upstreamtest.RefusedURL(t), CloudAURL: cloudA.URL})
	if _, _, err := doRead(t, r2, &upstream.Request{Alias: "lm-transcribe", Path: "/audio/transcriptions",
		ContentType: ct, BodyReader: bytes.NewReader(body)}); err != nil {
		t.Fatalf("Do after a refused connection: %v", err)
	}
	if got := cloudA.Calls()[0].Model; got != "lm-whisper-large-v3-turbo" {
		t.Errorf("cloudA model = %q", got)
	}
}

func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
	for _, stream := range []bool{false, true} {
		if _, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions",
			Body: chatBody("lm-4-scout"), Stream: stream, RequestID: "req-42"}); err != nil {
			t.Fatalf("Do: %v", err)
		}
	}
	type hdr struct{ Method, Path, ContentType, Accept, RequestID, Authorization, UserAgent string }
	var got []hdr
	for _, c := range local.Calls() {
		got = append(got, hdr{c.Method, c.Path, c.Header.Get("Content-Type"), c.Header.Get("Accept"),
			c.Header.Get("X-Request-Id"), c.Header.Get("Authorization"), c.Header.Get("User-Agent")})
	}
	want := []hdr{
		{http.MethodPost, "/v1/chat/completions", "application/json", "application/json", "req-42", "", "chatgw"},
		{http.MethodPost, "/v1/chat/completions", "application/json", "text/event-stream", "req-42", "", "chatgw"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers mismatch (-want +got):\n%s", diff)
	}
}

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	const keyA = "sk-cloudA-secret-0123456789"
	local := upstreamtest.New(t, upstreamtest.WithReply(upstreamtest.Reply{Status: 503}))
	cloudA := upstreamtest.New(t)
	r, logs := newRouter(t, upstream.Backends{LocalURL: local.URL, CloudAURL: cloudA.URL, CloudAAPIKey: keyA})
	// The leaky backend echoes its key, URL, host and provider name in its error.
	leak := "invalid api key " + keyA + " for " + cloudA.URL + "/chat/completions at " +
		strings.TrimPrefix(strings.TrimSuffix(cloudA.URL, "/v1"), "http://") + " on cloudA (Bearer " + keyA + ")"
	cloudA.Enqueue(upstreamtest.Reply{}, upstreamtest.Reply{Status: 401, ErrorMessage: leak})

	if _, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", Body: chatBody("lm-4-scout"), RequestID: "r1"}); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if got := local.Calls()[0].Header.Get("Authorization"); got != "" {
		t.Errorf("local got Authorization %q, want none", got)
	}
	call := cloudA.Calls()[0]
	if got := call.Header.Get("Authorization"); got != "Bearer "+keyA {
		t.Errorf("cloudA Authorization = %q", got)
	}
	for name, vs := range call.Header {
		if name != "Authorization" && strings.Contains(strings.Join(vs, " "), keyA) {
			t.Errorf("key in header %s", name)
		}
	}
	if bytes.Contains(call.Body, []byte(keyA)) {
		t.Error("key in body")
	}

	_, err := r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout-cloudA", Path: "/chat/completions", Body: chatBody("x"), RequestID: "r2"})
	e := asErr(t, err)
	want := "invalid api key [redacted] for [url] at [host] on upstream (Bearer [redacted])"
	if e.Message != want {
		t.Errorf("message = %q, want %q", e.Message, want)
	}
	if strings.Contains(e.Error(), keyA) {
		t.Errorf("Error() holds the key: %s", e.Error())
	}
	if l := logs.String(); strings.Contains(l, keyA) || strings.Contains(l, "messages") {
		t.Errorf("logs hold the key or a body:\n%s", l)
	}
}

// TestRequestContentTypes checks how a request's content type decides its
// body: JSON (its model rewritten to the backend's alias) when it is empty or
// names JSON with or without parameters, sent as it is otherwise, and
// invalid_json when it cannot be parsed.
func TestRequestContentTypes(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	r, _ := newRouter(t, upstream.Backends{LocalURL: local.URL})
	body := chatBody("lm-4-scout")
	for _, tt := range []struct {
		ct        string
		rewritten bool // the body reached the backend with another model
		invalid   bool
	}{
		{ct: "", rewritten: true},
		{ct: "application/json", rewritten: true},
		{ct: "application/json; charset=utf-8", rewritten: true},
		{ct: "Application/JSON", rewritten: true},
		{ct: "text/plain"},
		{ct: "application/json;;", invalid: true},
		{ct: "multipart/form-data", invalid: true},
	} {
		before := len(local.Calls())
		_, _, err := doRead(t, r, &upstream.Request{Alias: "lm-4-scout", Path: "/chat/completions", ContentType: tt.ct, Body: body})
		if tt.invalid {
			if got := asErr(t, err).Code; got != errcat.InvalidJSON {
				t.Errorf("%q: code %s (%v), want invalid_json", tt.ct, got, err)
			}
			continue
		}
		calls := local.Calls()
		if err != nil || len(calls) != before+1 {
			t.Fatalf("%q: Do: %v, %d calls", tt.ct, err, len(calls)-before)
		}
		if got := !bytes.Equal(calls[before].Body, body); got != tt.rewritten {
			t.Errorf("%q: body rewritten %v, want %v (%s)", tt.ct, got, tt.rewritten, calls[before].Body)
		}
	}
}

// TestRequestPaths: each request reaches its own path on the backend, when
// the requests to one backend alternate between paths from many goroutines
// (a backend's URL is parsed once per path and kept), and a base URL with a
// trailing slash or an empty port gives the same URL.
func TestRequestPaths(t *testing.T) {
	t.Parallel()
	local := upstreamtest.New(t)
	tests := []struct{ name, base string }{
		{name: "base URL", base: local.URL},
		{name: "trailing slash", base: local.URL + "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newRouter(t, upstream.Backends{LocalURL: tt.base})
			paths := []string{"/chat/completions", "embeddings", "/chat/completions", "/images/generations"}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 20 {
						path := paths[(g+i)%len(paths)]
						resp, err := r.Do(t.Context(), &upstream.Request{Alias: "lm-4-scout", Path: path, Body: chatBody("lm-4-scout"), RequestID: fmt.Sprintf("%s-%d-%d", path, g, i)})
						if err != nil {
							t.Errorf("Do(%s): %v", path, err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				})
			}
			wg.Wait()
		})
	}
	calls := local.Calls()
	if len(calls) != 2*8*20 {
		t.Fatalf("%d calls, want %d", len(calls), 2*8*20)
	}
	for _, c := range calls {
		id := c.Header.Get("X-Request-Id")
		want := "/v1/" + strings.TrimPrefix(id[:strings.Index(id, "-")], "/")
		if c.Path != want {
			t.Errorf("request %s reached %s, want %s", id, c.Path, want)
		}
	}
}
