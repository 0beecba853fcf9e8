package httpx

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/chatgw/gateway/internal/wire"
)

// Meter tallies what the upstream calls of one metered request (a chat,
// embeddings or image request) used, for its usage record: the root's
// middleware starts it before the handler runs and reads Totals after it
// returned; the root's upstream wrapper notes each call (Call), and whoever
// reads an answer reports its usage object (Report). The Meter lives in the
// request's Info, so metering allocates nothing.
//
// Report sets the usage of the current call rather than adding to it, so that
// an answer read by two readers (an agent's last round, read whole by the
// tool loop and then relayed) counts once; Call closes the current call and
// starts the next, so that the calls of a tool loop add up. Every method is
// safe for concurrent use and does nothing on a nil *Meter, which is what
// MeterOf gives for a request that is not metered.
type Meter struct {
	mu      sync.Mutex
	on      bool
	calls   int
	alias   string // of the last call
	backend string // provider of the last call that answered
	in, out int64  // of the calls before the current one
	missing bool   // a call before the current one answered without usage
	cur     meterCall
}

// meterCall is the current call of a Meter.
type meterCall struct {
	answered, reported bool
	in, out            int64
}

// MeterTotals is what a Meter tallied.
type MeterTotals struct {
	// Calls is the number of upstream calls made; 0 means the request was
	// answered before any (it gets no usage record).
	Calls int
	// Alias is the public alias of the last call.
	Alias string
	// Backend is the provider (local, cloudA, cloudB) of the last call that
	// answered, "" when none did.
	Backend string
	// InputTokens and OutputTokens add up what the answers reported.
	InputTokens, OutputTokens int64
	// UsageMissing is true when an answer reported no usage (a /v1 stream
	// without stream_options.include_usage, an answer cut short): the token
	// counts are then lower than what was used.
	UsageMissing bool
}

// Start meters the request: MeterOf returns m from now on.
func (m *Meter) Start() {
	m.mu.Lock()
	m.on = true
	m.mu.Unlock()
}

// Call notes an upstream call for alias, which backend (a provider) answered;
// backend "" means the call failed without an answer.
func (m *Meter) Call(alias, backend string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cur
	m.in += c.in
	m.out += c.out
	m.missing = m.missing || (c.answered && !c.reported)
	m.calls++
	m.alias = alias
	if backend != "" {
		m.backend = backend
	}
	m.cur = meterCall{answered: backend != ""}
}

// Report sets the usage of the current call's answer to usage, the answer's
// usage object verbatim (wire.Tokens reads it); an absent or unreadable one
// leaves the call as it was.
func (m *Meter) Report(usage json.RawMessage) {
	if m == nil {
		return
	}
	in, out, ok := wire.Tokens(usage)
	if !ok {
		return
	}
	m.mu.Lock()
	m.cur.in, m.cur.out, m.cur.reported = in, out, true
	m.mu.Unlock()
}

// Totals returns what m tallied so far; the zero MeterTotals for a nil m.
func (m *Meter) Totals() MeterTotals {
	if m == nil {
		return MeterTotals{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cur
	return MeterTotals{Calls: m.calls, Alias: m.alias, Backend: m.backend,
		InputTokens: m.in + c.in, OutputTokens: m.out + c.out,
		UsageMissing: m.missing || (c.answered && !c.reported)}
}

// MeterOf returns the Meter of the request of ctx when the request is
// metered (Meter.Start), else nil. It never allocates.
func MeterOf(ctx context.Context) *Meter {
	info, ok := ctx.Value(infoKey{}).(*Info)
	if !ok {
		return nil
	}
	m := &info.Meter
	m.mu.Lock()
	on := m.on
	m.mu.Unlock()
	if !on {
		return nil
	}
	return m
}
