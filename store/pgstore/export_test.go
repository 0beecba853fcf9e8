package pgstore

import "github.com/jackc/pgx/v5"

// SetRetried makes db call f before each retry with the attempt that failed
// and its failure, so that tests can see retries happen and why.
func SetRetried(db *DB, f func(attempt int, err error)) { db.retried = f }

// WithTracer makes the store's connections report their statements to tr
// (a pgx.QueryTracer, and a pgx.BatchTracer to see batches), so that tests
// can count the round trips of a transaction.
func WithTracer(tr pgx.QueryTracer) Option {
	return func(o *options) { o.tracer = tr }
}

// Statements are the SQL statements of a transaction, by name, for the
// EXPLAIN tests.
var Statements = map[string]string{
	"Get":          sqlGet,
	"ScanRange":    sqlScanRange,
	"ScanFrom":     sqlScanFrom,
	"ScanRangeRev": sqlScanRangeRev,
	"ScanFromRev":  sqlScanFromRev,
}
