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
// Every commit costs an fsync, the dominant cost of a write (about 2ms on the
// disks we benchmark on). Batch lets concurrent writers share one: a committer
// goroutine takes every Batch call queued so far (up to MaxBatchSize) and commits
// them in one transaction; calls that arrive while it commits form the next
// group. A lone call therefore commits at once, with no timer to wait for, and
// under load each commit holds everything that queued during the previous one,
// so the groups grow with the load and commits keep up (bbolt's own DB.Batch
// closes a group on a timer instead, which either delays lone writes or, with a
// delay shorter than the fsync, lets a sustained load queue up without bound).
//
// If one fn of a group fails, the transaction is rolled back, that call gets its
// error and the others are committed again without it, so a Batch fn may run
// more than once and must be idempotent. A panic in fn rolls the group back the
// same way and is raised again on the caller's goroutine. MaxBatchSize (256)
// bounds the size of one transaction and the work redone after a failure.
//
// # Closing
//
// Close waits for running transactions, then closes the file and releases its
// lock. Every later call returns store.ErrClosed.
package boltstore
