// Package pgtest starts throw-away PostgreSQL servers for tests, as bbolt's
// internal/btesting opens throw-away files: the store/pgstore tests use it, and
// so can end-to-end and multi-replica tests that need a real database.
//
//	c := pgtest.New(t)              // initdb + postgres in a temporary directory
//	url := c.NewDatabase(t)         // a fresh empty database: postgres://...
//	db, err := pgstore.Open(ctx, url)
//
// A Cluster runs the PostgreSQL server binaries of the machine (initdb and
// postgres) in a temporary directory of its own: data, log and unix socket
// live there, the server listens on a free port of 127.0.0.1, and t's cleanup
// stops it and removes the directory. When the binaries cannot be found the
// test is skipped with a message saying how to install them (Debian:
// `apt-get install postgresql`; or set CHATGW_PG_BIN to the directory that
// holds initdb and postgres).
//
// PostgreSQL refuses to run as root, so when the test runs as root the server
// runs as the user nobody, which then owns the temporary directory.
//
// The server is tuned for tests, not for keeping data: fsync is off (a clean
// Stop and Start keep everything; a crash of the machine would not), and
// deadlock_timeout is 50ms so that deadlock tests do not wait a second.
//
// Programs that are not tests (cmd/gwbench) start a cluster with NewCluster,
// optionally Durable (fsync on, for measurements), and remove it with Close.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinEnv names the variable that may hold the directory of initdb and
// postgres, for installations that are neither on PATH nor in Debian's place.
const BinEnv = "CHATGW_PG_BIN"

// User is the superuser of every Cluster (trust authentication, no password).
const User = "postgres"

// startTimeout bounds how long a server may take to accept connections.
const startTimeout = 30 * time.Second

// Cluster is a running throw-away PostgreSQL server. Its methods may be called
// from several goroutines.
type Cluster struct {
	bin string // directory of initdb and postgres
	dir string // temporary directory: data/, postgres.log, the unix socket
	as  *account
	// durable keeps fsync and full_page_writes on (Config.Durable).
	durable bool

	mu     sync.Mutex
	port   int
	proc   *exec.Cmd
	exited chan struct{} // closed when proc has exited

	dbs atomic.Int64 // databases created by NewDatabase, for their names
}

// New initializes and starts a cluster for t, stopped and removed at t's
// cleanup. It skips t when PostgreSQL's binaries cannot be found.
func New(t testing.TB) *Cluster {
	t.Helper()
	c, err := NewCluster(Config{})
	if errors.Is(err, ErrUnavailable) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(c.remove)
	return c
}

// ErrUnavailable is wrapped by the error of NewCluster when no server can be
// started here: PostgreSQL's binaries cannot be found, the platform is not
// supported, or there is no user to run the server as. Its message says how to
// install PostgreSQL. New skips the test on it.
var ErrUnavailable = errors.New("pgtest: no PostgreSQL server can be started here")

// unavailable is an error of NewCluster that wraps ErrUnavailable and reads
// as its cause alone, which says what to install.
type unavailable struct{ err error }

func (u unavailable) Error() string   { return u.err.Error() }
func (u unavailable) Unwrap() []error { return []error{ErrUnavailable, u.err} }

// Config is what differs between clusters. The zero value is the cluster of
// New: tuned for tests.
type Config struct {
	// Durable keeps PostgreSQL's defaults of fsync and full_page_writes (on):
	// every commit waits for its WAL on disk, as on a production server. For
	// measurements that compare with bbolt's synced commits; tests leave it
	// off.
	Durable bool
}

// NewCluster initializes and starts a cluster for a caller that is not a test
// (a benchmark, a tool): the caller stops it and removes its directory with
// Close. Its error wraps ErrUnavailable when no server can be started here.
func NewCluster(cfg Config) (*Cluster, error) {
	bin, err := findBin()
	if err == nil {
		err = platformSupported()
	}
	var as *account
	if err == nil {
		as, err = serverAccount()
	}
	if err != nil {
		return nil, unavailable{err}
	}
	// Not a test's t.TempDir: its parents are private to the test's user,
	// and the socket path must stay short (107 bytes). Another user's server
	// gets a directory under /tmp, which every user may reach.
	parent := ""
	if as != nil {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "pgtest-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: dir, as: as, durable: cfg.Durable}
	if err := c.create(); err != nil {
		c.remove()
		return nil, err
	}
	return c, nil
}

// create initializes the data directory and starts the server.
func (c *Cluster) create() error {
	if c.as != nil {
		if err := os.Chown(c.dir, c.as.uid, c.as.gid); err != nil {
			return err
		}
	}
	if err := c.initdb(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startFree()
}

// Close stops the server at once and removes its directory, data included.
// It is for clusters of NewCluster (New's are closed at the test's
// cleanup); calling it again does nothing.
func (c *Cluster) Close() error {
	c.remove()
	return nil
}

// URL returns the connection URL of database db of the cluster, over TCP on
// 127.0.0.1, as the superuser.
func (c *Cluster) URL(db string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", User, c.port, db)
}

// Port returns the TCP port the server listens on (the same after a restart).
func (c *Cluster) Port() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.port
}

// NewDatabase creates a new empty database, named after t, and returns its URL.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("%s_%d", dbName(t.Name()), c.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	url, err := c.CreateDatabase(ctx, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return url
}

// CreateDatabase creates a new empty database called name and returns its
// URL. It is NewDatabase for callers that are not tests.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	defer conn.Close(context.Background())
	// FILE_COPY (PostgreSQL 15 and later) copies the template's files instead
	// of logging every block: faster for a small database, with fsync off.
	create := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, create+" STRATEGY FILE_COPY"); err != nil {
		if _, err := conn.Exec(ctx, create); err != nil {
			return "", fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return c.URL(name), nil
}

// Conn returns a superuser connection to database db, closed at t's cleanup
// (closing it earlier is fine).
func (c *Cluster) Conn(t testing.TB, db string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL(db))
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", db, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Start starts the server of a stopped cluster (New starts it already) and
// waits until it accepts connections.
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		t.Fatal("pgtest: Start: the server is running")
	}
	if err := c.startFree(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// startFree starts the server on c.port, or on a free port when it has none
// yet, and waits until it accepts connections. The caller holds c.mu.
func (c *Cluster) startFree() error {
	// A free port can be taken between the probe and the server's bind: try
	// another one then (a restart keeps its port).
	for try := 0; ; try++ {
		if c.port == 0 {
			p, err := freePort()
			if err != nil {
				return err
			}
			c.port = p
		}
		err := c.startLocked()
		if errors.Is(err, errBind) && try < 5 {
			c.port = 0
			continue
		}
		return err
	}
}

// Stop shuts the server down (PostgreSQL's fast shutdown: sessions are
// terminated, what they had not committed is rolled back) and waits until it
// has exited. Start starts it again with its data.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.stopLocked(true); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
}

// Restart stops the server and starts it again on the same port: every
// session is cut, the data stays.
func (c *Cluster) Restart(t testing.TB) {
	t.Helper()
	c.Stop(t)
	c.Start(t)
}

// Log returns what the server wrote to its log so far.
func (c *Cluster) Log() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	return string(b)
}

// remove stops the server at once and removes its directory.
func (c *Cluster) remove() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.stopLocked(false) // immediate shutdown: the data is thrown away
	os.RemoveAll(c.dir)
}

func (c *Cluster) initdb() error {
	cmd := exec.Command(filepath.Join(c.bin, "initdb"), "-D", filepath.Join(c.dir, "data"),
		"-U", User, "-A", "trust", "-E", "UTF8", "--locale=C", "-N")
	c.prepare(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	return nil
}

// errBind is the server's failure to listen on its port.
var errBind = errors.New("port taken")

// startLocked starts postgres on c.port and waits until it accepts
// connections. The caller holds c.mu.
func (c *Cluster) startLocked() error {
	logf, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the server has its own descriptor
	cmd := exec.Command(filepath.Join(c.bin, "postgres"),
		"-D", filepath.Join(c.dir, "data"),
		"-p", strconv.Itoa(c.port),
		"-k", c.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "deadlock_timeout=50ms",
		"-c", "max_connections=200",
	)
	if !c.durable {
		cmd.Args = append(cmd.Args, "-c", "fsync=off", "-c", "full_page_writes=off")
	}
	c.prepare(cmd)
	cmd.Stdout, cmd.Stderr = logf, logf
	before := c.Log()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	c.proc, c.exited = cmd, exited

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	url := fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=1", User, c.port)
	for {
		conn, err := pgx.Connect(ctx, url)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			c.proc = nil
			log := strings.TrimPrefix(c.Log(), before)
			if strings.Contains(log, "could not bind") || strings.Contains(log, "could not create any TCP/IP sockets") {
				return errBind
			}
			return fmt.Errorf("postgres exited while starting:\n%s", log)
		case <-ctx.Done():
			_ = c.stopLocked(false)
			return fmt.Errorf("postgres did not accept connections within %v: %v\n%s", startTimeout, err, c.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stopLocked asks the server for a fast shutdown (sessions are terminated,
// then a checkpoint) or, when fast is false, an immediate one (no checkpoint,
// for a cluster about to be removed), and waits for it to exit, killing it
// after a while. The caller holds c.mu.
func (c *Cluster) stopLocked(fast bool) error {
	if c.proc == nil {
		return nil
	}
	proc, exited := c.proc, c.exited
	c.proc = nil
	_ = proc.Process.Signal(shutdownSignal(fast))
	select {
	case <-exited:
		return nil
	case <-time.After(startTimeout):
		_ = proc.Process.Kill()
		<-exited
		return fmt.Errorf("postgres did not stop within %v: killed", startTimeout)
	}
}

// prepare makes cmd run as the server's user (sysProcAttr), in the cluster's
// directory, with a fixed locale.
func (c *Cluster) prepare(cmd *exec.Cmd) {
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C", "TZ=UTC")
	cmd.SysProcAttr = sysProcAttr(c.as)
}

// findBin returns the directory of initdb and postgres: $CHATGW_PG_BIN, the
// directory of an initdb on PATH, or the newest of Debian's
// /usr/lib/postgresql/<version>/bin.
func findBin() (string, error) {
	has := func(dir string) bool {
		for _, name := range []string{"initdb", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if dir := os.Getenv(BinEnv); dir != "" {
		if has(dir) {
			return dir, nil
		}
		return "", fmt.Errorf("pgtest: %s=%s holds no initdb and postgres", BinEnv, dir)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && has(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, dir := range dirs {
		if has(dir) {
			return dir, nil
		}
	}
	return "", errors.New("pgtest: PostgreSQL's server binaries (initdb, postgres) were not found on PATH or in " +
		"/usr/lib/postgresql/*/bin: install them (apt-get install postgresql) or set " + BinEnv + " to their directory")
}

// version is the major version in a path like /usr/lib/postgresql/15/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// account is the user the server runs as, when not the test's own.
type account struct{ uid, gid int }

// serverAccount returns the user the server runs as: nil (the test's own
// user) unless the test runs as root, then nobody.
func serverAccount() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, which PostgreSQL refuses, and no user to run it as: %v", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("pgtest: user nobody: %v", err)
	}
	return &account{uid, gid}, nil
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// dbName turns a test name into the start of a database name.
func dbName(test string) string {
	s := nonIdent.ReplaceAllString(strings.ToLower(test), "_")
	return "t_" + s[:min(len(s), 40)]
}
