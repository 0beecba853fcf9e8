package runs_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/runs"
)

func TestRuntimes(t *testing.T) {
	type runtime struct {
		Name string `json:"name"`
		Runs bool   `json:"runs"`
	}
	type list struct {
		Object string    `json:"object"`
		Data   []runtime `json:"data"`
	}
	for _, tt := range []struct {
		command string
		want    bool
	}{
		{"", false},
		{"   ", false},
		{helperCmd(t, "exit", "0"), true},
	} {
		e := newEnv(t, runs.Config{Command: tt.command})
		var got list
		e.okInto(req{method: "GET", path: "/a1/runtimes", user: "alice"}, http.StatusOK, &got)
		testkit.Diff(t, fmt.Sprintf("runtimes with command %q", tt.command),
			list{Object: "list", Data: []runtime{{"coding-agent", tt.want}, {"chat", false}}}, got)
	}
}

func TestCanonicalRepo(t *testing.T) {
	long := "https://github.com/" + strings.Repeat("a", runs.MaxRepoBytes)
	// Escaping makes each byte of é three: 21 + 5 + 337*6 = MaxRepoBytes.
	fits := "https://github.com/a/xxxxx" + strings.Repeat("é", 337)
	fitsCanonical := "https://github.com/a/xxxxx" + strings.Repeat("%c3%a9", 337)
	for _, tt := range []struct {
		in, want string // want "" means rejected
	}{
		{"https://github.com/acme/app", "https://github.com/acme/app"},
		{"HTTPS://GitHub.com/Acme/App.git/", "https://github.com/acme/app"},
		{"https://github.com/acme/app/", "https://github.com/acme/app"},
		{"https://github.com/acme/app//", "https://github.com/acme/app"},
		{"https://github.com/acme/app.git", "https://github.com/acme/app"},
		{"https://github.com/acme/app.git.git", "https://github.com/acme/app.git"},
		{"https://github.com/acme/app.git/", "https://github.com/acme/app"},
		{"https://github.com/acme/app/.git", "https://github.com/acme/app"},
		{"http://git.example.com/app", "http://git.example.com/app"},
		{"https://github.com:443/acme/app", "https://github.com/acme/app"},
		{"http://example.com:80/app", "http://example.com/app"},
		{"https://example.com:8443/app", "https://example.com:8443/app"},
		{"http://example.com:443/app", "http://example.com:443/app"},
		{"https://example.com:/app", "https://example.com/app"},
		{"https://[::1]:443/app", "https://[::1]/app"},
		{"https://[::1]:8443/app", "https://[::1]:8443/app"},
		{"https://example.com/a%2Fb", "https://example.com/a%2fb"},
		{"https://github.com/acme/Ä", "https://github.com/acme/%c3%a4"},
		{"https://github.com/acme/%C3%A4", "https://github.com/acme/%c3%a4"},
		{"http://git%80hub.com/acme/app", ""},
		{"https://gitäb.com/acme/app", ""},
		{"", ""},
		{"github.com/acme/app", ""},
		{"git@github.com:acme/app.git", ""},
		{"ssh://github.com/acme/app", ""},
		{"ftp://github.com/acme/app", ""},
		{"file:///srv/app", ""},
		{"https://github.com", ""},
		{"https://github.com/", ""},
		{"https://github.com/.git", ""},
		{"https:github.com/acme/app", ""},
		{"https:///acme/app", ""},
		{"https://user:pw@github.com/acme/app", ""},
		{"https://github.com/acme/app?ref=main", ""},
		{"https://github.com/acme/app?", ""},
		{"https://github.com/acme/app#readme", ""},
		{"https://github.com/acme/app#", ""},
		{"https://github.com/acme//app", ""},
		{"https://github.com/acme/../app", ""},
		{"https://github.com/./app", ""},
		{" https://github.com/acme/app", ""},
		{"https://github.com/acme/my app", ""},
		{"https://github.com/acme/app\n", ""},
		{"https://github.com/acme/%zz", ""},
		{long, ""},
		{fits, fitsCanonical},
		{fits + "x", ""}, // the canonical form would be over MaxRepoBytes
		{"https://github.com/acme/\xff", ""},
		{"https://github.com/acme/a\xc3", ""},
		{"http://x.io/ab/" + strings.Repeat("\x80", 238), ""}, // once 2,157 bytes of %ef%bf%bd
	} {
		got, ok := runs.CanonicalRepo(tt.in)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("CanonicalRepo(%q) = %q, %v; want %q", tt.in, got, ok, tt.want)
		}
	}
}

// FuzzCanonicalRepo checks that a canonical repository URL is its own
// canonical form and lower case, so that an allowlist entry always matches the
// repo it names.
func FuzzCanonicalRepo(f *testing.F) {
	for _, s := range []string{"https://github.com/acme/app", "HTTPS://GitHub.com:443/Acme/App.git/", "https://github.com/acme/Ä", "https://example.com/a%2Fb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, ok := runs.CanonicalRepo(raw)
		if !ok {
			return
		}
		if c != strings.ToLower(c) {
			t.Errorf("CanonicalRepo(%q) = %q: not lower case", raw, c)
		}
		if len(c) > runs.MaxRepoBytes {
			t.Errorf("CanonicalRepo(%q) is %d bytes, over MaxRepoBytes", raw, len(c))
		}
		if again, ok := runs.CanonicalRepo(c); !ok || again != c {
			t.Errorf("CanonicalRepo(%q) = %q, but CanonicalRepo of that = %q, %v", raw, c, again, ok)
		}
	})
}

func ExampleCanonicalRepo() {
	repo, ok := runs.CanonicalRepo("HTTPS://GitHub.com:443/Acme/App.git/")
	fmt.Println(repo, ok)
	_, ok = runs.CanonicalRepo("git@github.com:acme/app.git")
	fmt.Println(ok)
	// Output:
	// https://github.com/acme/app true
	// false
}

// TestCreateErrors covers every error of POST /a1/runs and the order of its
// checks.
func TestCreateErrors(t *testing.T) {
	enabled := newEnv(t, runs.Config{Command: helperCmd(t, "exit", "0")})
	disabled := newEnv(t, runs.Config{})
	body := func(kv ...string) map[string]any {
		m := map[string]any{"runtime": "coding-agent", "repo": appRepo, "work_item": "W-1"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "<absent>" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	for _, tt := range []struct {
		name     string
		e        *env
		tenant   string
		noUser   bool
		body     any
		want     testkit.Error
		disabled bool
	}{
		{name: "no user", noUser: true, body: body(), want: testkit.WantError(errcat.MissingField, "headers.gw-user-id")},
		{name: "not json", body: `{"runtime":`, want: testkit.WantError(errcat.InvalidJSON, "")},
		{name: "array", body: `[]`, want: testkit.WantError(errcat.InvalidJSON, "")},
		{name: "two objects", body: `{} {}`, want: testkit.WantError(errcat.InvalidJSON, "")},
		{name: "unknown field", body: map[string]any{"runtime": "coding-agent", "repo": appRepo, "work_item": "W", "prio": 1},
			want: testkit.WantError(errcat.InvalidField, "body.prio")},
		{name: "user_id in body", body: map[string]any{"runtime": "coding-agent", "user_id": "bob"},
			want: testkit.WantError(errcat.InvalidField, "body.user_id")},
		{name: "runtime not a string", body: map[string]any{"runtime": 1}, want: testkit.WantError(errcat.InvalidField, "body.runtime")},
		{name: "repo not a string", body: map[string]any{"runtime": "coding-agent", "repo": []string{appRepo}},
			want: testkit.WantError(errcat.InvalidField, "body.repo")},
		{name: "work_item not a string", body: map[string]any{"runtime": "coding-agent", "repo": appRepo, "work_item": 7},
			want: testkit.WantError(errcat.InvalidField, "body.work_item")},
		{name: "runtime absent", body: body("runtime", "<absent>"), want: testkit.WantError(errcat.MissingField, "body.runtime")},
		{name: "runtime null", body: `{"runtime":null,"repo":"https://github.com/acme/app","work_item":"W"}`,
			want: testkit.WantError(errcat.MissingField, "body.runtime")},
		{name: "runtime empty", body: body("runtime", ""), want: testkit.WantError(errcat.InvalidField, "body.runtime")},
		{name: "runtime unknown", body: body("runtime", "shell"), want: testkit.WantError(errcat.InvalidField, "body.runtime")},
		{name: "runtime case", body: body("runtime", "Coding-Agent"), want: testkit.WantError(errcat.InvalidField, "body.runtime")},
		{name: "runtime chat", body: body("runtime", "chat"), want: testkit.WantError(errcat.RuntimeNotRunnable, "body.runtime")},
		{name: "chat before repo", body: body("runtime", "chat", "repo", "<absent>", "work_item", "<absent>"),
			want: testkit.WantError(errcat.RuntimeNotRunnable, "body.runtime")},
		{name: "repo absent", body: body("repo", "<absent>"), want: testkit.WantError(errcat.MissingField, "body.repo")},
		{name: "repo before work_item", body: body("repo", "<absent>", "work_item", "<absent>"),
			want: testkit.WantError(errcat.MissingField, "body.repo")},
		{name: "repo empty", body: body("repo", ""), want: testkit.WantError(errcat.InvalidField, "body.repo")},
		{name: "repo ssh", body: body("repo", "git@github.com:acme/app.git"), want: testkit.WantError(errcat.InvalidField, "body.repo")},
		{name: "repo no path", body: body("repo", "https://github.com/"), want: testkit.WantError(errcat.InvalidField, "body.repo")},
		{name: "repo credentials", body: body("repo", "https://x:y@github.com/acme/app"), want: testkit.WantError(errcat.InvalidField, "body.repo")},
		{name: "work_item absent", body: body("work_item", "<absent>"), want: testkit.WantError(errcat.MissingField, "body.work_item")},
		{name: "work_item empty", body: body("work_item", ""), want: testkit.WantError(errcat.InvalidField, "body.work_item")},
		{name: "work_item control", body: body("work_item", "a\nb"), want: testkit.WantError(errcat.InvalidField, "body.work_item")},
		{name: "work_item NUL", body: body("work_item", "a\x00b"), want: testkit.WantError(errcat.InvalidField, "body.work_item")},
		{name: "work_item too long", body: body("work_item", strings.Repeat("w", runs.MaxWorkItemBytes+1)),
			want: testkit.WantError(errcat.InvalidField, "body.work_item")},
		{name: "disabled", disabled: true, body: body(), want: testkit.WantError(errcat.CodingAgentDisabled, "")},
		{name: "disabled after validation", disabled: true, body: body("repo", "nope"), want: testkit.WantError(errcat.InvalidField, "body.repo")},
		{name: "disabled before allowlist", disabled: true, body: body("repo", "https://github.com/evil/app"),
			want: testkit.WantError(errcat.CodingAgentDisabled, "")},
		{name: "chat while disabled", disabled: true, body: body("runtime", "chat"), want: testkit.WantError(errcat.RuntimeNotRunnable, "body.runtime")},
		{name: "repo not allowed", body: body("repo", "https://github.com/evil/app"),
			want: testkit.WantError(errcat.CodingAgentRepoNotAllowed, "body.repo")},
		{name: "repo http not https", body: body("repo", "http://github.com/acme/app"),
			want: testkit.WantError(errcat.CodingAgentRepoNotAllowed, "body.repo")},
		{name: "repo prefix of allowed", body: body("repo", "https://github.com/acme/ap"),
			want: testkit.WantError(errcat.CodingAgentRepoNotAllowed, "body.repo")},
		{name: "empty allowlist", tenant: "empty", body: body(), want: testkit.WantError(errcat.CodingAgentRepoNotAllowed, "body.repo")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := enabled
			if tt.disabled {
				e = disabled
			}
			e.t = t
			user := "alice"
			if tt.noUser {
				user = ""
			}
			e.fails(req{method: "POST", path: "/a1/runs", tenant: tt.tenant, user: user, body: tt.body}, tt.want)
		})
	}
	// Nothing was stored by any of them.
	for _, e := range []*env{enabled, disabled} {
		e.t = t
		for _, tenant := range []string{"acme", "empty"} {
			if l := e.list(req{path: "/a1/runs", tenant: tenant, admin: true}); len(l.Data) != 0 {
				t.Errorf("tenant %s: runs stored by failed creates: %+v", tenant, l.Data)
			}
		}
	}
}

func TestCreateAndSucceed(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "exit", "0")})
	var created run
	e.okInto(req{method: "POST", path: "/a1/runs", user: "alice", body: map[string]any{
		"runtime": "coding-agent", "repo": "HTTPS://GitHub.com/Acme/App.git", "work_item": "ISSUE-7"}}, http.StatusCreated, &created)
	if !strings.HasPrefix(created.ID, "run_") || len(created.ID) != len("run_")+32 {
		t.Errorf("id %q, want run_ and 32 hex digits", created.ID)
	}
	// The answer is the queued run; its command may already have started since.
	want := run{ID: created.ID, Runtime: "coding-agent", Repo: appRepo, WorkItem: "ISSUE-7",
		Status: runs.StatusQueued, CreatedAt: t0, UserID: "alice"}
	testkit.Diff(t, "created run", want, created)

	got := e.waitDone("alice", created.ID)
	want.Status, want.StartedAt, want.FinishedAt, want.ExitCode = runs.StatusSucceeded, &t0, &t0, ptr(0)
	want.Output, want.OutputTruncated = ptr("out line\nerr line\n"), ptr(false)
	testkit.Diff(t, "finished run", want, got)

	// Its work item is free again.
	again := e.create("", "alice", appRepo, "ISSUE-7")
	e.waitDone("alice", again.ID)

	// The list answers carry no output.
	l := e.list(req{path: "/a1/runs", user: "alice"})
	want.Output, want.OutputTruncated = nil, nil
	if len(l.Data) != 2 {
		t.Fatalf("list: %d runs, want 2", len(l.Data))
	}
	testkit.Diff(t, "listed run", want, l.Data[1])
}

// TestAgentBusy: one active run per tenant, repository and work item.
func TestAgentBusy(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "sleep"), MaxRunning: 1})
	busy := testkit.WantError(errcat.AgentBusy, "")
	post := func(tenant, user, repo, item string) req {
		return req{method: "POST", path: "/a1/runs", tenant: tenant, user: user,
			body: map[string]string{"runtime": "coding-agent", "repo": repo, "work_item": item}}
	}
	first := e.create("", "alice", appRepo, "W-1")                         // running
	queued := e.create("", "alice", appRepo, "W-2")                        // queued behind it
	e.fails(post("", "alice", appRepo, "W-1"), busy)                       // running
	e.fails(post("", "bob", appRepo+".git", "W-1"), busy)                  // another user, the same repo written otherwise
	e.fails(post("", "alice", appRepo, "W-2"), busy)                       // queued
	other := e.create("", "alice", "https://github.com/acme/other", "W-1") // another repo
	e.create("globex", "alice", appRepo, "W-1")                            // another tenant
	e.create("", "alice", appRepo, "w-1")                                  // work items are case-sensitive

	e.cancel("", "alice", first.ID)
	e.cancel("", "alice", queued.ID)
	e.cancel("", "alice", other.ID)
	e.create("", "bob", appRepo, "W-1") // free again
	e.create("", "bob", appRepo, "W-2")
}

func TestCreateStorageError(t *testing.T) {
	e := newEnv(t, runs.Config{Command: helperCmd(t, "exit", "0")})
	q := req{method: "POST", path: "/a1/runs", user: "alice",
		body: map[string]string{"runtime": "coding-agent", "repo": appRepo, "work_item": "W-1"}}
	e.failStorage(q)
	if l := e.list(req{path: "/a1/runs", user: "alice"}); len(l.Data) != 0 {
		t.Errorf("runs stored by a failed create: %+v", l.Data)
	}
	r := e.create("", "alice", appRepo, "W-1") // not busy
	e.waitDone("alice", r.ID)
	testkit.Diff(t, "list after failure", []string{r.ID}, ids(e.list(req{path: "/a1/runs", user: "alice"})))
}

func ids(l runList) []string {
	out := []string{}
	for _, r := range l.Data {
		out = append(out, r.ID)
	}
	return out
}
