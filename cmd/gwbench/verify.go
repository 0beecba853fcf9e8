package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
)

// acks counts the /c1 turns the gateway acknowledged, per conversation: a
// 200 whose answer was read to its end, the conversation named by the
// gw-conversation-id header. After the rounds, verifyPersisted compares
// them with what the store holds. It is safe for concurrent use.
type acks struct {
	mu    sync.Mutex
	convs map[string]*ackedConv
}

// ackedConv is one conversation's owner and acknowledged turns.
type ackedConv struct {
	user  string
	turns int
	base  int // messages stored before the scenario: a pooled conversation's history
}

func newAcks() *acks { return &acks{convs: map[string]*ackedConv{}} }

// expect adds a conversation that holds base messages before the scenario,
// so that it is checked even when no turn of it is acknowledged.
func (a *acks) expect(id, user string, base int) {
	a.mu.Lock()
	a.convs[id] = &ackedConv{user: user, base: base}
	a.mu.Unlock()
}

// add counts one acknowledged turn of conversation id, owned by user.
func (a *acks) add(id, user string) {
	a.mu.Lock()
	c := a.convs[id]
	if c == nil {
		c = &ackedConv{user: user}
		a.convs[id] = c
	}
	c.turns++
	a.mu.Unlock()
}

// persistReport is what verifyPersisted found. Every acknowledged turn must
// be stored (Lost 0); a turn the client saw fail may still have been
// committed, so more messages than acknowledged (Beyond) is no loss.
type persistReport struct {
	Conversations int `json:"conversations"`
	AckedTurns    int `json:"acknowledged_turns"`
	// LostTurns counts acknowledged turns missing from the store; Beyond the
	// turns stored that no client saw acknowledged; ReadErrors the
	// conversations that could not be read.
	LostTurns   int `json:"lost_turns"`
	BeyondTurns int `json:"beyond_turns"`
	ReadErrors  int `json:"read_errors"`
}

// ok reports whether every acknowledged turn was found.
func (p *persistReport) ok() bool { return p != nil && p.LostTurns == 0 && p.ReadErrors == 0 }

func (p *persistReport) String() string {
	return fmt.Sprintf("%d acknowledged turns in %d conversations read back through the gateway: %d lost, %d stored beyond the acknowledged, %d conversations unreadable",
		p.AckedTurns, p.Conversations, p.LostTurns, p.BeyondTurns, p.ReadErrors)
}

// verifyPersisted reads every conversation a counted through the gateway
// (GET /c1/conversations/{id}, its replicas in turn, 32 at a time) and counts
// the acknowledged turns (two messages each) that its history lacks.
func verifyPersisted(ctx context.Context, gw *target, a *acks) *persistReport {
	a.mu.Lock()
	defer a.mu.Unlock()
	rep := &persistReport{Conversations: len(a.convs)}
	var mu sync.Mutex
	type job struct {
		id string
		c  *ackedConv
	}
	work := make(chan job)
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			base := gw.procs[w%len(gw.procs)].url
			for j := range work {
				c := j.c
				n, err := storedMessages(ctx, gw, base, j.id, c.user)
				mu.Lock()
				rep.add(c, n, err)
				mu.Unlock()
			}
		}()
	}
	for id, c := range a.convs {
		if id == "" { // acknowledged without a conversation id: not findable
			mu.Lock()
			rep.AckedTurns += c.turns
			rep.LostTurns += c.turns
			mu.Unlock()
			continue
		}
		work <- job{id, c}
	}
	close(work)
	wg.Wait()
	return rep
}

// add accounts for one conversation that holds n messages (err: unreadable).
func (p *persistReport) add(c *ackedConv, n int, err error) {
	p.AckedTurns += c.turns
	if err != nil {
		p.ReadErrors++
		return
	}
	stored := (n - c.base) / 2
	p.LostTurns += max(c.turns-stored, 0)
	p.BeyondTurns += max(stored-c.turns, 0)
}

// storedMessages returns how many messages conversation id of user holds; a
// conversation that does not exist holds none.
func storedMessages(ctx context.Context, gw *target, base, id, user string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/c1/conversations/"+url.PathEscape(id), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+gw.token)
	req.Header.Set("GW-User-Id", user)
	resp, err := gw.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return 0, nil
	}
	if resp.StatusCode != http.StatusOK {
		return 0, readStatusError(resp)
	}
	var conv struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&conv); err != nil {
		return 0, fmt.Errorf("conversation %s: %w", id, err)
	}
	return len(conv.Messages), nil
}
