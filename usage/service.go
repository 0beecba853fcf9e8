package usage

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/internal/lease"
	"github.com/chatgw/gateway/store"
)

// Defaults of Config.
const (
	// DefaultRetention is how long records are kept: 90 days.
	DefaultRetention = 90 * 24 * time.Hour
	// DefaultFlushInterval is how often the writer writes what is buffered.
	DefaultFlushInterval = time.Second
	// DefaultMaxBatch is the most records one transaction writes.
	DefaultMaxBatch = 1000
	// DefaultMaxBuffered is the most records waiting to be written.
	DefaultMaxBuffered = 100_000
	// DefaultPurgeInterval is how often expired records are deleted.
	DefaultPurgeInterval = time.Hour
	// DefaultCloseTimeout bounds the last write of Close.
	DefaultCloseTimeout = 5 * time.Second
)

// Kind is the kind of request a record counts.
type Kind string

// The kinds of request that get usage records.
const (
	KindChat       Kind = "chat"       // chat completions of /v1, /c1 and agents (tool rounds included)
	KindEmbeddings Kind = "embeddings" // /v1/embeddings
	KindImage      Kind = "image"      // /v1/images/generations
)

// Record is the usage of one request that reached the upstream.
type Record struct {
	// Time is when the request ended; its UTC day is the record's day.
	Time time.Time
	// Tenant is the tenant of the request's token. Required.
	Tenant string
	// User is the request's GW-User-Id, "" when it had none.
	User string
	// Kind is what the request was.
	Kind Kind
	// Alias is the public model alias of the request's (last) upstream call.
	Alias string
	// Backend is the provider that answered (local, cloudA, cloudB), "" when
	// no backend answered.
	Backend string
	// Status is the HTTP status of the answer (200 for a stream that started,
	// even when it ended with a gw.error event); 0 when none was written (the
	// client went away first).
	Status int
	// Error is the error code the request ended with (its JSON error or the
	// gw.error event ending its stream), "" when it succeeded.
	Error string
	// InputTokens and OutputTokens are what the upstream reported, summed
	// over the request's upstream calls.
	InputTokens, OutputTokens int64
	// UsageMissing is true when an answer reported no usage, so that the
	// token counts are lower than what was used (a /v1 stream without
	// stream_options.include_usage, an answer cut short).
	UsageMissing bool
}

// Config configures a Service.
type Config struct {
	// Store keeps the records (buckets usage/...). Required. Close does not
	// close it, but writes the last records to it: close the Service first.
	Store store.Store
	// Clock gives the time of the purge and the default range of GET
	// /v1/usage. Nil means clock.Wall.
	Clock clock.Clock
	// Logger logs store failures, records dropped and the purger. Nil means
	// slog.Default().
	Logger *slog.Logger
	// Retention is how long records are kept; older ones are deleted by the
	// purger. 0 means DefaultRetention; negative keeps them for ever.
	Retention time.Duration
	// FlushInterval is how often the buffered records are written. 0 (or
	// negative) means DefaultFlushInterval.
	FlushInterval time.Duration
	// MaxBatch is the most records written in one transaction; the writer
	// also writes as soon as this many are buffered. 0 (or negative) means
	// DefaultMaxBatch.
	MaxBatch int
	// MaxBuffered bounds the records waiting to be written (while the store
	// fails, they wait); a record that finds the buffer full is dropped and
	// counted (Dropped). 0 (or negative) means DefaultMaxBuffered.
	MaxBuffered int
	// PurgeInterval is how often the purger deletes expired records (it also
	// runs at New). 0 means DefaultPurgeInterval; negative means no purger
	// (PurgeExpired may still be called).
	PurgeInterval time.Duration
	// PurgeLease is how long the purge lease lasts: of several Services
	// sharing Store (replicas), only the holder purges. 0 (or negative) means
	// three PurgeIntervals.
	PurgeLease time.Duration
	// CloseTimeout bounds the last write of Close. 0 (or negative) means
	// DefaultCloseTimeout.
	CloseTimeout time.Duration
}

// Service records usage and answers GET /v1/usage (see the package doc).
// Create it with New and stop it with Close; it is safe for concurrent use.
type Service struct {
	st        store.Store
	clock     clock.Clock
	log       *slog.Logger
	retention time.Duration
	every     time.Duration // the writer's interval
	maxBatch  int
	maxBuffer int
	closeWait time.Duration
	instance  uint64 // random, in every key: keys of two Services never meet

	mu       sync.Mutex
	buf      []pending // records waiting, oldest first
	spare    []pending // an emptied buffer, reused
	inFlight int       // records taken by a write not yet ended
	seq      uint64    // the last sequence number given out
	closed   bool      // Close began: Record drops
	wake     chan struct{}
	dropped  atomic.Uint64

	flushMu   sync.Mutex // one write round at a time
	failing   bool       // guarded by flushMu: the last write failed
	logged    uint64     // guarded by flushMu: dropped count last logged
	loggedAt  time.Time  // guarded by flushMu: when
	stopWrite context.CancelFunc
	writeDone chan struct{}

	purger *lease.Worker // purges while it holds the purge lease

	closeOnce sync.Once
	closeErr  error
}

// pending is a record waiting to be written, with its sequence number, which
// makes its key; a write tried again writes the same keys, so a commit
// reported failed that did happen counts once.
type pending struct {
	rec Record
	seq uint64
}

// The purge lease: bucket usage/lease, key "purger".
var (
	bucketLease = []byte("usage/lease")
	leaseKey    = []byte("purger")
)

// New returns a Service over cfg and starts its writer and purger; Close
// stops them. It panics when cfg.Store is nil (a wiring bug).
func New(cfg Config) *Service {
	if cfg.Store == nil {
		panic("usage.New: Config.Store is nil")
	}
	s := &Service{
		st: cfg.Store, clock: cfg.Clock, log: cfg.Logger, retention: cfg.Retention,
		every: cfg.FlushInterval, maxBatch: cfg.MaxBatch, maxBuffer: cfg.MaxBuffered,
		closeWait: cfg.CloseTimeout, wake: make(chan struct{}, 1),
	}
	if s.clock == nil {
		s.clock = clock.Wall{}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.retention == 0 {
		s.retention = DefaultRetention
	}
	if s.every <= 0 {
		s.every = DefaultFlushInterval
	}
	if s.maxBatch <= 0 {
		s.maxBatch = DefaultMaxBatch
	}
	if s.maxBuffer <= 0 {
		s.maxBuffer = DefaultMaxBuffered
	}
	if s.closeWait <= 0 {
		s.closeWait = DefaultCloseTimeout
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	s.instance = binary.BigEndian.Uint64(id[:])

	ctx, cancel := context.WithCancel(context.Background())
	s.stopWrite, s.writeDone = cancel, make(chan struct{})
	go func() {
		defer close(s.writeDone)
		s.runWriter(ctx)
	}()
	s.startPurger(cfg.PurgeInterval, cfg.PurgeLease)
	return s
}

// Record buffers rec to be written by the writer: it never blocks on the
// store and never fails. A record that finds the buffer full (the store has
// been failing for a while), or that comes after Close, is dropped and
// counted in Dropped. Record takes one short lock to append to the buffer.
func (s *Service) Record(rec Record) {
	s.mu.Lock()
	if s.closed || len(s.buf)+s.inFlight >= s.maxBuffer {
		s.mu.Unlock()
		s.dropped.Add(1)
		return
	}
	s.seq++
	s.buf = append(s.buf, pending{rec: rec, seq: s.seq})
	full := len(s.buf) == s.maxBatch
	s.mu.Unlock()
	if full {
		select {
		case s.wake <- struct{}{}:
		default: // the writer is awake already
		}
	}
}

// Dropped returns the number of records dropped since New: records that
// found the buffer full or came after Close, and records Close could not
// write.
func (s *Service) Dropped() uint64 { return s.dropped.Load() }

// Buffered returns the number of records waiting to be written, those being
// written included.
func (s *Service) Buffered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.buf) + s.inFlight
}

// Close stops the purger (releasing its lease if this Service held it) and
// the writer, then writes the records still buffered, within
// Config.CloseTimeout. Records that could not be written are counted in
// Dropped, logged, and make Close return an error. Records given to Record
// afterwards are dropped. Close is safe to call more than once; it does not
// close the Store. Requests should be drained first.
func (s *Service) Close() error {
	s.closeOnce.Do(func() {
		s.stopPurger()
		s.stopWrite()
		<-s.writeDone
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.closeWait)
		defer cancel()
		s.closeErr = s.closeFlush(ctx)
	})
	return s.closeErr
}
