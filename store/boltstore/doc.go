// Package boltstore is the default store.Store: one bbolt file
// (go.etcd.io/bbolt) holding every bucket of the gateway.
//
// # Opening
//
// Open creates the file's directory if needed and the file with mode 0600. bbolt
// takes an exclusive lock on the file, held until Close; a second Open of the
// same file, from this process or another, waits for the lock at most the lock
// timeout (WithLockTimeout, 1s by default) and then fails with an error that
// names the file, instead of hanging.
//
// # Transactions
//
// Buckets of the store are top-level bbolt buckets, created by the first Put.
// View, Update and Batch run bbolt's View, Update and Batch: a View reads a
// snapshot and runs alongside other Views and one writer; writers run one at a
// time, and Update returns after its commit is on disk (fsync). The error of fn
// is returned unchanged; bbolt's own failures are wrapped
// ("boltstore.Update: ...").
//
// Values handed out by Get and Scan point into bbolt's memory map and are valid
// only until the transaction ends; Put copies its arguments, so callers may reuse
// them.
//
// # Group commit
//
// Every commit costs an fsync, the dominant cost of a write (a fraction of a
// millisecond on SSDs, up to ten milliseconds on spinning or some network
// disks). Batch lets concurrent writers share one: bbolt collects the Batch calls
// that arrive within MaxBatchDelay of the first one, or until MaxBatchSize have
// arrived, and commits them in one transaction. If one fn fails, the others are
// committed without it and the failing fn is run again alone, so a Batch fn may
// run more than once and must be idempotent.
//
// The delay is the price: every Batch waits for it, even one that is alone. It
// is also what sizes the groups. A group closes when its delay expires, then
// waits for the commit before it; calls arriving meanwhile form the next group.
// A group therefore holds the writes of one delay, and commits keep up with the
// writes only if a commit takes no longer than the delay: with a delay shorter
// than the fsync, a sustained load above one write per fsync queues up.
//
// Hence the default delay of 2ms (bbolt's own is 10ms): at or above the fsync
// time of SSDs and of most cloud block volumes (0.1-2ms), and small next to a
// request that calls a model. On slower disks (spinning, some network volumes),
// raise it to about the fsync time with WithMaxBatchDelay. MaxBatchSize bounds
// the work redone when one fn of a group fails and the size of one transaction;
// the default, 256, is far above what arrives in 2ms at the gateway's expected
// rates, so it rarely closes a group early. Writes whose latency matters more
// than throughput should use Update. BenchmarkBatchParallel and BenchmarkUpdate
// measure the effect on a given disk.
//
// # Closing
//
// Close waits for running transactions, then closes the file and releases its
// lock. Every later call returns store.ErrClosed.
package boltstore
