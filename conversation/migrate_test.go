package conversation_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/conversation"
	"github.com/chatgw/gateway/internal/wire"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/memstore"
	"github.com/google/go-cmp/cmp"
)

// The migration tests read the stored buckets, as the package documentation
// lays them out, to see what Migrate removed and recorded.
const (
	bucketOwner  = "conv/owner"
	bucketLayout = "conv/layout"
)

// bucket returns the records of bucket in st, key -> value.
func bucket(t *testing.T, st store.Store, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := st.View(context.Background(), func(tx store.Tx) error {
		return tx.Scan([]byte(name), nil, false, func(k, v []byte) (bool, error) {
			out[string(k)] = string(v)
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var layout2 = map[string]string{"version": string(store.AppendUint64(nil, 2))}

// TestMigrateLayout1 migrates a bbolt file written by layout 1 and checks
// that every list page, conversation, message and owner check reads as
// layout 1 read it, except the one thing layout 2 changes: an id that only
// another tenant stored is free (Load finds nothing instead of
// conversation_not_found). Then a second tenant uses an id of the first, and
// the first tenant's view does not move.
func TestMigrateLayout1(t *testing.T) {
	ctx := context.Background()
	db := openCopy(t, layout1DB)
	wantClaims := map[string]string{
		"T-1001": "acme", "T-1002": "acme", "T-1003": "acme", "T-1006": "acme", "tícket ü": "acme",
		"T-1005": "globex", "G-1": "globex",
	}
	if diff := cmp.Diff(wantClaims, bucket(t, db, bucketOwner)); diff != "" {
		t.Fatalf("fixture's conv/owner mismatch (-want +got):\n%s", diff)
	}
	repo := conversation.NewRepository(db, clock.NewFake(time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)))
	if err := repo.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if got := bucket(t, db, bucketOwner); len(got) != 0 {
		t.Errorf("conv/owner after Migrate = %v; want empty", got)
	}
	if diff := cmp.Diff(layout2, bucket(t, db, bucketLayout)); diff != "" {
		t.Errorf("conv/layout mismatch (-want +got):\n%s", diff)
	}

	want, freed := layout2View(readShown(t))
	// 4 users each: acme's Loads of globex's 2 ids, globex's of acme's 5,
	// initech's of all 7.
	if freed != 4*(2+5+7) {
		t.Errorf("%d Loads of another tenant's id; want %d", freed, 4*(2+5+7))
	}
	if diff := cmp.Diff(want, shownBy(t, repo)); diff != "" {
		t.Errorf("migrated layout 1 mismatch (-want +got):\n%s", diff)
	}
	if err := repo.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	if diff := cmp.Diff(want, shownBy(t, repo)); diff != "" {
		t.Errorf("after a second Migrate mismatch (-want +got):\n%s", diff)
	}

	// globex takes acme's T-1001 and bob's tícket ü, through the same alice;
	// acme's answers stay as they were.
	for _, id := range []string{"T-1001", "tícket ü"} {
		if err := repo.Append(ctx, "globex", "alice", id, []json.RawMessage{wire.TextMessage("user", "globex's "+id)}, "", nil); err != nil {
			t.Fatalf("globex Append(%s): %v", id, err)
		}
		got, err := repo.Load(ctx, "globex", "alice", id)
		if diff := cmp.Diff([]string{string(wire.TextMessage("user", "globex's "+id))}, rawStrings(got)); diff != "" || err != nil {
			t.Errorf("globex Load(%s) error %v, mismatch (-want +got):\n%s", id, err, diff)
		}
	}
	if diff := cmp.Diff(callsOf(want, "acme"), callsOf(shownBy(t, repo), "acme")); diff != "" {
		t.Errorf("acme after globex used its ids mismatch (-want +got):\n%s", diff)
	}
}

// layout2View is what layout 2 shows of the fixture, given what layout 1
// showed: the same, except that a Load of an id the caller's tenant does not
// hold (its tenant-wide Get is conversation_not_found) finds nothing. Layout 1
// answered conversation_not_found when another tenant held the id. It also
// returns how many entries differ.
func layout2View(layout1 []shownEntry) ([]shownEntry, int) {
	byCall := map[string]string{}
	for _, e := range layout1 {
		byCall[e.Call] = string(e.Result)
	}
	const notFound = `{"error":"conversation_not_found"}`
	free := map[string]bool{}
	for _, tenant := range layoutTenants {
		for _, user := range layoutUsers[1:] {
			for _, id := range layoutIDs {
				load := fmt.Sprintf("Load %s %q %q", tenant, user, id)
				held := byCall[fmt.Sprintf("Get %s %q %q", tenant, "", id)] != notFound
				if byCall[load] == notFound && !held {
					free[load] = true
				}
			}
		}
	}
	out := make([]shownEntry, len(layout1))
	for i, e := range layout1 {
		out[i] = e
		if free[e.Call] {
			out[i].Result = json.RawMessage("null")
		}
	}
	return out, len(free)
}

// callsOf returns the entries of the calls made as tenant.
func callsOf(entries []shownEntry, tenant string) []shownEntry {
	var out []shownEntry
	for _, e := range entries {
		if _, rest, _ := strings.Cut(e.Call, " "); strings.HasPrefix(rest, tenant+" ") {
			out = append(out, e)
		}
	}
	return out
}

// TestMigrate covers Migrate's cases on memstore: what it leaves behind, and
// that it reads only once a store is migrated.
func TestMigrate(t *testing.T) {
	claim := map[string]string{"T-1": "acme"}
	tests := []struct {
		name       string
		owner      map[string]string // conv/owner before
		layout     map[string]string // conv/layout before
		wantErr    string
		wantOwner  map[string]string
		wantLayout map[string]string
		wantWrites int
	}{
		{name: "new store", wantOwner: map[string]string{}, wantLayout: layout2, wantWrites: 1},
		{name: "layout 1", owner: claim, wantOwner: map[string]string{}, wantLayout: layout2, wantWrites: 1},
		{name: "layout 2", layout: layout2, wantOwner: map[string]string{}, wantLayout: layout2},
		{
			name: "newer layout", owner: claim, layout: map[string]string{"version": string(store.AppendUint64(nil, 3))},
			wantErr: "layout 3, newer than this gateway's 2", wantOwner: claim,
			wantLayout: map[string]string{"version": string(store.AppendUint64(nil, 3))},
		},
		{
			name: "malformed version", owner: claim, layout: map[string]string{"version": "2"},
			wantErr: "malformed layout version", wantOwner: claim, wantLayout: map[string]string{"version": "2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &countingStore{Store: memstore.New()}
			t.Cleanup(func() { st.Close() })
			put(t, st, bucketOwner, tc.owner)
			put(t, st, bucketLayout, tc.layout)
			st.writes = 0
			repo := conversation.NewRepository(st, nil)
			err := repo.Migrate(context.Background())
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Migrate error = %v; want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantOwner, bucket(t, st, bucketOwner)); diff != "" {
				t.Errorf("conv/owner mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLayout, bucket(t, st, bucketLayout)); diff != "" {
				t.Errorf("conv/layout mismatch (-want +got):\n%s", diff)
			}
			if st.writes != tc.wantWrites {
				t.Errorf("Migrate ran %d write transactions; want %d", st.writes, tc.wantWrites)
			}
			// Once migrated, every later start only reads.
			if err == nil {
				st.writes = 0
				if err := repo.Migrate(context.Background()); err != nil || st.writes != 0 {
					t.Errorf("second Migrate = %v with %d writes; want nil, 0", err, st.writes)
				}
			}
		})
	}
}

// TestMigrateAllOrNothing fails the transaction after the claims are deleted,
// when the version is written: nothing changes, and a later Migrate finishes
// the job.
func TestMigrateAllOrNothing(t *testing.T) {
	errDisk := errors.New("disk full")
	st := &countingStore{Store: memstore.New(), failPut: bucketLayout, err: errDisk}
	t.Cleanup(func() { st.Close() })
	claims := map[string]string{"T-1": "acme", "T-2": "globex"}
	put(t, st, bucketOwner, claims)
	repo := conversation.NewRepository(st, nil)
	if err := repo.Migrate(context.Background()); !errors.Is(err, errDisk) {
		t.Fatalf("Migrate error = %v; want %v", err, errDisk)
	}
	if diff := cmp.Diff(claims, bucket(t, st, bucketOwner)); diff != "" {
		t.Errorf("conv/owner after a failed Migrate mismatch (-want +got):\n%s", diff)
	}
	if got := bucket(t, st, bucketLayout); len(got) != 0 {
		t.Errorf("conv/layout after a failed Migrate = %v; want empty", got)
	}
	st.failPut = ""
	if err := repo.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := bucket(t, st, bucketOwner); len(got) != 0 {
		t.Errorf("conv/owner = %v; want empty", got)
	}
}

func put(t *testing.T, st store.Store, bucket string, records map[string]string) {
	t.Helper()
	err := st.Update(context.Background(), func(tx store.Tx) error {
		for k, v := range records {
			if err := tx.Put([]byte(bucket), []byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countingStore counts write transactions and fails Puts into bucket
// failPut with err.
type countingStore struct {
	store.Store
	writes  int
	failPut string
	err     error
}

func (s *countingStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	s.writes++
	return s.Store.Update(ctx, func(tx store.Tx) error { return fn(failingTx{tx, s}) })
}

func (s *countingStore) Batch(ctx context.Context, fn func(store.Tx) error) error {
	s.writes++
	return s.Store.Batch(ctx, func(tx store.Tx) error { return fn(failingTx{tx, s}) })
}

type failingTx struct {
	store.Tx
	s *countingStore
}

func (tx failingTx) Put(bucket, key, value []byte) error {
	if tx.s.failPut != "" && string(bucket) == tx.s.failPut {
		return tx.s.err
	}
	return tx.Tx.Put(bucket, key, value)
}
