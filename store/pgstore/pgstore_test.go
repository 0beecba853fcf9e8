package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	neturl "net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chatgw/gateway/internal/pgtest"
	"github.com/chatgw/gateway/internal/testkit"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/store/pgstore"
	"github.com/chatgw/gateway/store/storetest"
)

// open opens a store on url, closed at the end of the test.
func open(t testing.TB, url string, opts ...pgstore.Option) *pgstore.DB {
	t.Helper()
	db, err := pgstore.Open(context.Background(), url, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// TestStore runs the tests that can share one cluster, each in a database of
// its own. (TestDatabaseRestart has a cluster to itself.)
func TestStore(t *testing.T) {
	t.Parallel()
	c := pgtest.New(t)
	t.Run("Conformance", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, func(t *testing.T) store.Store { return open(t, c.NewDatabase(t)) })
	})
	for _, tt := range []struct {
		name string
		fn   func(*testing.T, *pgtest.Cluster)
	}{
		{"AccessPaths", testAccessPaths},
		{"MigrationsOnceUnderConcurrentOpens", testMigrationsOnce},
		{"RefusesNewerSchema", testRefusesNewerSchema},
		{"RunsOnNewerCompatibleSchema", testNewerCompatibleSchema},
		{"MigrationsRecordCompatibility", testMigrationsRecordCompatibility},
		{"StartsWithoutOwningTheSchema", testStartsWithoutOwning},
		{"AddsTheCompatibleColumn", testAddsCompatibleColumn},
		{"OpenErrors", testOpenErrors},
		{"SerializationFailureRetried", testSerializationFailureRetried},
		{"DeadlockRetried", testDeadlockRetried},
		{"ConnectionCutMidTransaction", testConnectionCut},
		{"FailedReadIsNotAbsence", testFailedReadIsNotAbsence},
		{"FailedPrefetch", testFailedPrefetch},
		{"GivesUpAfterMaxAttempts", testGivesUp},
		{"KeyTooLongForTheIndex", testKeyTooLong},
		{"RoundTrips", testRoundTrips},
		{"SpeculativeView", testSpeculativeView},
		{"AssumptionRetried", testAssumptionRetried},
		{"RateLimitSharedByGateways", testRateShared},
		{"RateLimitConcurrent", testRateConcurrent},
		{"RateLimitRefillAndChange", testRateRefillAndChange},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, c)
		})
	}
}

// dbName returns the database of a URL.
func dbName(t testing.TB, url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Database
}

func testMigrationsOnce(t *testing.T, c *pgtest.Cluster) {
	url := c.NewDatabase(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			db, err := pgstore.Open(context.Background(), url)
			if err != nil {
				t.Errorf("concurrent Open: %v", err)
				return
			}
			db.Close()
		})
	}
	wg.Wait()
	db := open(t, url) // and once more, on a migrated database
	if err := db.Update(context.Background(), func(tx store.Tx) error {
		return tx.Put([]byte("b"), []byte("k"), []byte("v"))
	}); err != nil {
		t.Fatal(err)
	}
	var n, maxVersion int
	err := c.Conn(t, dbName(t, url)).QueryRow(context.Background(),
		"SELECT count(*), max(version) FROM chatgw_migrations").Scan(&n, &maxVersion)
	if err != nil {
		t.Fatal(err)
	}
	if n != maxVersion || n < 1 {
		t.Errorf("chatgw_migrations holds %d rows up to version %d, want each migration once", n, maxVersion)
	}
}

// migratedDatabase is a new database that a start of this build migrated,
// and a connection to it as the cluster's superuser, to change it under the
// store.
func migratedDatabase(t *testing.T, c *pgtest.Cluster) (url string, conn *pgx.Conn) {
	t.Helper()
	url = c.NewDatabase(t)
	open(t, url).Close()
	return url, c.Conn(t, dbName(t, url))
}

func testRefusesNewerSchema(t *testing.T, c *pgtest.Cluster) {
	url, conn := migratedDatabase(t, c)
	if _, err := conn.Exec(context.Background(), "INSERT INTO chatgw_migrations (version, name) VALUES (9999, '9999_future.sql')"); err != nil {
		t.Fatal(err)
	}
	db, err := pgstore.Open(context.Background(), url)
	if err == nil {
		db.Close()
		t.Fatal("Open of a database migrated by a newer gateway succeeded")
	}
	if !strings.Contains(err.Error(), "version 9999, newer than") {
		t.Errorf("Open error %q does not say that the schema is newer", err)
	}
}

// testNewerCompatibleSchema: migrations of a newer gateway marked compatible
// with earlier ones let this build run, so that a fleet is upgraded one
// replica at a time; one more that is not marked refuses it again, naming it.
func testNewerCompatibleSchema(t *testing.T, c *pgtest.Cluster) {
	ctx := context.Background()
	url, conn := migratedDatabase(t, c)
	if _, err := conn.Exec(ctx, "INSERT INTO chatgw_migrations (version, name, compatible) VALUES (9998, '9998_added.sql', true)"); err != nil {
		t.Fatal(err)
	}
	db := open(t, url)
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.Put([]byte("b"), []byte("k"), []byte("v")) }); err != nil {
		t.Fatalf("Update on a newer compatible schema: %v", err)
	}
	db.Close()
	// A gateway that predates the compatible column inserts without it.
	if _, err := conn.Exec(ctx, "INSERT INTO chatgw_migrations (version, name) VALUES (9999, '9999_changed.sql')"); err != nil {
		t.Fatal(err)
	}
	db, err := pgstore.Open(ctx, url)
	if err == nil {
		db.Close()
		t.Fatal("Open of a database with a newer migration not marked compatible succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "version 9999, newer than") || !strings.Contains(msg, "9999_changed.sql is not marked compatible") {
		t.Errorf("Open error %q does not name the newer migration that is not compatible", msg)
	}
}

// testStartsWithoutOwningTheSchema: once a role that may create tables has
// migrated the database, a replica whose role may only use them (no CREATE
// on the schema, owning nothing) starts and works: a start with nothing to
// migrate changes no table.
func testStartsWithoutOwning(t *testing.T, c *pgtest.Cluster) {
	ctx := context.Background()
	url, conn := migratedDatabase(t, c)
	role := "replica_" + dbName(t, url)
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC",
		"GRANT USAGE ON SCHEMA public TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + role,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP OWNED BY "+role+"; DROP ROLE "+role) })
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	u.User = neturl.User(role)
	db, err := pgstore.Open(ctx, u.String())
	if err != nil {
		t.Fatalf("Open as a role that only uses the tables: %v", err)
	}
	defer db.Close()
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.Put([]byte("b"), []byte("k"), []byte("v")) }); err != nil {
		t.Fatalf("Update as that role: %v", err)
	}
}

// testAddsCompatibleColumn: on a database that gateways from before the
// compatible column migrated, a start adds the column, their migrations
// counting as not compatible.
func testAddsCompatibleColumn(t *testing.T, c *pgtest.Cluster) {
	ctx := context.Background()
	url, conn := migratedDatabase(t, c)
	if _, err := conn.Exec(ctx, "ALTER TABLE chatgw_migrations DROP COLUMN compatible"); err != nil {
		t.Fatal(err)
	}
	open(t, url).Close()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM chatgw_migrations WHERE NOT compatible").Scan(&n); err != nil || n == 0 {
		t.Errorf("after a start: %d migrations not compatible (%v), want the earlier ones", n, err)
	}
}

// testMigrationsRecordCompatibility: each migration's row says whether it
// begins with the compatible marker: the first two do not (gateways older
// than the marker refuse any newer schema anyway), 0003 does (it adds a
// function that earlier gateways never call).
func testMigrationsRecordCompatibility(t *testing.T, c *pgtest.Cluster) {
	_, conn := migratedDatabase(t, c)
	rows, err := conn.Query(context.Background(),
		"SELECT name, compatible FROM chatgw_migrations WHERE version <= 3 ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for rows.Next() {
		var name string
		var compatible bool
		if err := rows.Scan(&name, &compatible); err != nil {
			t.Fatal(err)
		}
		got[name] = compatible
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"0001_kv.sql": false, "0002_rate.sql": false, "0003_expect.sql": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chatgw_migrations' compatible column mismatch (-want +got):\n%s", diff)
	}
}

func testOpenErrors(t *testing.T, c *pgtest.Cluster) {
	// Each URL that could carry one has a password, which no error may show.
	ctx := context.Background()
	tests := []struct {
		name, url string
		opts      []pgstore.Option
		want      string
	}{
		{"bad URL", "postgres://u:s3cret@host:notaport/db", nil, "cannot parse"},
		{"unknown database", strings.Replace(c.URL("nope"), "postgres@", "postgres:s3cret@", 1), nil, `database "nope" does not exist`},
		{"zero attempts", c.URL("postgres"), []pgstore.Option{pgstore.WithMaxAttempts(0)}, "max attempts"},
	}
	for _, tt := range tests {
		db, err := pgstore.Open(ctx, tt.url, tt.opts...)
		if err == nil {
			db.Close()
			t.Errorf("%s: Open succeeded", tt.name)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Open error %q does not contain %q", tt.name, err, tt.want)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: Open error %q holds the password", tt.name, err)
		}
	}
}

// codeOf returns the SQLSTATE of err, or "".
func codeOf(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// retries records the failures a DB retried, and the retries
// ObserveRetries reported ("op reason").
type retries struct {
	mu       sync.Mutex
	errs     []error
	observed []string
}

func watchRetries(db *pgstore.DB) *retries {
	r := &retries{}
	pgstore.SetRetried(db, func(_ int, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.errs = append(r.errs, err)
	})
	db.ObserveRetries(func(op, reason string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.observed = append(r.observed, op+" "+reason)
	})
	return r
}

// reported returns what ObserveRetries reported, and forgets it.
func (r *retries) reported() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.observed
	r.observed = nil
	return out
}

// codes returns the SQLSTATEs of the retried failures.
func (r *retries) codes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, err := range r.errs {
		out = append(out, codeOf(err))
	}
	return out
}

func (r *retries) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs)
}

// getInt reads an integer written by putInt; absent is 0.
func getInt(tx store.Tx, key string) (int, error) {
	n := 0
	if v := tx.Get([]byte("b"), []byte(key)); v != nil {
		if _, err := fmt.Sscan(string(v), &n); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func putInt(tx store.Tx, key string, n int) error {
	return tx.Put([]byte("b"), []byte(key), fmt.Append(nil, n))
}

func readInt(t *testing.T, db *pgstore.DB, key string) int {
	t.Helper()
	n, err := store.ViewValue(context.Background(), db, func(tx store.Tx) (int, error) { return getInt(tx, key) })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// testSerializationFailureRetried makes two Updates read the same counter
// before either writes it: PostgreSQL aborts one (40001) and the store runs
// it again, so both increments land.
func testSerializationFailureRetried(t *testing.T, c *pgtest.Cluster) {
	db := open(t, c.NewDatabase(t))
	r := watchRetries(db)
	var bothRead sync.WaitGroup
	bothRead.Add(2)
	var calls atomic.Int32
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			first := true
			err := db.Update(context.Background(), func(tx store.Tx) error {
				calls.Add(1)
				n, err := getInt(tx, "counter")
				if err != nil {
					return err
				}
				if first { // only the first runs meet: a retry goes on alone
					first = false
					bothRead.Done()
					bothRead.Wait()
				}
				return putInt(tx, "counter", n+1)
			})
			if err != nil {
				t.Errorf("Update: %v", err)
			}
		})
	}
	wg.Wait()
	if n := readInt(t, db, "counter"); n != 2 {
		t.Errorf("counter = %d, want 2: an increment was lost", n)
	}
	if got := r.codes(); len(got) == 0 || got[0] != "40001" || calls.Load() < 3 {
		t.Errorf("retried failures %v after %d calls of fn, want a serialization failure (40001) and a third call", got, calls.Load())
	}
	if got := r.reported(); len(got) == 0 || got[0] != "Update serialization" {
		t.Errorf("ObserveRetries heard %q, want %q first", got, "Update serialization")
	}
}

// testDeadlockRetried makes two Updates write the same two keys in opposite
// orders: PostgreSQL finds the deadlock (40P01), aborts one and the store
// runs it again.
func testDeadlockRetried(t *testing.T, c *pgtest.Cluster) {
	db := open(t, c.NewDatabase(t))
	if err := db.Update(context.Background(), func(tx store.Tx) error {
		return errors.Join(putInt(tx, "a", 0), putInt(tx, "b", 0))
	}); err != nil {
		t.Fatal(err)
	}
	r := watchRetries(db)
	var bothLocked sync.WaitGroup
	bothLocked.Add(2)
	var wg sync.WaitGroup
	for _, keys := range [][2]string{{"a", "b"}, {"b", "a"}} {
		wg.Go(func() {
			first := true
			err := db.Update(context.Background(), func(tx store.Tx) error {
				if err := putInt(tx, keys[0], 1); err != nil {
					return err
				}
				// A write waits to go out with the next statement: this
				// read sends it, and the row lock is held from here on.
				tx.Get([]byte("b"), []byte(keys[0]))
				if first {
					first = false
					bothLocked.Done()
					bothLocked.Wait()
				}
				return putInt(tx, keys[1], 1)
			})
			if err != nil {
				t.Errorf("Update: %v", err)
			}
		})
	}
	wg.Wait()
	got, heard := r.codes(), r.reported()
	switch {
	case len(got) == 0 || (got[0] != "40P01" && got[0] != "40001"):
		t.Errorf("retried failures %v, want a deadlock (40P01)", got)
	case got[0] == "40P01" && heard[0] != "Update deadlock":
		t.Errorf("ObserveRetries heard %q, want %q first", heard, "Update deadlock")
	case got[0] != "40P01":
		t.Logf("the conflict was found as a serialization failure before the deadlock: %v", got)
	}
}

// cutter cuts the connections of a database's sessions that are inside a
// transaction, as a network failure or an operator would.
type cutter struct{ admin *pgx.Conn }

func newCutter(t *testing.T, c *pgtest.Cluster, url string) *cutter {
	return &cutter{admin: c.Conn(t, dbName(t, url))}
}

// cut terminates those sessions, waiting until they are gone, and returns
// how many there were.
func (c *cutter) cut(t *testing.T) int {
	t.Helper()
	var n int
	err := c.admin.QueryRow(context.Background(), `
		SELECT count(pg_terminate_backend(pid, 10000)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'`).Scan(&n)
	if err != nil {
		t.Fatalf("cut: %v", err)
	}
	return n
}

// testConnectionCut cuts the connection of a transaction between two of its
// statements: the store runs it again on another connection, once, and the
// write lands once.
func testConnectionCut(t *testing.T, c *pgtest.Cluster) {
	url := c.NewDatabase(t)
	db := open(t, url)
	r := watchRetries(db)
	k := newCutter(t, c, url)
	ctx := context.Background()
	for _, m := range []struct {
		name string
		run  func(context.Context, func(store.Tx) error) error
	}{{"Update", db.Update}, {"Batch", db.Batch}} {
		calls := 0
		err := m.run(ctx, func(tx store.Tx) error {
			calls++
			n, err := getInt(tx, "counter")
			if err != nil {
				return err
			}
			if calls == 1 && k.cut(t) != 1 {
				t.Errorf("%s: cut found no session in a transaction", m.name)
			}
			return putInt(tx, "counter", n+1)
		})
		if err != nil || calls != 2 {
			t.Errorf("%s with a cut connection = %v after %d calls of fn, want nil after 2", m.name, err, calls)
		}
	}
	if n := readInt(t, db, "counter"); n != 2 {
		t.Errorf("counter = %d after two increments, want 2", n)
	}

	calls := 0
	var got string
	err := db.View(ctx, func(tx store.Tx) error {
		calls++
		if calls == 1 {
			tx.Get([]byte("b"), []byte("other")) // BEGIN goes out with the first statement
			if k.cut(t) != 1 {
				t.Error("View: cut found no session in a transaction")
			}
		}
		got = string(tx.Get([]byte("b"), []byte("counter")))
		return nil
	})
	if err != nil || calls != 2 || got != "2" {
		t.Errorf("View with a cut connection = %v after %d calls, read %q; want nil after 2, %q", err, calls, got, "2")
	}
	if r.count() != 3 {
		t.Errorf("%d retries, want 3 (one per cut)", r.count())
	}
	testkit.Diff(t, "retries ObserveRetries heard", []string{"Update connection", "Batch connection", "View connection"}, r.reported())
}

// withRecord opens a new database of c holding the record "record" = 1.
func withRecord(t *testing.T, c *pgtest.Cluster) (string, *pgstore.DB, context.Context) {
	url := c.NewDatabase(t)
	db := open(t, url)
	ctx := context.Background()
	if err := db.Update(ctx, func(tx store.Tx) error { return putInt(tx, "record", 1) }); err != nil {
		t.Fatal(err)
	}
	return url, db, ctx
}

// stored reports whether key is in bucket "b".
func stored(t *testing.T, db *pgstore.DB, key string) bool {
	t.Helper()
	ok, err := store.ViewValue(context.Background(), db, func(tx store.Tx) (bool, error) {
		return tx.Get([]byte("b"), []byte(key)) != nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// testFailedReadIsNotAbsence checks that a Get that failed, and so returned
// nil, is never taken for an absent key: fn's decision on it is not
// returned, nor committed.
func testFailedReadIsNotAbsence(t *testing.T, c *pgtest.Cluster) {
	url, db, ctx := withRecord(t, c)
	errNotFound := errors.New("record not found")

	// Retried: the first run's Get fails on a cut connection; its "not
	// found" is not the answer, the second run's read is.
	k := newCutter(t, c, url)
	calls := 0
	err := db.Update(ctx, func(tx store.Tx) error {
		calls++
		if calls == 1 {
			tx.Get([]byte("b"), []byte("other")) // begin the transaction
			k.cut(t)
		}
		if tx.Get([]byte("b"), []byte("record")) == nil {
			return errNotFound
		}
		return putInt(tx, "seen", calls)
	})
	if err != nil || calls != 2 {
		t.Errorf("Update whose first read failed = %v after %d calls, want nil after 2", err, calls)
	}

	// Not retried: the context ends in the middle. fn returns nil, having
	// "not found" the record, and would delete a marker; the Update fails
	// instead and nothing is written.
	cctx, cancel := context.WithCancel(ctx)
	err = db.Update(cctx, func(tx store.Tx) error {
		cancel()
		if tx.Get([]byte("b"), []byte("record")) != nil {
			t.Error("Get after the context ended found the record")
		}
		if err := tx.Put([]byte("b"), []byte("marker"), []byte("x")); err == nil {
			t.Error("Put after a failed Get succeeded")
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Update whose read failed, fn returning nil = %v, want the failure (context.Canceled)", err)
	}
	if stored(t, db, "marker") {
		t.Error("the failed Update wrote its marker")
	}
}

// testFailedPrefetch checks that a Prefetch that failed fails its
// transaction as a failed Get does: the nil its Gets then return is not
// taken for an absent key, the transaction runs again on a cut connection,
// and a canceled one returns its failure and writes nothing.
func testFailedPrefetch(t *testing.T, c *pgtest.Cluster) {
	url, db, ctx := withRecord(t, c)
	record := store.Read{Bucket: []byte("b"), Key: []byte("record")}
	k := newCutter(t, c, url)
	calls := 0
	err := db.View(ctx, func(tx store.Tx) error {
		calls++
		if calls == 1 {
			tx.Get([]byte("b"), []byte("other")) // begin the transaction
			k.cut(t)
		}
		tx.(store.Prefetcher).Prefetch(record)
		if tx.Get(record.Bucket, record.Key) == nil {
			return errors.New("record not found")
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Errorf("View whose Prefetch failed = %v after %d calls, want nil after 2", err, calls)
	}

	cctx, cancel := context.WithCancel(ctx)
	err = db.Update(cctx, func(tx store.Tx) error {
		cancel()
		tx.(store.Prefetcher).Prefetch(record)
		if tx.Get(record.Bucket, record.Key) != nil {
			t.Error("Get after a failed Prefetch found the record")
		}
		if err := tx.Put([]byte("b"), []byte("marker"), []byte("x")); err == nil {
			t.Error("Put after a failed Prefetch succeeded")
		}
		return nil
	})
	// The failure is the Prefetch's: later statements would fail as well,
	// but the error names the one that failed first.
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "Prefetch") {
		t.Errorf("Update whose Prefetch failed, fn returning nil = %v, want the Prefetch's failure (context.Canceled)", err)
	}
	if stored(t, db, "marker") {
		t.Error("the failed Update wrote its marker")
	}
}

// testGivesUp cuts every attempt: the Update fails after WithMaxAttempts
// attempts with the last failure.
func testGivesUp(t *testing.T, c *pgtest.Cluster) {
	url := c.NewDatabase(t)
	db := open(t, url, pgstore.WithMaxAttempts(3))
	k := newCutter(t, c, url)
	calls := 0
	err := db.Update(context.Background(), func(tx store.Tx) error {
		calls++
		tx.Get([]byte("b"), []byte("k"))
		k.cut(t)
		return tx.Put([]byte("b"), []byte("k"), []byte("v"))
	})
	if err == nil || calls != 3 || !strings.Contains(err.Error(), "attempt 3 of 3") {
		t.Errorf("Update cut at every attempt = %v after %d calls, want a failure after 3", err, calls)
	}
}

// testKeyTooLong documents the limit of PostgreSQL's index entries (see the
// package documentation): a key that does not compress below about 2.7 kB
// fails its transaction with the database's error.
func testKeyTooLong(t *testing.T, c *pgtest.Cluster) {
	db := open(t, c.NewDatabase(t))
	key := make([]byte, 3000)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range key {
		key[i] = byte(r.Uint32()) // nothing for the compressor to take
	}
	err := db.Update(context.Background(), func(tx store.Tx) error {
		return tx.Put([]byte("b"), key, []byte("v"))
	})
	if err == nil || codeOf(err) != "54000" {
		t.Errorf("Put of an incompressible 3000-byte key = %v, want the index's program_limit_exceeded (54000)", err)
	}
}
