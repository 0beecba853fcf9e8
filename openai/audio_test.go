package openai_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/openai"
	"github.com/chatgw/gateway/upstream"
	"github.com/chatgw/gateway/upstream/upstreamtest"
	"github.com/google/go-cmp/cmp"
)

const audioBoundary = "chatgw-test-boundary-7f3a"

var audioCT = "multipart/form-data; boundary=" + audioBoundary

// audioField is one part of a test form: a file part when filename is set.
type audioField struct{ name, filename, value string }

// audioForm encodes fields as multipart/form-data with audioBoundary.
func audioForm(fields ...audioField) string {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.SetBoundary(audioBoundary)
	for _, f := range fields {
		var w io.Writer
		if f.filename != "" {
			w, _ = mw.CreateFormFile(f.name, f.filename)
		} else {
			w, _ = mw.CreateFormField(f.name)
		}
		io.WriteString(w, f.value)
	}
	mw.Close()
	return b.String()
}

// transcribe serves body, with contentType ("": none), as
// POST /v1/audio/transcriptions of a member of tenant.
func (e *mediaEnv) transcribe(t *testing.T, body io.Reader, contentType string, tenant *auth.Tenant) *httptest.ResponseRecorder {
	t.Helper()
	r := testkit.NewRequest(t, testkit.Request{Method: "POST", Target: "/v1/audio/transcriptions", Body: body,
		Principal: testkit.Member(tenant)})
	r.Header.Del("Content-Type") // not testkit's JSON default
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return testkit.Record(e.svc.Transcriptions, r)
}

func TestAudioErrors(t *testing.T) {
	file := audioField{"file", "a.wav", "RIFF....WAVEfmt "}
	noAudio := &auth.Tenant{ID: "acme", Models: []string{"lm-4-scout"}}
	tests := []struct {
		name        string
		contentType string
		body        string
		tenant      *auth.Tenant
		want        testkit.Error
	}{
		{"no content type", "", audioForm(audioField{"model", "", "lm-transcribe"}, file), nil,
			testkit.Error{Status: 400, Code: "invalid_field", Param: "headers.content-type"}},
		{"JSON", "application/json", `{"model":"lm-transcribe"}`, nil, testkit.Error{Status: 400, Code: "invalid_field", Param: "headers.content-type"}},
		{"no boundary", "multipart/form-data", audioForm(audioField{"model", "", "lm-transcribe"}, file), nil,
			testkit.Error{Status: 400, Code: "invalid_field", Param: "headers.content-type"}},
		{"other multipart", "multipart/mixed; boundary=" + audioBoundary, audioForm(audioField{"model", "", "lm-transcribe"}, file), nil,
			testkit.Error{Status: 400, Code: "invalid_field", Param: "headers.content-type"}},
		{"not multipart", audioCT, "model=lm-transcribe", nil, testkit.Error{Status: 400, Code: "invalid_json"}},
		{"cut before model", audioCT, strings.TrimSuffix(audioForm(file), "--\r\n"), nil, testkit.Error{Status: 400, Code: "invalid_json"}},
		{"no model", audioCT, audioForm(file, audioField{"language", "", "en"}), nil, testkit.Error{Status: 400, Code: "missing_field", Param: "model"}},
		{"empty model", audioCT, audioForm(audioField{"model", "", ""}, file), nil, testkit.Error{Status: 400, Code: "missing_field", Param: "model"}},
		{"model as a file", audioCT, audioForm(audioField{"model", "model.txt", "lm-transcribe"}, file), nil,
			testkit.Error{Status: 400, Code: "missing_field", Param: "model"}},
		{"chat model", audioCT, audioForm(audioField{"model", "", "lm-4-scout"}, file), nil,
			testkit.Error{Status: 400, Code: "model_not_in_allowlist", Param: "model"}},
		{"unknown model", audioCT, audioForm(file, audioField{"model", "", "whisper-1"}), nil,
			testkit.Error{Status: 400, Code: "model_not_in_allowlist", Param: "model"}},
		{"very long model", audioCT, audioForm(audioField{"model", "", strings.Repeat("m", 5000)}, file), nil,
			testkit.Error{Status: 400, Code: "model_not_in_allowlist", Param: "model"}},
		{"not in tenant allowlist", audioCT, audioForm(audioField{"model", "", "lm-transcribe"}, file), noAudio,
			testkit.Error{Status: 400, Code: "model_not_in_allowlist", Param: "model"}},
		{"user_id before the model", audioCT, audioForm(file, audioField{"user_id", "", "u-1"}, audioField{"model", "", "lm-transcribe"}), nil,
			testkit.Error{Status: 400, Code: "invalid_field", Param: "body.user_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMediaEnv(t)
			e.refused(t, e.transcribe(t, strings.NewReader(tt.body), tt.contentType, orMediaTenant(tt.tenant)), tt.want)
		})
	}
}

func TestAudioBodyTooLarge(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	tests := []struct {
		name string
		body string
	}{
		// The limit is reached while looking for the model field.
		{"before the model", audioForm(audioField{"file", "a.wav", big}, audioField{"model", "", "lm-transcribe"})},
		// The limit is reached while streaming to the upstream.
		{"while streaming", audioForm(audioField{"model", "", "lm-transcribe"}, audioField{"file", "a.wav", big})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMediaEnv(t)
			r := testkit.NewRequest(t, testkit.Request{Method: "POST", Target: "/v1/audio/transcriptions", Body: strings.NewReader(tt.body),
				Header: http.Header{"Content-Type": {audioCT}}, Principal: testkit.Member(mediaTenant)})
			r.Body = http.MaxBytesReader(nil, r.Body, 2<<20) // as the middleware bounds it
			testkit.CheckError(t, testkit.Record(e.svc.Transcriptions, r), testkit.Error{Status: 413, Code: "body_too_large"})
		})
	}
}

func TestAudioUpstreamErrors(t *testing.T) {
	form := audioForm(audioField{"model", "", "lm-transcribe"}, audioField{"file", "a.wav", "RIFF"})
	tests := []struct {
		name  string
		reply upstreamtest.Reply
		want  testkit.Error
	}{
		{"4xx passed on", upstreamtest.Reply{Status: 415, ErrorMessage: "unsupported audio"}, testkit.Error{Status: 415, Code: "upstream_bad_request"}},
		{"5xx", upstreamtest.Reply{Status: 500}, testkit.Error{Status: 502, Code: "upstream_error"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMediaEnv(t, upstreamtest.WithReply(tt.reply))
			testkit.CheckError(t, e.transcribe(t, strings.NewReader(form), audioCT, mediaTenant), tt.want)
		})
	}
}

func TestAudioPassthrough(t *testing.T) {
	model := audioField{"model", "", "lm-transcribe"}
	file := audioField{"file", "speech.mp3", "ID3\x00\x01binary\r\n--not-a-boundary\xff"}
	lang := audioField{"language", "", "de"}
	tests := []struct {
		name     string
		endpoint string
		fields   []audioField
		reply    upstreamtest.Reply
		wantCT   string
		wantBody string // "" means the fake's default transcription JSON
	}{
		{"transcription, model first", "transcriptions", []audioField{model, file, lang}, upstreamtest.Reply{}, "application/json", ""},
		{"transcription, model last", "transcriptions", []audioField{file, lang, model}, upstreamtest.Reply{}, "application/json", ""},
		{"translation", "translations", []audioField{lang, model, file}, upstreamtest.Reply{}, "application/json", ""},
		{"text answer", "transcriptions", []audioField{model, file, {"response_format", "", "srt"}},
			upstreamtest.Reply{Body: []byte("1\n00:00:00,000 --> 00:00:01,000\nHallo\n"), ContentType: "application/x-subrip"},
			"application/x-subrip", "1\n00:00:00,000 --> 00:00:01,000\nHallo\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newMediaEnv(t, upstreamtest.WithReply(tt.reply))
			h := e.svc.Transcriptions
			if tt.endpoint == "translations" {
				h = e.svc.Translations
			}
			form := audioForm(tt.fields...)
			r := testkit.NewRequest(t, testkit.Request{Method: "POST", Target: "/v1/audio/" + tt.endpoint, Body: strings.NewReader(form),
				Header: http.Header{"Content-Type": {audioCT}}, Principal: testkit.Member(mediaTenant)})
			w := testkit.Record(h, r)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body.String())
			}
			if got := w.Header().Get("Content-Type"); got != tt.wantCT {
				t.Errorf("Content-Type = %q, want %q", got, tt.wantCT)
			}
			if tt.wantBody != "" && w.Body.String() != tt.wantBody {
				t.Errorf("body %q, want %q", w.Body.String(), tt.wantBody)
			}
			if tt.wantBody == "" && !strings.Contains(w.Body.String(), `"text"`) {
				t.Errorf("body %q is not a transcription", w.Body.String())
			}

			calls := e.backend.Calls()
			if len(calls) != 1 {
				t.Fatalf("upstream got %d calls, want 1", len(calls))
			}
			c := calls[0]
			if c.Path != "/v1/audio/"+tt.endpoint || c.Model != "lm-whisper:large-v3-turbo" {
				t.Errorf("upstream call %s model %q", c.Path, c.Model)
			}
			if got := c.Header.Get("Content-Type"); got != audioCT {
				t.Errorf("upstream Content-Type %q, want %q", got, audioCT)
			}
			// The same fields in the same order, model rewritten.
			want := map[string]string{}
			var order []string
			for _, f := range tt.fields {
				want[f.name] = f.value
				order = append(order, f.name)
			}
			want["model"] = "lm-whisper:large-v3-turbo"
			got, gotOrder := readForm(t, c.Body, audioBoundary)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("upstream form mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(order, gotOrder); diff != "" {
				t.Errorf("upstream field order mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func readForm(t *testing.T, body []byte, boundary string) (map[string]string, []string) {
	t.Helper()
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	fields := map[string]string{}
	var order []string
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return fields, order
		}
		if err != nil {
			t.Fatalf("upstream body is not multipart: %v", err)
		}
		v, _ := io.ReadAll(p)
		fields[p.FormName()] = string(v)
		order = append(order, p.FormName())
	}
}

// A user_id field after the model is found as the upload streams.
func TestAudioUserIDField(t *testing.T) {
	t.Run("small form", func(t *testing.T) {
		e := newMediaEnv(t)
		form := audioForm(audioField{"model", "", "lm-transcribe"}, audioField{"file", "a.wav", "RIFF"},
			audioField{"user_id", "", "u-1"})
		testkit.CheckError(t, e.transcribe(t, strings.NewReader(form), audioCT, mediaTenant),
			testkit.Error{Status: 400, Code: "invalid_field", Param: "body.user_id"})
	})
	t.Run("before a big file", func(t *testing.T) {
		userPart := "--" + audioBoundary + "\r\nContent-Disposition: form-data; name=\"user_id\"\r\n\r\nu-1\r\n"
		client := &countingReader{r: io.MultiReader(strings.NewReader(bigModelPart+userPart+bigFileHead),
			&patternReader{size: bigFileSize}, strings.NewReader("\r\n"+bigEnd))}
		up := &streamUpstream{client: client, tmpDir: t.TempDir()}
		cat, _ := upstream.DefaultCatalog()
		svc := openai.New(openai.Config{Upstream: up, Catalog: cat})
		r := testkit.NewRequest(t, testkit.Request{Method: "POST", Target: "/v1/audio/transcriptions", Body: client,
			Header: http.Header{"Content-Type": {audioCT}}, Principal: testkit.Member(mediaTenant)})
		testkit.CheckError(t, testkit.Record(svc.Transcriptions, r), testkit.Error{Status: 400, Code: "invalid_field", Param: "body.user_id"})
		if up.n > 1<<20 {
			t.Errorf("the upstream got %d bytes; want the upload cut soon after the user_id field", up.n)
		}
	})
}

// The big upload of the streaming tests: a multipart form whose 20 MB file part
// is generated as it is read, never held in memory.

const bigFileSize = 20 << 20

type patternReader struct{ off, size int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(b)), p.size-p.off))
	for i := range n {
		b[i] = byte((p.off + int64(i)) % 251) // never "\r\n--"
	}
	p.off += int64(n)
	return n, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

const (
	bigModelPart = "--" + audioBoundary + "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nlm-transcribe\r\n"
	bigFileHead  = "--" + audioBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"long.wav\"\r\n" +
		"Content-Type: audio/wav\r\n\r\n"
	bigEnd = "--" + audioBoundary + "--\r\n"
)

// bigUpload returns a fresh reader of the big form, model first or last.
func bigUpload(modelFirst bool) io.Reader {
	file := &patternReader{size: bigFileSize}
	if modelFirst {
		return io.MultiReader(strings.NewReader(bigModelPart+bigFileHead), file, strings.NewReader("\r\n"+bigEnd))
	}
	return io.MultiReader(strings.NewReader(bigFileHead), file, strings.NewReader("\r\n"+bigModelPart+bigEnd))
}

// digestOf hashes r and returns the digest and the length.
func digestOf(r io.Reader) ([]byte, int64) {
	h := sha256.New()
	n, _ := io.Copy(h, r)
	return h.Sum(nil), n
}

// streamUpstream reads the upload as a backend would: the first 64 KiB, then
// the rest; it notes how much the client had sent when the first 64 KiB
// arrived.
type streamUpstream struct {
	client       *countingReader
	tmpDir       string
	clientAtHead int64
	tmpFiles     int
	req          upstream.Request
	digest       []byte
	n            int64
}

func (f *streamUpstream) Do(_ context.Context, req *upstream.Request) (*upstream.Response, error) {
	f.req = *req
	head := make([]byte, 64<<10)
	if _, err := io.ReadFull(req.BodyReader, head); err != nil {
		return nil, err
	}
	f.clientAtHead = f.client.n.Load()
	if entries, err := os.ReadDir(f.tmpDir); err == nil {
		f.tmpFiles = len(entries)
	}
	f.digest, f.n = digestOf(io.MultiReader(bytes.NewReader(head), req.BodyReader))
	return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"text":"long"}`))}, nil
}

func TestAudioStreamsLargeUpload(t *testing.T) {
	tests := []struct {
		name       string
		modelFirst bool
		// maxAtHead bounds what the client had sent when the upstream got
		// its first 64 KiB; tmpFiles is how many temporary files existed then.
		maxAtHead int64
		tmpFiles  int
	}{
		// Streamed: the upstream starts while the client is still sending.
		{"model first", true, 1 << 20, 0},
		// The file waits on disk (not in memory) until the model is known.
		{"model last", false, bigFileSize + 1024, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			wantDigest, wantLen := digestOf(bigUpload(tt.modelFirst))

			client := &countingReader{r: bigUpload(tt.modelFirst)}
			up := &streamUpstream{client: client, tmpDir: tmp}
			cat, _ := upstream.DefaultCatalog()
			svc := openai.New(openai.Config{Upstream: up, Catalog: cat})
			r := testkit.NewRequest(t, testkit.Request{Method: "POST", Target: "/v1/audio/transcriptions", Body: client,
				Header: http.Header{"Content-Type": {audioCT}}, Principal: testkit.Member(mediaTenant)})

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			w := testkit.Record(svc.Transcriptions, r)
			runtime.ReadMemStats(&after)

			if w.Code != 200 || w.Body.String() != `{"text":"long"}` {
				t.Fatalf("answer %d %s", w.Code, w.Body.String())
			}
			if up.clientAtHead > tt.maxAtHead {
				t.Errorf("the client had sent %d bytes when the upstream got its first 64 KiB, want at most %d",
					up.clientAtHead, tt.maxAtHead)
			}
			if up.tmpFiles != tt.tmpFiles {
				t.Errorf("%d temporary files during the call, want %d", up.tmpFiles, tt.tmpFiles)
			}
			if up.n != wantLen || !bytes.Equal(up.digest, wantDigest) {
				t.Errorf("upstream got %d bytes (digest %x), want the %d bytes sent (digest %x)", up.n, up.digest, wantLen, wantDigest)
			}
			if up.req.Alias != "lm-transcribe" || up.req.Path != "/audio/transcriptions" || up.req.ContentType != audioCT ||
				up.req.RequestID != testkit.RequestID || up.req.Body != nil {
				t.Errorf("upstream request %+v", up.req)
			}
			// Allocation during the whole request stays far below the upload.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
				t.Errorf("the request allocated %d bytes for a %d-byte upload", alloc, wantLen)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
				t.Errorf("temporary files left behind: %v", entries)
			}
		})
	}
}

// TestAudioStreamsThroughRouter sends the big upload through the real router
// to an HTTP backend that reads it as a stream.
func TestAudioStreamsThroughRouter(t *testing.T) {
	wantDigest, wantLen := digestOf(&patternReader{size: bigFileSize})
	for _, modelFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("model first %v", modelFirst), func(t *testing.T) {
			client := &countingReader{r: bigUpload(modelFirst)}
			var (
				mu           sync.Mutex
				clientAtHead int64
				model        string
				digest       []byte
				n            int64
				contentType  string
			)
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				contentType = r.Header.Get("Content-Type")
				_, params, _ := mime.ParseMediaType(contentType)
				mr := multipart.NewReader(r.Body, params["boundary"])
				for {
					p, err := mr.NextPart()
					if err != nil {
						break
					}
					switch p.FormName() {
					case "model":
						b, _ := io.ReadAll(p)
						model = string(b)
					case "file":
						var h hash.Hash = sha256.New()
						head := make([]byte, 64<<10)
						k, _ := io.ReadFull(p, head)
						clientAtHead = client.n.Load()
						h.Write(head[:k])
						rest, _ := io.Copy(h, p)
						digest, n = h.Sum(nil), int64(k)+rest
					}
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"text":"routed"}`)
			}))
			defer backend.Close()
			e := newMediaEnvWith(t, nil, upstream.Backends{LocalURL: backend.URL + "/v1"})

			w := e.transcribe(t, client, audioCT, mediaTenant)
			if w.Code != 200 || w.Body.String() != `{"text":"routed"}` {
				t.Fatalf("answer %d %s", w.Code, w.Body.String())
			}
			mu.Lock()
			defer mu.Unlock()
			if model != "lm-whisper:large-v3-turbo" || contentType != audioCT {
				t.Errorf("backend got model %q, Content-Type %q", model, contentType)
			}
			if n != wantLen || !bytes.Equal(digest, wantDigest) {
				t.Errorf("backend got a %d-byte file (digest %x), want %d bytes (digest %x)", n, digest, wantLen, wantDigest)
			}
			if modelFirst && clientAtHead > 4<<20 {
				t.Errorf("the client had sent %d bytes when the backend read the file's first 64 KiB", clientAtHead)
			}
		})
	}
}

// earlyUpstream answers at once and reads the upload in the background, as an
// HTTP transport does when the backend answers before the body was sent. It
// answers once the background read waits for bytes the client has not sent.
type earlyUpstream struct {
	blocked <-chan struct{}
	readErr chan error
}

func (f *earlyUpstream) Do(_ context.Context, req *upstream.Request) (*upstream.Response, error) {
	go func() {
		_, err := io.Copy(io.Discard, req.BodyReader)
		f.readErr <- err
	}()
	select {
	case <-f.blocked:
	case <-time.After(5 * time.Second):
		return nil, errors.New("the upload was never read up to the stall")
	}
	return &upstream.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"text":"early"}`))}, nil
}

// stallBody is a request body that notes the reads starting after the handler
// returned, and signals blocked when a read starts after stallAt bytes (the
// client sent no more).
type stallBody struct {
	io.ReadCloser
	returned *atomic.Bool
	late     *atomic.Int64
	n        int64
	stallAt  int64
	blocked  chan struct{}
	once     sync.Once
}

func (b *stallBody) Read(p []byte) (int, error) {
	if b.returned.Load() {
		b.late.Add(1)
	}
	if b.n >= b.stallAt {
		b.once.Do(func() { close(b.blocked) })
	}
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// TestAudioUpstreamAnswersEarly: an upstream that answers before it read the
// whole upload, while the client stalls. The handler must return (cutting the
// stalled read short after its grace period) and nothing may read the request
// body after that.
func TestAudioUpstreamAnswersEarly(t *testing.T) {
	const sent = len(bigModelPart+bigFileHead) + 128<<10
	blocked := make(chan struct{})
	up := &earlyUpstream{blocked: blocked, readErr: make(chan error, 1)}
	cat, _ := upstream.DefaultCatalog()
	svc := openai.New(openai.Config{Upstream: up, Catalog: cat})
	var returned atomic.Bool
	var late atomic.Int64
	handlerDone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(handlerDone)
		r = r.WithContext(testkit.Context(r.Context(), testkit.Member(mediaTenant)))
		r.Body = &stallBody{ReadCloser: r.Body, returned: &returned, late: &late, stallAt: int64(sent), blocked: blocked}
		svc.Transcriptions(w, r)
		returned.Store(true)
	}))
	defer srv.Close()

	// The client sends the model and the start of a file, then stalls. It
	// may get the answer or a reset connection: the handler cuts the stalled
	// upload short after a grace period, and the server closes the connection.
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		io.WriteString(pw, bigModelPart+bigFileHead)
		pw.Write(make([]byte, 128<<10))
	}()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/audio/transcriptions", pr)
	req.Header.Set("Content-Type", audioCT)
	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		resp, err := srv.Client().Do(req)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != `{"text":"early"}` {
			t.Errorf("answer %d %s", resp.StatusCode, body)
		}
	}()
	select {
	case <-handlerDone:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not return while the client stalled")
	}
	select {
	case err := <-up.readErr:
		if err == nil {
			t.Error("the background read of the upload ended without an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the background read of the upload did not end")
	}
	if n := late.Load(); n != 0 {
		t.Errorf("%d reads of the request body after the handler returned", n)
	}
	pw.CloseWithError(errors.New("client gives up"))
	<-clientDone
}

func TestAudioFallbackNotice(t *testing.T) {
	// lm-transcribe: local, then cloudA. The local backend refuses the
	// connection, so the upload is still unread and goes to cloudA.
	backend := upstreamtest.New(t)
	e := newMediaEnvWith(t, backend, upstream.Backends{LocalURL: upstreamtest.RefusedURL(t), CloudAURL: backend.URL})
	form := audioForm(audioField{"model", "", "lm-transcribe"}, audioField{"file", "a.wav", "RIFF"})
	w := e.transcribe(t, strings.NewReader(form), audioCT, mediaTenant)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body.String())
	}
	if got := w.Header().Get("GW-Notice"); got != "backend_fallback" {
		t.Errorf("GW-Notice = %q, want backend_fallback", got)
	}
	if calls := backend.Calls(); len(calls) != 1 || calls[0].Model != "lm-whisper-large-v3-turbo" {
		t.Errorf("calls %+v, want one with cloudA's alias", calls)
	}
}
