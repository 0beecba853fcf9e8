package relay

import (
	"errors"
	"net/http"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/metrics"
)

// errNoDone is the failure of an upstream stream that ended without
// data: [DONE].
var errNoDone = errors.New("relay: upstream stream ended without [DONE]")

// streamOutcome is how the stream relayed for r ended, as
// chatgw_stream_endings_total counts it: res is the relay's Result,
// commitErr Options.Commit's failure, limit the relay's MaxBytes.
func streamOutcome(r *http.Request, res Result, commitErr error, limit int64) string {
	var e *errcat.Error
	switch {
	case res.Complete:
		return metrics.StreamDone
	case r.Context().Err() != nil:
		return metrics.StreamClientCancel
	case commitErr != nil:
		return metrics.StreamCommitFailed
	case shuttingDown(r):
		return metrics.StreamShutdown
	case !errors.As(res.Err, &e):
		return metrics.StreamClientCancel // a write to the client failed: it is gone
	case errors.Is(res.Err, errNoDone), e.Message == TooLarge(limit).Message:
		return metrics.StreamTruncated
	}
	return metrics.StreamUpstreamErr
}
