// Every configuration default and limit of the cluster in one place: the coordinator, the
// worker and the client commands read them from here (flags override the defaults).
#pragma once

#include <cstddef>
#include <cstdint>

namespace c960::cluster {

// The coordinator's port when an address names none ("--listen 0.0.0.0", "--coordinator host").
inline constexpr int kDefaultPort = 7960;
// Where clients and workers look for the coordinator unless told otherwise (loopback only).
inline constexpr char kDefaultCoordinator[] = "127.0.0.1:7960";
// A leader and its standbys: --coordinator and $C960_COORDINATOR take up to this many addresses,
// comma-separated; clients follow the one that leads.
inline constexpr int kMaxCoordinatorAddresses = 16;
// With several coordinators, a call waits this long for a connection to the one it is sent to
// before it moves on to the next (one address: the call's own deadline).
inline constexpr int64_t kFailoverConnectMs = 2'000;
// Where the coordinator listens by default; port 0 picks a free port.
inline constexpr char kDefaultListen[] = "127.0.0.1:7960";
// The coordinator's SQLite file by default.
inline constexpr char kDefaultDb[] = "c960-coordinator.db";
// A lease lasts this long unless renewed: long enough to ride out a GC-free hiccup or a slow
// network, short enough that a lost worker's units return within a minute.
inline constexpr int64_t kDefaultLeaseSeconds = 30;
// Coordinators sharing one store: the leader lease lasts this long unless renewed (every third of
// it). With SQLite the lease is a lock the kernel drops when its holder dies, so a standby takes
// over within kLeaderStandbyPollMs of that; with a database server, within this plus the poll.
inline constexpr int64_t kDefaultLeaderLeaseSeconds = 10;
// The coordinator's connection to a PostgreSQL store (libpq's settings, which a --db URL may
// override): TCP keepalives after this long idle, every interval, this many unanswered, and data
// unacknowledged this long ends the connection (tcp_user_timeout). A leader cut off from the
// database so learns within about a leader lease that its connection, and with it its lease, is
// gone, instead of waiting in a write for the kernel's retransmissions (minutes).
inline constexpr int kPgKeepaliveIdleSeconds = 5;
inline constexpr int kPgKeepaliveIntervalSeconds = 2;
inline constexpr int kPgKeepaliveCount = 3;
inline constexpr int kPgTcpUserTimeoutMs = 10'000;
// How long the coordinator waits for a PostgreSQL server to accept a connection.
inline constexpr int kPgConnectTimeoutSeconds = 10;
// How often the coordinator looks for expired leases and lost workers.
inline constexpr int64_t kSweepIntervalMs = 500;
// Degraded mode (a commit of the store failed, e.g. its disk is full): writes are refused with
// UNAVAILABLE until one small write (a probe) succeeds. The first probe is made at the next
// write or sweep; after a failed one the next waits this long, doubling up to the last.
inline constexpr int64_t kStoreProbeFirstMs = 100;
inline constexpr int64_t kStoreProbeMaxMs = 5'000;
// A batch of completions whose commit failed while the store still takes a probe's write is
// committed one completion at a time: one that fails this many times alone is refused for itself.
inline constexpr int kCompletionTriesAlone = 2;
// The coordinator's SQLite store: pages it keeps in memory (a fleet's units and copies stay
// hot instead of being read back from the OS for each commit), and the write-ahead log's size
// at which it is copied into the file. Each such checkpoint syncs twice while every RPC waits
// for the store; units and copies rows are rewritten by many commits, so a larger log copies
// each page once for many commits and syncs less often.
inline constexpr int kStoreCacheMiB = 64;
inline constexpr int kStoreCheckpointPages = 4096;  // 16 MiB of 4 KiB pages

// The coordinator's HTTP side (--http-listen, off by default): dashboard, /metrics, JSON API,
// health. One event-loop thread owns every connection: it accepts, does the TLS handshakes,
// reads each request whole and writes each response, so idle and slow connections hold no
// thread. Complete requests are handled by this many threads (handlers only compute: the slow
// ones are /metrics and big results); /healthz and /readyz by a thread of their own, so that a
// probe never queues behind them.
inline constexpr int kHttpThreads = 4;
// Connections open at once, in all and from one peer address (--http-max-connections,
// --http-max-connections-per-address; behind a reverse proxy every connection comes from its
// address). The one over a limit is answered 503 and closed (over TLS closed unanswered: an
// answer would need the handshake the limit saves), unless let in for health (below). Each takes a file descriptor: the
// coordinator raises its soft RLIMIT_NOFILE to the hard one.
inline constexpr int kHttpMaxConnections = 1024;
inline constexpr int kHttpMaxConnectionsPerAddress = 256;
// Connections over those limits are still admitted, this many at once, each for one /healthz or
// /readyz (then closed; any other request: 503 and closed), so that probes are answered however
// many connections are open. Their request's head must come within kHttpHealthHeadTimeoutMs of
// the connection's start. When all are taken, a new one takes the place of the oldest that has
// sent nothing (or is closing), else of the oldest whose request is not complete: a flood of
// connections reopened over the limits cannot keep a probe out.
inline constexpr int kHttpHealthConnections = 16;
inline constexpr int64_t kHttpHealthHeadTimeoutMs = 1'000;
// A request's head (request line and headers) at most this large, else 431; its target (path
// and query) at most this large, else 414; a header line at most this large and this many header
// lines, else 431; a body (only the login form has one) at most this large, else 413.
inline constexpr size_t kMaxHttpHeadBytes = 16 << 10;
inline constexpr size_t kMaxHttpTargetBytes = 8 << 10;
inline constexpr size_t kMaxHttpHeaderLineBytes = 8 << 10;
inline constexpr size_t kMaxHttpHeaderLines = 100;
inline constexpr size_t kMaxHttpBodyBytes = 8 << 10;
// Answers of a compressible type (text, JSON, JavaScript, PGN) this large or larger are sent
// with gzip when the request's Accept-Encoding takes it; smaller ones gain little.
inline constexpr size_t kHttpGzipMinBytes = 1 << 10;
// Deadlines, each for the whole phase, not per read (a client trickling a byte a second is cut
// at the deadline): a request's head from the connection's start (the TLS handshake included)
// for its first request, else from the head's first byte; its body from the end of the head; a
// response's writing from when it is ready. A keep-alive connection waits this long for the
// next request's first byte.
inline constexpr int64_t kHttpHeaderTimeoutMs = 10'000;
inline constexpr int64_t kHttpBodyTimeoutMs = 10'000;
inline constexpr int64_t kHttpWriteTimeoutMs = 10'000;
inline constexpr int64_t kHttpIdleTimeoutMs = 5'000;
// A connection serves this many requests at most, then closes (clients open another).
inline constexpr int kHttpMaxRequestsPerConnection = 1000;
// A connection closed by the server reads and drops what its client still sends for this long at
// most, so that the client reads the last answer instead of a reset; refused connections do so
// too, at most this many at once (more are closed at once).
inline constexpr int64_t kHttpLingerMs = 1'000;
inline constexpr int kHttpMaxLingeringRefused = 64;
// Answers' bytes not yet sent, in all connections together: past this, a new request (but for
// /healthz and /readyz) is answered 503 with Retry-After and its connection closed, so that
// readers that do not read cannot pin the coordinator's memory with big answers. Checked as each
// request is handed to a thread, so the answers being made then may go past it (kHttpThreads
// answers at most). Each connection has one answer at most.
inline constexpr size_t kHttpMaxQueuedBytes = 64 << 20;
// The same, of one principal's answers (an authenticated caller's identity; else the client's
// address): past this, its new requests are answered 429 with Retry-After, checked once it is
// known who asks (before the handler runs).
inline constexpr size_t kHttpMaxQueuedBytesPerPrincipal = 16 << 20;
// The big answers (the workers listing, a job's results, the results downloads) are made and sent
// in pages of about this size, chunked: the next page is made, on a request thread, only once the
// connection has sent the one before, so that a reader that does not read holds a page of memory
// and no thread. An answer still counts what it holds to make its further pages (a download's
// file, the results it renders) as unsent.
inline constexpr size_t kHttpPageBytes = 64 << 10;
// Each connection's kernel send buffer (SO_SNDBUF; Linux doubles it for its bookkeeping), fixed
// instead of the kernel's autotuning (up to net.ipv4.tcp_wmem's 4 MiB), so that the kernel too
// holds little for a reader that does not read; about 5 MB/s on a 100 ms path.
inline constexpr int kHttpSendBufferBytes = 256 << 10;
// The listening socket's backlog of connections not yet accepted.
inline constexpr int kHttpListenBacklog = 1024;
// When accept() fails for want of file descriptors, accepting pauses this long.
inline constexpr int64_t kHttpAcceptPauseMs = 100;
// stop(): responses being written and requests being handled get this long to finish.
inline constexpr int64_t kHttpStopGraceMs = 2'000;
// Refused connections are logged at most once in this interval (with the count since the last line).
inline constexpr int64_t kHttpRefusedLogIntervalMs = 10'000;
// Dashboard sessions (coordinator/http_sessions.h): a login trades its token for a session the
// coordinator keeps in memory. A session ends this long after its login whatever its use
// (absolute), or after this long without a request (idle; an open dashboard page polls, so it
// stays in); a coordinator's restart ends every one. One token holds this many sessions at most
// (its oldest is ended by its next login); all tokens together this many (a login past it is
// refused, 503, until one ends).
inline constexpr int64_t kHttpSessionLifetimeMs = 12 * 3600 * 1000;
inline constexpr int64_t kHttpSessionIdleMs = 2 * 3600 * 1000;
inline constexpr int kHttpMaxSessionsPerCredential = 16;
inline constexpr int kHttpMaxSessions = 4096;

// Perft job limits. Depth 1..kMaxDepth; a unit's remaining depth <= kMaxUnitDepth keeps one
// unit's count below 2^64 and its time below hours.
inline constexpr int kMaxDepth = 16;
inline constexpr int kMaxUnitDepth = 10;
inline constexpr int kMaxSplitDepth = 6;
// The automatic split leaves at most this many plies to each unit: perft 9 of a start position
// takes about a minute on one thread with a table (docs/perft.md). Splitting costs work: a unit's
// subtree shares no table with its siblings on other workers (perft 8 of 10 start positions on two
// one-thread workers: 54 s of CPU unsplit, 84 s split at ply 1, `bench/cluster_vs_local.sh`).
inline constexpr int kTargetUnitDepth = 9;
// A job whose units keep kDeepUnitDepth plies or more (seconds to minutes each) is split further
// until it has about kMinAutoUnits units, so that a job of few roots still spreads over workers.
inline constexpr int kDeepUnitDepth = 8;
inline constexpr int64_t kMinAutoUnits = 16;
// A plan may walk at most this many split-ply positions in total and keep at most this many
// units: beyond that, planning and the store would take too long.
inline constexpr uint64_t kMaxPlanWalk = 8'000'000;
// Planning time one caller may spend (one plan at a time): a bucket of this many milliseconds,
// refilled at that much per window, charged with the wall time of each plan (1 ms at least).
// An empty bucket refuses the next submit (RESOURCE_EXHAUSTED, saying when to try again), so a
// caller submitting the biggest plans without pause gets about a fifth of a core.
inline constexpr int64_t kDefaultPlanBudgetMs = 120'000;
inline constexpr int64_t kDefaultPlanBudgetWindowMs = 600'000;
inline constexpr uint64_t kMaxPlanUnits = 2'000'000;
// Bigger jobs are planned lazily: their roots are expanded into units (transpositions merged
// within each root) one after another as workers need units, a window of about
// kLazyWindowUnits planned ahead, refilled when fewer than kLazyLowWaterUnits wait. One root's
// expansion may walk at most kMaxRootWalk positions (perft(11) of a start position splits at
// ply 4: about 10^5 to 10^6).
inline constexpr uint64_t kMaxRootWalk = 2'000'000;
inline constexpr int64_t kLazyWindowUnits = 20'000;
inline constexpr int64_t kLazyLowWaterUnits = 5'000;
// A big plan is stored in transactions of this many units, each short enough (milliseconds)
// that completions and leases are stored between them.
inline constexpr size_t kUnitsPerStoreBatch = 2'000;
// Self-play job limits. A unit is a few games of one position: small enough that a killed
// worker loses little, big enough that per-unit overhead (RPCs, a store commit) stays small.
inline constexpr int kDefaultSelfPlayGamesPerUnit = 4;
inline constexpr int kMaxSelfPlayGamesPerUnit = 1000;
// Evaluation job limits (the spec's own bounds: selfplay/evaluation.h). A unit is a few
// positions of one engine: a search at depth 12 takes Stockfish well under a second, so one
// position a unit would spend more on RPCs and commits than on the searches.
inline constexpr int kDefaultEvaluationPositionsPerUnit = 4;
inline constexpr int kMaxEvaluationPositionsPerUnit = 960;
// A self-play job's positions beyond the 960 (FENs or DFRC pairs) at most: the explicit ones
// travel in the spec, which every Job message carries (about 80 bytes each), and each is a row
// of results.
inline constexpr int kMaxSelfPlayPositions = 10'000;
inline constexpr int kMaxUciOptions = 64;        // selfplay::kMaxEvalOptions is the same
inline constexpr int kMaxUciOptionLength = 256;  // name or value (selfplay::kMaxEvalOptionLength too)
inline constexpr int kMaxEnginePathLength = 4096;
inline constexpr int kMaxGamePlies = 20000;     // a stored game's moves
inline constexpr int kMaxPgnBytes = 1 << 20;    // a stored game's PGN
inline constexpr int kMaxFailureLength = 4096;  // a worker's unit failure report
// A job FAILS after this many unit failure reports when a trusted owner sent one, or when
// kMinFailingOwners different owners did (each puts the unit back in the queue, for another
// owner: it may have the engine; untrusted owners alone, fewer than that, cannot fail a job).
inline constexpr int kMaxUnitFailures = 3;
inline constexpr int kMinFailingOwners = 3;

// Verification (BOINC's adaptive replication). A worker is trusted after this many of its
// results were confirmed by another worker; a trusted worker's units are still computed twice
// at this rate (spot checks). Flags of the coordinator override both.
inline constexpr int kDefaultTrustAfter = 10;
inline constexpr double kDefaultSpotCheckRate = 0.1;
// Audits: the share of units settled without a trust root behind them that a trust root computes
// again first (when the coordinator has trust roots and the job sets no rate). A group that
// forged k units escapes with probability (1 - r)^k: at 0.05, 1 in 20 for 59 units.
inline constexpr double kDefaultAuditRate = 0.05;
// A copy placed with an owner that has not leased it this long later, or whose workers went
// away, is placed again.
inline constexpr int64_t kDefaultPlacementSeconds = 60;
// A unit whose results disagree is given to further workers until two agree; after this many
// results without two that agree, the job FAILS (something is wrong beyond one bad worker).
inline constexpr int kMaxCopies = 5;
// AcquireWork looks at most this many queued units of a job that the caller already computed
// (they wait for another worker), so that a lone worker is not slowed by them.
inline constexpr int kMaxReplicaScan = 64;
// ... and at most this many fresh units (each is placed with an owner as it is looked at).
inline constexpr int kMaxPlacementScan = 256;
// Leases one owner (all the workers behind its tokens or certificates) may hold at once, at most
// (each owner's cap is also what its connected workers' threads compute: threads x (1 +
// kPrefetchPerThread)), so that one caller leasing everything cannot starve the others; and how long a lost worker
// session is kept before it is forgotten (its worker's record stays longer: kDefaultForgetWorkersSeconds).
inline constexpr int64_t kDefaultMaxLeasesPerCredential = 2048;
// How long one lease may be held, renewals included (JobKind::max_hold_ms): a perft unit its
// estimated leaves at this rate (about a hundredth of one core's), at least five minutes; a unit
// without an estimate a week. A worker still on it then is told LOST and the unit goes to
// another; its result is still taken if it comes.
inline constexpr uint64_t kSlowestPerftLeavesPerSecond = 1'000'000;
inline constexpr int64_t kMinLeaseHoldSeconds = 300;
inline constexpr int64_t kMaxLeaseHoldSeconds = 7 * 24 * 3600;
inline constexpr int64_t kDefaultForgetLostSeconds = 3600;
// Worker names (records) remembered per credential and per owner, at most (the ones not forgotten
// yet, below): a Hello under a new name past either is refused (RESOURCE_EXHAUSTED); a Hello under
// a name already known (a restart) always passes. A credential is one host or one enrolled pod
// running a few worker processes under stable names (the host name, or --name): 32 leaves room
// for several processes and renamings. An owner may run hundreds of hosts, and a pod that is
// replaced (not restarted) comes back under a new name: 4096 leaves room for a fleet of several
// hundred that is replaced daily, within the forgetting time below. Each record costs a few KiB of
// memory and a row of the store, so that one credential (or one owner) cannot grow either without
// bound by saying Hello under made-up names.
inline constexpr int kDefaultMaxWorkersPerCredential = 32;
inline constexpr int kDefaultMaxWorkersPerOwner = 4096;
// A worker's record is forgotten (its row deleted, and it no longer counts against the caps above)
// once it has been silent this long with no session, and only when nothing needs it: no lease, no
// copy of a unit of a job in memory (its vote and its name in the job's provenance), not
// quarantined (the quarantine is kept in the records), and not its owner's last TRUSTED worker
// (the owner's earned trust is kept in the records). Progress toward trust (agreeing results) of a
// NEW worker is forgotten with it. Longer than any planned downtime: a week.
inline constexpr int64_t kDefaultForgetWorkersSeconds = 7 * 24 * 3600;
// How often the sweep looks for workers to forget (it walks the workers and the units in memory).
inline constexpr int64_t kForgetWorkersIntervalMs = 60'000;

// The protocol revision: workers say which they speak in Hello, and a coordinator accepts the
// ones from kMinProtocolVersion on. 2: sessions, engines by name, verification.
inline constexpr int kProtocolVersion = 2;
inline constexpr int kMinProtocolVersion = 2;

// Per-caller bounds (each caller is a token's name; all anonymous callers share one), so that
// one client cannot exhaust the coordinator: running jobs, units planned over its running jobs
// (each costs memory until done: about 700 bytes in memory and 250 in the store), and open
// watch streams; and watch streams in all. Flags of the coordinator override them.
inline constexpr int kDefaultMaxActiveJobs = 32;
inline constexpr int64_t kDefaultMaxPlannedUnits = 8'000'000;
inline constexpr int kDefaultMaxWatchesPerCaller = 64;
inline constexpr int kDefaultMaxWatches = 1024;
// Calls in flight at once per caller (credential), on each gRPC service: unary calls (each holds
// a server thread while it runs; GetJob of a job with a spec of megabytes holds a copy of it) and
// GetResults streams. A worker has two or three unary calls in flight at most (renewals beside a
// completion): 128 is four per worker name at kDefaultMaxWorkersPerCredential. A client reading
// results rarely streams more than one job's at a time (c960 watch of a self-play job reads its
// leaders meanwhile): 8. AcquireWork long polls are not counted here: a session has at most one
// waiting (a newer call of the session ends the older), so a credential has at most as many as
// its workers. Unauthenticated callers (a coordinator that authenticates nobody) are not counted
// for unary calls: there is no principal to budget, every caller is the operator.
inline constexpr int kDefaultMaxCallsPerCaller = 128;
inline constexpr int kDefaultMaxResultStreamsPerCaller = 8;
// Online backups of the SQLite store (coordinator/store_backup.h): with --backup-dir, a copy
// every hour, the newest 24 kept (a day of hourly copies); a period under a minute would copy a
// big store back to back.
inline constexpr int64_t kDefaultBackupEveryMs = 3'600'000;
inline constexpr int64_t kMinBackupEveryMs = 60'000;
inline constexpr int kDefaultBackupKeep = 24;
inline constexpr int kMaxBackupKeep = 10'000;
// Pages copied per step under the store's lock (16 MiB of 4 KiB pages: a few milliseconds).
inline constexpr int kBackupPagesPerStep = 4096;
// ListJobs stops adding jobs to a page once it holds this many bytes.
inline constexpr size_t kMaxListBytes = 4 << 20;
// Engine names (c960-worker --engine NAME=PATH; self-play jobs name one).
inline constexpr int kMaxEngineNameLength = 64;
inline constexpr int kMaxEngines = 64;
// A job's recorded mismatch detail is cut to this many characters.
inline constexpr size_t kMaxMismatchDetail = 2000;
// GetResults sends a self-play position's games in chunks of at most this many.
inline constexpr int kResultGamesPerChunk = 256;
// Request bounds.
inline constexpr int kMaxFens = 1024;
inline constexpr int kMaxFenLength = 256;
inline constexpr int kMaxStartPositionsLength = 8192;
inline constexpr int kMaxRequestIdLength = 128;
inline constexpr int kMaxIdLength = 64;
inline constexpr int kMaxNameLength = 128;
inline constexpr int kMaxVersionLength = 64;
// A worker's provenance texts at Hello: its CPU model, an engine's UCI id name.
inline constexpr int kMaxProvenanceText = 128;
inline constexpr int kMaxCapabilities = 16;
inline constexpr int kMaxThreads = 4096;
inline constexpr int kMaxAcquire = 1024;
// CompleteUnits takes at most this many completions (each may carry a unit's games).
inline constexpr int kMaxCompletionsPerCall = 256;
// Long poll: AcquireWork waits at most this long for work, whatever the worker asks; an idle
// worker asks for kWorkerAcquireWaitSeconds and sets its deadline kRpcDeadlineMs beyond that.
// Long enough that 10,000 idle workers cost a few hundred calls a second, short enough that a
// worker notices a lost connection soon without keepalive.
inline constexpr int kMaxAcquireWaitSeconds = 60;
inline constexpr int kWorkerAcquireWaitSeconds = 20;
// The coordinator looks at its waiting AcquireWork calls at least this often (their deadlines;
// new work wakes them at once).
inline constexpr int64_t kLongPollTickMs = 100;
inline constexpr int kMaxUnitIdsPerCall = 4096;
inline constexpr int kMaxPageSize = 1000;
inline constexpr int kDefaultPageSize = 100;
// gRPC messages, both ways, on the coordinator and on every client: results of big jobs stream in
// chunks and lists are paged, so no message needs more; a bigger one is refused before it is
// buffered whole.
inline constexpr int kMaxMessageBytes = 16 << 20;
// A job's spec, serialized: the largest one the other limits allow (kMaxSelfPlayPositions
// positions of kMaxFenLength characters with their ids, or kMaxUciOptions long options) fits.
inline constexpr size_t kMaxJobSpecBytes = 4 << 20;

// Keepalive (HTTP/2 pings), so that a peer that vanished without closing its connection (a
// machine switched off, a NAT that forgot the mapping) is noticed in about a minute instead of
// the kernel's two hours. The coordinator pings a connection idle this long:
inline constexpr int64_t kServerKeepaliveTimeMs = 60'000;
// Clients (workers, c960) ping an idle connection this often, also between calls, so that a
// long-polling worker or a quiet watch keeps its connection through NATs and load balancers:
inline constexpr int64_t kClientKeepaliveTimeMs = 30'000;
// A ping unanswered this long closes the connection (both sides); calls then fail UNAVAILABLE
// and are retried on a new one:
inline constexpr int64_t kKeepaliveTimeoutMs = 20'000;
// The coordinator accepts client pings without calls this often at most (gRPC's default is 5
// minutes, which would make it close the connection of every client pinging every 30 s); more
// frequent pings count as abuse and end in a GOAWAY:
inline constexpr int64_t kMinClientPingIntervalMs = 10'000;
// The c960 tool waits this long for its first connection before it says the coordinator cannot
// be reached (and why; a TLS mismatch is said at once); once connected, calls retry UNAVAILABLE
// with backoff as usual.
inline constexpr int64_t kConnectTimeoutMs = 2'500;

// Client side.
inline constexpr int64_t kRpcDeadlineMs = 10'000;                   // unary calls
inline constexpr int64_t kSubmitDeadlineMs = 120'000;               // planning a big job takes a while
inline constexpr int64_t kBackupDeadlineMs = 600'000;               // copying a big store
inline constexpr int64_t kResultsStreamDeadlineMs = 6 * 3'600'000;  // results that stream: a big job's games
inline constexpr int64_t kReleaseDeadlineMs = 2'000;                // a stopping worker gives units back once
inline constexpr int64_t kBackoffInitialMs = 100;                   // the c960 tool's first retry after UNAVAILABLE
inline constexpr int64_t kBackoffMaxMs = 5'000;                     // its retries never wait longer
// A worker whose coordinators do not answer (refused, UNAVAILABLE, DEADLINE_EXCEEDED, a standby
// naming no leader), or answer that they cannot take the call now (INTERNAL, RESOURCE_EXHAUSTED,
// ABORTED), tries again after a wait drawn uniformly from 0 to a ceiling ("full jitter",
// cluster/backoff.h). The ceiling starts here, grows by the multiplier at every failure that
// followed a full round of its coordinators, and stops at the cap; a success puts it back. A
// retry delay the coordinator sent (a degraded store's) is waited at least, up to the cap.
inline constexpr int64_t kRetryInitialMs = 1'000;
inline constexpr double kRetryMultiplier = 1.6;
inline constexpr int64_t kRetryMaxMs = 30'000;
inline constexpr int kDefaultWorkerHashMb = 64;  // perft hash shared by a worker's threads
// What a self-play job may set on a worker's UCI engine unless the operator says otherwise
// (c960-worker --engine-option): Hash up to this many MiB, one search thread. Nothing else.
inline constexpr int kDefaultEngineHashMaxMb = 256;
inline constexpr int kDefaultEngineThreadsMax = 1;
// What a self-play job may ask of the built-in engine on a worker unless its operator says
// otherwise (c960-worker --engine-option builtin:Hash=1..MAX): a hash of up to this many MiB per
// player. A worker plays one game per compute thread, two players a game, so a job can make it
// allocate at most 2 x threads x this much (a spec's hash_mb may say up to 4,096).
inline constexpr int kDefaultBuiltinHashMaxMb = 64;
inline constexpr int64_t kDefaultGraceSeconds = 30;  // SIGTERM: finish held units this long
inline constexpr int kPrefetchPerThread = 1;         // units queued beyond the running ones
inline constexpr int64_t kFailurePauseMs = 1'000;    // no new units this long after a unit failure
// A busy worker that asked for more units (prefetch) and got none asks again after this long,
// or as soon as a compute thread is free; an idle one long-polls instead.
inline constexpr int64_t kBusyAcquirePollMs = 2'000;

}  // namespace c960::cluster
