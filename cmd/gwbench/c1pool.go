package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
)

// maxPoolUses is how many measured or warm-up turns a pooled conversation
// takes at most, with the automatic pool size: its stored history grows from
// -c1-history messages to at most -c1-history + 2*maxPoolUses.
const maxPoolUses = 8

// convPool holds the continuing conversations of one /c1 scenario at the
// gateway, created with their history before the measure, used in turn.
//
// With several gateway replicas, turn t of conversation k goes to replica
// (k+t) mod replicas, from the first turn that creates it to the last one
// measured: every turn of a conversation goes through another replica than
// the turn before it, which must read what that one wrote (the point of
// replicas on one store), and neighbouring conversations spread the turns
// over the replicas evenly.
type convPool struct {
	ids      []string
	replicas int
	created  int // turns each conversation had when created
	next     atomic.Uint64
}

// pick returns the next conversation, its end user and the replica its turn
// goes to.
func (p *convPool) pick() (id, user string, replica int) {
	c := int(p.next.Add(1) - 1)
	k, pass := c%len(p.ids), c/len(p.ids)
	return p.ids[k], userOf(k), p.replicaOf(k, p.created+pass)
}

// replicaOf is the replica of turn t (from 0) of conversation k.
func (p *convPool) replicaOf(k, t int) int { return (k + t) % p.replicas }

// poolSize is the automatic number of continuing conversations: enough that
// none is continued more than maxPoolUses times in the warm-up and the rounds,
// at least 16 and at most 4000.
func poolSize(cfg config) int {
	if cfg.c1Convs > 0 {
		return cfg.c1Convs
	}
	cont := float64(scheduledCount(cfg.rate, cfg.warmup+cfg.duration)) * cfg.c1Continue
	return min(max(int(cont/maxPoolUses)+1, 16), 4000)
}

// createConversations creates n conversations at the gateway, each with
// history/2 JSON turns (history stored messages), 32 conversations at a time,
// and returns them as a pool. Their ids start with "gwbench-" + prefix. It
// stops at the first failed turn.
func createConversations(ctx context.Context, gw *target, prefix string, n, history int) (*convPool, error) {
	pool := &convPool{ids: make([]string, n), replicas: len(gw.procs), created: history / 2}
	for k := range pool.ids {
		pool.ids[k] = "gwbench-" + prefix + "-" + strconv.Itoa(k)
	}
	urls := gw.urls("/c1/chat")
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(n, 32) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range work {
				body := c1Body(pool.ids[k], history/2, false)
				r := &requester{client: gw.client, urls: urls, token: gw.token,
					build: func(turn int) ([]byte, string, int) { return body, userOf(k), pool.replicaOf(k, turn) }}
				for turn := range history / 2 {
					if out := r.do(ctx, turn); out.err != nil {
						cancel(fmt.Errorf("conversation %s, turn %d: %w", pool.ids[k], turn+1, out.err))
						break
					}
				}
			}
		}()
	}
	for k := range n {
		select {
		case work <- k:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return pool, nil
}
