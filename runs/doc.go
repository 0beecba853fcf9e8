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
// UTF-8 replaced by U+FFFD; "" before the run starts), live while it runs,
// and "output_truncated", true when earlier output was dropped.
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
//	queued  -> running    a slot is free (at most Config.MaxRunning, default 4,
//	                      run at once over all tenants; the rest start in
//	                      creation order) and the command has started
//	queued  -> cancelled  cancel (at once; reason ReasonCancelledQueued)
//	queued  -> failed     the command could not start (ReasonStartFailed,
//	                      ReasonWorkDirFailed), or the run could not be
//	                      stored as running (ReasonStorageAtStart; the
//	                      command is killed at once)
//	running -> succeeded  the command exited 0
//	running -> failed     another exit code ("exit code 3") or a signal
//	                      ("killed by signal 9 (killed)")
//	running -> cancelled  cancel: SIGTERM to the process group, SIGKILL after
//	                      Config.KillGrace (default 5 s); whatever the exit
//	                      (reason "cancelled by request: <how it ended>")
//	active  -> failed     Close (ReasonShutdown, ReasonShutdownQueued) or a
//	                      restart (ReasonRestartedRunning, ReasonRestartedQueued;
//	                      after what the run left running has been killed)
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
// # Storage and restarts
//
// Buckets runs/runs, runs/output, runs/by-user, runs/by-tenant, runs/active
// and runs/seq (see storage.go). Every state change is one Update
// transaction: a store failure on create or cancel answers storage_error and
// leaves the stored state as it was. A supervisor's own writes (running,
// the final state) are retried a few times; one that still fails leaves the
// run active in the store (and its work item busy) until a cancel or the
// next start ends it. Close kills what runs and marks it failed. After Close,
// POST /a1/runs answers 500 internal_error; the reads keep working while the
// store is open.
//
// A run is stored as running together with its command's pid, process group
// and start time (Linux: field 22 of /proc/<pid>/stat) and the boot id. When
// the gateway dies without Close, the kernel kills the command (Pdeathsig)
// but not what it started. So New, before it returns, looks for what the
// runs left queued or running by an earlier process still have running: the
// command (same pid and start time: a recycled pid is never taken for it)
// and the processes that inherited the run's GW_RUN_ID in its process group.
// It SIGKILLs their process groups, waits until they have ended (at most
// 5 s), and only then marks the runs failed, with ReasonRestartedRunning
// (ReasonRestartedQueued for a run that never started), which frees their
// work items: no new run of a work item is accepted while a process of the
// old one may still run. A run whose processes outlive the wait stays
// active and its work item busy. Without /proc (not Linux), nothing is
// killed and the runs are marked failed as before.
package runs
