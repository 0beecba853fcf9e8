package runs

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/chatgw/gateway/internal/lease"
)

// replica is this Service as the other gateway replicas sharing its store see
// it: the lease holder of the runs it claims, and where it runs.
//
// The holder id is random (lease.NewHolder), not built from host name and
// pid: those repeat (every container runs its gateway as pid 1, often under
// one host name, and one process may run several Services over one store).
// The rest tells whether a run's owner is on this machine, where a restart
// can see whether its process still lives and kill what its runs left.
type replica struct {
	id    string
	host  string // os.Hostname
	boot  string // the kernel's boot id: pids and start times count from it
	pidNS string // the pid namespace: pids name the same processes only within one
	pid   int
	start uint64 // the process's start time, clock ticks after boot; 0 when unknown
}

// owner is the replica that claimed a run, as the run record holds it, with
// the lease its heartbeat renews (Holder is the replica's id).
type owner struct {
	lease.Lease
	Host  string `json:"host,omitempty"`
	Boot  string `json:"boot_id,omitempty"`
	PIDNS string `json:"pid_ns,omitempty"`
	PID   int    `json:"pid,omitempty"`
	Start uint64 `json:"start_ticks,omitempty"`
}

// newReplica returns the identity of a new Service in this process.
func newReplica() replica {
	host, _ := os.Hostname() // "" when unknown: then only "" matches it
	r := replica{id: lease.NewHolder(), host: host, boot: bootID(), pidNS: pidNamespace(), pid: os.Getpid()}
	if st, err := readStat(r.pid); err == nil {
		r.start = st.start
	}
	return r
}

// owner returns r as the owner of a run, with a lease until until.
func (r replica) owner(until time.Time) *owner {
	return &owner{Lease: lease.Lease{Holder: r.id, Until: until}, Host: r.host, Boot: r.boot,
		PIDNS: r.pidNS, PID: r.pid, Start: r.start}
}

// holds reports whether r is the owner of run rec.
func (r replica) holds(rec record) bool { return rec.Owner != nil && rec.Owner.Holder == r.id }

// sameMachine reports whether o runs where r does: same host name, boot and
// pid namespace, so that its pids name processes r can see and signal.
func (r replica) sameMachine(o *owner) bool {
	return o.Host == r.host && o.Boot == r.boot && o.PIDNS == r.pidNS
}

// onThisMachine reports whether what run rec started would run on r's
// machine: its owner is, or it has none (stored by a gateway from before
// replicas had leases, which ran alone on its store).
func (r replica) onThisMachine(rec record) bool {
	return rec.Owner == nil || r.sameMachine(rec.Owner)
}

// ownerGone reports whether the owner o of a run can no longer be running
// it at now: its lease has expired, or it is on this machine and its process
// has ended.
func (r replica) ownerGone(o *owner, now time.Time) bool {
	return !o.Live(now) || r.ownerEnded(o)
}

// ownerEnded reports whether o is on this machine and its process has ended:
// what a restart recovers at once, without waiting for the lease.
func (r replica) ownerEnded(o *owner) bool {
	return r.sameMachine(o) && o.Holder != r.id && processEnded(o.PID, o.Start)
}

// same reports whether o and p are the same owner with the same lease (both
// may be nil).
func (o *owner) same(p *owner) bool {
	if o == nil || p == nil {
		return o == p
	}
	q, r := *o, *p
	q.Until, r.Until = time.Time{}, time.Time{}
	return q == r && o.Until.Equal(p.Until)
}

// processEnded reports whether process pid, started at start (clock ticks
// after boot; 0 when unknown), has ended on this machine: it is gone, a
// zombie, or its pid now names a process with another start time. When that
// cannot be told (no /proc, or a /proc that hides other users' processes),
// only a pid that no process has counts as ended: erring towards "alive"
// leaves the run to its lease instead of failing a live replica's run.
func processEnded(pid int, start uint64) bool {
	if pid <= 0 {
		return false // unknown; kill(0) would mean our own process group
	}
	if st, err := readStat(pid); err == nil {
		return st.gone || (start != 0 && st.start != start)
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
