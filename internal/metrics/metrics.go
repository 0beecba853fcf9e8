package metrics

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/chatgw/gateway/errcat"
	"github.com/prometheus/client_golang/prometheus"
)

// Other is the label value of anything outside a label's vocabulary.
const Other = "_OTHER"

// The gen_ai.operation.name values the gateway reports (the conventions'
// well-known values).
const (
	OpChat            = "chat"
	OpInvokeAgent     = "invoke_agent"
	OpEmbeddings      = "embeddings"
	OpGenerateContent = "generate_content"
)

// The values of the kind label of chatgw_rate_limit_rejections_total.
const (
	// RateExceeded is a request refused with 429 rate_limit_exceeded.
	RateExceeded = "exceeded"
	// RateLimiterUnavailable is a request refused with 500 storage_error
	// because the limiter could not decide (fail-closed).
	RateLimiterUnavailable = "limiter_unavailable"
)

// The values of the outcome label of chatgw_stream_endings_total.
const (
	StreamDone         = "done"           // data: [DONE] reached the client
	StreamClientCancel = "client_cancel"  // the client went away
	StreamUpstreamErr  = "upstream_error" // the upstream failed mid-stream
	StreamTruncated    = "truncated"      // the upstream ended without [DONE], or the answer outgrew its bound
	StreamShutdown     = "shutdown"       // the gateway ended it as it shut down
	StreamCommitFailed = "commit_failed"  // storing the answer failed, so it was not acknowledged
)

// The values of the decision label of chatgw_content_guard_decisions_total.
const (
	GuardAllowed = "allowed" // classified, not flagged
	GuardFlagged = "flagged" // flagged: blocked (block) or logged (audit)
	GuardFailed  = "failed"  // the classifier could not answer: refused (block) or let through (audit)
)

// The store transaction kinds, the kind label of
// chatgw_store_transaction_duration_seconds.
const (
	StoreView   = "view"
	StoreUpdate = "update"
	StoreBatch  = "batch"
)

// The reason label of chatgw_store_retries_total: why a transaction of a
// database store ran again (store/pgstore's Retry constants).
const (
	RetrySerialization = "serialization"
	RetryDeadlock      = "deadlock"
	RetryConnection    = "connection"
	RetryReadAhead     = "read_ahead"
	RetryAssumption    = "assumption"
)

// Config configures New.
type Config struct {
	// Registerer receives the collectors. It must not be nil.
	Registerer prometheus.Registerer
	// Aliases are the model catalog's aliases, the vocabulary of
	// gen_ai_request_model; Providers the providers of its backends, that of
	// gen_ai_provider_name.
	Aliases, Providers []string
	// TenantLabel puts the tenant label on the families whose tenants the
	// token catalog bounds (chatgw_requests_total, chatgw_tokens_total, the
	// rate-limit, quota and content guard counters). False leaves it out.
	TenantLabel bool
	// Version is the gateway's version for chatgw_build_info.
	Version string
}

// Metrics holds a gateway's collectors. A nil *Metrics records nothing. It
// is safe for concurrent use.
type Metrics struct {
	tenant    bool
	aliases   map[string]bool
	providers map[string]bool

	requests      *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	serverDur     *prometheus.HistogramVec
	ttft          *prometheus.HistogramVec
	tpot          *prometheus.HistogramVec
	clientDur     *prometheus.HistogramVec
	tokenUsage    *prometheus.HistogramVec
	tokens        *prometheus.CounterVec
	overhead      *prometheus.HistogramVec
	fallbacks     *prometheus.CounterVec
	streamEndings *prometheus.CounterVec
	streams       *prometheus.GaugeVec
	rateLimited   *prometheus.CounterVec
	rateBypassed  *prometheus.CounterVec
	quota         *prometheus.CounterVec
	storeTx       *prometheus.HistogramVec
	groupCommit   prometheus.Histogram
	storeRetries  *prometheus.CounterVec
	guard         *prometheus.CounterVec

	unmatched *Route // requests no route matched
	attempts  cache[attemptKey, attemptChildren]
	usage     cache[usageKey, usageChildren]
	tenants   cache[tenantKey, prometheus.Counter]
	storeKind [3]prometheus.Observer // by StoreView, StoreUpdate, StoreBatch
}

// New creates the collectors and registers them with cfg.Registerer. It
// fails when the Registerer is nil or refuses one (a second gateway on the
// same registry: give each its own, or prometheus.WrapRegistererWith).
func New(cfg Config) (*Metrics, error) {
	if cfg.Registerer == nil {
		return nil, errors.New("metrics.New: nil Registerer")
	}
	m := &Metrics{tenant: cfg.TenantLabel, aliases: set(cfg.Aliases), providers: set(cfg.Providers)}
	tenant := func(labels ...string) []string {
		if cfg.TenantLabel {
			return append(labels, labelTenant)
		}
		return labels
	}
	genAI := []string{labelOperation, labelModel, labelProvider}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatgw_requests_total",
		Help: "Requests answered, by route template, method, status and error catalog code (\"\" for none; _OTHER for an error answer without a catalogued code, an alarm).",
	}, tenant(labelRoute, labelMethod, labelStatus, labelErrorType))
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_server_request_duration_seconds",
		Help:    "Duration of HTTP server requests, from the gateway's middleware to the handler's return.",
		Buckets: httpBuckets(),
	}, []string{labelRoute, labelMethod, labelStatus})
	m.serverDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_server_request_duration_seconds",
		Help:    "Generative AI server request duration such as time-to-last byte or last output token.",
		Buckets: genAIDurationBuckets(),
	}, append(genAI, labelErrorType))
	m.ttft = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_server_time_to_first_token_seconds",
		Help:    "Time to generate first token for successful responses: to the first chunk of a stream sent to the client (error_type is the request's, \"\" for these).",
		Buckets: ttftBuckets(),
	}, append(genAI, labelErrorType))
	m.tpot = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_server_time_per_output_token_seconds",
		Help:    "Time per output token generated after the first token for successful responses (streams that reported their usage; error_type \"\").",
		Buckets: tpotBuckets(),
	}, append(genAI, labelErrorType))
	m.clientDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_client_operation_duration_seconds",
		Help:    "GenAI operation duration: one upstream attempt, from sending it to its failure or to the end of its answer.",
		Buckets: genAIDurationBuckets(),
	}, append(genAI, labelErrorType, labelAttempt))
	m.tokenUsage = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_client_token_usage",
		Help:    "Number of input and output tokens used, as the upstream reported them, per answered attempt.",
		Buckets: tokenBuckets(),
	}, append(genAI, labelTokenType, labelAttempt))
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatgw_tokens_total",
		Help: "Tokens the upstream reported for the answers relayed, by tenant, alias, provider and token type.",
	}, tenant(labelModel, labelProvider, labelTokenType))
	m.overhead = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "chatgw_overhead_seconds",
		Help:    "Time the gateway spent on a request that called an upstream, excluding the wait for the upstream, until the answer started (the status of a JSON answer, the first chunk of a stream).",
		Buckets: fineBuckets(),
	}, []string{labelRoute, labelStream})
	m.fallbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatgw_fallbacks_total",
		Help: "Upstream fallbacks: an attempt on the from provider failed for reason and the to provider was tried next.",
	}, []string{labelFrom, labelTo, labelReason})
	m.streamEndings = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatgw_stream_endings_total",
		Help: "Streamed answers relayed, by route and how they ended.",
	}, []string{labelRoute, labelOutcome})
	m.streams = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "chatgw_streams_in_flight",
		Help: "Streamed answers being relayed now.",
	}, []string{labelRoute})
	m.rateLimited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatgw_rate_limit_rejections_total",
		Help: "Requests refused by the per-token rate limit: exceeded (429) or limiter_unavailable (the limiter failed, 500 storage_error).",
	}, tenant(labelKind))
	m.rateBypassed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatgw_rate_limit_bypassed_total",
		Help: "Requests let through without their rate limit because the limiter failed (fail-open).",
	}, tenant())
	m.quota = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatgw_quota_rejections_total",
		Help: "Requests refused by a daily quota, by alias and kind (the error code).",
	}, tenant(labelModel, labelKind))
	m.storeTx = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "chatgw_store_transaction_duration_seconds",
		Help:    "Duration of store transactions as their callers wait for them (retries and the wait for a group commit included), by kind.",
		Buckets: fineBuckets(),
	}, []string{labelKind})
	m.groupCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "chatgw_store_group_commit_batch_size",
		Help:    "Batch calls committed together by one group commit (bbolt).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 9),
	})
	m.storeRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatgw_store_retries_total",
		Help: "Store transactions run again (PostgreSQL), by kind and reason: serialization, deadlock, connection, read_ahead (a View that read beyond its prefetch) or assumption (an Update whose assumed value had changed).",
	}, []string{labelKind, labelReason})
	m.guard = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "chatgw_content_guard_decisions_total",
		Help: "Content guard classifications, by the tenant's mode and the decision.",
	}, tenant(labelMode, labelDecision))
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "chatgw_build_info",
		Help: "Always 1: the gateway's version, its module's version and VCS revision, and the Go version it was built with.",
	}, []string{"version", "module_version", "revision", "go_version"})
	moduleVersion, revision := buildInfo()
	build.WithLabelValues(cfg.Version, moduleVersion, revision, runtime.Version()).Set(1)

	collectors := []prometheus.Collector{m.requests, m.httpDuration, m.serverDur, m.ttft, m.tpot,
		m.clientDur, m.tokenUsage, m.tokens, m.overhead, m.fallbacks, m.streamEndings, m.streams,
		m.rateLimited, m.rateBypassed, m.quota, m.storeTx, m.groupCommit, m.storeRetries, m.guard, build}
	for i, c := range collectors {
		if err := cfg.Registerer.Register(c); err != nil {
			for _, done := range collectors[:i] {
				cfg.Registerer.Unregister(done) // leave the registry as it was
			}
			return nil, fmt.Errorf("metrics.New: %w", err)
		}
	}
	for i, kind := range [...]string{StoreView, StoreUpdate, StoreBatch} {
		m.storeKind[i] = m.storeTx.WithLabelValues(kind)
	}
	m.unmatched = m.Route("", Other, "")
	return m, nil
}

// Label names: the OpenTelemetry attribute names in Prometheus form where a
// convention has one.
const (
	labelRoute     = "http_route"
	labelMethod    = "http_request_method"
	labelStatus    = "http_response_status_code"
	labelErrorType = "error_type"
	labelTenant    = "tenant"
	labelOperation = "gen_ai_operation_name"
	labelModel     = "gen_ai_request_model"
	labelProvider  = "gen_ai_provider_name"
	labelTokenType = "gen_ai_token_type"
	labelAttempt   = "attempt"
	labelStream    = "stream"
	labelFrom      = "from"
	labelTo        = "to"
	labelReason    = "reason"
	labelOutcome   = "outcome"
	labelKind      = "kind"
	labelMode      = "mode"
	labelDecision  = "decision"
)

// buildInfo returns the version and VCS revision of the gateway's module as
// the binary records them: the main module's when the gateway is the main
// module (gatewayd), else the dependency's; "" when unknown.
func buildInfo() (version, revision string) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", ""
	}
	version = bi.Main.Version
	if bi.Main.Path != modulePath {
		version = ""
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				version = d.Version
			}
		}
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			revision = s.Value
		}
	}
	return version, revision
}

// modulePath is the gateway's module.
const modulePath = "github.com/chatgw/gateway"

func set(values []string) map[string]bool {
	m := make(map[string]bool, len(values))
	for _, v := range values {
		m[v] = true
	}
	return m
}

// alias is the gen_ai_request_model value of a: a catalog alias, "" for
// none, else Other.
func (m *Metrics) alias(a string) string {
	if a == "" || m.aliases[a] {
		return a
	}
	return Other
}

// provider is the gen_ai_provider_name value of p: a catalog provider, ""
// for none, else Other.
func (m *Metrics) provider(p string) string {
	if p == "" || m.providers[p] {
		return p
	}
	return Other
}

// method is the http_request_method value of a request no route matched:
// one of the methods OpenTelemetry names, else Other.
func method(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH":
		return m
	}
	return Other
}

// errorType is the error_type value of an answer with status that failed
// with err (nil for none): its catalogued code, "" for a success, and Other
// for an error answer without a catalogued code.
func errorType(err *errcat.Error, status int) string {
	switch {
	case err != nil && errcat.Known(err.Code):
		return string(err.Code)
	case err != nil || status >= 400:
		return Other
	}
	return ""
}

// statusLabel is the http_response_status_code value of status: 0 when
// nothing was written.
func statusLabel(status int) string {
	if status < 0 || status > 999 {
		return Other
	}
	return strconv.Itoa(status)
}

// operation is the gen_ai_operation_name of an upstream call's API path.
func operation(path string) string {
	switch path {
	case "/chat/completions":
		return OpChat
	case "/embeddings":
		return OpEmbeddings
	case "/images/generations", "/audio/transcriptions", "/audio/translations":
		return OpGenerateContent
	}
	return Other
}

// Histogram buckets. The gen_ai ones are the OpenTelemetry GenAI semantic
// conventions' ExplicitBucketBoundaries; httpBuckets those of
// http.server.request.duration.
func genAIDurationBuckets() []float64 {
	return []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
}

func ttftBuckets() []float64 {
	return []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
}

func tpotBuckets() []float64 {
	return []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
}

func tokenBuckets() []float64 {
	return []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
}

func httpBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
}

// fineBuckets are for what the gateway does itself (its overhead, a store
// transaction): 100 µs to 1 s.
func fineBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
}
