package relay

import (
	"io"

	"github.com/chatgw/gateway/errcat"
)

// DefaultMaxBytes is the default of Options.MaxBytes, and of the gateway's
// GATEWAY_MAX_RESPONSE_BYTES: 16 MiB. It is far above any reply a chat model
// gives within a context window, and low enough that a few hundred oversized
// answers at once do not exhaust a small machine's memory.
const DefaultMaxBytes = 16 << 20

// TooLarge is the error of an upstream answer larger than limit bytes, the most
// the gateway holds of one answer: 502 upstream_error, because an upstream
// that answers beyond every limit of its request is failing.
func TooLarge(limit int64) *errcat.Error {
	return errcat.Newf(errcat.UpstreamError, "",
		"The upstream answer is larger than %d bytes, the most the gateway holds of one answer; nothing of it was kept.", limit)
}

// LimitReader returns a reader of r that reads at most limit bytes: a Read
// beyond them fails with TooLarge(limit). Unlike io.LimitReader, an answer cut
// at the limit is an error, never a shorter answer that looks whole.
func LimitReader(r io.Reader, limit int64) *Limited {
	return &Limited{r: r, left: limit, limit: limit}
}

// Limited is the reader of LimitReader.
type Limited struct {
	r     io.Reader
	left  int64 // bytes that may still be read; -1 once the limit was passed
	limit int64
}

// Exceeded returns TooLarge when a Read went past the limit, else nil. A
// parser that reads through l may report its own error instead of l's (an
// SSE parser says the input ended early); Exceeded tells the real cause.
func (l *Limited) Exceeded() *errcat.Error {
	if l.left < 0 {
		return TooLarge(l.limit)
	}
	return nil
}

func (l *Limited) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, TooLarge(l.limit)
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1] // one byte past the limit tells "more" from "exactly the limit"
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n - 1, TooLarge(l.limit)
	}
	return n, err
}

// maxBytes is o.MaxBytes or its default.
func (o *Options) maxBytes() int64 {
	if o.MaxBytes > 0 {
		return o.MaxBytes
	}
	return DefaultMaxBytes
}
