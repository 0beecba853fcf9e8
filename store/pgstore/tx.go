package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chatgw/gateway/store"
)

// The statements of a transaction. pgx prepares each one once per connection
// (its statement cache) and sends only the arguments afterwards. A Scan reads
// a prefix's range [prefix, store.PrefixEnd(prefix)) in pages: the statements
// without an upper bound serve the prefixes that have no end (empty, or all
// 0xff bytes).
const (
	sqlGet    = `SELECT value FROM chatgw_kv WHERE bucket = $1 AND key = $2`
	sqlPut    = `INSERT INTO chatgw_kv (bucket, key, value) VALUES ($1, $2, $3) ON CONFLICT (bucket, key) DO UPDATE SET value = excluded.value`
	sqlDelete = `DELETE FROM chatgw_kv WHERE bucket = $1 AND key = $2`

	// sqlExpect checks an assumption (store.Assumer); it fails with
	// codeAssumption when it does not hold.
	sqlExpect = `SELECT chatgw_expect($1, $2, $3)`

	sqlScanRange    = `SELECT key, value FROM chatgw_kv WHERE bucket = $1 AND key >= $2 AND key < $3 ORDER BY key LIMIT $4`
	sqlScanFrom     = `SELECT key, value FROM chatgw_kv WHERE bucket = $1 AND key >= $2 ORDER BY key LIMIT $3`
	sqlScanRangeRev = `SELECT key, value FROM chatgw_kv WHERE bucket = $1 AND key >= $2 AND key < $3 ORDER BY key DESC LIMIT $4`
	sqlScanFromRev  = `SELECT key, value FROM chatgw_kv WHERE bucket = $1 AND key >= $2 ORDER BY key DESC LIMIT $3`
)

// Scan pages: the first holds firstPage rows, each next one four times as
// many up to maxPage, so that a Scan that stops after a few keys (a page of a
// list) reads few, and a long one takes few round trips. Reading a page
// stops early once it holds pageBytes of keys and values, which bounds the
// memory of a Scan over large values.
const (
	firstPage = 64
	maxPage   = 1024
	pageBytes = 4 << 20
)

// Transaction control. BEGIN goes out with the transaction's first statement
// and COMMIT with its last writes, in one batch each (pgx pipelines a batch:
// one round trip), so that a transaction costs as many round trips as it has
// reads, plus one to end it.
const (
	sqlBeginRead  = `BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY`
	sqlBeginWrite = `BEGIN ISOLATION LEVEL SERIALIZABLE READ WRITE`
	sqlCommit     = `COMMIT`
	sqlRollback   = `ROLLBACK`
)

// tx is a store.Tx over one connection of the pool, in a transaction it
// begins with its first statement.
//
// Writes are not sent when Put and Delete are called: they wait in writes and
// go out ahead of the transaction's next statement, in its batch (a read then
// sees them, as the interface asks), or with the COMMIT. An Append, one read
// and five writes, is then two round trips instead of eight.
//
// The first statement that fails loses the transaction (PostgreSQL refuses
// every later statement of it, and the connection may be gone): err keeps
// that failure, Get returns nil from then on and Put, Delete and Scan return
// err, and the DB fails the transaction with it whatever fn returns.
type tx struct {
	ctx      context.Context
	conn     *pgx.Conn
	begin    string // the BEGIN statement, sent with the first statement
	begun    bool   // BEGIN was sent: the connection may be in a transaction
	readOnly bool
	writes   []write   // writes not sent yet, in order
	wrote    bool      // a Put or Delete was made
	ahead    []fetched // what Prefetch read, or Assume assumed; dropped by a write
	checks   []fetched // assumptions whose check was not sent yet
	err      error     // the first failure of a statement
	connLost bool      // err came with the connection's end
	ended    bool

	// spec is what the transaction's attempts learn of its reads, shared
	// by them; early is set once a Prefetch committed a View with its
	// reads, after which a read it did not make is a miss.
	spec  *speculation
	early bool
}

// speculation is what the attempts of a transaction learn of its reads.
//
// It lets a View that begins with a Prefetch commit in that
// Prefetch's round trip: BEGIN, the reads and COMMIT go out in one batch,
// and fn's Gets and Scans are answered from them. A View that then reads
// something the Prefetch did not is not wrong but incomplete: its attempt
// ends in errMissed, and the next one runs fn again with the missed reads
// added to its Prefetch (a stored prompt's version, found in the prompt's
// head). A second miss, or one no Prefetch can take (a reverse Scan, a
// prefix longer than its page), runs the View without speculating, as any
// other: BEGIN with the reads, the reads that follow, then COMMIT.
//
// This keeps the View's promise: an attempt's answers count only when every
// read fn made was answered by the batch, which is one committed
// SERIALIZABLE READ ONLY transaction.
//
// In an Update it takes the values fn assumes (store.Assumer) for read, and
// checks them with the writes; when one no longer holds (codeAssumption),
// the next attempts assume nothing.
type speculation struct {
	off      bool         // the next attempts do not speculate
	tries    int          // attempts that speculated
	extra    []store.Read // what the last attempt missed, for the next Prefetch
	noAssume bool         // an assumption failed: Assume is ignored from now on
}

// maxSpeculations bounds the attempts of a View that speculate: the first,
// and one with what it missed.
const maxSpeculations = 2

// errMissed ends an attempt that read beyond what its early COMMIT covered.
var errMissed = errors.New("a read the View's Prefetch did not make, after its commit")

// fetched is one read of Prefetch and its answer: a Get's value (nil when
// absent), or the first page of a forward Scan of a prefix.
type fetched struct {
	read  store.Read
	value []byte
	rows  []row
	full  bool // the page may not hold the prefix's last row
}

// write is a Put (value non-nil) or a Delete waiting to be sent; it holds
// copies, since the caller may reuse its slices once Put returns.
type write struct{ bucket, key, value []byte }

// send sends, in one batch: BEGIN unless it was sent, the waiting writes,
// then what queue adds. It returns the batch's first failure.
func (t *tx) send(queue func(b *pgx.Batch)) error {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(t.writes)+2)}
	if !t.begun {
		b.Queue(t.begin)
		t.begun = true
	}
	for _, c := range t.checks { // ahead of the writes, which may change the key
		b.Queue(sqlExpect, c.read.Bucket, c.read.Key, c.value)
	}
	t.checks = t.checks[:0]
	for _, w := range t.writes {
		if w.value == nil {
			b.Queue(sqlDelete, w.bucket, w.key)
		} else {
			b.Queue(sqlPut, w.bucket, w.key, w.value)
		}
	}
	t.writes = t.writes[:0]
	queue(b)
	return t.conn.SendBatch(t.ctx, b).Close()
}

// commit sends the waiting writes and COMMIT. committed reports that
// PostgreSQL answered the COMMIT: the transaction is durable whatever err
// says of what came after. A transaction that sent nothing has nothing to
// commit.
func (t *tx) commit() (committed bool, err error) {
	if t.early || (!t.begun && len(t.writes) == 0 && len(t.checks) == 0) {
		return true, nil
	}
	err = t.send(func(b *pgx.Batch) {
		b.Queue(sqlCommit).Exec(func(tag pgconn.CommandTag) error {
			if tag.String() != "COMMIT" {
				return pgx.ErrTxCommitRollback // the transaction had failed
			}
			committed = true
			return nil
		})
	})
	return committed, err
}

// rollback ends a transaction that will not commit, keeping the connection
// for the pool when it can. A connection left in a transaction (the
// ROLLBACK failed) is closed by the pool on release.
func (t *tx) rollback() {
	if !t.begun || t.conn.IsClosed() || t.conn.PgConn().TxStatus() == 'I' {
		return
	}
	_, _ = t.conn.Exec(context.WithoutCancel(t.ctx), sqlRollback) // a failure leaves the connection for the pool to close
}

func (t *tx) Get(bucket, key []byte) []byte {
	t.check()
	if !storable(bucket, key) {
		return nil
	}
	if t.early { // answered by the Prefetch, or missed (err then says so)
		if f := t.lookAhead(bucket, key, false); f != nil {
			return f.value
		}
		t.miss(store.Read{Bucket: bucket, Key: key}, true)
		return nil
	}
	if t.err != nil {
		return nil
	}
	if f := t.lookAhead(bucket, key, false); f != nil {
		return f.value
	}
	var v []byte
	if err := t.send(func(b *pgx.Batch) { queueGet(b, bucket, key, &v) }); err != nil {
		t.fail("Get", err)
		return nil
	}
	return v
}

// queueGet queues the read of key into *v: nil when the key is absent, a
// non-nil empty slice for a stored empty value.
func queueGet(b *pgx.Batch, bucket, key []byte, v *[]byte) {
	b.Queue(sqlGet, bucket, key).QueryRow(func(row pgx.Row) error {
		err := row.Scan(v)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil
		case err == nil && *v == nil:
			*v = []byte{} // a stored empty value is not an absent key
		}
		return err
	})
}

// Prefetch sends reads in one batch (with the waiting writes) and keeps the
// answers for the Gets and forward Scans that ask for them (store.Prefetcher).
//
// A View's first statement, when it is a Prefetch, also commits the View (see
// speculation), and then reads each prefix's first page of up to maxPage
// rows, since no later page can be read.
func (t *tx) Prefetch(reads ...store.Read) {
	t.check()
	if t.early {
		for _, r := range reads {
			if storable(r.Bucket, r.Key) {
				t.miss(r, true)
			}
		}
		return
	}
	if t.err != nil {
		return
	}
	early := t.speculates()
	if early {
		t.spec.tries++
		reads = append(reads[:len(reads):len(reads)], t.spec.extra...)
		t.spec.extra = nil
	}
	ahead := make([]fetched, 0, len(reads))
	for _, r := range reads {
		if storable(r.Bucket, r.Key) {
			ahead = append(ahead, fetched{read: r})
		}
	}
	committed := false
	err := t.send(func(b *pgx.Batch) {
		queueAhead(b, ahead, early)
		if early {
			b.Queue(sqlCommit).Exec(func(tag pgconn.CommandTag) error {
				committed = tag.String() == "COMMIT"
				return nil
			})
		}
	})
	if err == nil && early && !committed {
		err = pgx.ErrTxCommitRollback
	}
	if err != nil {
		t.fail("Prefetch", err)
		return
	}
	if t.early = early; t.ahead == nil {
		t.ahead = ahead
	} else {
		t.ahead = append(t.ahead, ahead...) // after what Assume assumed
	}
}

// speculates reports whether a Prefetch now may commit the transaction with
// its reads: it is a View's first statement (never an Update's: its writes
// would be lost), and the View's attempts have not given up speculating.
func (t *tx) speculates() bool {
	return t.readOnly && !t.spec.off && t.spec.tries < maxSpeculations && !t.begun
}

// queueAhead queues the reads of ahead, each answered into its element: a
// prefix's first page holds firstPage rows, or maxPage when it is the only
// one (early).
func queueAhead(b *pgx.Batch, ahead []fetched, early bool) {
	limit := firstPage
	if early {
		limit = maxPage
	}
	for i := range ahead {
		f := &ahead[i]
		if !f.read.Prefix {
			queueGet(b, f.read.Bucket, f.read.Key, &f.value)
			continue
		}
		sql, args := pageQuery(f.read.Bucket, f.read.Key, store.PrefixEnd(f.read.Key), false, limit)
		b.Queue(sql, args...).Query(func(q pgx.Rows) (err error) {
			f.rows, f.full, err = readPage(q)
			f.full = f.full || len(f.rows) == limit
			return err
		})
	}
}

// miss records a read that a View committed early did not make, which fails
// the attempt (errMissed): the next one prefetches it too when again is set
// and it can be prefetched, and does not speculate otherwise.
func (t *tx) miss(r store.Read, again bool) error {
	if again {
		t.spec.extra = append(t.spec.extra, store.Read{Bucket: bytes.Clone(r.Bucket), Key: bytes.Clone(r.Key), Prefix: r.Prefix})
	} else {
		t.spec.off = true
	}
	return t.fail("read", errMissed)
}

// lookAhead returns what Prefetch read of key in bucket (a prefix when
// prefix is set), or nil when it did not read it.
func (t *tx) lookAhead(bucket, key []byte, prefix bool) *fetched {
	for i := range t.ahead {
		f := &t.ahead[i]
		if f.read.Prefix == prefix && bytes.Equal(f.read.Key, key) && bytes.Equal(f.read.Bucket, bucket) {
			return f
		}
	}
	return nil
}

// Assume takes value for what key holds in bucket (nil: absent), to be
// checked with the transaction's next batch (store.Assumer). It is ignored
// in a View, after a write, and once an assumption of the transaction's
// earlier attempts failed.
func (t *tx) Assume(bucket, key, value []byte) {
	t.check()
	if t.readOnly || t.wrote || t.err != nil || t.spec.noAssume || !storable(bucket, key) {
		return
	}
	f := fetched{read: store.Read{Bucket: bucket, Key: key}, value: value}
	t.ahead = append(t.ahead, f)
	t.checks = append(t.checks, f)
}

func (t *tx) Put(bucket, key, value []byte) error {
	t.check()
	if t.readOnly {
		return fmt.Errorf("pgstore.Put: %w", store.ErrReadOnly)
	}
	if err := store.CheckPut(bucket, key, value); err != nil {
		return fmt.Errorf("pgstore.Put: %w", err)
	}
	if t.err != nil {
		return t.err
	}
	t.writes = append(t.writes, write{bytes.Clone(bucket), bytes.Clone(key), append([]byte{}, value...)})
	t.ahead, t.wrote = nil, true
	return nil
}

func (t *tx) Delete(bucket, key []byte) error {
	t.check()
	if t.readOnly {
		return fmt.Errorf("pgstore.Delete: %w", store.ErrReadOnly)
	}
	if t.err != nil {
		return t.err
	}
	if !storable(bucket, key) {
		return nil
	}
	t.writes = append(t.writes, write{bucket: bytes.Clone(bucket), key: bytes.Clone(key)})
	t.ahead, t.wrote = nil, true
	return nil
}

func (t *tx) Scan(bucket, prefix []byte, reverse bool, fn func(key, value []byte) (bool, error)) error {
	t.check()
	if t.err != nil && !t.early {
		return t.err
	}
	if !storable(bucket, []byte{0}) {
		return nil
	}
	if t.early {
		return t.scanEarly(bucket, prefix, reverse, fn)
	}
	// The range still to read is [lo, hi); hi nil has no end. lo is never
	// nil: a nil argument is SQL's NULL, which matches nothing.
	lo, hi := append([]byte{}, prefix...), store.PrefixEnd(prefix)
	limit := firstPage
	var f *fetched
	if !reverse {
		f = t.lookAhead(bucket, prefix, true)
	}
	for {
		var rows []row
		var full bool
		var err error
		if f != nil {
			rows, full, f = f.rows, f.full, nil // the first page was read ahead
		} else if rows, full, err = t.page(bucket, lo, hi, reverse, limit); err != nil {
			return t.fail("Scan", err)
		}
		for _, r := range rows {
			more, err := fn(r.key, r.value)
			if err != nil || !more {
				return err
			}
		}
		if !full {
			return nil
		}
		// The next page starts past the last key read: after it going
		// forward (last+0x00 is the smallest key greater than last), before
		// it going backward.
		last := rows[len(rows)-1].key
		if reverse {
			hi = last
		} else {
			lo = append(bytes.Clone(last), 0)
		}
		limit = min(limit*4, maxPage)
	}
}

// scanEarly is Scan in a View committed with its Prefetch: it answers from
// the prefix's page read ahead when that page holds the whole prefix, and
// misses otherwise.
func (t *tx) scanEarly(bucket, prefix []byte, reverse bool, fn func(key, value []byte) (bool, error)) error {
	var f *fetched
	if !reverse {
		f = t.lookAhead(bucket, prefix, true)
	}
	switch {
	case f == nil:
		// A forward Scan of a prefix can be read ahead next time; a reverse
		// one, or one of the whole bucket, cannot.
		return t.miss(store.Read{Bucket: bucket, Key: prefix, Prefix: true}, !reverse && storable(bucket, prefix))
	case f.full:
		return t.miss(f.read, false)
	}
	for _, r := range f.rows {
		if more, err := fn(r.key, r.value); err != nil || !more {
			return err
		}
	}
	return nil
}

// row is a key and its value, copied out of pgx's buffers.
type row struct{ key, value []byte }

// page reads up to limit rows of bucket in [lo, hi) (no end when hi is nil),
// in key order or reversed. full reports that the page may not hold the
// range's last row: it has limit rows, or reading stopped at pageBytes.
func (t *tx) page(bucket, lo, hi []byte, reverse bool, limit int) (rows []row, full bool, err error) {
	sql, args := pageQuery(bucket, lo, hi, reverse, limit)
	err = t.send(func(b *pgx.Batch) {
		b.Queue(sql, args...).Query(func(q pgx.Rows) error {
			rows, full, err = readPage(q)
			return err
		})
	})
	if err != nil {
		return nil, false, err
	}
	return rows, full || len(rows) == limit, nil
}

// pageQuery is the statement of a page: up to limit rows of bucket in [lo,
// hi) (no end when hi is nil), in key order or reversed.
func pageQuery(bucket, lo, hi []byte, reverse bool, limit int) (string, []any) {
	switch {
	case hi != nil && reverse:
		return sqlScanRangeRev, []any{bucket, lo, hi, limit}
	case hi != nil:
		return sqlScanRange, []any{bucket, lo, hi, limit}
	case reverse:
		return sqlScanFromRev, []any{bucket, lo, limit}
	}
	return sqlScanFrom, []any{bucket, lo, limit}
}

// readPage reads a page's rows, stopping once they hold pageBytes of keys and
// values (full is then true).
func readPage(q pgx.Rows) (rows []row, full bool, err error) {
	defer q.Close()
	size := 0
	for q.Next() {
		var r row
		if err := q.Scan(&r.key, &r.value); err != nil { // Scan copies into new slices
			return nil, false, err
		}
		if r.value == nil {
			r.value = []byte{}
		}
		rows = append(rows, r)
		if size += len(r.key) + len(r.value); size >= pageBytes {
			full = true
			break
		}
	}
	q.Close() // reads what the page did not take, and the statement's outcome
	return rows, full, q.Err()
}

// fail records the failure of statement op as the transaction's, unless one
// came first, and returns the transaction's failure.
func (t *tx) fail(op string, err error) error {
	if t.err == nil {
		t.err = fmt.Errorf("%s: %w", op, err)
		t.connLost = t.conn.IsClosed()
	}
	return t.err
}

// check panics when the transaction has ended: a Tx kept past fn would
// otherwise read nothing without a word.
func (t *tx) check() {
	if t.ended {
		panic("pgstore: Tx used after its transaction ended")
	}
}

func (t *tx) end() { t.ended = true }

// storable reports whether a key can be in bucket: Put accepts only non-empty
// bucket names and keys of at most store.MaxKeySize bytes, so asking the
// database about others would be a round trip for nothing.
func storable(bucket, key []byte) bool {
	return len(bucket) > 0 && len(bucket) <= store.MaxKeySize && len(key) > 0 && len(key) <= store.MaxKeySize
}
