// c960 watch JOB: the job's progress until it ends; exit 0 when it succeeds, 1 when it fails or
// is cancelled.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "cli/watch.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "watch";
// Without a terminal, a new line at most this often (and only when units were done).
constexpr auto kLineInterval = std::chrono::seconds(2);
// Without a terminal, the line saying the coordinator is away, at most this often.
constexpr auto kReconnectLineInterval = std::chrono::seconds(10);
// On a terminal, the block is redrawn this often between updates (ETA, elapsed, outage time).
constexpr auto kRedrawInterval = std::chrono::seconds(1);
// Self-play: the leaders come from a second call, at most this often.
constexpr auto kLeadersInterval = std::chrono::seconds(2);
// Self-play: the ETA's rate is taken over the games done in this window (units end in bursts).
constexpr int64_t kEtaWindowMs = 120'000;

const CommandSpec kSpec = {
    kName, "c960 watch JOB",
    "Shows the job's progress until it ends: state, percentage, units, nodes or games, rate, ETA "
    "(for self-play from the games of the last two minutes; none while the job waits: 'waiting on "
    "verification' or 'none while waiting'), elapsed time and workers; a finished "
    "job shows how long it took. For a self-play job also the best and worst positions so far by "
    "White's score shrunk toward the other positions' (#NUMBER BACKRANK SHRUNK (rank LO-HI, n=GAMES), "
    "the rank's 95% interval; only positions with 20 games or more are ranked: docs/report.md, "
    "Rankings). On a terminal a small block redrawn in "
    "place, fitted to its width; otherwise a plain line every few seconds. Rides out coordinator "
    "restarts, saying so; fails, as status does, if the coordinator cannot be reached at the start (an "
    "address that accepts connections but never sends the job: after about half a minute). Exits 0 "
    "when the job succeeds, 1 when it fails or is cancelled or the coordinator cannot be reached, 2 "
    "for an unknown job.",
    with_cluster_options({}), 1};

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The columns of the process's terminal (its stdout), else $COLUMNS, else 80.
int current_width() { return cluster::stdout_columns(); }

// The watch's state, shared by the stream's callbacks and, on a terminal, the redraw thread.
class Watcher {
 public:
  Watcher(Client& client, const Io& io) : client_(client), io_(io), tty_(io.out_is_tty) {}

  void on_update(const v1::Job& job) {
    const auto now = std::chrono::steady_clock::now();
    const bool final = job.state() != v1::JOB_STATE_RUNNING;
    const bool selfplay = job.spec().has_selfplay();
    // The leaders' call is made outside the lock, so that redraws go on meanwhile.
    std::optional<Leaders> leaders;
    if (selfplay && (final || now - leaders_at_ > kLeadersInterval)) {
      std::vector<v1::ResultChunk> chunks;
      if (client_.results(job.id(), false, true, &chunks).ok()) leaders = leaders_of(chunks);
      leaders_at_ = now;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (down_since_ && !tty_)
      io_.out << "reconnected to " << client_.address() << " after "
              << std::chrono::duration_cast<std::chrono::seconds>(now - *down_since_).count() << " s" << std::endl;
    down_since_.reset();
    job_ = job;
    have_job_ = true;
    if (leaders) view_.leaders = *leaders;
    if (selfplay) games_.add(unix_ms_now(), double(job.progress().games_done()));
    if (tty_) {
      draw();
    } else if (final || (job.progress().units_done() != last_done_ && now - last_print_ > kLineInterval)) {
      const std::string line = watch_plain_line(job_, view(), unix_ms_now());
      io_.out << line << "\n";
      if (selfplay && (final || leaders_line(view_.leaders) != last_leaders_)) {
        last_leaders_ = leaders_line(view_.leaders);
        io_.out << "  " << last_leaders_ << "\n";
      }
      io_.out << std::flush;
      last_print_ = now;
      last_done_ = job.progress().units_done();
    }
  }

  void on_retry(const absl::Status& status) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    if (!down_since_) down_since_ = now;
    if (tty_) {
      if (have_job_) draw();
    } else if (now - last_reconnect_line_ > kReconnectLineInterval) {
      io_.out << connection_text(now) << ": " << status.message() << std::endl;
      last_reconnect_line_ = now;
    }
  }

  // On a terminal: redraws every kRedrawInterval until the watch ends, then leaves the cursor on
  // a new line.
  void run_redraws() {
    if (!tty_) return;
    redraws_ = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu_);
      while (!done_) {
        if (cv_.wait_for(lock, kRedrawInterval, [this] { return done_; })) break;
        if (have_job_) draw();
      }
    });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (redraws_.joinable()) redraws_.join();
    if (tty_ && drawn_lines_ > 0) io_.out << "\n" << std::flush;
    drawn_lines_ = 0;
  }

  ~Watcher() { stop(); }

 private:
  std::string connection_text(std::chrono::steady_clock::time_point now) const {
    if (!down_since_) return "";
    return absl::StrCat("reconnecting to ", client_.address(), "... (since ",
                        std::chrono::duration_cast<std::chrono::seconds>(now - *down_since_).count(), " s)");
  }

  WatchView view() {
    WatchView v = view_;
    if (job_.spec().has_selfplay() && job_.state() == v1::JOB_STATE_RUNNING) {
      const v1::Progress& p = job_.progress();
      v.rate = games_.rate();
      const double eta = games_.eta_seconds(double(p.games_total() - p.games_done()), unix_ms_now());
      if (eta >= 0) v.eta_seconds = eta;
    }
    v.connection = connection_text(std::chrono::steady_clock::now());
    return v;
  }

  // Holding mu_.
  void draw() {
    const std::vector<std::string> lines = watch_lines(job_, view(), unix_ms_now(), current_width());
    io_.out << redraw_block(drawn_lines_, lines) << std::flush;
    drawn_lines_ = int(lines.size());
  }

  Client& client_;
  const Io& io_;
  const bool tty_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread redraws_;
  bool done_ = false;
  v1::Job job_;
  bool have_job_ = false;
  WatchView view_;
  RateWindow games_{kEtaWindowMs};
  std::optional<std::chrono::steady_clock::time_point> down_since_;
  int drawn_lines_ = 0;
  std::chrono::steady_clock::time_point last_print_ = std::chrono::steady_clock::now() - std::chrono::hours(1);
  std::chrono::steady_clock::time_point leaders_at_ = last_print_;
  std::chrono::steady_clock::time_point last_reconnect_line_ = last_print_;
  int64_t last_done_ = -1;
  std::string last_leaders_;
};

}  // namespace

int follow_job(Client& client, const std::string& id, const Io& io, absl::string_view command) {
  v1::Job job;
  absl::Status s;
  {
    Watcher w(client, io);
    w.run_redraws();
    s = client.watch(
        id, [&](const v1::Job& j) { w.on_update(j); }, &job, [&](const absl::Status& st) { w.on_retry(st); });
  }
  if (!s.ok()) return rpc_fail(io, command, client, s);
  if (job.result_mismatches() > 0)
    io.out << "RESULT MISMATCHES: " << job.result_mismatches() << "; first: " << job.mismatch_detail() << "\n";
  if (job.state() == v1::JOB_STATE_FAILED) io.out << "FAILED: " << job.failure_detail() << "\n";
  return job.state() == v1::JOB_STATE_SUCCEEDED ? kExitOk : kExitCheckFailed;
}

int cmd_watch(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.positional().size() != 1) return fail(io, kName, "give the job id");
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  return follow_job(client, p.positional()[0], io, kName);
}

const CommandSpec& watch_spec() { return kSpec; }

}  // namespace c960::cli
