package e2e_test

import (
	"bufio"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/upstream/upstreamtest"
)

// replicas starts n gatewayd on one throw-away PostgreSQL database, each
// with its own fakes, after mod changes replica i's setup (mod may be nil).
// It skips when PostgreSQL is not installed (pgtest says how to get it).
func replicas(t *testing.T, n int, mod func(i int, s *setup)) []*gw {
	t.Helper()
	url := pgtest.New(t).NewDatabase(t)
	gs := make([]*gw, n)
	for i := range gs {
		gs[i] = start(t, func(s *setup) {
			s.Env["GATEWAY_STORE_URL"] = url
			if mod != nil {
				mod(i, s)
			}
		})
	}
	return gs
}

// TestReplicasShareState runs two gatewayd on one PostgreSQL database (issue
// 13; DECISIONS 9.2: "With PostgreSQL every limit ... is shared by all
// replicas using that database"): a conversation goes on through either, a
// token's burst holds across both, and concurrent turns through both lose
// nothing.
func TestReplicasShareState(t *testing.T) {
	t.Parallel()
	gs := replicas(t, 2, nil)
	a, b := gs[0], gs[1]

	t.Run("conversation continues on the other replica", func(t *testing.T) {
		r := c1(t, a, tokMember, "alice", map[string]any{"message": "first", "stream": false, "model": "lm-4-scout-local"})
		if !wantStatus(t, r, 200, "turn 1 on replica a") {
			t.FailNow()
		}
		id := convID(t, r)
		r = c1(t, b, tokMember, "alice", map[string]any{"message": "second", "stream": true, "conversation_id": id, "model": "lm-4-scout-local"})
		wantStatus(t, r, 200, "turn 2 on replica b")
		up := roles(nonSystem(messagesOf(lastBody(t, b.Local, "/chat/completions"))))
		if len(up) != 3 || up[0] != "user:first" || up[2] != "user:second" {
			t.Errorf("replica b sent history %v upstream, want turn 1 (written through a) then 'second'", up)
		}
		_, msgs := history(t, a, tokMember, "alice", id)
		if got := len(nonSystem(msgs)); got != 4 {
			t.Errorf("replica a reads %d messages of the conversation, want 4: %v", got, roles(msgs))
		}
		// Another user of the tenant cannot read it through either replica.
		for _, g := range gs {
			if r, _ := history(t, g, tokMember, "bob", id); r.Status != 404 {
				t.Errorf("bob reads alice's conversation: %d, want 404", r.Status)
			}
		}
	})

	t.Run("a token's burst holds across replicas", func(t *testing.T) {
		// tokSlow: 0.1 a second, burst 2: nothing refills within the loop.
		passed := 0
		for i := range 10 {
			if r := gs[i%2].get(t, "/v1/models", tokSlow, ""); r.Status == 200 {
				passed++
			} else {
				wantErr(t, r, 429, "rate_limit_error", "rate_limit_exceeded", noParam, "spec Limits Rate")
			}
		}
		if passed != 2 {
			t.Errorf("%d of 10 requests over two replicas passed, want the burst of 2 (DECISIONS 9.2)", passed)
		}
	})

	t.Run("a daily quota holds across replicas", func(t *testing.T) {
		// tenant quota: lm-4-scout-local requests_per_day 2, over both replicas.
		var got []int
		for i := range 4 {
			got = append(got, gs[i%2].post(t, "/v1/chat/completions", tokQuota, "", chatBody("lm-4-scout-local", "hi")).Status)
		}
		if fmt.Sprint(got) != "[200 200 429 429]" {
			t.Errorf("statuses %v over two replicas, want [200 200 429 429]: requests_per_day 2 for the fleet (DECISIONS 9.2)", got)
		}
		r := c1(t, b, tokQuota, "u", map[string]any{"message": "hi", "stream": false, "model": "lm-4-scout-local"})
		wantErr(t, r, 429, "rate_limit_error", "model_quota_exhausted", noParam, "DECISIONS 9.2: quotas shared by /v1 and /c1 across replicas")
	})

	t.Run("a memory confirm token of one replica is redeemed once on the other", func(t *testing.T) {
		args := map[string]any{"key": "fleet", "value": "blue", "visibility": "public"}
		remember := func(g *gw) *resp {
			return g.post(t, "/v1/tools/execute", tokMember, "alice", map[string]any{"name": "memory_remember", "arguments": args})
		}
		r := remember(a)
		tok, _ := r.JSON()["confirm_token"].(string)
		if r.Status != 200 || tok == "" {
			t.Fatalf("public memory_remember on replica a: %s, want a confirm token", r)
		}
		args["confirm_token"] = tok
		if r := remember(b); r.Status != 200 || r.JSON()["confirm_required"] == true {
			t.Errorf("the token of replica a redeemed on replica b: %s, want the write done (DECISIONS 9.2: confirm tokens shared)", r)
		}
		wantErr(t, remember(a), 400, "invalid_request_error", "memory_confirm_required", "confirm_token",
			"DECISIONS 8.7: a token confirms one write, on any replica")
	})

	t.Run("concurrent turns on both replicas lose nothing", func(t *testing.T) {
		r := c1(t, a, tokMember, "carol", map[string]any{"message": "start", "stream": false, "model": "lm-4-scout-local"})
		if !wantStatus(t, r, 200, "first turn") {
			t.FailNow()
		}
		id := convID(t, r)
		const turns = 16
		var wg sync.WaitGroup
		for i := range turns {
			wg.Go(func() {
				r := c1(t, gs[i%2], tokMember, "carol", map[string]any{
					"message": fmt.Sprintf("turn %d", i), "stream": i%3 == 0, "conversation_id": id, "model": "lm-4-scout-local"})
				wantStatus(t, r, 200, fmt.Sprintf("concurrent turn %d", i))
			})
		}
		wg.Wait()
		_, msgs := history(t, b, tokMember, "carol", id)
		msgs = nonSystem(msgs)
		if len(msgs) != 2+2*turns {
			t.Fatalf("the conversation holds %d messages after %d acknowledged turns, want %d", len(msgs), 1+turns, 2+2*turns)
		}
		seen := map[string]bool{}
		for i := 0; i < len(msgs); i += 2 {
			if msgs[i]["role"] != "user" || msgs[i+1]["role"] != "assistant" {
				t.Fatalf("messages %d-%d are %v, want a user message and its reply", i, i+1, roles(msgs[i:i+2]))
			}
			seen[textOf(msgs[i])] = true
		}
		for i := range turns {
			if !seen[fmt.Sprintf("turn %d", i)] {
				t.Errorf("turn %d was acknowledged but is not stored", i)
			}
		}
	})
}

// TestReplicaKilledMidStream kills one of three replicas while it streams a
// /c1 turn: the others keep serving, and the store holds no half turn.
func TestReplicaKilledMidStream(t *testing.T) {
	t.Parallel()
	gs := replicas(t, 3, func(i int, s *setup) {
		if i == 0 {
			s.Local = upstreamtest.Config{Reply: upstreamtest.Reply{Chunks: 100, Interval: 50 * time.Millisecond}}
		}
	})
	victim, b := gs[0], gs[1]
	r := c1(t, b, tokMember, "dave", map[string]any{"message": "before", "stream": false, "model": "lm-4-scout-local"})
	if !wantStatus(t, r, 200, "turn before the kill") {
		t.FailNow()
	}
	id := convID(t, r)

	req, _ := http.NewRequest("POST", victim.Base+"/c1/chat", strings.NewReader(
		fmt.Sprintf(`{"message":"cut","stream":true,"conversation_id":%q,"model":"lm-4-scout-local"}`, id)))
	req.Header.Set("Authorization", "Bearer "+tokMember)
	req.Header.Set("GW-User-Id", "dave")
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if line, _ := bufio.NewReader(res.Body).ReadString('\n'); !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, want a chunk", line)
	}
	victim.Kill()

	for _, g := range gs[1:] {
		if r := g.get(t, "/v1/models", tokMember, ""); r.Status != 200 {
			t.Errorf("a surviving replica answers %d after the kill, want 200", r.Status)
		}
	}
	r = c1(t, gs[2], tokMember, "dave", map[string]any{"message": "after", "stream": false, "conversation_id": id, "model": "lm-4-scout-local"})
	wantStatus(t, r, 200, "turn after the kill on another replica")
	_, msgs := history(t, b, tokMember, "dave", id)
	if got, want := roles(nonSystem(msgs)), 4; len(got) != want || !strings.HasPrefix(got[0], "user:before") || !strings.HasPrefix(got[2], "user:after") {
		t.Errorf("stored %v, want the turns before and after the kill and nothing of the cut one", got)
	}
}

// TestDatabaseDown stops the PostgreSQL server under two gatewayd (DECISIONS
// 9.2: "GATEWAY_RATE_LIMIT_FAIL_OPEN (default false) lets requests through
// without the rate limit while the database is unreachable; everything else
// fails closed (500 storage_error)"), then starts it again.
func TestDatabaseDown(t *testing.T) {
	t.Parallel()
	c := pgtest.New(t)
	url := c.NewDatabase(t)
	gs := make([]*gw, 2)
	for i, open := range []string{"false", "true"} {
		gs[i] = start(t, func(s *setup) {
			s.Env["GATEWAY_STORE_URL"] = url
			s.Env["GATEWAY_RATE_LIMIT_FAIL_OPEN"] = open
		})
	}
	closed, open := gs[0], gs[1]
	c.Stop(t)
	r := closed.get(t, "/v1/models", tokMember, "")
	wantErr(t, r, 500, "api_error", "storage_error", noParam, "DECISIONS 9.2: the rate limit fails closed by default")
	if r := open.get(t, "/v1/models", tokMember, ""); r.Status != 200 {
		t.Errorf("fail-open replica answers %d with the database down, want 200 (DECISIONS 9.2)", r.Status)
	}
	r = c1(t, open, tokMember, "erin", map[string]any{"message": "hi", "stream": false, "model": "lm-4-scout-local"})
	wantErr(t, r, 500, "api_error", "storage_error", noParam, "DECISIONS 9.2: everything but the rate limit fails closed")
	if !strings.Contains(open.stderr.String(), "fail-open") {
		t.Errorf("the fail-open replica did not log that it let a request through unlimited")
	}

	c.Start(t)
	for _, g := range gs {
		ok := waitFor(10*time.Second, func() bool {
			return c1(t, g, tokMember, "erin", map[string]any{"message": "back", "stream": false, "model": "lm-4-scout-local"}).Status == 200
		})
		if !ok {
			t.Errorf("%s: /c1 does not work again after the database is back", g.Base)
		}
	}
}

// TestReplicasShareRuns: a coding-agent run started through one replica is
// read (with its live output) and cancelled through another (issue 13: "a
// run started on one replica can be cancelled on the other").
func TestReplicasShareRuns(t *testing.T) {
	t.Parallel()
	sh := lookPath(t, "/bin/sh")
	script := filepath.Join(t.TempDir(), "agent.sh")
	writeFile(t, script, "echo started $GW_RUN_ID\nexec sleep 30\n")
	gs := replicas(t, 2, func(_ int, s *setup) {
		s.Tokens = a1TokenFile()
		s.Env["GATEWAY_CODING_AGENT_CMD"] = sh + " " + script
		s.Env["TMPDIR"] = t.TempDir()
	})
	a, b := gs[0], gs[1]
	id := str(a1Must(t, a.post(t, "/a1/runs", tokMember, "alice", runBody(a1Repo, "FLEET-1"))).JSON()["id"])
	run := a1WaitRun(t, b, "alice", id, "running")
	if run["started_at"] == nil {
		t.Errorf("replica b reads run %v without started_at", run)
	}
	wantErr(t, b.post(t, "/a1/runs", tokMember, "bob", runBody(a1Repo, "FLEET-1")), 409, "conflict_error", "agent_busy", noParam,
		"spec Codes agent_busy: across replicas")
	ok := waitFor(10*time.Second, func() bool {
		return strings.Contains(str(b.get(t, "/a1/runs/"+id, tokMember, "alice").JSON()["output"]), "started "+id)
	})
	if !ok {
		t.Errorf("replica b never shows the output of the run replica a runs: %s", b.get(t, "/a1/runs/"+id, tokMember, "alice"))
	}
	r := b.post(t, "/a1/runs/"+id+"/cancel", tokMember, "alice", nil)
	if wantStatus(t, r, 200, "DECISIONS 8.26 cancel, through the other replica") && r.JSON()["status"] != "cancelled" {
		t.Errorf("cancel through replica b answered %s, want status cancelled", r.Body)
	}
	for _, g := range gs {
		a1WaitRun(t, g, "alice", id, "cancelled")
	}
	// The work item is free again on either replica.
	id2 := str(a1Must(t, b.post(t, "/a1/runs", tokMember, "alice", runBody(a1Repo, "FLEET-1"))).JSON()["id"])
	a1WaitRun(t, a, "alice", id2, "running")
}
