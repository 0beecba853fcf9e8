package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/chatgw/gateway/clock"
)

// CurrentTimeResult is the answer of current_time.
type CurrentTimeResult struct {
	// Now is the time in RFC 3339 with the offset of TimeZone.
	Now string `json:"now"`
	// Unix is the time in whole seconds since 1970-01-01 UTC.
	Unix int64 `json:"unix"`
	// TimeZone is the IANA zone Now is given in.
	TimeZone string `json:"timezone"`
}

// CurrentTime returns the built-in current_time tool, which tells the time of
// c (nil means clock.Wall). Its optional argument "timezone" is an IANA zone
// name such as "Europe/Paris" (default "UTC"); a zone the host does not know is
// invalid_field "arguments.timezone".
func CurrentTime(c clock.Clock) Tool {
	if c == nil {
		c = clock.Wall{}
	}
	return Tool{
		Name:        "current_time",
		Description: "Returns the current date and time, in UTC or in the given IANA time zone.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"timezone":{"type":"string","description":"IANA time zone name such as Europe/Paris; default UTC."}` +
			`},"additionalProperties":false}`),
		Execute: func(ctx context.Context, call Call) (any, error) {
			var args struct {
				TimeZone string `json:"timezone"`
			}
			if err := DecodeArgs(call.Arguments, &args); err != nil {
				return nil, err
			}
			loc := time.UTC
			if args.TimeZone != "" && args.TimeZone != "UTC" {
				l, err := time.LoadLocation(args.TimeZone)
				if err != nil || args.TimeZone == "Local" {
					return nil, InvalidArg("timezone", "Unknown time zone "+args.TimeZone+".")
				}
				loc = l
			}
			now := c.Now().In(loc)
			return CurrentTimeResult{Now: now.Format(time.RFC3339), Unix: now.Unix(), TimeZone: loc.String()}, nil
		},
	}
}
