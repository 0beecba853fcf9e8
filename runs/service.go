package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chatgw/gateway/clock"
	"github.com/chatgw/gateway/store"
)

// Runtime names, as GET /a1/runtimes lists them and POST /a1/runs takes them.
const (
	// RuntimeCodingAgent executes Config.Command; its runs flag is true when
	// a command is configured.
	RuntimeCodingAgent = "coding-agent"
	// RuntimeChat is listed with runs false: POST /a1/runs answers
	// runtime_not_runnable.
	RuntimeChat = "chat"
)

// Run states (the field status of a run). Queued and running are active: a
// work item has at most one active run per tenant and repository.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Defaults and limits.
const (
	// DefaultKillGrace is the wait between SIGTERM and SIGKILL on cancel.
	DefaultKillGrace = 5 * time.Second
	// DefaultMaxRunning is how many runs one Service (replica) executes at
	// once; later ones queue.
	DefaultMaxRunning = 4
	// DefaultHeartbeatInterval is how often a Service renews the leases of
	// its runs and stores their output tails.
	DefaultHeartbeatInterval = 5 * time.Second
	// DefaultLeaseDuration is how long a run's lease lasts unless renewed:
	// another replica fails the run once it has expired.
	DefaultLeaseDuration = 30 * time.Second
	// DefaultPollInterval is how often a Service looks at the store for
	// queued runs to claim, cancel requests for its runs, and runs of
	// replicas that are gone.
	DefaultPollInterval = time.Second
	// OutputTailBytes is how much of a run's combined stdout and stderr is
	// kept: the last 64 KiB.
	OutputTailBytes = 64 << 10
	// MaxRepoBytes bounds body.repo.
	MaxRepoBytes = 2048
	// MaxWorkItemBytes bounds body.work_item.
	MaxWorkItemBytes = 1024
)

// Reasons of runs that did not succeed (the field reason), besides the ones
// that describe an exit: "exit code 3", "killed by signal 9 (killed)", and
// ReasonCancelled or ReasonShutdown followed by ": " and one of those.
const (
	ReasonRestartedRunning = "gateway restarted while the run was running"
	ReasonRestartedQueued  = "gateway restarted before the run started"
	// ReasonLostRunning and ReasonLostQueued: another replica found the
	// replica that had claimed the run gone (its lease expired, or its
	// process on the same machine ended).
	ReasonLostRunning = "gateway replica lost while the run was running"
	ReasonLostQueued  = "gateway replica lost before the run started"
	ReasonShutdown    = "gateway shut down"
	// ReasonShutdownQueued is no longer given: Close puts a run it claimed
	// but did not start back in the queue. Runs stored by earlier versions
	// may carry it.
	ReasonShutdownQueued  = "gateway shut down before the run started"
	ReasonCancelled       = "cancelled by request"
	ReasonCancelledQueued = "cancelled by request before the run started"
	ReasonStartFailed     = "the command could not be started"
	ReasonWorkDirFailed   = "the working directory could not be created"
	ReasonStorageAtStart  = "the run could not be started: storage error"
	reasonNoLongerQueued  = "the run is no longer queued"
)

// Supervision timings.
const (
	// storeRetries bounds the attempts of a supervisor's store write;
	// storeRetryFirstInterval is the first pause, doubled after each attempt.
	storeRetries            = 4
	storeRetryFirstInterval = 25 * time.Millisecond
	// outputDrain bounds the wait for the end of a run's output once its
	// command has exited and its process group has been killed (a process that
	// left the group may still hold the pipe).
	outputDrain = time.Second
)

// Config configures a Service.
type Config struct {
	// Store holds the runs (buckets runs/*). It must not be nil.
	Store store.Store
	// Clock stamps created_at, started_at and finished_at. Nil means clock.Wall.
	Clock clock.Clock
	// Logger receives one line per finished run and the causes of failures
	// clients only see as a reason. Nil discards.
	Logger *slog.Logger
	// Command is GATEWAY_CODING_AGENT_CMD: a program and its arguments
	// separated by spaces (strings.Fields; no shell, no quoting). "" (or only
	// spaces) disables the coding-agent runtime. A program name with a slash
	// is made absolute against the working directory of the process at New; a
	// bare name is looked up in PATH when each run starts.
	Command string
	// KillGrace is the wait between SIGTERM and SIGKILL when a running run is
	// cancelled. Zero or negative means DefaultKillGrace (5 s).
	KillGrace time.Duration
	// MaxRunning is how many runs this Service executes at once, over all
	// tenants; the others wait in creation order. With several replicas on
	// one store it is per replica: N replicas execute up to N*MaxRunning.
	// Zero or negative means DefaultMaxRunning (4).
	MaxRunning int
	// HeartbeatInterval is how often the Service renews the leases of the
	// runs it executes and stores their output tails when they changed: a
	// replica that does not own a running run shows an output at most this
	// old. Zero or negative means DefaultHeartbeatInterval (5 s).
	HeartbeatInterval time.Duration
	// LeaseDuration is how long a run's lease lasts from its last renewal.
	// When the replica executing a run dies, another fails it within
	// LeaseDuration plus PollInterval. It must be at least twice
	// HeartbeatInterval, so that one late heartbeat loses nothing. Zero or
	// negative means DefaultLeaseDuration (30 s).
	LeaseDuration time.Duration
	// PollInterval is how often the Service reads the store for queued runs
	// to claim when it has a free slot, cancel requests for its runs (made
	// on another replica), and runs whose replica is gone. Zero or negative
	// means DefaultPollInterval (1 s).
	PollInterval time.Duration
}

// Service runs coding-agent commands and serves /a1/runs and /a1/runtimes.
// Create it with New and release it with Close; it is safe for concurrent use.
type Service struct {
	st         store.Store
	clk        clock.Clock
	log        *slog.Logger
	argv       []string // the command; nil when the coding-agent runtime is disabled
	grace      time.Duration
	maxRunning int
	self       replica // this Service among the replicas sharing st

	heartbeatEvery, leaseFor, pollEvery time.Duration

	mu       sync.Mutex
	closed   bool
	active   map[string]*active // the runs this Service claimed (not yet started, or running), by id
	nrunning int                // slots taken: runs handed to a supervisor, and claims under way
	starter  *starter           // starts their commands; nil while nrunning is 0

	kick     chan struct{}      // wakes the loop to claim queued runs (capacity 1)
	life     context.Context    // ends at Close: the loop, and cancels waiting on another replica
	stopLoop context.CancelFunc // ends life
	loopDone chan struct{}      // closed when the loop returned

	creates     sync.WaitGroup // Create calls between their closed check and their launch
	supervisors sync.WaitGroup // one per dispatched run
}

// New returns a Service over c. Runs the store holds as active may have
// been left by an earlier gateway process on this machine: New first kills
// what those of them whose process has ended (or that were stored without an
// owner, by an earlier version) left running (their process groups, found by
// pid and start time, see recover.go), waits until it has ended, for at most
// 5 s, then marks them failed in one transaction (ReasonRestartedRunning, or
// ReasonRestartedQueued for a run that never started), and returns the
// store's error if that fails. A run whose processes outlive the wait stays
// active, its work item busy (agent_busy), and is logged. The runs of live
// replicas (on this machine or another) are left alone. New then claims
// queued runs for its free slots and starts the loop that keeps the runs
// going across replicas (fleet.go).
func New(c Config) (*Service, error) {
	if c.Store == nil {
		return nil, errors.New("runs.New: Config.Store is nil")
	}
	c = withDefaults(c)
	if c.LeaseDuration < 2*c.HeartbeatInterval {
		return nil, fmt.Errorf("runs.New: LeaseDuration %v is less than twice HeartbeatInterval %v", c.LeaseDuration, c.HeartbeatInterval)
	}
	argv, err := parseCommand(c.Command)
	if err != nil {
		return nil, fmt.Errorf("runs.New: %w", err)
	}
	s := &Service{
		st: c.Store, clk: c.Clock, log: c.Logger, argv: argv,
		grace: c.KillGrace, maxRunning: c.MaxRunning, self: newReplica(),
		heartbeatEvery: c.HeartbeatInterval, leaseFor: c.LeaseDuration, pollEvery: c.PollInterval,
		active: map[string]*active{}, kick: make(chan struct{}, 1), loopDone: make(chan struct{}),
	}
	if argv != nil {
		if _, err := exec.LookPath(argv[0]); err != nil {
			s.log.Warn("runs: coding-agent command not found; runs will fail until it exists", "err", err)
		}
	}
	if err := s.recoverInterrupted(context.Background()); err != nil {
		return nil, fmt.Errorf("runs.New: %w", err)
	}
	s.life, s.stopLoop = context.WithCancel(context.Background())
	s.poll(s.life)
	go s.loop(s.life)
	return s, nil
}

// withDefaults fills the zero fields of c.
func withDefaults(c Config) Config {
	if c.Clock == nil {
		c.Clock = clock.Wall{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []struct {
		field *time.Duration
		def   time.Duration
	}{
		{&c.KillGrace, DefaultKillGrace},
		{&c.HeartbeatInterval, DefaultHeartbeatInterval},
		{&c.LeaseDuration, DefaultLeaseDuration},
		{&c.PollInterval, DefaultPollInterval},
	} {
		if *d.field <= 0 {
			*d.field = d.def
		}
	}
	if c.MaxRunning <= 0 {
		c.MaxRunning = DefaultMaxRunning
	}
	return c
}

// parseCommand splits command on spaces; a relative program path with a slash
// is made absolute (a run's working directory is its temporary directory).
func parseCommand(command string) ([]string, error) {
	argv := strings.Fields(command)
	if len(argv) == 0 {
		return nil, nil
	}
	if strings.Contains(argv[0], "/") && !filepath.IsAbs(argv[0]) {
		abs, err := filepath.Abs(argv[0])
		if err != nil {
			return nil, fmt.Errorf("coding-agent command %q: %w", argv[0], err)
		}
		argv[0] = abs
	}
	return argv, nil
}

// enabled reports whether the coding-agent runtime has a command.
func (s *Service) enabled() bool { return s.argv != nil }

// Close stops the service: later Create calls fail, the loop ends, a run
// this Service claimed but has not started goes back to the queue (for
// another replica, or the next start), the process groups of running runs
// are killed (SIGKILL) and those runs marked failed (ReasonShutdown plus how
// the command ended), and Close returns once every supervisor has ended.
// Queued runs no replica has claimed stay queued. A supervisor's failed
// write is logged; Close returns nil. Close the Service before its Store.
// Later calls return nil.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.loopDone
		s.supervisors.Wait()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.creates.Wait() // every run a Create claimed is now in active
	s.stopLoop()
	<-s.loopDone // and every run the loop claimed

	s.mu.Lock()
	for _, a := range s.active {
		if a.stop == stopNone {
			a.stop = stopShutdown
		}
		s.killLocked(a, syscall.SIGKILL)
	}
	s.mu.Unlock()
	s.supervisors.Wait()
	return nil
}
