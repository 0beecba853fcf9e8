package gateway

import (
	"context"
	"net/http"

	"github.com/chatgw/gateway/internal/httpx"
	"github.com/chatgw/gateway/upstream"
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

// meteredUpstream notes each upstream call of a metered request in the
// request's Meter: the alias, and the provider that answered ("" when the
// call failed). It is what every family's Upstream is, so that no family
// meters its calls itself.
type meteredUpstream struct{ upstream.Upstream }

func (u meteredUpstream) Do(ctx context.Context, req *upstream.Request) (*upstream.Response, error) {
	resp, err := u.Upstream.Do(ctx, req)
	if m := httpx.MeterOf(ctx); m != nil {
		backend := ""
		if err == nil {
			backend = resp.Provider
		}
		m.Call(req.Alias, backend)
	}
	return resp, err
}

// meteredProber is a meteredUpstream whose Upstream is an upstream.Prober,
// which /readyz asks.
type meteredProber struct {
	meteredUpstream
	upstream.Prober
}

// meterUpstream wraps u in a meteredUpstream that keeps u's Prober.
func meterUpstream(u upstream.Upstream) upstream.Upstream {
	m := meteredUpstream{u}
	if p, ok := u.(upstream.Prober); ok {
		return meteredProber{m, p}
	}
	return m
}
