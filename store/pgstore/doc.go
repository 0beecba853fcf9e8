// Package pgstore is a store.Store on PostgreSQL (github.com/jackc/pgx/v5),
// for several gateways sharing one database. It passes the conformance suite
// of store/storetest, as store/boltstore and store/memstore do.
//
// # Opening
//
// Open takes a postgres:// or postgresql:// URL, with pgx's parameters
// (pool_max_conns, sslmode, application_name, search_path...): connections
// come from pgx's own pool (pgxpool), and a connection attempt gives up after
// DefaultConnectTimeout unless the URL sets connect_timeout. Open connects
// once, so that a database that cannot be reached, or refuses the login,
// fails start-up rather than the first request; errors name the user and
// database, never the password.
//
// # Schema and migrations
//
// The whole key space is one table, as kine puts etcd's on SQL:
//
//	CREATE TABLE chatgw_kv (
//		bucket bytea NOT NULL,
//		key    bytea NOT NULL,
//		value  bytea NOT NULL,
//		PRIMARY KEY (bucket, key)
//	);
//
// bytea compares byte by byte, a shorter value first on a tie: the order of
// bytes.Compare, which Scan promises. A Get is a lookup of the primary key;
// a Scan of a prefix reads the index range key >= prefix AND key <
// store.PrefixEnd(prefix) (computed in Go; a prefix with no end, empty or all
// 0xff bytes, has no upper bound), ORDER BY key ASC or DESC. The tests load a
// million records and check with EXPLAIN that both use the primary key's
// index and never a sequential scan or a sort.
//
// The schema is created by migrations embedded in the binary
// (migrations/NNNN_*.sql) and recorded in chatgw_migrations. Open applies the
// ones the database lacks in one READ COMMITTED transaction that first takes
// a transaction-level advisory lock: gateways that start together wait for
// each other, and each then sees, and skips, what the one before it applied.
// Applying them again is a no-op, and a start that finds nothing to apply
// creates and alters nothing, so a role that may only use the tables starts
// once an owner has migrated. A database whose schema is newer than the
// binary's (migrated by a newer gateway) is used as it is when each newer
// migration began with the line
//
//	-- chatgw: compatible with earlier gateways
//
// (it only adds what earlier gateways never use; chatgw_migrations records
// it in its compatible column), so that a fleet's replicas are upgraded one
// at a time; otherwise it is refused. The tables live in the first schema of
// the connection's search_path (public by default).
//
// # Transactions
//
// View, Update and Batch run fn in a SERIALIZABLE transaction on one
// connection of the pool; Views are also READ ONLY. Each Get, Put, Delete and
// Scan page is one statement, prepared once per connection by pgx's
// statement cache. On a database server a transaction's latency, and much of
// its CPU, is its round trips, so statements travel in pgx batches (one
// pipelined round trip each): BEGIN goes out with fn's first statement, a Put
// or Delete waits and goes out ahead of fn's next statement (which then sees
// it) or with the COMMIT, and a transaction that sent nothing sends no
// COMMIT. A read and five writes (a /c1 turn's Append) take two round trips
// instead of eight; a View of one Get two instead of three. A Tx is a
// store.Prefetcher: Prefetch sends reads the caller names ahead (Gets, and the
// first page of a forward Scan) in one batch and answers them from memory
// afterwards, until a write drops them. When fn fails the transaction is
// rolled back; when fn panics the pool closes the connection, which is still
// in its transaction, on release.
//
// A View whose first statement is a Prefetch commits in the same round trip:
// BEGIN, the reads and COMMIT go out in one batch (a prefix's page then holds
// up to 1024 rows, since no second page can follow), and fn is answered from
// them. When fn then reads something the Prefetch did not (a Get of a key
// named by a record it read), the attempt counts for nothing and fn runs
// again at once, its Prefetch now also reading what was missed; a second
// miss, a reverse Scan or a prefix longer than its page runs the View as
// above, without committing early. An answer is thus always that of one
// transaction that read everything fn looked at. A /c1 turn's read
// transaction (tenant config, conversation, injected prompts and memory) is
// one round trip instead of nine, two when a stored prompt or memory entries
// must be followed.
//
// A Tx is a store.Assumer too: in an Update, Assume(bucket, key, value)
// answers the Gets of key with value, and sends, ahead of the writes, a check
// (chatgw_expect, a function of migration 0003) that fails the transaction
// with SQLSTATE CGW01 when key holds something else. A /c1 turn's Append,
// which reads the conversation's record that the turn's View read before,
// is then one round trip: BEGIN, the check, the writes and COMMIT. When the
// check fails (another turn of the conversation came in between) the
// transaction is rolled back and fn runs again at once without assuming.
//
// Views are SERIALIZABLE too, not REPEATABLE READ. REPEATABLE READ would
// give a View a snapshot of committed transactions, but not always a state
// that some serial order of the writers passes through: PostgreSQL's SSI
// lets a writer T2 that must come before T1 commit after it, and a snapshot
// taken between the two commits sees T1 without T2 (the read-only anomaly of
// Fekete et al., described in PostgreSQL's SSI paper). store.Store promises
// serializable Views, so a View pays SSI's price: its reads are tracked, and
// its COMMIT may fail with a serialization failure, which is retried like a
// writer's. (READ ONLY DEFERRABLE would avoid that failure by waiting for a
// safe snapshot, which can take long under a steady write load.)
//
// Batch is Update. Its point on bbolt, sharing one fsync among concurrent
// writers, is what PostgreSQL's own group commit does: commits that arrive
// together are flushed to the WAL together.
//
// # Failed reads
//
// Tx.Get has no error to return. When its statement fails (the connection
// drops, PostgreSQL aborts the transaction...) Get returns nil, so fn may
// take the key for absent; but the transaction is lost from then on: later
// reads find nothing, Put, Delete and Scan return the failure, and View,
// Update or Batch return the failure (wrapped), or retry, whatever fn
// returned, even nil, and commit nothing. A store failure therefore never
// passes for a missing record, neither in what is written nor in what the
// caller is told.
//
// # Retries
//
// Serializable transactions are how PostgreSQL keeps the interface's
// guarantees without locks of ours, and the price is that it aborts one of
// two transactions that conflict: a serialization failure (SQLSTATE 40001) or
// a deadlock (40P01). The transaction is then run again from the start, fn
// included, in a new transaction that sees the winner's writes. So is one
// whose connection was lost, or whose server went away (57P01-57P03), before
// its COMMIT was sent (nothing of it can have been committed), and one that
// could not get a connection (the database restarting). pgx has no retry
// helper for PostgreSQL, so this package's loop does it: at most
// WithMaxAttempts attempts (20 by default), waiting 10ms, doubling up to
// 500ms, less up to half at random, in between (3.6s to 7.1s in all), and
// never past ctx. The runs again of a View that read beyond its Prefetch and
// of an Update whose assumption did not hold (see Transactions) are no
// failures: they follow at once and count for no attempt; a View runs again
// so at most twice in a call, an Update once. ObserveRetries hears of all of
// them.
//
// Why 20: PostgreSQL's serializable isolation tracks what a transaction read
// in pages of the (bucket, key) index, so two transactions that read and
// write neighbouring keys (two turns of one tenant, which both move their
// conversation to the end of the tenant's newest-first list) conflict though
// they touch no common key, and one is aborted. Under heavy concurrent load
// (hundreds of turns a second on a small database) about one attempt in two
// fails so; ten attempts then still left about one turn in 2000 failing with
// storage_error, twenty make that vanishingly rare at the cost of latency
// for the unlucky ones. View and Update callbacks, not only Batch's, may therefore run more than
// once; store.Store says what that asks of them.
//
// A COMMIT that was sent but not answered (the connection cut at that moment)
// is not retried: it may have been applied, and running fn again could apply
// it twice. The error then says that the outcome is unknown; the database
// holds all of the transaction's writes or none. Since the last writes travel
// with the COMMIT, a connection that fails while they are under way is such a
// case too, unless PostgreSQL said why it ended the session (an error such as
// 57P01 arrives before the batch's answers: nothing of it ran) or pgx knows
// the batch was never sent.
//
// fn's own error ends the transaction (rolled back) and is returned
// unchanged, without retry. The context bounds everything: it is checked
// before the first attempt, every statement runs under it (its end fails the
// transaction), and retries stop when it ends.
//
// # Keys
//
// A key and its bucket name are one entry of a B-tree index, which
// PostgreSQL limits to about 2.7 kB (a third of a page) after its own
// compression. store.MaxKeySize allows 32 kB for each: bucket names and keys
// whose sum, once compressed, does not fit fail the Put's statement when it
// is sent (with the next read or the COMMIT), and so the transaction (the
// database's error, "index row size ... exceeds maximum"), where bbolt would
// have accepted them. The gateway's keys are ids and short components, far
// below that.
//
// # Values
//
// Get and Scan hand out copies that stay valid after the transaction (the
// interface asks less). A Scan reads its range in pages of 64 rows, then 256,
// then 1024, each page read whole before fn sees its rows (so fn may call
// Get and Put on other buckets, which one connection could not do while a
// statement's rows are still coming), and a page stops early once it holds
// 4 MiB. Values are stored as they are; PostgreSQL compresses and moves large
// ones out of line (TOAST).
//
// # Rate limit
//
// DB is a ratelimit.Provider: gateway.New takes its RateLimiter, so that a
// token's bucket is shared by every gateway on the database (a burst of 30
// is 30 across the fleet, not 30 per replica). The buckets are rows of the
// UNLOGGED table chatgw_rate, one per token digest, holding a GCRA
// theoretical arrival time in microseconds of the database's clock (the
// replicas' clocks may disagree; the database's is one). A request is one
// INSERT ... ON CONFLICT DO UPDATE ... RETURNING outside any transaction: one
// round trip, serialised per token by the row's lock, never retried. It
// gives up after WithLimiterTimeout (DefaultLimiterTimeout), and the gateway
// then applies its failure policy (500 storage_error, or fail-open by
// choice). UNLOGGED spares every request a WAL write; a crash of the database
// empties the table, which refills every bucket, as a restart of a lone
// gateway does.
//
// # Closing
//
// Close waits for running transactions, then closes the pool. Every later
// call returns store.ErrClosed.
package pgstore
