package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// replicaLog records which of several fake replicas each request reached.
type replicaLog struct {
	mu    sync.Mutex
	turns map[string][]int // conversation id -> replica of each of its turns
	fresh []int            // replica of each new-conversation or /v1 request
}

// newReplicas starts n fake gateway processes that answer every request
// with 200 and record it, and returns a gateway target over them.
func newReplicas(t *testing.T, n int) (*target, *replicaLog) {
	t.Helper()
	log := &replicaLog{turns: map[string][]int{}}
	tg := &target{name: targetGateway, client: &http.Client{}, token: "tok"}
	for i := range n {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				ConversationID string `json:"conversation_id"`
			}
			json.NewDecoder(r.Body).Decode(&body)
			log.mu.Lock()
			if body.ConversationID != "" {
				log.turns[body.ConversationID] = append(log.turns[body.ConversationID], i)
			} else {
				log.fresh = append(log.fresh, i)
			}
			log.mu.Unlock()
			w.Write([]byte(`{}`))
		}))
		t.Cleanup(ts.Close)
		tg.procs = append(tg.procs, &server{url: ts.URL})
	}
	return tg, log
}

// TestRequestsSpreadOverReplicas checks that the gateway's requests take
// its replicas in turn, and that every turn of a pooled /c1 conversation,
// from its creation to its continuations, goes to another replica than the
// turn before it.
func TestRequestsSpreadOverReplicas(t *testing.T) {
	ctx := context.Background()
	cfg := config{c1Continue: 0.5, c1History: 6}
	sc := scenario{name: "c1-json", c1: true}

	t.Run("v1", func(t *testing.T) {
		tg, log := newReplicas(t, 3)
		r := newRequester(scenario{name: "v1-json"}, tg, cfg, nil)
		for i := range 6 {
			if out := r.do(ctx, i); out.err != nil {
				t.Fatal(out.err)
			}
		}
		if diff := cmp.Diff([]int{0, 1, 2, 0, 1, 2}, log.fresh); diff != "" {
			t.Errorf("replicas of /v1 requests mismatch (-want +got):\n%s", diff)
		}
	})

	t.Run("c1", func(t *testing.T) {
		tg, log := newReplicas(t, 2)
		pool, err := createConversations(ctx, tg, "tag-c1-json", 3, cfg.c1History)
		if err != nil {
			t.Fatal(err)
		}
		r := newRequester(sc, tg, cfg, pool)
		for i := range 12 { // 6 new conversations, 6 continued turns: 2 per pooled conversation
			if out := r.do(ctx, i); out.err != nil {
				t.Fatal(out.err)
			}
		}
		// 3 turns when created, then 2 continued: alternating, from k mod 2.
		want := map[string][]int{
			"gwbench-tag-c1-json-0": {0, 1, 0, 1, 0},
			"gwbench-tag-c1-json-1": {1, 0, 1, 0, 1},
			"gwbench-tag-c1-json-2": {0, 1, 0, 1, 0},
		}
		if diff := cmp.Diff(want, log.turns); diff != "" {
			t.Errorf("replicas of each conversation's turns mismatch (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int{0, 1, 0, 1, 0, 1}, log.fresh); diff != "" {
			t.Errorf("replicas of new conversations mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestTargetStatSums checks that a target of several processes counts the
// CPU time and memory of each: here the test process, twice.
func TestTargetStatSums(t *testing.T) {
	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	proc := &server{cmd: &exec.Cmd{Process: self}}
	one := (&target{procs: []*server{proc}}).stat()
	two := (&target{procs: []*server{proc, proc}}).stat()
	// CPU time only grows between the reads; the resident memory of a
	// running process may shrink a little, hence 5% of slack.
	if one.PeakRSSKB == 0 || two.PeakRSSKB < 2*one.PeakRSSKB*95/100 || two.CPU < 2*one.CPU {
		t.Errorf("stat of the same process twice = %+v, want at least twice the stat of it once, %+v", two, one)
	}
}
