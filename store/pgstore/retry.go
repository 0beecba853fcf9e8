package pgstore

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes of the failures after which a transaction is tried again.
const (
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeAdminShutdown        = "57P01" // the session was terminated (pg_terminate_backend, fast shutdown)
	codeCrashShutdown        = "57P02"
	codeCannotConnectNow     = "57P03" // the server is starting up or shutting down
	codeAssumption           = "CGW01" // chatgw_expect: an assumed value changed (migrations/0003_expect.sql)
)

// assumptionFailed reports whether err is the check of an assumption that
// did not hold (store.Assumer): the transaction was refused, and runs again
// without assuming.
func assumptionFailed(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == codeAssumption
}

// serialization reports whether PostgreSQL aborted the transaction to keep
// transactions serializable: a serialization failure or a deadlock. The
// transaction was rolled back; running it again may succeed.
func serialization(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == codeSerializationFailure || pgErr.Code == codeDeadlockDetected)
}

// transient reports whether err, from a transaction that did not reach its
// COMMIT, is worth another attempt: a serialization failure or deadlock, the
// server going away or not accepting connections yet, or the connection
// failing. Errors PostgreSQL raises for other reasons (a refused login, a
// missing database, a key too long for the index) and the context's end are
// not.
func transient(err error) bool {
	if serialization(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case codeAdminShutdown, codeCrashShutdown, codeCannotConnectNow:
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection exception
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err)
}
