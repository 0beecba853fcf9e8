// Package runs executes coding-agent runs and serves /a1/runs and
// /a1/runtimes.
//
// It is a top-level package of its own, beside agents and rag rather than
// inside either: runs is a family with its own routes, its own store records
// (buckets runs/*) and its own process supervision (child processes, process
// groups, a run queue), none of which agents or rag share, and like every
// family it must not import another one. Embedders configure it through
// Config, so it is not internal.
//
// Every handler is a plain http.HandlerFunc; the root middleware has already
// checked the token, the route's scope (runs:read, runs:write) and the
// GW-User-Id rule (required, except a tenant_admin's reads, which are then
// tenant-wide). Handlers read the tenant from auth.FromContext, the user from
// httpx.UserID and the run id with httpx.Param(r, "id").
//
// # Routes and payloads
//
//	GET  /a1/runtimes        200 {"object":"list","data":[{"name":"coding-agent","runs":bool},{"name":"chat","runs":false}]}
//	POST /a1/runs            {"runtime","repo","work_item"}  201 run
//	GET  /a1/runs            ?limit=&offset=  200 {"object":"list","data":[run...],"limit","offset","has_more"}
//	GET  /a1/runs/:id        200 run with "output" and "output_truncated"
//	POST /a1/runs/:id/cancel 200 run
//
// coding-agent's runs flag is true when Config.Command is set, whatever the
// tenant's allowlist; chat never runs. A run is
//
//	{"id":"run_<32 hex>","runtime":"coding-agent","repo":"https://github.com/acme/app",
//	 "work_item":"ISSUE-7","status":"queued","created_at":"2025-03-01T12:00:00Z",
//	 "started_at"?,"finished_at"?,"exit_code"?,"reason"?,"user_id":"alice"}
//
// with times in RFC 3339, UTC. started_at is set when the run starts running
// (its command has started; a run whose command could not start has none),
// finished_at when it ends; exit_code when its command exited by itself with
// a code (not when a signal ended it); reason on every run that ended other
// than succeeded. GET /a1/runs/{id} adds "output", the last OutputTailBytes
// (64 KiB) of the command's combined stdout and stderr as a string (invalid
// UTF-8 replaced by U+FFFD; "" before the run starts), live while it runs
// (on a replica other than the one running it: as of that one's last
// heartbeat, at most HeartbeatInterval old), and "output_truncated", true
// when earlier output was dropped.
//
// # POST /a1/runs: order of checks
//
//  1. the body: invalid_json; an unknown field, or a field that is not a
//     string, is invalid_field body.<name> (body.user_id included);
//  2. runtime: absent or null is missing_field body.runtime; "chat" is 400
//     runtime_not_runnable (body.runtime); anything but "coding-agent" is
//     invalid_field body.runtime;
//  3. repo: absent or null is missing_field body.repo; not an http(s)
//     repository URL (see CanonicalRepo) is invalid_field body.repo;
//  4. work_item: absent or null is missing_field body.work_item; empty, over
//     MaxWorkItemBytes, invalid UTF-8 or holding a control character is
//     invalid_field body.work_item;
//  5. no Config.Command: 403 coding_agent_disabled (param null);
//  6. the canonical repo not on the tenant's coding_agent_repos
//     (canonicalised alike; an empty list disables the runtime for the
//     tenant): 403 coding_agent_repo_not_allowed (body.repo);
//  7. a queued or running run of the same tenant, repo and work item (any
//     user): 409 agent_busy (param null);
//  8. a store failure: 500 storage_error, nothing stored.
//
// The run is then stored as queued and answered with 201.
//
// # Reading and isolation
//
// GET /a1/runs lists the caller's runs newest first (creation order), limit
// 1..500 (default 50) and offset >= 0 like GET /c1/conversations; otherwise
// invalid_field query.limit / query.offset. GET /a1/runs/{id} and cancel
// answer 404 coding_agent_run_not_found (param run_id) for an unknown id, a
// run of another tenant or of another user. A tenant_admin without
// GW-User-Id lists and reads every run of the tenant; with the header, an
// admin sees only that user's runs, like anyone.
//
// # States
//
//	queued  -> running    a replica claimed it (each runs at most
//	                      Config.MaxRunning, default 4, at once over all
//	                      tenants; the oldest queued run is claimed first)
//	                      and the command has started
//	queued  -> cancelled  cancel, on any replica (at once;
//	                      ReasonCancelledQueued)
//	queued  -> failed     the command could not start (ReasonStartFailed,
//	                      ReasonWorkDirFailed), or the run could not be
//	                      stored as running (ReasonStorageAtStart; the
//	                      command is killed at once), or the replica that
//	                      claimed it is gone (ReasonRestartedQueued,
//	                      ReasonLostQueued; see below)
//	running -> succeeded  the command exited 0
//	running -> failed     another exit code ("exit code 3") or a signal
//	                      ("killed by signal 9 (killed)")
//	running -> cancelled  cancel, on any replica: SIGTERM to the process
//	                      group, SIGKILL after Config.KillGrace (default 5 s);
//	                      whatever the exit (reason "cancelled by request:
//	                      <how it ended>")
//	running -> failed     Close of its replica (ReasonShutdown: <how it
//	                      ended>), or its replica is gone:
//	                      ReasonRestartedRunning when a restart on the
//	                      replica's machine found it, ReasonLostRunning when
//	                      another replica did (after what the run left
//	                      running on that machine has been killed)
//
// succeeded, failed and cancelled are final. Cancelling a final run changes
// nothing and answers 200 with the run as it is (the Codes table has no code for
// it, and a retried cancel should not fail). Cancelling a running run
// answers once the command has ended, so the answer shows cancelled.
//
// # Execution
//
// Config.Command is split on spaces (strings.Fields) and executed without a
// shell, with stdin /dev/null, in a fresh temporary directory (os.MkdirTemp,
// "gw-run-*") that is removed when the command ends, in a process group of
// its own. Its environment is the gateway's without the GATEWAY_* variables
// (the gateway's configuration and API keys), plus PWD (the directory) and
// GW_RUN_ID, GW_RUN_REPO (canonical), GW_RUN_WORK_ITEM, GW_TENANT_ID and
// GW_USER_ID, which replace any inherited value. When the command exits, the
// rest of its process group is killed too. On Linux the kernel also kills the
// command (SIGKILL, Pdeathsig) when the gateway dies, however it dies; as
// Pdeathsig fires when the thread that started the command ends, commands are
// started from one goroutine locked to its thread while any run executes.
//
// # Several replicas
//
// Several gateways (replicas) may share one store (PostgreSQL). The queue
// and the runs' states live in the store; a replica keeps in memory only the
// processes it runs. Each Service is a replica with an owner id, 128 random
// bits, unique however hosts, containers and pids repeat; a run it claims
// records that id with its host name, boot id, pid namespace, pid and process
// start time (for restarts on that machine, below) and a lease.
//
//   - Claims. A Create on a replica with a free slot, when no older run
//     waits, stores the run claimed by that replica in the same transaction
//     and starts it. Otherwise the run waits in the queue (runs/queue, in
//     creation order), and any replica with a free slot claims it: at once
//     when one of its slots frees, else at its next poll (every
//     Config.PollInterval, default 1 s). A claim is one Update transaction
//     that checks the run is still queued and unclaimed, so two replicas
//     never both start it. Config.MaxRunning is per replica. A replica
//     without Config.Command claims nothing.
//   - Leases. The replica running a run renews its lease every
//     Config.HeartbeatInterval (default 5 s) to Config.LeaseDuration
//     (default 30 s) ahead, and stores its output tail with it when it
//     changed: another replica shows the output of a running run at most
//     HeartbeatInterval old; the owner shows its own live.
//   - A replica that is gone. Every poll looks at the claimed runs
//     (runs/claimed, at most MaxRunning per replica): a run whose lease has
//     expired, or whose owner ran on this machine and whose process has
//     ended, is failed (ReasonLostRunning, ReasonLostQueued), after what it
//     left running on this machine has been killed as on a restart. So the
//     runs of a replica that died are failed within LeaseDuration plus
//     PollInterval after it died (31 s by default), and at the next poll of
//     a replica on its machine. Replicas judge leases by their own clocks,
//     which must agree to well within LeaseDuration. What a dead replica's
//     command started on another machine cannot be killed from here (the
//     kernel killed the command itself, Pdeathsig); its work item is free
//     again all the same. A live replica that could not reach the store for
//     longer than the lease finds at its next heartbeat that its run was
//     failed, and SIGKILLs its process group.
//   - Cancel. A queued run is cancelled at once by whichever replica
//     receives the cancel (one transaction that checks it is still queued
//     and unclaimed). For a run another live replica runs, the cancel is
//     recorded in the run; its owner sees it at its next poll and stops the
//     command as for a local cancel, and the replica that received the
//     cancel answers once the run has ended (it reads the run every
//     PollInterval), with the run as it then is: cancelled, as a local
//     cancel answers.
//   - Close puts a run it claimed but did not start back in the queue, and
//     leaves queued runs queued: another replica, or the next start, runs
//     them.
//
// # Storage and restarts
//
// Buckets runs/runs, runs/output, runs/by-user, runs/by-tenant, runs/active,
// runs/queue, runs/claimed and runs/seq (see storage.go). Every state change
// is one Update transaction that checks the run is still in the state the
// change starts from: a store failure on create or cancel answers
// storage_error and leaves the stored state as it was. A supervisor's own
// writes (running, the final state) are retried a few times; one that still
// fails leaves the run active in the store (and its work item busy) until a
// cancel ends it, or its lease expires and a poll fails it. Close kills what
// runs and marks it failed. After Close, POST /a1/runs answers 500
// internal_error; the reads keep working while the store is open.
//
// A run is stored as running together with its command's pid, process group
// and start time (Linux: field 22 of /proc/<pid>/stat) and the boot id. When
// the gateway dies without Close, the kernel kills the command (Pdeathsig)
// but not what it started. So New, before it returns, looks for what the
// runs an earlier process on this machine left queued or running still have
// running: the runs whose owner had this host name, boot id and pid
// namespace and whose process has ended (same pid and start time no longer
// alive), and the runs stored without an owner by a version from before
// replicas had leases (queued ones excepted, which wait in the queue). It
// never touches the runs of a live replica, on this machine or another. For
// those runs it looks for the command (same pid and start time: a recycled
// pid is never taken for it) and the processes that inherited the run's
// GW_RUN_ID in its process group. It SIGKILLs their process groups, waits
// until they have ended (at most 5 s), and only then marks the runs failed,
// with ReasonRestartedRunning (ReasonRestartedQueued for a run that never
// started), which frees their work items: no new run of a work item is
// accepted while a process of the old one may still run. A run whose
// processes outlive the wait stays active and its work item busy. Without
// /proc (not Linux), nothing is killed, and an owner's process counts as
// ended only when no process has its pid.
package runs
