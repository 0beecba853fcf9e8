package preflight_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/guard"
	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/internal/preflight"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/google/go-cmp/cmp"
)

// fakeClassifier records what it is asked and answers verdict and err, after
// release is closed when it is set.
type fakeClassifier struct {
	verdict guard.Verdict
	err     error
	release chan struct{}

	mu    sync.Mutex
	asked []guard.Input
	done  chan struct{} // closed after the first answer
}

func newFakeClassifier(v guard.Verdict, err error) *fakeClassifier {
	return &fakeClassifier{verdict: v, err: err, done: make(chan struct{})}
}

func (f *fakeClassifier) Classify(ctx context.Context, in guard.Input) (guard.Verdict, error) {
	f.mu.Lock()
	f.asked = append(f.asked, in)
	f.mu.Unlock()
	if f.release != nil {
		<-f.release
	}
	defer func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		select {
		case <-f.done:
		default:
			close(f.done)
		}
	}()
	return f.verdict, f.err
}

func (f *fakeClassifier) inputs() []guard.Input {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]guard.Input(nil), f.asked...)
}

// guardContext is a request context whose Info logs to the returned buffer.
func guardContext() (context.Context, *testkit.Buffer) {
	logs := new(testkit.Buffer)
	info := new(httpx.Info)
	info.Init("req_guard", slog.New(slog.NewJSONHandler(logs, nil)))
	info.Route, info.Tenant = "/v1/chat/completions", "acme"
	return httpx.WithInfo(context.Background(), info), logs
}

var flagged = guard.Verdict{Categories: []guard.Category{
	{Name: "violence", Score: 1, Native: "Violence", Classifier: guard.ClassifierRules},
	{Name: "hate", Score: 0.93, Native: "hate", Classifier: guard.ClassifierModeration},
	{Name: "violence", Score: 0.7, Native: "violence", Classifier: guard.ClassifierModeration},
}}

func guardRequest(mode, body string, g *preflight.Guard) *preflight.Request {
	return &preflight.Request{
		Body:    []byte(body),
		Tenant:  &auth.Tenant{ID: "acme", Settings: auth.Settings{ContentGuard: mode}},
		Catalog: testCatalog(),
		Guard:   g,
	}
}

// guardBody has every kind of message and content; lm-url takes image URLs.
const guardBody = `{"model":"lm-url","messages":[` +
	`{"role":"system","content":"system text"},` +
	`{"role":"user","content":"first question"},` +
	`{"role":"assistant","content":"an answer"},` +
	`{"role":"tool","content":"tool text","tool_call_id":"c"},` +
	`{"role":"user","content":[{"type":"text","text":"second"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}},` +
	`{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"text","text":""},{"type":"text","text":"third"}]}],` +
	`"attachments":[{"kind":"document","doc_name":"a.txt","content":"doc text"}]}`

// TestGuardBlock: a block tenant's request is classified before Check
// returns; a flagged one (even beside a failure, as a chain answers) is
// content_blocked with the categories sorted and deduplicated in param; a
// failure, or no classifier, is upstream_unavailable.
func TestGuardBlock(t *testing.T) {
	for _, tc := range []struct {
		name      string
		c         guard.Classifier
		wantCode  errcat.Code
		wantParam string
		wantLog   string
	}{
		{"clean", newFakeClassifier(guard.Verdict{}, nil), "", "", ""},
		{"flagged", newFakeClassifier(flagged, nil), errcat.ContentBlocked, "hate,violence",
			`"msg":"content guard flagged the request","mode":"block","tenant":"acme","user":"u1","route":"/v1/chat/completions",` +
				`"categories":"hate,violence","classifier":"moderation,rules","scores":{"hate":0.93,"violence":1},"request_id":"req_guard"}`},
		{"flagged beside a failure", newFakeClassifier(flagged, guard.ErrUnavailable), errcat.ContentBlocked, "hate,violence", `"mode":"block"`},
		{"failed", newFakeClassifier(guard.Verdict{}, guard.ErrUnavailable), errcat.UpstreamUnavailable, "",
			`"msg":"content guard could not classify the request: refused","mode":"block"`},
		{"no classifier", nil, errcat.UpstreamUnavailable, "", `"error":"preflight: no content guard classifier is configured"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, logs := guardContext()
			res, err := preflight.Check(ctx, guardRequest("block", guardBody, &preflight.Guard{Classifier: tc.c, User: "u1"}))
			if tc.wantCode == "" {
				if err != nil || res == nil {
					t.Fatalf("Check = %v, want a result", err)
				}
				return
			}
			e := errcat.As(err)
			if e.Code != tc.wantCode || e.Param != tc.wantParam {
				t.Fatalf("Check error = %s (param %q), want %s (param %q)", e.Code, e.Param, tc.wantCode, tc.wantParam)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("log = %s\nwant it to hold %s", logs, tc.wantLog)
			}
			for _, secret := range []string{"first question", "second", "doc text"} {
				if strings.Contains(logs.String(), secret) {
					t.Errorf("log holds the content %q: %s", secret, logs)
				}
			}
		})
	}
}

// TestGuardInput: /v1 and agent chat classify every user message, /c1 and
// session messages only the new one; each text part is a text of its own,
// document attachments are classified with the last user message, and image
// parts go as URLs.
func TestGuardInput(t *testing.T) {
	attached := []string{"second", "third", "Document a.txt:\ndoc text"}
	for _, tc := range []struct {
		name    string
		newOnly bool
		want    guard.Input
	}{
		{"every user message", false, guard.Input{Texts: append([]string{"first question"}, attached...), Images: []string{"https://example.com/a.png"}}},
		{"the new message", true, guard.Input{Texts: attached, Images: []string{"https://example.com/a.png"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClassifier(guard.Verdict{}, nil)
			ctx, _ := guardContext()
			if _, err := preflight.Check(ctx, guardRequest("block", guardBody, &preflight.Guard{Classifier: c, NewOnly: tc.newOnly})); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]guard.Input{tc.want}, c.inputs()); diff != "" {
				t.Errorf("classified mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGuardNotAsked: nothing is classified for a tenant whose guard is off,
// a request without a Guard (the gateway's own, such as a compaction), or one
// with no user text.
func TestGuardNotAsked(t *testing.T) {
	noText := `{"model":"lm-4-scout","messages":[{"role":"system","content":"s"},{"role":"user","content":""}]}`
	for _, tc := range []struct {
		name, mode, body string
		noGuard          bool
	}{
		{"off", "off", guardBody, false},
		{"unset", "", guardBody, false},
		{"no guard", "block", guardBody, true},
		{"no user text", "block", noText, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClassifier(flagged, nil)
			g := &preflight.Guard{Classifier: c}
			if tc.noGuard {
				g = nil
			}
			if _, err := preflight.Check(context.Background(), guardRequest(tc.mode, tc.body, g)); err != nil {
				t.Fatalf("Check: %v", err)
			}
			if got := c.inputs(); len(got) != 0 {
				t.Errorf("classified %v, want nothing", got)
			}
		})
	}
}

// TestGuardBlockComesFirst: a blocked request is refused before the cloud
// consent check, whose ;persist grants would be stored, and a request that
// fails an earlier check is not classified.
func TestGuardBlockComesFirst(t *testing.T) {
	consents := preflight.NewStoreConsents(memstore.New(), clock.NewFake(time.Unix(0, 0)))
	hash := preflight.DocumentHash("doc text")
	persisted := func(c guard.Classifier) (errcat.Code, bool) {
		req := guardRequest("block", `{"model":"lm-4-scout","messages":[{"role":"user","content":"hi"}],`+
			`"attachments":[{"kind":"document","doc_name":"a.txt","content":"doc text"}]}`, &preflight.Guard{Classifier: c})
		req.Tenant.Settings.CloudDocConsent = true
		req.Consents, req.CloudConsent = consents, hash+";persist"
		_, err := preflight.Check(context.Background(), req)
		granted, gerr := consents.Granted(context.Background(), "acme", hash)
		if gerr != nil {
			t.Fatal(gerr)
		}
		if err != nil {
			return errcat.As(err).Code, granted
		}
		return "", granted
	}
	if code, granted := persisted(newFakeClassifier(flagged, nil)); code != errcat.ContentBlocked || granted {
		t.Errorf("blocked request: code %q, consent stored %v; want content_blocked and nothing stored", code, granted)
	}
	if code, granted := persisted(newFakeClassifier(guard.Verdict{}, nil)); code != "" || !granted {
		t.Errorf("clean request: code %q, consent stored %v; want it passed and its grant stored", code, granted)
	}

	c := newFakeClassifier(flagged, nil)
	bad := guardRequest("block", `{"model":"lm-4-scout","messages":[{"role":"user","content":"x"}],"temperature":9}`, &preflight.Guard{Classifier: c})
	if _, err := preflight.Check(context.Background(), bad); errcat.As(err).Code != errcat.InvalidField {
		t.Fatalf("Check error = %v, want invalid_field", err)
	}
	if got := c.inputs(); len(got) != 0 {
		t.Errorf("classified %v: a request that fails an earlier check is not classified", got)
	}
}

// TestGuardAudit: an audit tenant's request passes at once, while the
// classifier has not answered; a flagged verdict or a failure is logged when
// it comes, even after the request's context ended.
func TestGuardAudit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		verdict guard.Verdict
		err     error
		wantLog string
	}{
		{"flagged", flagged, nil, `"msg":"content guard flagged the request","mode":"audit","tenant":"acme","user":"u1","route":"/v1/chat/completions","categories":"hate,violence"`},
		{"failed", guard.Verdict{}, errors.New("guard: moderation: unavailable"), `"msg":"content guard could not classify the request: let through","mode":"audit"`},
		{"clean", guard.Verdict{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClassifier(tc.verdict, tc.err)
			c.release = make(chan struct{})
			ctx, logs := guardContext()
			ctx, cancel := context.WithCancel(ctx)
			if _, err := preflight.Check(ctx, guardRequest("audit", guardBody, &preflight.Guard{Classifier: c, User: "u1"})); err != nil {
				t.Fatalf("Check: %v", err)
			}
			cancel() // the request ended before the verdict
			close(c.release)
			select {
			case <-c.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the audit never classified")
			}
			if tc.wantLog == "" {
				time.Sleep(10 * time.Millisecond) // a line would follow the answer at once
				if logs.String() != "" {
					t.Errorf("a clean audit logged %s", logs)
				}
				return
			}
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(logs.String(), tc.wantLog) {
				if time.Now().After(deadline) {
					t.Fatalf("log = %s\nwant it to hold %s", logs, tc.wantLog)
				}
				time.Sleep(time.Millisecond)
			}
			if strings.Contains(logs.String(), "first question") {
				t.Errorf("log holds the content: %s", logs)
			}
		})
	}
}
