package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The targets, in the order of the report.
const (
	targetDirect  = "direct"  // the fake upstream itself
	targetProxy   = "proxy"   // a bare httputil.ReverseProxy to it: the floor
	targetGateway = "gateway" // the gateway with its real middleware
)

var allTargets = []string{targetDirect, targetProxy, targetGateway}

// target is one system under test: where to send requests, with which client,
// and the server processes whose CPU time and memory are its cost.
type target struct {
	name string
	// procs serve the target: one process, or the gateway's replicas, which
	// the requests take in turn.
	procs  []*server
	client *http.Client
	token  string // the gateway's bearer token; "" for the others
}

// urls returns the URL of path at each of t's processes.
func (t *target) urls(path string) []string {
	out := make([]string, len(t.procs))
	for i, s := range t.procs {
		out[i] = s.url + path
	}
	return out
}

// stat reads t's processes in /proc and sums them: CPU time, RSS, and the
// peak RSS as the sum of each process's high-water mark (an upper bound of
// the peak of their total, which /proc does not keep). A process that cannot
// be read counts as 0.
func (t *target) stat() procStat {
	var sum procStat
	for _, s := range t.procs {
		st, _ := readProcStat(s.pid())
		sum.CPU += st.CPU
		sum.RSSKB += st.RSSKB
		sum.PeakRSSKB += st.PeakRSSKB
	}
	return sum
}

// resetPeakRSS resets the high-water mark of each of t's processes.
func (t *target) resetPeakRSS() {
	for _, s := range t.procs {
		resetPeakRSS(s.pid())
	}
}

// newClient returns the load generator's client of one target: its own
// keep-alive transport with up to conns idle connections, HTTP/1.1 only, no
// compression, and a total time limit per request.
func newClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        conns,
			MaxIdleConnsPerHost: conns,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
}

// server is a server subcommand running in a child process.
type server struct {
	name  string
	url   string // http://host:port, as the child printed it
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error // receives Wait's result
}

// startServer re-executes exe (gwbench itself) with a server subcommand and
// waits until it prints the address it serves; env is added to the child's
// environment. The child ends when stop closes its stdin, or when this process
// dies.
func startServer(exe string, args, env []string, stderr io.Writer) (*server, error) {
	cmd := exec.Command(exe, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	s := &server{name: args[0], cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stdout)
		line, _ := br.ReadString('\n')
		addr <- strings.TrimSpace(line)
		io.Copy(io.Discard, br)
		s.done <- cmd.Wait()
	}()
	select {
	case u := <-addr:
		if strings.HasPrefix(u, "http://") {
			s.url = u
			return s, nil
		}
		s.stop()
		return nil, fmt.Errorf("%s: exited without printing its address (see its errors above)", args[0])
	case <-time.After(30 * time.Second):
		s.stop()
		return nil, fmt.Errorf("%s: no address printed within 30s", args[0])
	}
}

// pid returns the child's process id.
func (s *server) pid() int { return s.cmd.Process.Pid }

// stop closes the child's stdin, which makes it shut down, and kills it if it
// has not exited within 10 s.
func (s *server) stop() error {
	s.stdin.Close()
	select {
	case err := <-s.done:
		return err
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		return errors.Join(fmt.Errorf("%s: killed after 10s", s.name), <-s.done)
	}
}
