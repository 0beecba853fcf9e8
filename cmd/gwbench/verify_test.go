package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestVerifyPersisted checks the count of lost and extra turns against a
// gateway stand-in that holds some conversations, each readable only by its
// owner, and fails one read.
func TestVerifyPersisted(t *testing.T) {
	stored := map[string]int{ // conversation -> messages held
		"pooled": 24, "pooled-short": 21, "fresh": 2, "extra": 4, "broken": 2,
	}
	owner := map[string]string{"pooled": "u1", "pooled-short": "u2", "fresh": "u3", "extra": "u4", "broken": "u5", "absent": "u6"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimPrefix(r.URL.Path, "/c1/conversations/")
		switch {
		case r.Header.Get("Authorization") != "Bearer tok":
			http.Error(w, `{"error":{"code":"invalid_token"}}`, http.StatusUnauthorized)
		case id == "broken":
			http.Error(w, `{"error":{"code":"storage_error"}}`, http.StatusInternalServerError)
		case stored[id] == 0 || r.Header.Get("GW-User-Id") != owner[id]:
			http.Error(w, `{"error":{"code":"conversation_not_found"}}`, http.StatusNotFound)
		default:
			msgs := strings.Repeat(`{"role":"user","content":"x"},`, stored[id])
			fmt.Fprintf(w, `{"conversation_id":%q,"messages":[%s]}`, id, strings.TrimSuffix(msgs, ","))
		}
	}))
	defer srv.Close()
	gw := &target{name: targetGateway, procs: []*server{{url: srv.URL}, {url: srv.URL}}, client: srv.Client(), token: "tok"}

	a := newAcks()
	a.expect("pooled", "u1", 20)
	a.expect("pooled-short", "u2", 20) // one message of its one turn missing
	for _, ack := range []struct{ id, user string }{
		{"pooled", "u1"}, {"pooled", "u1"}, {"pooled-short", "u2"},
		{"fresh", "u3"}, {"extra", "u4"}, {"broken", "u5"}, {"absent", "u6"}, {"", "u7"},
	} {
		a.add(ack.id, ack.user)
	}
	got := verifyPersisted(context.Background(), gw, a)
	want := &persistReport{Conversations: 7, AckedTurns: 8, LostTurns: 3, BeyondTurns: 1, ReadErrors: 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verifyPersisted (-want +got):\n%s", diff)
	}
	if got.ok() {
		t.Error("ok() with lost turns")
	}
	if !(&persistReport{Conversations: 1, AckedTurns: 1, BeyondTurns: 1}).ok() {
		t.Error("not ok() with nothing lost")
	}
}

// TestScenarioRunTwiceReadsBack runs c1-json twice on one gateway, as the
// goal plan runs c1-sse: each run must read back exactly the turns it was
// acknowledged, so the second must not continue the first one's pool.
func TestScenarioRunTwiceReadsBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes: not in -short")
	}
	cfg, err := parseFlags([]string{"-quick", "-targets", "gateway", "-scenarios", "c1-json",
		"-duration", "200ms", "-warmup", "50ms", "-rate", "200"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	b := &bench{cfg: cfg, log: &lockedWriter{w: &stderr}, runTag: "twice"}
	defer b.close()
	if err := b.start(exe); err != nil {
		t.Fatalf("start: %v\n%s", err, stderr.String())
	}
	sc, _ := scenarioByName("c1-json")
	for run := range 2 {
		rs := b.runScenario(context.Background(), sc)
		gw := targetOf(&rs, targetGateway)
		if gw == nil || gw.Persisted == nil {
			t.Fatalf("run %d: no read-back in %+v\n%s", run+1, rs, stderr.String())
		}
		if p := gw.Persisted; p.AckedTurns < gw.OK || !p.ok() || p.BeyondTurns != 0 {
			t.Errorf("run %d: %d ok, read back %+v; want every acknowledged turn, none beyond", run+1, gw.OK, *p)
		}
	}
}
