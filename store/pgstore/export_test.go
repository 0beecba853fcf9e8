package pgstore

// SetRetried makes db call f before each retry with the attempt that failed
// and its failure, so that tests can see retries happen and why.
func SetRetried(db *DB, f func(attempt int, err error)) { db.retried = f }

// Statements are the SQL statements of a transaction, by name, for the
// EXPLAIN tests.
var Statements = map[string]string{
	"Get":          sqlGet,
	"ScanRange":    sqlScanRange,
	"ScanFrom":     sqlScanFrom,
	"ScanRangeRev": sqlScanRangeRev,
	"ScanFromRev":  sqlScanFromRev,
}
