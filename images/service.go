package images

import (
	"context"
	"log/slog"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/lease"
	"github.com/chatgw/gateway/internal/relay"
	"github.com/chatgw/gateway/store"
	"github.com/chatgw/gateway/upstream"
)

// Config configures a Service.
type Config struct {
	// Upstream sends the generation calls. Required.
	Upstream upstream.Upstream
	// Catalog is the model catalog. Required.
	Catalog *upstream.Catalog
	// Store keeps the images, their expiry index, the rate ledger and the
	// purge lease (buckets img/...), and holds the tenant configuration.
	// Required. Close does not close it.
	Store store.Store
	// Clock stamps images and decides expiry and the rate window. Nil means
	// clock.Wall.
	Clock clock.Clock
	// Logger logs the purger's failures. Nil discards them.
	Logger *slog.Logger
	// MaxResponseBytes bounds what the gateway holds of one upstream answer
	// (relay.Options.MaxBytes). 0 means relay.DefaultMaxBytes (16 MiB).
	MaxResponseBytes int64
	// PurgeInterval is how often the purger deletes expired images (it also
	// runs once at New). 0 means DefaultPurgeInterval (one minute). Negative
	// means no purger: expired images answer image_not_found all the same,
	// but stay stored until someone calls PurgeExpired.
	PurgeInterval time.Duration
	// PurgeLease is how long the purge lease lasts: of several Services
	// sharing Store (replicas), only the one holding the lease purges, and
	// renews it on each round; when it stops, another takes over once the
	// lease has expired. 0 or negative means three PurgeIntervals (three
	// minutes by default), so that a holder keeps the lease across a round
	// that ran late.
	PurgeLease time.Duration
}

// Image limits and defaults.
const (
	// DefaultTTLHours is the time-to-live of an image whose request has no
	// ttl_hours ("TTL default 12 h, up to 7 days via ttl_hours").
	DefaultTTLHours = 12
	// MaxPerRequest is the largest n of a generation request.
	MaxPerRequest = 10
	// RateWindow is the window of image_gen_rate_per_hour.
	RateWindow = time.Hour
	// DefaultPurgeInterval is the purger's interval when Config gives none.
	DefaultPurgeInterval = time.Minute
	// purgeLeasesPerInterval is the default PurgeLease in PurgeIntervals.
	purgeLeasesPerInterval = 3
)

// The purge lease: bucket img/lease, key "purger" (see the package doc).
var (
	imgLeaseBucket = []byte("img/lease")
	purgerLeaseKey = []byte("purger")
)

// Service serves the image endpoints and runs the purger of expired images
// (see the package doc). Its handler methods are plain http.HandlerFuncs.
type Service struct {
	up      upstream.Upstream
	catalog *upstream.Catalog
	st      store.Store
	clock   clock.Clock
	logger  *slog.Logger
	// maxBytes bounds the upstream's JSON answer, which is held whole to
	// decode and store its images.
	maxBytes int64

	// purger runs purge while this Service holds the purge lease; Close
	// stops it and releases the lease if it was held.
	purger *lease.Worker
}

// New returns a Service for cfg and starts its purger (unless
// cfg.PurgeInterval is negative); Close stops it.
func New(cfg Config) *Service {
	s := &Service{up: cfg.Upstream, catalog: cfg.Catalog, st: cfg.Store, clock: cfg.Clock, logger: cfg.Logger, maxBytes: cfg.MaxResponseBytes}
	if s.maxBytes <= 0 {
		s.maxBytes = relay.DefaultMaxBytes
	}
	if s.clock == nil {
		s.clock = clock.Wall{}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	every := cfg.PurgeInterval
	if every == 0 {
		every = DefaultPurgeInterval
	}
	purgeLease := &lease.Named{
		Store: s.st, Clock: s.clock, Bucket: imgLeaseBucket, Key: purgerLeaseKey,
		Holder: lease.NewHolder(), TTL: purgeLeaseTTL(cfg.PurgeLease, every),
	}
	s.purger = lease.StartWorker(purgeLease, every, s.purge, func(ctx context.Context, err error) {
		s.logger.LogAttrs(ctx, slog.LevelWarn, "image purge lease not taken", slog.String("error", err.Error()))
	})
	return s
}

// purgeLeaseTTL is Config.PurgeLease, or its default for the interval every.
func purgeLeaseTTL(configured, every time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	if every <= 0 {
		every = DefaultPurgeInterval
	}
	return purgeLeasesPerInterval * every
}

// Close stops the purger and waits for it to return; a purge under way is
// cancelled (what it deleted stays deleted). It then releases the purge lease
// if it held it, so that another replica takes over at its next round rather
// than after the lease expired (a failure to release is logged). It returns
// nil, and is safe to call more than once. Requests should be drained first:
// Close does not stop the handlers, and does not close the Store.
func (s *Service) Close() error {
	if err := s.purger.Stop(); err != nil {
		s.logger.LogAttrs(context.Background(), slog.LevelWarn, "image purge lease not released", slog.String("error", err.Error()))
	}
	return nil
}

// purge is a round of the purger, run by s.purger while this Service holds
// the purge lease, which it takes or renews first: of several replicas over
// one store, one purges (deleting is idempotent, so two purges at once would
// be harmless, but the work is not done once per replica). It calls
// PurgeExpired; failures are logged and retried at the next round.
func (s *Service) purge(ctx context.Context) {
	n, err := s.PurgeExpired(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		s.logger.LogAttrs(ctx, slog.LevelWarn, "image purge failed", slog.Int("purged", n), slog.String("error", err.Error()))
	case n > 0:
		s.logger.LogAttrs(ctx, slog.LevelInfo, "expired images purged", slog.Int("purged", n))
	}
}
