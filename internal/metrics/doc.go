// Package metrics is the gateway's Prometheus collectors and how the
// gateway's events map to them: one *Metrics per gateway, registered in the
// prometheus.Registerer its embedder gives (gateway.WithMetrics), never in a
// global registry.
//
// # Where events come from
//
// The root middleware starts each request's Request (in its httpx.Info) and
// ends it with the route, status and error code of the request log line;
// the relay marks when an answer starts, a stream's first chunk and its
// ending, and hands over the answer's usage; the root's upstream decorator
// notes each upstream call and times the reads of its answer; the upstream
// Router reports each attempt (Metrics implements upstream.Observer); the
// rate limit, the quota Accountant, the store decorator, bbolt's group
// commit and the content guard call the Metrics methods named after them.
//
// # Cost
//
// Every method of a nil *Metrics, and of a Request begun without one,
// returns at once, so a gateway without metrics pays a nil check per event.
// With metrics, the label values of a request are resolved to their child
// collectors once and kept in copy-on-write maps per route, so a request
// reads an atomic pointer and a Go map instead of hashing label values under
// the vectors' locks.
//
// # Label values
//
// Every label value comes from a closed vocabulary: route templates,
// catalog aliases and providers, error catalog codes, tenants of the token
// catalog and fixed enums. A value from outside it (an unknown alias or
// provider, an HTTP method no route serves, an uncatalogued code) is
// counted as "_OTHER", the OpenTelemetry conventions' fallback value, and an
// error answer without a catalogued code is the alarm "_OTHER" in
// chatgw_requests_total. User ids and raw paths never become label values.
package metrics
