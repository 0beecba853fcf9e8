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
	// DefaultMaxRunning is how many runs execute at once; later ones queue.
	DefaultMaxRunning = 4
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
	ReasonShutdown         = "gateway shut down"
	ReasonShutdownQueued   = "gateway shut down before the run started"
	ReasonCancelled        = "cancelled by request"
	ReasonCancelledQueued  = "cancelled by request before the run started"
	ReasonStartFailed      = "the command could not be started"
	ReasonWorkDirFailed    = "the working directory could not be created"
	ReasonStorageAtStart   = "the run could not be started: storage error"
	reasonNoLongerQueued   = "the run is no longer queued"
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
	// MaxRunning is how many runs execute at once, over all tenants; the
	// others wait in creation order. Zero or negative means DefaultMaxRunning
	// (4).
	MaxRunning int
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
	boot       string // the kernel's boot id: start times of processes count from it

	mu       sync.Mutex
	closed   bool
	active   map[string]*active // queued and running runs, by id
	queue    []*active          // queued runs, oldest first
	nrunning int                // runs handed to a supervisor
	starter  *starter           // starts their commands; nil while nrunning is 0

	creates     sync.WaitGroup // Create calls between their closed check and their enqueue
	supervisors sync.WaitGroup // one per dispatched run
}

// stopReason says why a run must stop before its command ends by itself.
type stopReason uint8

const (
	stopNone     stopReason = iota
	stopCancel              // POST /a1/runs/{id}/cancel
	stopShutdown            // Close
)

// active is a queued or running run of this process. Fields marked mu are
// guarded by Service.mu.
type active struct {
	rec  record // as created
	out  *tail
	done chan struct{} // closed once the final state is written (or failed to be)

	stop      stopReason  // mu
	pid       int         // mu; 0 until the command started
	exited    bool        // mu; the command has been reaped
	killTimer *time.Timer // mu; SIGKILL after the grace of a cancel
	finalErr  error       // written before done is closed
}

// New returns a Service over c. Runs the store holds as queued or running
// were interrupted by the end of an earlier process: New first kills what
// they left running (their process groups, found by pid and start time, see
// recover.go) and waits until it has ended, for at most 5 s, then marks them
// failed in one transaction (ReasonRestartedRunning, or
// ReasonRestartedQueued for a run that never started), and returns the
// store's error if that fails. A run whose processes outlive the wait stays
// active, its work item busy (agent_busy), and is logged.
func New(c Config) (*Service, error) {
	if c.Store == nil {
		return nil, errors.New("runs.New: Config.Store is nil")
	}
	if c.Clock == nil {
		c.Clock = clock.Wall{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.KillGrace <= 0 {
		c.KillGrace = DefaultKillGrace
	}
	if c.MaxRunning <= 0 {
		c.MaxRunning = DefaultMaxRunning
	}
	argv, err := parseCommand(c.Command)
	if err != nil {
		return nil, fmt.Errorf("runs.New: %w", err)
	}
	s := &Service{
		st: c.Store, clk: c.Clock, log: c.Logger, argv: argv,
		grace: c.KillGrace, maxRunning: c.MaxRunning, boot: bootID(),
		active: map[string]*active{},
	}
	if argv != nil {
		if _, err := exec.LookPath(argv[0]); err != nil {
			s.log.Warn("runs: coding-agent command not found; runs will fail until it exists", "err", err)
		}
	}
	if err := s.recoverInterrupted(context.Background()); err != nil {
		return nil, fmt.Errorf("runs.New: %w", err)
	}
	return s, nil
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

// Close stops the service: later Create calls fail, queued runs are marked
// failed (ReasonShutdownQueued), the process groups of running runs are
// killed (SIGKILL) and those runs marked failed (ReasonShutdown plus how the
// command ended), and Close returns once every supervisor has ended. It
// returns the store's error if the queued runs could not be marked; a
// supervisor's failed write is logged. Close the Service before its Store.
// Later calls return nil.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.supervisors.Wait()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.creates.Wait() // every created run is now in active

	s.mu.Lock()
	queued := s.queue
	s.queue = nil
	for _, a := range queued {
		delete(s.active, a.rec.ID)
	}
	for _, a := range s.active {
		if a.stop == stopNone {
			a.stop = stopShutdown
		}
		s.killLocked(a, syscall.SIGKILL)
	}
	s.mu.Unlock()

	err := s.failQueued(queued)
	for _, a := range queued {
		a.finalErr = err
		close(a.done)
	}
	s.supervisors.Wait()
	return err
}

// enqueue adds the freshly stored run rec to the queue and starts what the
// limit allows. After Close began nothing starts: Close marks the queue
// failed once the Create calls in flight have enqueued their runs.
func (s *Service) enqueue(rec record) *active {
	a := &active{rec: rec, out: newTail(OutputTailBytes), done: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active[rec.ID] = a
	s.queue = append(s.queue, a)
	s.dispatchLocked()
	return a
}

// dispatchLocked hands queued runs to supervisors, oldest first, while fewer
// than maxRunning run. s.mu is held.
func (s *Service) dispatchLocked() {
	for !s.closed && s.nrunning < s.maxRunning && len(s.queue) > 0 {
		a := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if s.starter == nil {
			s.starter = newStarter()
		}
		s.nrunning++
		s.supervisors.Add(1)
		go s.supervise(a)
	}
}

// supervise executes a dispatched run, writes its final state and starts the
// next queued run.
func (s *Service) supervise(a *active) {
	defer s.supervisors.Done()
	o := s.execute(a)
	err := s.finish(a, o)
	if err != nil {
		s.log.Error("runs: final state not stored; the run stays active in the store until the next start",
			"run_id", a.rec.ID, "tenant", a.rec.Tenant, "status", o.status, "err", err)
	} else {
		s.log.Info("run finished", "run_id", a.rec.ID, "tenant", a.rec.Tenant, "user_id", a.rec.User,
			"repo", a.rec.Repo, "status", o.status, "reason", o.reason)
	}
	s.mu.Lock()
	a.finalErr = err
	delete(s.active, a.rec.ID)
	s.nrunning--
	s.dispatchLocked()
	if s.nrunning == 0 {
		// Every command it started has been reaped: an idle Service keeps
		// no goroutine and no thread.
		s.starter.stop()
		s.starter = nil
	}
	s.mu.Unlock()
	close(a.done)
}

// killLocked sends sig to the process group of a's command, if it runs.
// s.mu is held.
func (s *Service) killLocked(a *active, sig syscall.Signal) {
	if a.pid != 0 && !a.exited {
		_ = syscall.Kill(-a.pid, sig)
	}
}

// cancelRunningLocked asks the command of a dispatched run to stop: SIGTERM
// to its process group at once (or, before it started, no start at all), and
// SIGKILL after the grace. A second cancel changes nothing. s.mu is held.
func (s *Service) cancelRunningLocked(a *active) {
	if a.stop != stopNone {
		return
	}
	a.stop = stopCancel
	if a.pid == 0 || a.exited {
		return
	}
	s.killLocked(a, syscall.SIGTERM)
	a.killTimer = time.AfterFunc(s.grace, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.killLocked(a, syscall.SIGKILL)
	})
}

// retry runs write up to storeRetries times, doubling the pause between
// attempts, until it succeeds, the store is closed or the run is no longer
// queued. Supervisors use it for
// the writes no client waits on.
func retry(write func() error) error {
	var err error
	pause := storeRetryFirstInterval
	for i := 0; i < storeRetries; i++ {
		if err = write(); err == nil || errors.Is(err, store.ErrClosed) || errors.Is(err, errNotQueued) {
			return err
		}
		if i+1 < storeRetries {
			time.Sleep(pause)
			pause *= 2
		}
	}
	return err
}
