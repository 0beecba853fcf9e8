package relay_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/quota"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/chatgw/gateway/upstream"
)

// TestResponseSettlesTicket checks that Response settles Options.Ticket to
// the usage of the answer, with a Capture of the caller's or one of its own,
// and to the whole reservation when the answer gave none.
func TestResponseSettlesTicket(t *testing.T) {
	const reserve = 100
	usage := `,"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}`
	done := "data: [DONE]\n\n"
	tests := []struct {
		name    string
		resp    func() *upstream.Response
		capture *relay.Capture
		want    int64 // tokens charged
	}{
		{"json with usage", func() *upstream.Response {
			return jsonResponse(`{"id":"c","choices":[]` + usage + `}`)
		}, nil, 7},
		{"json with usage, caller's capture", func() *upstream.Response {
			return jsonResponse(`{"id":"c","choices":[]` + usage + `}`)
		}, new(relay.Capture), 7},
		{"stream with usage", func() *upstream.Response {
			resp, _ := sseResponse(strings.NewReader("data: " + chunk(`{"index":0,"delta":{"content":"hi"}}`) + "\n\n" +
				`data: {"id":"c","choices":[]` + usage + "}\n\n" + done))
			return resp
		}, nil, 7},
		{"stream without usage", func() *upstream.Response {
			resp, _ := sseResponse(strings.NewReader("data: " + chunk(`{"index":0,"delta":{"content":"hi"}}`) + "\n\n" + done))
			return resp
		}, nil, reserve},
		{"stream cut short", func() *upstream.Response {
			resp, _ := sseResponse(strings.NewReader("data: " + chunk(`{"index":0,"delta":{"content":"hi"}}`) + "\n\n"))
			return resp
		}, nil, reserve},
	}
	model := &upstream.ModelInfo{Alias: "m"}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acct := quota.New(quota.Config{Store: memstore.New(), Clock: clock.NewFake(t0)})
			tenant := &auth.Tenant{ID: "acme", Quotas: map[string]auth.Quota{"m": {TokensPerDay: 1000}}}
			ticket, err := acct.Admit(context.Background(), tenant, model, reserve)
			if err != nil || ticket == nil {
				t.Fatalf("Admit = %v, %v", ticket, err)
			}
			r := httptest.NewRequest("POST", "/", nil)
			relay.Response(newRecorder(), r, tt.resp(), relay.Options{Capture: tt.capture, Ticket: ticket})
			if got := testkit.QuotaUsage(t, acct, "acme", "m"); got != (quota.Usage{Requests: 1, Tokens: tt.want}) {
				t.Errorf("usage after the relay = %+v, want %d tokens and nothing reserved", got, tt.want)
			}
		})
	}
}

// TestStreamEndFlushedBeforeSettling: a stream's end is left to the server,
// which sends it with the end of the body once the handler returns, unless a
// quota ticket is still to be settled after the relay (a store transaction):
// then the client gets its end first.
func TestStreamEndFlushedBeforeSettling(t *testing.T) {
	model := &upstream.ModelInfo{Alias: "m"}
	acct := quota.New(quota.Config{Store: memstore.New(), Clock: clock.NewFake(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))})
	tenant := &auth.Tenant{ID: "acme", Quotas: map[string]auth.Quota{"m": {TokensPerDay: 1000}}}
	for _, withTicket := range []bool{false, true} {
		var ticket *quota.Ticket
		if withTicket {
			var err error
			if ticket, err = acct.Admit(context.Background(), tenant, model, 10); err != nil || ticket == nil {
				t.Fatalf("Admit = %v, %v", ticket, err)
			}
		}
		resp, _ := sseResponse(strings.NewReader("data: " + chunk(`{"index":0,"delta":{"content":"hi"}}`) + "\n\ndata: [DONE]\n\n"))
		w := newRecorder()
		if res := relay.Response(w, httptest.NewRequest("POST", "/", nil), resp, relay.Options{Ticket: ticket}); !res.Complete {
			t.Fatalf("ticket %v: Response() = %+v", withTicket, res)
		}
		rest := w.String()[len(w.Flushed()):]
		if want := !withTicket; strings.HasSuffix(rest, "data: [DONE]\n\n") != want {
			t.Errorf("ticket %v: unflushed %q; want the end left to the server: %v", withTicket, rest, want)
		}
	}
}
