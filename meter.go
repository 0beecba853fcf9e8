package gateway

import (
	"net/http"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/usage"
)

// metered makes h's requests get usage records of kind: it starts the
// request's Meter before h runs and, once h returned, records what the
// request's upstream calls used (the Meter's totals), with the answer's
// status and error code, unless the request made no upstream call (it was
// answered by the checks before one: a 4xx, a quota 429). Recording is an
// append to the usage Service's buffer, never a store transaction. A request
// whose handler panics gets no record.
func (g *Gateway) metered(kind usage.Kind, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		info := infoOf(w) // the statusWriter's: no walk up the context chain
		info.Meter.Start()
		h(w, r)
		t := info.Meter.Totals()
		if t.Calls == 0 {
			return
		}
		rec := usage.Record{
			Time: g.cfg.clock.Now(), Tenant: info.Tenant, User: httpx.UserID(r), Kind: kind,
			Alias: t.Alias, Backend: t.Backend, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens,
			UsageMissing: t.UsageMissing,
		}
		if sw, ok := w.(*statusWriter); ok {
			rec.Status = sw.status
		}
		if info.Err != nil {
			rec.Error = string(info.Err.Code)
		}
		g.usage.Record(rec)
	}
}
