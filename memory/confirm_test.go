package memory_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/memory"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/pgstore"
	"github.com/chatgw/gateway/tools"
)

// TestConfirmAcrossServices: a token issued by one Service is redeemed by
// another over the same store (another replica, or the same gateway after a
// restart), once.
func TestConfirmAcrossServices(t *testing.T) {
	one := newEnv(t)
	two := newEnvOver(t, one.st, one.clk)
	args := publicArgs("wifi", "guest")
	bad := testkit.WantError(errcat.MemoryConfirmRequired, "confirm_token")

	tok := one.confirmToken("", "alice", args)
	one.clk.Advance(59 * time.Second)
	status, body := two.tool("", "alice", "memory_remember", with(args, "confirm_token", tok))
	testkit.Diff(t, "redeemed on the other Service", testkit.Error{}, testkit.ErrorOf(t, status, body))
	testkit.Diff(t, "written", []string{"wifi=guest/public"}, one.publicList("", "bob", ""))
	status, body = one.tool("", "alice", "memory_remember", with(args, "confirm_token", tok))
	testkit.Diff(t, "redeemed again on the first", bad, testkit.ErrorOf(t, status, body))

	// Expiry is the same everywhere.
	tok = two.confirmToken("", "alice", args)
	one.clk.Advance(60 * time.Second)
	status, body = one.tool("", "alice", "memory_remember", with(args, "confirm_token", tok))
	testkit.Diff(t, "expired on the other Service", bad, testkit.ErrorOf(t, status, body))
}

// TestExpiredConfirmsAreDeleted: a tenant's next confirmation deletes its
// expired tokens, so they do not pile up; other tenants' are theirs to
// delete.
func TestExpiredConfirmsAreDeleted(t *testing.T) {
	e := newEnv(t)
	for range 3 {
		e.confirmToken("", "alice", publicArgs("k", "v"))
	}
	e.confirmToken("other", "alice", publicArgs("k", "v"))
	testkit.Diff(t, "pending", 4, pendingConfirms(t, e.st))
	e.clk.Advance(memory.ConfirmTTLSeconds * time.Second)
	e.confirmToken("", "alice", publicArgs("k", "v"))
	testkit.Diff(t, "pending after acme's next confirmation", 2, pendingConfirms(t, e.st))
}

// TestConfirmStoresNoToken: the store holds the token's hash, never the
// token, so that a copy of the database confirms nothing.
func TestConfirmStoresNoToken(t *testing.T) {
	e := newEnv(t)
	tok := e.confirmToken("", "alice", publicArgs("k", "v"))
	err := e.st.View(t.Context(), func(tx store.Tx) error {
		return tx.Scan([]byte("mem/confirms"), nil, false, func(k, v []byte) (bool, error) {
			if strings.Contains(string(k)+string(v), strings.TrimPrefix(tok, "mct_")) {
				t.Errorf("the store holds the token: key %q value %q", k, v)
			}
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pendingConfirms counts the tokens in the store.
func pendingConfirms(t *testing.T, st store.Store) int {
	t.Helper()
	n, err := store.ViewValue(t.Context(), st, func(tx store.Tx) (int, error) {
		n := 0
		err := tx.Scan([]byte("mem/confirms"), nil, false, func(_, _ []byte) (bool, error) { n++; return true, nil })
		return n, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestConfirmOnPostgreSQL redeems one token from several goroutines on two
// Services, each with a pool of its own over one database (two replicas):
// exactly one call writes. It skips without PostgreSQL (see internal/pgtest).
func TestConfirmOnPostgreSQL(t *testing.T) {
	url, clk := pgtest.New(t).NewDatabase(t), clock.NewFake(t0)
	var regs []*tools.Registry
	for range 2 {
		db, err := pgstore.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		reg, err := tools.NewRegistry(memory.New(memory.Config{Store: db, Clock: clk}).Tools()...)
		if err != nil {
			t.Fatal(err)
		}
		regs = append(regs, reg)
	}
	call := func(reg *tools.Registry, args map[string]any) (any, error) {
		return reg.Run(context.Background(), "memory_remember", tools.Call{TenantID: "acme", UserID: "alice", Arguments: mustJSON(t, args)})
	}
	out, err := call(regs[0], publicArgs("wifi", "guest"))
	if err != nil {
		t.Fatal(err)
	}
	tok := out.(memory.ConfirmRequired).ConfirmToken

	const callers = 8
	var wrote, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			_, err := call(regs[i%2], with(publicArgs("wifi", "guest"), "confirm_token", tok))
			switch {
			case err == nil:
				wrote.Add(1)
			case errcat.CodeOf(err) == errcat.MemoryConfirmRequired:
				refused.Add(1)
			default:
				t.Errorf("redemption: %v", err)
			}
		})
	}
	wg.Wait()
	testkit.Diff(t, "writes, refusals", [2]int64{1, callers - 1}, [2]int64{wrote.Load(), refused.Load()})
}
