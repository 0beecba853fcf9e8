package relay

import "github.com/chatgw/gateway/internal/wire"

// UsedTokens returns the tokens the captured answer says it used
// (wire.UsedTokens of its usage): usage.total_tokens, or prompt_tokens +
// completion_tokens when the total is missing; -1 (unknown) when the answer
// had no usage, as a stream without stream_options.include_usage. A nil
// Capture is unknown too.
func (c *Capture) UsedTokens() int64 {
	if c == nil {
		return -1
	}
	return wire.UsedTokens(c.Usage)
}

// UsageOptions returns the stream_options with which a gateway-made upstream
// call asks for usage: include_usage when streaming, so that a streamed answer
// settles its quota ticket to the tokens really used (UsedTokens) instead of
// the whole reservation; nil otherwise, as a JSON answer carries usage anyway.
// The usage chunk (empty choices) reaches the client as it does from OpenAI
// when asked for.
func UsageOptions(stream bool) *wire.StreamOptions {
	if !stream {
		return nil
	}
	return &includeUsage
}

// includeUsage is shared: the encoder only reads it.
var includeUsage = wire.StreamOptions{IncludeUsage: true}
