package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/memory"
)

func TestSystemContext(t *testing.T) {
	tests := []struct {
		name  string
		setup func(e *env)
		user  string
		want  string
	}{
		{name: "nothing stored", user: "alice", want: ""},
		{
			name: "all parts in order",
			setup: func(e *env) {
				e.remember("", "alice", "office", "Paris", "private", "")
				e.remember("", "alice", "name", "Ada", "private", "")
				e.remember("", "bob", "name", "Bob", "public", "")
				e.prompt("", "alice", "user", "  Call me Ada.\n", "")
				e.prompt("", "alice", "scope", "Answer in French.", "")
				e.prompt("", "alice", "tenant", "You are the ACME assistant.", "")
			},
			user: "alice",
			want: "You are the ACME assistant.\n\nAnswer in French.\n\nCall me Ada.\n\nMemory:\n- name: Ada\n- office: Paris\n- name: Bob",
		},
		{
			name: "only what belongs to the user, the default scope and the tenant",
			setup: func(e *env) {
				e.remember("", "bob", "bob-private", "x", "private", "")
				e.remember("", "alice", "other-scope", "x", "private", "team")
				e.remember("", "alice", "other-scope-public", "x", "public", "team")
				e.remember("other", "alice", "other-tenant", "x", "private", "")
				e.prompt("", "bob", "user", "Bob's prompt.", "")
				e.prompt("", "alice", "scope", "Team prompt.", "team")
				e.prompt("other", "alice", "tenant", "Other tenant.", "")
				e.remember("", "alice", "mine", "yes", "private", "")
			},
			user: "alice",
			want: "Memory:\n- mine: yes",
		},
		{
			name: "without a user: no user prompt, no private memory",
			setup: func(e *env) {
				e.remember("", "alice", "private", "x", "private", "")
				e.remember("", "alice", "shared", "y", "public", "")
				e.prompt("", "alice", "user", "Alice.", "")
				e.prompt("", "alice", "tenant", "Tenant.", "")
			},
			user: "",
			want: "Tenant.\n\nMemory:\n- shared: y",
		},
		{
			name: "soft-deleted and rolled-back prompts",
			setup: func(e *env) {
				e.prompt("", "alice", "tenant", "T1", "")
				e.prompt("", "alice", "tenant", "T2", "")
				e.OK(testkit.Call{Method: "PUT", Target: "/v1/system-prompts/tenant/current/1", User: "alice"})
				e.prompt("", "alice", "user", "U1", "")
				e.OK(testkit.Call{Method: "DELETE", Target: "/v1/system-prompts/user", User: "alice"})
			},
			user: "alice",
			want: "T1",
		},
		{
			name: "multi-line keys and values",
			setup: func(e *env) {
				e.remember("", "alice", "a\nkey", "line 1\nline 2\r\n- not an item", "private", "")
			},
			user: "alice",
			want: "Memory:\n- a key: line 1\n  line 2\n  - not an item",
		},
		{
			name: "deleted entries are gone",
			setup: func(e *env) {
				e.remember("", "alice", "k", "v", "private", "")
				e.OK(testkit.Call{Method: "DELETE", Target: "/v1/memory?visibility=private&key=k", User: "alice"})
			},
			user: "alice",
			want: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			if tc.setup != nil {
				tc.setup(e)
			}
			got, err := e.svc.SystemContext(context.Background(), "acme", tc.user)
			if err != nil {
				t.Fatal(err)
			}
			testkit.Diff(t, "SystemContext", tc.want, got)
		})
	}
}

func TestSystemContextBounds(t *testing.T) {
	e := newEnv(t)
	for _, level := range []string{"tenant", "scope", "user"} {
		e.prompt("", "alice", level, strings.Repeat("p", memory.PromptCapBytes), "")
	}
	e.remember("", "alice", "a", strings.Repeat("v", memory.BucketCapBytes-1), "private", "")
	e.remember("", "alice", "b", strings.Repeat("v", memory.BucketCapBytes-1), "public", "")
	got, err := e.svc.SystemContext(context.Background(), "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	// 3 full prompts + 2 full buckets + 3 separators + the list markup.
	const max = 3*memory.PromptCapBytes + 2*memory.BucketCapBytes + 3*2 + len("Memory:") + 2*len("\n- : ")
	if len(got) != max {
		t.Errorf("len(SystemContext) = %d, want %d", len(got), max)
	}
}

func TestSystemContextOneReadTransaction(t *testing.T) {
	e := newEnv(t)
	e.remember("", "alice", "k", "v", "private", "")
	e.prompt("", "alice", "tenant", "T", "")
	for _, tenant := range []string{"acme", "empty"} {
		var ops []string
		e.st.FailWith(func(op string) error { ops = append(ops, op); return nil })
		if _, err := e.svc.SystemContext(context.Background(), tenant, "alice"); err != nil {
			t.Fatal(err)
		}
		e.st.FailWith(nil)
		testkit.Diff(t, "transactions of "+tenant, []string{"View"}, ops)
	}
}

func TestSystemContextStorageError(t *testing.T) {
	e := newEnv(t)
	e.st.FailNext(errors.New("disk on fire"))
	_, err := e.svc.SystemContext(context.Background(), "acme", "alice")
	if got := errcat.CodeOf(err); got != errcat.StorageError {
		t.Errorf("SystemContext error code = %s, want storage_error (err %v)", got, err)
	}
}
