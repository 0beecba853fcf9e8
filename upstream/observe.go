package upstream

import (
	"context"
	"time"

	"github.com/chatgw/gateway/errcat"
)

// Outcomes of an attempt: the outcome field of the "upstream attempt" log
// line, and Attempt.Outcome.
const (
	// OutcomeOK is a 2xx answer (read to its end, or as far as the caller
	// read it before closing it).
	OutcomeOK = "ok"
	// OutcomeStatus is a non-2xx answer; Attempt.Status has its status.
	OutcomeStatus = "status"
	// OutcomeConnectError is a backend that could not be reached or dropped
	// the connection before answering.
	OutcomeConnectError = "connect_error"
	// OutcomeFirstByteTimeout is a backend silent past the first-byte
	// time-out.
	OutcomeFirstByteTimeout = "first_byte_timeout"
	// OutcomeTotalTimeout is the call's total time-out passing.
	OutcomeTotalTimeout = "total_timeout"
	// OutcomeCancelled is the caller's context ending (the client went away).
	OutcomeCancelled = "cancelled"
	// OutcomeInvalidBody is a streamed multipart body found invalid while it
	// was sent.
	OutcomeInvalidBody = "invalid_body"
	// OutcomeReadError is a 2xx answer whose body failed while it was read
	// (the connection was lost): only in Attempt, since the log line of an
	// attempt is written when its headers arrive.
	OutcomeReadError = "read_error"
)

// Observer is told of every attempt of a Router's calls, once the attempt is
// over, so that the gateway can count them (its metrics) without reading
// logs. A failed attempt is reported as it fails, before the next backend is
// tried; the attempt that answered is reported when its body is closed, since
// the operation lasts until then. ObserveAttempt runs on the caller's
// goroutine with the caller's context: it must be quick, must not block, and
// must be safe for concurrent use.
type Observer interface {
	ObserveAttempt(ctx context.Context, a Attempt)
}

// Attempt is one attempt of a call: one backend of the alias's chain tried.
type Attempt struct {
	// Alias is the call's public alias and Path its API path
	// (Request.Alias, Request.Path).
	Alias, Path string
	// Position is the attempt's place among those of its call: 1 for the
	// first backend tried, 2 after one fallback, ...
	Position int
	// Provider and RouterAlias name the backend tried.
	Provider, RouterAlias string
	// Outcome is one of the Outcome constants.
	Outcome string
	// Status is the HTTP status the backend answered with; 0 when it did not
	// answer.
	Status int
	// Duration is the time from sending the request to the end of the
	// attempt: its failure, or the answer's body closed.
	Duration time.Duration
	// Next is the provider of the backend tried next because this attempt
	// failed (a fallback), "" when none is.
	Next string

	start time.Time
}

// WithObserver sets the Observer told of every attempt. Default nil: attempts
// are only logged.
func WithObserver(o Observer) Option {
	return func(ro *routerOptions) { ro.observer = o }
}

// attemptOf is the Attempt of req on t, the n-th of its call, begun at start
// and over now (unless its body is still to be read).
func attemptOf(req *Request, t *target, n int, outcome string, status int, start time.Time) Attempt {
	return Attempt{Alias: req.Alias, Path: req.Path, Position: n, Provider: t.provider, RouterAlias: t.routerAlias,
		Outcome: outcome, Status: status, Duration: time.Since(start), start: start}
}

// readOutcome is the outcome of an answer whose body failed with err, an
// error of responseBody.mapErr.
func readOutcome(err error) string {
	e := errcat.As(err)
	switch {
	case e.Code == errcat.UpstreamTimeout:
		return OutcomeTotalTimeout
	case e.Code == errcat.UpstreamUnavailable: // callerDone: the caller went away
		return OutcomeCancelled
	}
	return OutcomeReadError
}
