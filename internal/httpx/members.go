package httpx

import (
	"encoding/json"
	"math"

	"github.com/chatgw/gateway/errcat"
	"github.com/chatgw/gateway/internal/wire"
)

// The optional number members of the client APIs the gateway translates
// (Anthropic's Messages API, OpenAI's Responses API) are read here, from
// the body split into members (RefuseUnknown's top), so that every API
// answers the same error for the same mistake. Their ranges are the
// pre-flight checks', as on /v1/chat/completions: these only read the type.

// Float is an optional number member of a translated client API's body:
// Name is the member, and the param of its error; DecodeFloats sets *Dst.
type Float struct {
	Name string
	Dst  **float64
}

// DecodeFloats sets *f.Dst to the number top[f.Name], for each f in order
// whose member is present and not null; an absent or null member leaves
// *f.Dst as it was. The first member that is not a JSON number answers 400
// invalid_field f.Name, "<name> must be a number.".
func DecodeFloats(top map[string]json.RawMessage, fs ...Float) error {
	for _, f := range fs {
		raw := top[f.Name]
		if wire.IsNull(raw) {
			continue
		}
		var n float64
		if json.Unmarshal(raw, &n) != nil {
			return errcat.Newf(errcat.InvalidField, f.Name, "%s must be a number.", f.Name)
		}
		*f.Dst = &n
	}
	return nil
}

// DecodeInt32 reads raw, the optional integer member name of a translated
// client API's body: nil when absent or null, else the integer. Any integer
// int32 holds is accepted, one below 1 too: the pre-flight checks answer it
// max_tokens_below_minimum, as on /v1/chat/completions. Another value (a
// fraction, out of range, not a number) answers 400 invalid_field name,
// "<name> must be an integer.".
func DecodeInt32(raw json.RawMessage, name string) (*int32, error) {
	if wire.IsNull(raw) {
		return nil, nil
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || f != math.Trunc(f) || f > math.MaxInt32 || f < math.MinInt32 {
		return nil, errcat.Newf(errcat.InvalidField, name, "%s must be an integer.", name)
	}
	n := int32(f)
	return &n, nil
}
