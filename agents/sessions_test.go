package agents_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/auth"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// session is a session as the API answers it.
type session struct {
	ID                   string           `json:"id"`
	AgentName            string           `json:"agent_name"`
	UserID               string           `json:"user_id"`
	Status               string           `json:"status"`
	CompactKeepLastN     int              `json:"compact_keep_last_n"`
	SuccessorSessionID   *string          `json:"successor_session_id"`
	PredecessorSessionID *string          `json:"predecessor_session_id"`
	Summary              *string          `json:"summary"`
	MessageCount         int              `json:"message_count"`
	CreatedAt            string           `json:"created_at"`
	UpdatedAt            string           `json:"updated_at"`
	Messages             []map[string]any `json:"messages"`
}

type sessionList struct {
	Object  string    `json:"object"`
	Data    []session `json:"data"`
	Limit   int       `json:"limit"`
	Offset  int       `json:"offset"`
	HasMore bool      `json:"has_more"`
}

// create makes a session of agent for user and returns it.
func (e *env) create(t *testing.T, agent, user, body string, headers ...string) session {
	t.Helper()
	var s session
	testkit.Decode(t, e.do(t, "POST", "/a1/agents/"+agent+"/sessions", user, body, headers...), 201, &s)
	e.clock.Advance(time.Second)
	return s
}

// say posts message to session sid of agent as user and returns the reply.
func (e *env) say(t *testing.T, agent, user, sid, message string) string {
	t.Helper()
	rec := e.do(t, "POST", "/a1/agents/"+agent+"/sessions/"+sid+"/messages", user, fmt.Sprintf(`{"message":%q}`, message))
	if rec.Code != 200 {
		t.Fatalf("message: %d %s", rec.Code, rec.Body)
	}
	return replyText(t, rec.Body.Bytes())
}

// get returns session sid as user sees it.
func (e *env) get(t *testing.T, agent, user, sid string, headers ...string) session {
	t.Helper()
	var s session
	testkit.Decode(t, e.do(t, "GET", "/a1/agents/"+agent+"/sessions/"+sid, user, "", headers...), 200, &s)
	return s
}

func contents(s session) []string {
	var out []string
	for _, m := range s.Messages {
		out = append(out, fmt.Sprint(m["role"], ": ", m["content"]))
	}
	return out
}

func TestCreateSession(t *testing.T) {
	e := newEnv(t, nil)
	got := e.create(t, "helper", "u1", "")
	want := session{
		AgentName: "helper", UserID: "u1", Status: "live", CompactKeepLastN: 20,
		CreatedAt: "2025-03-01T12:00:00Z", UpdatedAt: "2025-03-01T12:00:00Z", Messages: []map[string]any{},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(session{}, "ID")); diff != "" {
		t.Errorf("session mismatch (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(got.ID, "sess_") {
		t.Errorf("id %q", got.ID)
	}
	if s := e.create(t, "helper", "u1", `{"compact_keep_last_n":3}`); s.CompactKeepLastN != 3 {
		t.Errorf("explicit n = %d", s.CompactKeepLastN)
	}
	rec := e.do(t, "PUT", "/v1/tenant/config", "", `{"key":"compact_keep_last_n","value":7}`)
	if rec.Code != 200 {
		t.Fatalf("config PUT %d %s", rec.Code, rec.Body)
	}
	if s := e.create(t, "helper", "u1", `{}`); s.CompactKeepLastN != 7 {
		t.Errorf("tenant default n = %d", s.CompactKeepLastN)
	}
	e.tenants["big"] = &auth.Tenant{ID: "big", ConfigCaps: map[string]int{"compact_keep_last_n": 500}}
	if s := e.create(t, "helper", "u1", `{"compact_keep_last_n":400}`, "X-Test-Tenant", "big"); s.CompactKeepLastN != 400 {
		t.Errorf("lifted cap n = %d", s.CompactKeepLastN)
	}
}

func TestSessionErrors(t *testing.T) {
	e := newEnv(t, nil)
	mine := e.create(t, "helper", "u1", "")
	other := e.create(t, "plain", "u1", "")
	e.create(t, "helper", "u2", "")
	tests := []struct {
		name, method, path, user, body string
		headers                        []string
		status                         int
		code, param                    string
	}{
		{"create n 0", "POST", "/a1/agents/helper/sessions", "u1", `{"compact_keep_last_n":0}`, nil, 400, "invalid_field", "body.compact_keep_last_n"},
		{"create n over cap", "POST", "/a1/agents/helper/sessions", "u1", `{"compact_keep_last_n":201}`, nil, 400, "invalid_field", "body.compact_keep_last_n"},
		{"create n not integer", "POST", "/a1/agents/helper/sessions", "u1", `{"compact_keep_last_n":2.5}`, nil, 400, "invalid_field", "body.compact_keep_last_n"},
		{"create unknown field", "POST", "/a1/agents/helper/sessions", "u1", `{"n":2}`, nil, 400, "invalid_field", "body.n"},
		{"create unknown agent", "POST", "/a1/agents/nobody/sessions", "u1", "", nil, 404, "agent_not_found", "name"},
		{"create without user", "POST", "/a1/agents/helper/sessions", "", "", nil, 400, "missing_field", "headers.gw-user-id"},
		{"list without user", "GET", "/a1/agents/helper/sessions", "", "", nil, 400, "missing_field", "headers.gw-user-id"},
		{"list bad limit", "GET", "/a1/agents/helper/sessions?limit=501", "u1", "", nil, 400, "invalid_field", "query.limit"},
		{"list bad offset", "GET", "/a1/agents/helper/sessions?offset=-1", "u1", "", nil, 400, "invalid_field", "query.offset"},
		{"get unknown", "GET", "/a1/agents/helper/sessions/sess_x", "u1", "", nil, 404, "session_not_found", "session_id"},
		{"get other user's", "GET", "/a1/agents/helper/sessions/" + mine.ID, "u2", "", nil, 404, "session_not_found", "session_id"},
		{"get other tenant's", "GET", "/a1/agents/helper/sessions/" + mine.ID, "u1", "", []string{"X-Test-Tenant", "t2"}, 404, "session_not_found", "session_id"},
		{"get other agent's", "GET", "/a1/agents/helper/sessions/" + other.ID, "u1", "", nil, 400, "session_agent_mismatch", "session_id"},
		{"get unknown agent", "GET", "/a1/agents/nobody/sessions/" + mine.ID, "u1", "", nil, 404, "agent_not_found", "name"},
		{"message other user's", "POST", "/a1/agents/helper/sessions/" + mine.ID + "/messages", "u2", `{"message":"x"}`, nil, 404, "session_not_found", "session_id"},
		{"message other agent's", "POST", "/a1/agents/helper/sessions/" + other.ID + "/messages", "u1", `{"message":"x"}`, nil, 400, "session_agent_mismatch", "session_id"},
		{"message missing", "POST", "/a1/agents/helper/sessions/" + mine.ID + "/messages", "u1", `{}`, nil, 400, "missing_field", "body.message"},
		{"message not text", "POST", "/a1/agents/helper/sessions/" + mine.ID + "/messages", "u1", `{"message":3}`, nil, 400, "invalid_field", "body.message"},
		{"message empty parts", "POST", "/a1/agents/helper/sessions/" + mine.ID + "/messages", "u1", `{"message":[]}`, nil, 400, "invalid_field", "body.message"},
		{"message unknown field", "POST", "/a1/agents/helper/sessions/" + mine.ID + "/messages", "u1", `{"message":"x","messages":[]}`, nil, 400, "invalid_field", "body.messages"},
		{"message depth", "POST", "/a1/agents/helper/sessions/" + mine.ID + "/messages", "u1", `{"message":"x"}`, []string{"GW-Caller-Depth", "3"}, 400, "recursion_depth_exceeded", "headers.gw-caller-depth"},
		{"message without user", "POST", "/a1/agents/helper/sessions/" + mine.ID + "/messages", "", `{"message":"x"}`, nil, 400, "missing_field", "headers.gw-user-id"},
		{"compact other user's", "POST", "/a1/agents/helper/sessions/" + mine.ID + "/compact", "u2", "", nil, 404, "session_not_found", "session_id"},
		{"compact too few", "POST", "/a1/agents/helper/sessions/" + mine.ID + "/compact", "u1", "", nil, 409, "session_compact_conflict", "session_id"},
		{"compact other agent's", "POST", "/a1/agents/helper/sessions/" + other.ID + "/compact", "u1", "", nil, 400, "session_agent_mismatch", "session_id"},
		{"lineage other user's", "GET", "/a1/agents/helper/sessions/" + mine.ID + "/lineage", "u2", "", nil, 404, "session_not_found", "session_id"},
		{"lineage other agent's", "GET", "/a1/agents/helper/sessions/" + other.ID + "/lineage", "u1", "", nil, 400, "session_agent_mismatch", "session_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.do(t, tt.method, tt.path, tt.user, tt.body, tt.headers...)
			testkit.CheckError(t, rec, testkit.Error{Status: tt.status, Code: tt.code, Param: tt.param})
		})
	}
	if n := len(e.up.Calls()); n != 0 {
		t.Errorf("upstream called %d times", n)
	}
}

func TestListSessions(t *testing.T) {
	e := newEnv(t, nil)
	a := e.create(t, "helper", "u1", "")
	b := e.create(t, "helper", "u1", "")
	c := e.create(t, "helper", "u2", "")
	e.create(t, "plain", "u1", "")
	e.create(t, "helper", "u1", "", "X-Test-Tenant", "t2")
	ids := func(l sessionList) []string {
		var out []string
		for _, s := range l.Data {
			out = append(out, s.ID)
			if s.Messages != nil {
				t.Errorf("list entry %s has messages", s.ID)
			}
		}
		return out
	}
	var l sessionList
	testkit.Decode(t, e.do(t, "GET", "/a1/agents/helper/sessions", "u1", ""), 200, &l)
	if diff := cmp.Diff([]string{b.ID, a.ID}, ids(l)); diff != "" {
		t.Errorf("u1 mismatch (-want +got):\n%s", diff)
	}
	if l.Object != "list" || l.Limit != 50 || l.Offset != 0 || l.HasMore {
		t.Errorf("wrapper %+v", l)
	}
	testkit.Decode(t, e.do(t, "GET", "/a1/agents/helper/sessions?limit=1", "u1", ""), 200, &l)
	if diff := cmp.Diff([]string{b.ID}, ids(l)); diff != "" || !l.HasMore {
		t.Errorf("page 1 has_more %v mismatch (-want +got):\n%s", l.HasMore, diff)
	}
	testkit.Decode(t, e.do(t, "GET", "/a1/agents/helper/sessions?limit=1&offset=1", "u1", ""), 200, &l)
	if diff := cmp.Diff([]string{a.ID}, ids(l)); diff != "" || l.HasMore {
		t.Errorf("page 2 has_more %v mismatch (-want +got):\n%s", l.HasMore, diff)
	}
	testkit.Decode(t, e.do(t, "GET", "/a1/agents/helper/sessions", "", "", "X-Test-Role", auth.RoleTenantAdmin), 200, &l)
	if diff := cmp.Diff([]string{c.ID, b.ID, a.ID}, ids(l)); diff != "" {
		t.Errorf("admin view mismatch (-want +got):\n%s", diff)
	}
	testkit.Decode(t, e.do(t, "GET", "/a1/agents/helper/sessions", "u2", "", "X-Test-Role", auth.RoleTenantAdmin), 200, &l)
	if diff := cmp.Diff([]string{c.ID}, ids(l)); diff != "" {
		t.Errorf("admin with user mismatch (-want +got):\n%s", diff)
	}
	if got := e.get(t, "helper", "", a.ID, "X-Test-Role", auth.RoleTenantAdmin); got.ID != a.ID {
		t.Errorf("admin get %+v", got)
	}
}

func TestPostMessage(t *testing.T) {
	e := newEnv(t, []reply{
		text("first reply"),
		toolCalls(call{"c1", "lookup", `{"q":"z"}`}),
		text("second reply"),
	})
	s := e.create(t, "helper", "u1", "")
	if got := e.say(t, "helper", "u1", s.ID, "one"); got != "first reply" {
		t.Errorf("reply %q", got)
	}
	if got := e.say(t, "helper", "u1", s.ID, "two"); got != "second reply" {
		t.Errorf("reply %q", got)
	}
	wantUp := []string{"system: You help.", "user: one", "assistant: first reply", "user: two"}
	if diff := cmp.Diff(wantUp, e.up.messages(t, 1)); diff != "" {
		t.Errorf("history sent mismatch (-want +got):\n%s", diff)
	}
	got := e.get(t, "helper", "u1", s.ID)
	want := []string{"user: one", "assistant: first reply", "user: two", "assistant: second reply"}
	if diff := cmp.Diff(want, contents(got)); diff != "" {
		t.Errorf("stored mismatch (-want +got):\n%s", diff)
	}
	if got.MessageCount != 4 || got.UpdatedAt == got.CreatedAt {
		t.Errorf("count %d, updated %s created %s", got.MessageCount, got.UpdatedAt, got.CreatedAt)
	}
}

func TestPostMessageStream(t *testing.T) {
	e := newEnv(t, []reply{toolCalls(call{"c1", "lookup", `{}`}), text("streamed reply")})
	s := e.create(t, "helper", "u1", "")
	rec := e.do(t, "POST", "/a1/agents/helper/sessions/"+s.ID+"/messages", "u1", `{"message":"hi","stream":true}`)
	text, _, done := streamText(t, rec.Body.String())
	if rec.Code != 200 || text != "streamed reply" || !done {
		t.Fatalf("= %d %q %v %s", rec.Code, text, done, rec.Body)
	}
	if diff := cmp.Diff([]string{"user: hi", "assistant: streamed reply"}, contents(e.get(t, "helper", "u1", s.ID))); diff != "" {
		t.Errorf("stored mismatch (-want +got):\n%s", diff)
	}
}

func TestFailedTurnStoresNothing(t *testing.T) {
	failWrites := func(op string) error {
		if op == "View" {
			return nil
		}
		return errors.New("disk full")
	}
	for _, tc := range []struct {
		name       string
		answer     reply
		failWrites bool // the store fails every write of the turn
		stream     bool
		want       testkit.Error // of a stream: the code of its last event, gw.error
	}{
		{name: "upstream", answer: fail(&errcat.Error{Code: errcat.UpstreamError}), want: testkit.WantError(errcat.UpstreamError, "")},
		{name: "commit", answer: text("lost"), failWrites: true, want: testkit.WantError(errcat.StorageError, "")},
		{name: "commit stream", answer: text("lost"), failWrites: true, stream: true, want: testkit.WantError(errcat.StorageError, "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, []reply{tc.answer})
			s := e.create(t, "plain", "u1", "")
			if tc.failWrites {
				e.st.FailWith(failWrites)
			}
			body := `{"message":"hi"}`
			if tc.stream {
				body = `{"message":"hi","stream":true}`
			}
			rec := e.do(t, "POST", "/a1/agents/plain/sessions/"+s.ID+"/messages", "u1", body)
			if tc.stream {
				evs := testkit.ParseSSE(t, rec.Body.String())
				if last := evs[len(evs)-1]; last.Type != "gw.error" || !strings.Contains(last.Data, tc.want.Code) {
					t.Errorf("last event %v", last)
				}
			} else {
				testkit.CheckError(t, rec, tc.want)
			}
			e.st.FailWith(nil)
			if got := e.get(t, "plain", "u1", s.ID); len(got.Messages) != 0 {
				t.Errorf("stored %v", got.Messages)
			}
		})
	}
	t.Run("create", func(t *testing.T) {
		e := newEnv(t, nil)
		e.st.FailNext(errors.New("disk full")) // tenant config read
		rec := e.do(t, "POST", "/a1/agents/plain/sessions", "u1", "")
		testkit.CheckError(t, rec, testkit.WantError(errcat.StorageError, ""))
		var l sessionList
		testkit.Decode(t, e.do(t, "GET", "/a1/agents/plain/sessions", "u1", ""), 200, &l)
		if len(l.Data) != 0 {
			t.Errorf("sessions %v", l.Data)
		}
	})
	t.Run("read", func(t *testing.T) {
		e := newEnv(t, nil)
		e.st.FailNext(errors.New("disk gone"))
		rec := e.do(t, "GET", "/a1/agents/plain/sessions", "u1", "")
		testkit.CheckError(t, rec, testkit.WantError(errcat.StorageError, ""))
	})
}
