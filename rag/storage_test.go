package rag_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/boltstore"
	"github.com/chatgw/gateway/store/memstore"
)

var errDisk = errors.New("disk on fire")

// flakyStore is a store whose write transactions fail at the Put or Delete
// number failAt (0-based), once armed: a failure in the middle of a write,
// after part of it was done.
type flakyStore struct {
	store.Store
	failAt int // -1: never
	ops    int // Puts and Deletes of the running transaction
}

func (f *flakyStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	return f.Store.Update(ctx, func(tx store.Tx) error {
		f.ops = 0
		return fn(&flakyTx{Tx: tx, s: f})
	})
}

func (f *flakyStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return f.Update(ctx, fn)
}

type flakyTx struct {
	store.Tx
	s *flakyStore
}

func (t *flakyTx) op() error {
	n := t.s.ops
	t.s.ops++
	if t.s.failAt >= 0 && n >= t.s.failAt {
		return errDisk
	}
	return nil
}

func (t *flakyTx) Put(bucket, key, value []byte) error {
	if err := t.op(); err != nil {
		return err
	}
	return t.Tx.Put(bucket, key, value)
}

func (t *flakyTx) Delete(bucket, key []byte) error {
	if err := t.op(); err != nil {
		return err
	}
	return t.Tx.Delete(bucket, key)
}

// writes are the writes of the failure tests, over the index "kb" of corpus.
var failingWrites = []struct {
	name string
	q    testkit.Call
}{
	{"replace", replaceReq("", "kb", doc("d1", "a new cat", nil), doc("x", "xylophone cat", nil))},
	{"append", appendReq("", "kb", doc("d3", "no felines", nil), doc("x", "xylophone cat", nil))},
	{"append to a new index", appendReq("", "kb2", doc("x", "xylophone cat", nil))},
	{"delete", testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/kb/documents/d3"}},
}

func TestFailedWriteLeavesStateIntact(t *testing.T) {
	for _, w := range failingWrites {
		t.Run(w.name, func(t *testing.T) {
			e := newEnv(t)
			corpus(e, "", "kb")
			before := e.snapshot("", "kb", "cat+xylophone+felines")
			e.st.FailWith(func(op string) error {
				if op == "View" {
					return nil
				}
				return errDisk
			})
			e.Fails(w.q, testkit.WantError(errcat.StorageError, ""))
			testkit.Diff(t, "state after failed commit", before, e.snapshot("", "kb", "cat+xylophone+felines"))
			e.st.FailWith(nil)
			e.OK(w.q) // and the same write works once the store does
		})
	}
}

func TestWriteFailingMidwayLeavesStateIntact(t *testing.T) {
	for _, w := range failingWrites {
		for _, failAt := range []int{0, 1, 3, 10, 25} {
			t.Run(fmt.Sprintf("%s/op %d", w.name, failAt), func(t *testing.T) {
				st := testkit.MemStore(t)
				fs := &flakyStore{Store: st, failAt: -1}
				e := newEnvOver(t, st, fs, clock.NewFake(t0))
				corpus(e, "", "kb")
				before := e.snapshot("", "kb", "cat+xylophone+felines")
				fs.failAt = failAt
				status, body := e.JSON(w.q)
				fs.failAt = -1
				if status == 200 {
					// The write needed fewer operations than failAt; every
					// write needs more than 3.
					if failAt <= 3 {
						t.Fatalf("write succeeded although operation %d failed", failAt)
					}
					return
				}
				testkit.Diff(t, "error", testkit.WantError(errcat.StorageError, ""), testkit.ErrorOf(t, status, body))
				testkit.Diff(t, "state after failed write", before, e.snapshot("", "kb", "cat+xylophone+felines"))
			})
		}
	}
}

func TestReadFailures(t *testing.T) {
	e := newEnv(t)
	corpus(e, "", "kb")
	for _, q := range []testkit.Call{
		getReq("", "/a1/rag/indices"),
		getReq("", "/a1/rag/indices/kb/documents"),
		getReq("", "/a1/rag/indices/kb/documents/d1"),
		getReq("", "/a1/rag/indices/kb/search?q=cat"),
		{Method: "POST", Target: "/v1/tools/execute", Body: map[string]any{"name": "rag_search", "arguments": map[string]any{"index": "kb", "query": "cat"}}},
	} {
		e.st.FailNext(errDisk)
		e.Fails(q, testkit.WantError(errcat.StorageError, ""))
	}
	if _, err := e.svc.Search(context.Background(), "acme", "kb", "cat", 5); err != nil {
		t.Errorf("Search after the failures: %v", err)
	}
}

// TestOverBolt runs a write, change and search cycle over the real store,
// whose key and transaction rules the in-memory one only imitates.
func TestOverBolt(t *testing.T) {
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "rag.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := memstore.New() // unused: no failure injection here
	e := newEnvOver(t, st, db, clock.NewFake(t0))
	corpus(e, "", "kb")
	want := e.snapshot("", "kb", "cat+bird")
	long := strings.Repeat("alpha beta gamma ", 100) + strings.Repeat("z", 3000) // several chunks, one giant word
	e.appendDocs("", "kb", doc("big", long, map[string]any{"k": "v"}))
	// The word is cut into six chunks; terms are cut at 64 bytes, in queries too.
	testkit.Diff(t, "giant word hits", []string{"big#4", "big#5", "big#6", "big#7", "big#8", "big#9"},
		e.search("", "kb", "k=50&q="+strings.Repeat("z", 100)))
	e.OK(testkit.Call{Method: "DELETE", Target: "/a1/rag/indices/kb/documents/big"})
	got := e.snapshot("", "kb", "cat+bird")
	// Only updated_at moved.
	for _, s := range []map[string]any{want, got} {
		for _, ix := range testkit.Data(s["indices"]) {
			delete(ix.(map[string]any), "updated_at")
		}
	}
	testkit.Diff(t, "after add and delete", want, got)
	e.replace("", "kb", doc("x", "fresh start", nil))
	testkit.Diff(t, "documents", []string{"x"}, e.docIDs("", "kb"))
	testkit.Diff(t, "search", []string{"x#0"}, e.search("", "kb", "q=fresh"))
}
