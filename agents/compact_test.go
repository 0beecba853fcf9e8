package agents_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/google/go-cmp/cmp"
)

// lineage is the answer of GET .../lineage.
type lineage struct {
	Sessions []struct {
		ID                 string  `json:"id"`
		Status             string  `json:"status"`
		SuccessorSessionID *string `json:"successor_session_id"`
	} `json:"sessions"`
}

// chatty returns an env whose session of plain (compact_keep_last_n 2) holds
// the turns one..three (six messages); the upstream answers summary next.
func chatty(t *testing.T, rest ...reply) (*env, session) {
	t.Helper()
	script := append([]reply{text("r1"), text("r2"), text("r3")}, rest...)
	e := newEnv(t, script)
	s := e.create(t, "plain", "u1", `{"compact_keep_last_n":2}`)
	for _, m := range []string{"one", "two", "three"} {
		e.say(t, "plain", "u1", s.ID, m)
	}
	return e, s
}

func TestCompact(t *testing.T) {
	e, s := chatty(t, text("  They said one and two.  "), text("r4"), text("Rolled up."))
	var succ session
	testkit.Decode(t, e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/compact", "u1", ""), 200, &succ)
	if succ.ID == s.ID || succ.Status != "live" || succ.CompactKeepLastN != 2 || succ.SuccessorSessionID != nil ||
		succ.PredecessorSessionID == nil || *succ.PredecessorSessionID != s.ID {
		t.Errorf("successor %+v", succ)
	}
	if succ.Summary == nil || *succ.Summary != "They said one and two." {
		t.Errorf("summary %v", succ.Summary)
	}
	if diff := cmp.Diff([]string{"user: three", "assistant: r3"}, contents(succ)); diff != "" {
		t.Errorf("kept mismatch (-want +got):\n%s", diff)
	}
	// The summarisation call: the agent's model, no tools, the older turns.
	sum := e.up.body(t, 3)
	msgs := e.up.messages(t, 3)
	if sum["model"] != "lm-small" || sum["tools"] != nil || len(msgs) != 2 ||
		!strings.Contains(msgs[1], "user: one\nassistant: r1\nuser: two\nassistant: r2\n") || strings.Contains(msgs[1], "three") {
		t.Errorf("summary call %v %q", sum["model"], msgs)
	}
	old := e.get(t, "plain", "u1", s.ID)
	if old.Status != "archived" || old.SuccessorSessionID == nil || *old.SuccessorSessionID != succ.ID || len(old.Messages) != 6 {
		t.Errorf("archived %+v", old)
	}
	// The archived session is read-only.
	rec := e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/messages", "u1", `{"message":"four"}`)
	testkit.Diff(t, "write to archived: error", testkit.WantError(errcat.SessionCompactConflict, "session_id"), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
	if !strings.Contains(rec.Body.String(), `"successor_session_id":"`+succ.ID+`"`) {
		t.Errorf("write to archived does not name the successor: %s", rec.Body)
	}
	rec = e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/compact", "u1", "")
	testkit.Diff(t, "compact archived: error", testkit.WantError(errcat.SessionCompactConflict, "session_id"), testkit.ErrorOf(t, rec.Code, rec.Body.Bytes()))
	// The successor goes on with the summary first.
	e.say(t, "plain", "u1", succ.ID, "four")
	want := []string{"system: You talk.", "system: Summary of the earlier conversation:\nThey said one and two.", "user: three", "assistant: r3", "user: four"}
	if diff := cmp.Diff(want, e.up.messages(t, 4)); diff != "" {
		t.Errorf("successor history mismatch (-want +got):\n%s", diff)
	}
	// Compacting the successor rolls the earlier summary in, and the lineage
	// is the same from every session of the chain.
	var third session
	testkit.Decode(t, e.do(t, "POST", "/a1/agents/plain/sessions/"+succ.ID+"/compact", "u1", ""), 200, &third)
	if m := e.up.messages(t, 5); !strings.Contains(m[1], "Earlier summary:\nThey said one and two.") {
		t.Errorf("second summary call %q", m)
	}
	if diff := cmp.Diff([]string{"user: four", "assistant: r4"}, contents(third)); diff != "" {
		t.Errorf("third kept mismatch (-want +got):\n%s", diff)
	}
	for _, id := range []string{s.ID, succ.ID, third.ID} {
		var l lineage
		testkit.Decode(t, e.do(t, "GET", "/a1/agents/plain/sessions/"+id+"/lineage", "u1", ""), 200, &l)
		var got []string
		for _, x := range l.Sessions {
			next := "null"
			if x.SuccessorSessionID != nil {
				next = *x.SuccessorSessionID
			}
			got = append(got, x.ID+" "+x.Status+" "+next)
		}
		want := []string{s.ID + " archived " + succ.ID, succ.ID + " archived " + third.ID, third.ID + " live null"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("lineage from %s mismatch (-want +got):\n%s", id, diff)
		}
	}
	var l sessionList
	testkit.Decode(t, e.do(t, "GET", "/a1/agents/plain/sessions", "u1", ""), 200, &l)
	if len(l.Data) != 3 || l.Data[0].ID != third.ID {
		t.Errorf("list %+v", l.Data)
	}
}

func TestCompactExactlyN(t *testing.T) {
	e := newEnv(t, []reply{text("r1")})
	s := e.create(t, "plain", "u1", `{"compact_keep_last_n":2}`)
	e.say(t, "plain", "u1", s.ID, "one")
	rec := e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/compact", "u1", "")
	testkit.CheckError(t, rec, testkit.WantError(errcat.SessionCompactConflict, "session_id"))
	if n := len(e.up.Calls()); n != 1 {
		t.Errorf("%d upstream calls", n)
	}
}

func TestCompactFailureChangesNothing(t *testing.T) {
	t.Run("upstream", func(t *testing.T) {
		e, s := chatty(t, fail(&errcat.Error{Code: errcat.UpstreamUnavailable}))
		rec := e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/compact", "u1", "")
		testkit.CheckError(t, rec, testkit.WantError(errcat.UpstreamUnavailable, ""))
		assertUnchanged(t, e, s)
	})
	t.Run("storage", func(t *testing.T) {
		e, s := chatty(t, text("summary"))
		e.st.FailWith(func(op string) error {
			if op == "View" {
				return nil
			}
			return errors.New("disk full")
		})
		rec := e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/compact", "u1", "")
		testkit.CheckError(t, rec, testkit.WantError(errcat.StorageError, ""))
		e.st.FailWith(nil)
		assertUnchanged(t, e, s)
	})
}

// assertUnchanged checks that session s of chatty is still live, whole and
// alone.
func assertUnchanged(t *testing.T, e *env, s session) {
	t.Helper()
	got := e.get(t, "plain", "u1", s.ID)
	if got.Status != "live" || got.SuccessorSessionID != nil || len(got.Messages) != 6 {
		t.Errorf("session changed: %+v", got)
	}
	var l sessionList
	testkit.Decode(t, e.do(t, "GET", "/a1/agents/plain/sessions", "u1", ""), 200, &l)
	if len(l.Data) != 1 {
		t.Errorf("sessions %+v", l.Data)
	}
	var lin lineage
	testkit.Decode(t, e.do(t, "GET", "/a1/agents/plain/sessions/"+s.ID+"/lineage", "u1", ""), 200, &lin)
	if len(lin.Sessions) != 1 {
		t.Errorf("lineage %+v", lin)
	}
}
