// What `c960 watch` and `c960 status` print, from jobs built here: the watch block fits the
// terminal and keeps its most important fields, numbers and times read well, the self-play ETA
// does not climb between units, best and worst positions never overlap, and the status table
// and JSON have their header, columns and keys.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/job_format.h"
#include "cluster/u128.h"
#include "gtest/gtest.h"

namespace c960::cli {
namespace {

constexpr int64_t kT0 = 1'790'000'000'000;  // 2026-09-21T...Z, a job's submit time

// A perft job at depth 7 of all 960 positions, 406 of 960 units done, with large counts.
v1::Job perft_job() {
  v1::Job j;
  j.set_id("job-000123");
  j.mutable_spec()->mutable_perft()->set_depth(7);
  j.set_state(v1::JOB_STATE_RUNNING);
  j.set_created_unix_ms(kT0);
  v1::Progress* p = j.mutable_progress();
  p->set_units_total(96000);
  p->set_units_done(40600);
  *p->mutable_nodes_done() = cluster::to_proto(NodeCount(24'123'456'789'012'345ull) * 1000);  // > 2^64
  p->set_nodes_per_second(1.234e9);
  p->set_eta_seconds(3 * 3600 + 25 * 60 + 7);
  p->set_workers(12);
  p->set_workers_alive(16);
  p->set_units_verifying(345);
  return j;
}

v1::Job selfplay_job() {
  v1::Job j;
  j.set_id("job-000124");
  j.mutable_spec()->mutable_selfplay()->set_games_per_position(40);
  j.set_state(v1::JOB_STATE_RUNNING);
  j.set_created_unix_ms(kT0);
  v1::Progress* p = j.mutable_progress();
  p->set_units_total(9600);
  p->set_units_done(4321);
  p->set_games_total(38400);
  p->set_games_done(17284);
  p->set_games_per_second(123.4);
  p->set_eta_seconds(2000);
  p->set_workers(16);
  p->set_workers_alive(16);
  return j;
}

v1::ResultChunk position(int sp, int64_t w, int64_t d, int64_t b) {
  v1::ResultChunk c;
  v1::SelfPlayPositionResult* r = c.mutable_selfplay();
  r->set_start_position(sp);
  r->set_white_wins(w);
  r->set_draws(d);
  r->set_black_wins(b);
  r->set_games(w + d + b);
  return c;
}

TEST(WatchFormat, NumbersAndTimes) {
  EXPECT_EQ(group_thousands("0"), "0");
  EXPECT_EQ(group_thousands("999"), "999");
  EXPECT_EQ(group_thousands("1000"), "1,000");
  EXPECT_EQ(group_thousands("24123456789012"), "24,123,456,789,012");
  EXPECT_EQ(si_number(0), "0");
  EXPECT_EQ(si_number(950), "950");
  EXPECT_EQ(si_number(999.96), "1.00k");
  EXPECT_EQ(si_number(24123456789012.0), "24.1T");
  EXPECT_EQ(si_number(1.234e9), "1.23G");
  EXPECT_EQ(si_number(123.4e6), "123M");
  EXPECT_EQ(format_duration(5), "0:00:05");
  EXPECT_EQ(format_duration(3 * 3600 + 25 * 60 + 7), "3:25:07");
  EXPECT_EQ(format_duration(86'399), "23:59:59");
  EXPECT_EQ(format_duration(3 * 86'400 + 4 * 3600 + 59), "3d 04h");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(iso8601_utc(0), "");
  EXPECT_EQ(iso8601_utc(1'700'000'000'123), "2023-11-14T22:13:20.123Z");
  EXPECT_EQ(job_kind(perft_job()), "perft d7");
  EXPECT_EQ(job_kind(selfplay_job()), "selfplay");
}

TEST(WatchFormat, TerminalWidth) {
  EXPECT_EQ(terminal_width(132, "60"), 132);
  EXPECT_EQ(terminal_width(0, "60"), 60);
  EXPECT_EQ(terminal_width(0, "wide"), 80);
  EXPECT_EQ(terminal_width(0, nullptr), 80);
  EXPECT_EQ(terminal_width(5, nullptr), kMinTerminalWidth);
}

// Every line of the block is shorter than the terminal, for every width down to the minimum,
// and the fields that matter most are always there.
TEST(WatchFormat, TheBlockFitsTheTerminal) {
  v1::Job sp = selfplay_job();
  std::vector<v1::ResultChunk> chunks;
  for (int s = 500; s < 520; ++s) chunks.push_back(position(s, s % 7, 10, 3));
  WatchView view;
  view.leaders = leaders_of(chunks);
  view.connection = "reconnecting to coordinator.example.org:7960... (since 12 s)";
  for (int width = kMinTerminalWidth; width <= 200; ++width) {
    for (const v1::Job& j : {perft_job(), sp}) {
      const std::vector<std::string> lines = watch_lines(j, view, kT0 + 60'000, width);
      ASSERT_EQ(lines.size(), j.spec().has_selfplay() ? 5u : 3u);
      for (const std::string& l : lines) EXPECT_LT(l.size(), size_t(width)) << width << ": " << l;
      if (width >= 60) {
        EXPECT_TRUE(absl::StrContains(lines[0], "RUNNING")) << lines[0];
        EXPECT_TRUE(absl::StrContains(lines[0], "%")) << lines[0];
        EXPECT_TRUE(absl::StrContains(lines[1], "ETA ")) << lines[1];
        EXPECT_TRUE(absl::StrContains(lines[1], j.spec().has_selfplay() ? "games" : "units")) << lines[1];
      }
    }
  }
  // At 80 columns: units, nodes with separators, rate, ETA as h:mm:ss; workers and elapsed go
  // first. At 60 the node count is shortened rather than dropped.
  const std::vector<std::string> perft80 = watch_lines(perft_job(), view, kT0 + 60'000, 80);
  EXPECT_EQ(perft80[0].substr(0, 44), "job-000123  perft d7  RUNNING   42.3%  [####");
  EXPECT_EQ(perft80[1], "40600/96000 units  24,123,456,789,012,345,000 nodes  1.23G nodes/s  ETA 3:25:07");
  EXPECT_EQ(perft80[2], view.connection);
  EXPECT_EQ(watch_lines(perft_job(), view, kT0 + 60'000, 60)[1],
            "40600/96000 units  24.1E nodes  1.23G nodes/s  ETA 3:25:07");
  EXPECT_EQ(watch_lines(sp, view, kT0 + 60'000, 80)[1],
            "17,284/38,400 games  7404.0 games/min  ETA 0:33:20  16/16 workers");
  // Wide enough: every field, the full node count with separators.
  const std::string wide = watch_lines(perft_job(), WatchView(), kT0 + 60'000, 200)[1];
  EXPECT_EQ(wide,
            "40600/96000 units  24,123,456,789,012,345,000 nodes  1.23G nodes/s  ETA 3:25:07  elapsed 0:01:00  "
            "12/16 workers  345 verifying");
}

TEST(WatchFormat, AFinishedJobShowsItsDurationAndNoEta) {
  v1::Job j = perft_job();
  j.set_state(v1::JOB_STATE_SUCCEEDED);
  j.set_finished_unix_ms(kT0 + (2 * 3600 + 5) * 1000);
  for (const std::string& line :
       {watch_lines(j, WatchView(), kT0 + 10 * 86'400'000LL, 80)[1], watch_plain_line(j, WatchView(), kT0 + 1)}) {
    EXPECT_FALSE(absl::StrContains(line, "ETA")) << line;
    EXPECT_TRUE(absl::StrContains(line, "took 2:00:05")) << line;
  }
}

// A job that waits shows no made-up time: when every unit left waits for a second worker's
// result, the ETA says so; when the coordinator says the job waits (a one-owner cluster under
// --verify adaptive), it shows no time. Some units verifying among many pending keep the time.
TEST(WatchFormat, AJobWaitingOnVerificationShowsNoTime) {
  v1::Job waiting = perft_job();
  waiting.mutable_progress()->set_units_done(95'900);
  waiting.mutable_progress()->set_units_verifying(100);
  v1::Job blocked = perft_job();
  blocked.set_notice(
      "waiting: results are checked by a second owner (verify adaptive) and 1 owner can compute this job");
  for (const int width : {60, 80, 200}) {
    const std::string line = watch_lines(waiting, WatchView(), kT0 + 60'000, width)[1];
    EXPECT_TRUE(absl::StrContains(line, "ETA: waiting on verification")) << line;
    EXPECT_FALSE(absl::StrContains(line, "3:25:07")) << line;
    EXPECT_TRUE(
        absl::StrContains(watch_lines(blocked, WatchView(), kT0 + 60'000, width)[1], "ETA: none while waiting"));
  }
  // A self-play job's own estimate (from its games' rate) is not shown either.
  v1::Job sp = selfplay_job();
  sp.mutable_progress()->set_units_done(9'000);
  sp.mutable_progress()->set_units_verifying(600);
  WatchView view;
  view.eta_seconds = 0;
  EXPECT_TRUE(absl::StrContains(watch_plain_line(sp, view, kT0 + 60'000), "ETA: waiting on verification"));
  EXPECT_TRUE(absl::StrContains(job_description(waiting, kT0 + 60'000), "ETA: waiting on verification"));
  EXPECT_TRUE(absl::StrContains(watch_lines(perft_job(), WatchView(), kT0 + 60'000, 80)[1], "ETA 3:25:07"));
}

// Units end in bursts: the ETA counts down between them and does not jump up when one ends.
TEST(WatchFormat, SelfPlayEtaCountsDownBetweenUnits) {
  RateWindow w(120'000);
  EXPECT_EQ(w.rate(), -1);
  const double total = 1000;
  double games = 0;
  int64_t t = 0;
  w.add(t, games);
  double last_eta = w.eta_seconds(total, t);
  EXPECT_EQ(last_eta, -1);  // no rate yet
  // A unit of 10 games every 10 s (1 game/s), with some jitter in the unit times.
  for (int unit = 1; unit <= 30; ++unit) {
    const int64_t next = unit * 10'000 + (unit % 3 == 0 ? 2'000 : unit % 3 == 1 ? -1'500 : 0);
    for (int64_t now = t + 1'000; now < next; now += 1'000) {
      const double eta = w.eta_seconds(total - games, now);
      EXPECT_LE(eta, last_eta) << "unit " << unit << " at " << now;
      last_eta = eta;
    }
    t = next;
    games += 10;
    w.add(t, games);
    last_eta = w.eta_seconds(total - games, t);
    // Once a few units are in, each new estimate stays near the true remaining time.
    if (unit > 3) {
      EXPECT_NEAR(last_eta, total - games, 0.1 * (total - games)) << "unit " << unit;
    }
  }
  EXPECT_NEAR(w.rate(), 1.0, 0.1);
  // Unchanged counts are not changes: the rate is not diluted while a unit is being played.
  const double r = w.rate();
  w.add(t + 5'000, games);
  EXPECT_EQ(w.rate(), r);
}

TEST(WatchFormat, BestAndWorstNeverShareAPosition) {
  // The user's case: two positions, equal scores, once shown in both lists.
  std::vector<v1::ResultChunk> chunks = {position(0, 10, 20, 10), position(2, 10, 20, 10), position(4, 10, 20, 10)};
  Leaders l = leaders_of(chunks);
  ASSERT_EQ(l.best.size(), 2u);
  ASSERT_EQ(l.worst.size(), 1u);
  for (const LeaderEntry& b : l.best) EXPECT_NE(b.start_position, l.worst[0].start_position);
  for (size_t n = 0; n <= 8; ++n) {
    std::vector<v1::ResultChunk> some;
    for (size_t i = 0; i < n; ++i) some.push_back(position(int(10 * i), int64_t(10 + 3 * i), 30, 20));
    l = leaders_of(some);
    // Ranked from kMinPositionsToRank positions with enough games.
    EXPECT_EQ(l.best.size() + l.worst.size(), n < 3 ? 0 : std::min<size_t>(n, 2 * kLeadersShown)) << n;
    for (const LeaderEntry& b : l.best)
      for (const LeaderEntry& w : l.worst) EXPECT_NE(b.start_position, w.start_position) << n;
    if (n >= 3) {
      EXPECT_GT(l.best.front().score, l.worst.front().score);
      EXPECT_EQ(l.best.front().start_position, int(10 * (n - 1)));  // the most wins
      EXPECT_EQ(l.best.front().rank_lo, 1);
    }
  }
}

// Issue 20: "best: #0 BBQNNRKR 1.00 (n=2)" was a ranking of luck. Positions are listed only from
// kMinGamesToRank games, by the shrunk score, with the interval of their rank.
TEST(WatchFormat, LeadersAreRankedByTheShrunkScoreFromEnoughGames) {
  std::vector<v1::ResultChunk> early = {position(0, 2, 0, 0), position(2, 1, 1, 0), position(4, 0, 1, 1)};
  Leaders l = leaders_of(early);
  EXPECT_FALSE(l.any());
  EXPECT_EQ(leaders_line(l), "not ranked yet: 20 games a position (most so far: 2)");
  // A 1.000 from 6 games stays off the list; the others are pulled toward their mean.
  std::vector<v1::ResultChunk> later = {position(0, 6, 0, 0), position(2, 30, 10, 0), position(4, 20, 10, 10),
                                        position(6, 10, 10, 20), position(8, 15, 10, 15)};
  l = leaders_of(later);
  ASSERT_EQ(l.best.size(), 2u);
  ASSERT_EQ(l.worst.size(), 2u);
  EXPECT_EQ(l.best[0].start_position, 2);
  EXPECT_LT(l.best[0].score, 0.875);  // its raw score
  EXPECT_EQ(l.worst[0].start_position, 6);
  EXPECT_GT(l.worst[0].score, 0.375);
  for (const LeaderEntry& e : l.best) EXPECT_NE(e.start_position, 0);
  const std::string line = leaders_line(l);
  EXPECT_TRUE(absl::StartsWith(
      line, absl::StrFormat("best: #2 BQNNRBKR %.2f (rank 1-%d, n=40), #", l.best[0].score, l.best[0].rank_hi)))
      << line;
  EXPECT_TRUE(absl::StrContains(line, "; worst: #6 ")) << line;
  EXPECT_EQ(leaders_line(leaders_of({})), "no games yet");
  EXPECT_EQ(leader_text({518, "518", 0.6125, 3, 17, 40}), "#518 RNBQKBNR 0.61 (rank 3-17, n=40)");
  EXPECT_EQ(leader_text({-1, "7", 0.5, 0, 0, 25}), "#7 0.50 (n=25)");
}

TEST(WatchFormat, RedrawGoesBackToTheTopOfTheBlock) {
  EXPECT_EQ(redraw_block(0, {"a", "b", "c"}), "\ra\x1b[K\nb\x1b[K\nc\x1b[K");
  EXPECT_EQ(redraw_block(3, {"a", "b", "c"}), "\r\x1b[2Aa\x1b[K\nb\x1b[K\nc\x1b[K");
  // Plain lines have no control characters at all.
  WatchView v;
  v.connection = "reconnecting to h:1... (since 3 s)";
  for (const std::string& line :
       {watch_plain_line(perft_job(), v, kT0), watch_plain_line(selfplay_job(), WatchView(), kT0)})
    for (char c : line) EXPECT_TRUE(c >= ' ' || c == '\n') << line;
}

// Issue 36: a plain watch line (a log) with a waiting job's notice was 330 columns, which a
// terminal breaks mid-word. Now lines of at most 80 columns, fields and words whole, the notice
// on lines of its own.
TEST(WatchFormat, PlainLinesFit80ColumnsAtTheirWords) {
  v1::Job waiting = perft_job();
  std::string notice = "waiting: results are checked by a second worker with a credential of its own";
  for (int i = 0; i < 3; ++i) notice += "; and another reason that makes the notice long, " + std::to_string(i);
  waiting.set_notice(notice);
  const std::string text = watch_plain_line(waiting, WatchView(), kT0);
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  ASSERT_GE(lines.size(), 4u) << text;
  for (const std::string& l : lines) EXPECT_LE(l.size(), 80u) << text;
  EXPECT_TRUE(absl::StartsWith(lines[0], "job-000123")) << text;
  EXPECT_TRUE(absl::StrContains(text, "24,123,456,789,012,345,000 nodes")) << "a field is never broken: " << text;
  // The notice's words, in order, none broken: joined again they are the notice.
  std::string joined;
  bool in_notice = false;
  for (const std::string& l : lines) {
    const absl::string_view t = absl::StripLeadingAsciiWhitespace(l);
    in_notice = in_notice || absl::StartsWith(t, "waiting:");
    if (in_notice) absl::StrAppend(&joined, joined.empty() ? "" : " ", t);
  }
  EXPECT_EQ(joined, notice) << text;
  EXPECT_EQ(text.back() == '\n', false);
}

TEST(StatusFormat, TableHasAHeaderAndAlignedColumns) {
  v1::Job done = selfplay_job();
  done.set_id("job-7");
  done.set_state(v1::JOB_STATE_SUCCEEDED);
  done.mutable_progress()->set_units_done(9600);
  done.mutable_progress()->set_games_done(38400);
  done.set_finished_unix_ms(kT0 + 5 * 60'000 + 12'000);
  const std::string table = status_table({perft_job(), done}, kT0 + 3 * 86'400'000LL + 7'000);
  const std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << table;
  EXPECT_EQ(lines[0], "ID          KIND      STATE        DONE        UNITS     AGE  DURATION") << table;
  EXPECT_EQ(lines[1], "job-000123  perft d7  RUNNING     42.3%  40600/96000  3d 00h         -") << table;
  EXPECT_EQ(lines[2], "job-7       selfplay  SUCCEEDED  100.0%    9600/9600  3d 00h   0:05:12") << table;
  // A running job that waits says why under the table; a finished one's notice is old news.
  v1::Job waiting = perft_job();
  waiting.set_notice("waiting: results are checked by a second worker with a credential of its own");
  done.set_notice("stale");
  const std::vector<std::string> noted = absl::StrSplit(status_table({waiting, done}, kT0), '\n', absl::SkipEmpty());
  ASSERT_EQ(noted.size(), 4u);
  EXPECT_EQ(noted[3], "job-000123: waiting: results are checked by a second worker with a credential of its own");
}

TEST(StatusFormat, JsonHasStableKeysAndTypes) {
  const std::string running = job_json(perft_job(), kT0 + 1'500);
  EXPECT_TRUE(absl::StartsWith(running,
                               "{\"id\": \"job-000123\", \"kind\": \"perft\", \"depth\": 7, "
                               "\"state\": \"RUNNING\", \"fraction_done\": 0.422917, "
                               "\"units_done\": 40600, \"units_total\": 96000, "
                               "\"nodes_done\": \"24123456789012345000\""))
      << running;
  EXPECT_TRUE(absl::StrContains(running, "\"eta_seconds\": 12307.0")) << running;
  EXPECT_TRUE(absl::StrContains(running, "\"created\": \"2026-09-21T14:13:20.000Z\", \"finished\": null")) << running;
  EXPECT_TRUE(absl::StrContains(running, "\"age_seconds\": 1.500, \"duration_seconds\": null")) << running;
  v1::Job sp = selfplay_job();
  sp.set_state(v1::JOB_STATE_CANCELLED);
  sp.set_finished_unix_ms(kT0 + 2'000);
  sp.set_notice("say \"no\"\n");
  const std::string cancelled = job_json(sp, kT0 + 3'000);
  EXPECT_TRUE(absl::StrContains(cancelled, "\"kind\": \"selfplay\", \"depth\": null")) << cancelled;
  EXPECT_TRUE(absl::StrContains(cancelled, "\"eta_seconds\": null")) << cancelled;
  EXPECT_TRUE(absl::StrContains(cancelled, "\"duration_seconds\": 2.000")) << cancelled;
  EXPECT_TRUE(absl::StrContains(cancelled, "\"notice\": \"say \\\"no\\\"\\n\"")) << cancelled;
  // The same keys, in the same order, whatever the job.
  auto keys = [](const std::string& json) {
    std::vector<std::string> k;
    for (absl::string_view part : absl::StrSplit(json, ", \""))
      k.push_back(std::string(part.substr(0, part.find('"'))));
    return k;
  };
  EXPECT_EQ(keys(running), keys(cancelled));
  EXPECT_EQ(jobs_json({}, kT0), "[]\n");
  EXPECT_EQ(jobs_json({perft_job(), sp}, kT0 + 3'000),
            "[\n  " + job_json(perft_job(), kT0 + 3'000) + ",\n  " + cancelled + "\n]\n");
}

TEST(StatusFormat, DescriptionKeepsWhatScriptsParse) {
  const std::string d = job_description(perft_job(), kT0 + 61'000);
  EXPECT_TRUE(absl::StartsWith(d, "job job-000123 RUNNING\n")) << d;
  EXPECT_TRUE(absl::StrContains(d, " 40600/96000 units")) << d;
  EXPECT_TRUE(absl::StrContains(d, "submitted 2026-09-21T14:13:20.000Z (0:01:01 ago)")) << d;
}

// Issue 21: `c960 status JOB`'s progress was one line of about 150 columns, and a finished job's
// times another of about 100. At 80 columns every line fits, the progress breaks only between
// its fields (so "DONE/TOTAL units" stays whole), and no word is lost or split.
TEST(StatusFormat, DescriptionFitsTheWidth) {
  v1::Job running = perft_job();
  running.set_request_id("nightly-2026-09-21");
  running.set_result_mismatches(2);
  running.set_mismatch_detail("unit 17 (sp 518, e2e4): workers:3 counted 1,234,567,890, workers:5 1,234,567,891");
  running.set_notice("waiting for a second worker: every unit is verified by another worker (--verify always)");
  v1::Job finished = perft_job();
  finished.set_state(v1::JOB_STATE_SUCCEEDED);
  finished.set_finished_unix_ms(kT0 + 5 * 3600'000);
  finished.mutable_spec()->mutable_perft()->set_start_positions("0-9,12,15,17,100-120,200,300,400,500-510,518,959");
  finished.set_unit_failures(1);
  finished.set_failure_detail("a worker's engine did not start: /usr/games/stockfish: No such file or directory");
  const auto words = [](const std::string& t) {
    return std::vector<std::string>(absl::StrSplit(t, absl::ByAnyChar(" \n"), absl::SkipEmpty()));
  };
  for (const v1::Job& j : {running, finished, selfplay_job()}) {
    const std::string wide = job_description(j, kT0 + 61'000, 1000), narrow = job_description(j, kT0 + 61'000, 80);
    size_t widest = 0;
    for (absl::string_view l : absl::StrSplit(wide, '\n')) widest = std::max(widest, l.size());
    EXPECT_GT(widest, 80u) << wide;  // else there would be nothing to fit
    for (absl::string_view l : absl::StrSplit(narrow, '\n')) EXPECT_LE(l.size(), 80u) << l << "\n" << narrow;
    EXPECT_EQ(words(narrow), words(wide)) << narrow;
    EXPECT_TRUE(absl::StartsWith(narrow, absl::StrCat("job ", j.id(), " "))) << narrow;
    bool units = false;
    for (absl::string_view l : absl::StrSplit(narrow, '\n'))
      units |=
          absl::StrContains(l, absl::StrCat(" ", j.progress().units_done(), "/", j.progress().units_total(), " units"));
    EXPECT_TRUE(units) << narrow;
  }
  const std::string d = job_description(finished, kT0 + 61'000, 80);
  EXPECT_TRUE(absl::StrContains(d, "\n  finished 2026-09-21T19:13:20.000Z (took 5:00:00)\n")) << d;
  EXPECT_TRUE(absl::StrContains(d,
                                "\n  unit failures: 1; last: a worker's engine did not start: /usr/games/stockfish:\n"
                                "    No such file or directory\n"))
      << d;
}

// Issue 36: `c960 workers` was 126 columns on an 80-column terminal, broken mid-word. At a width,
// WHY, ENGINES, VERSION (and OWNER) leave the row for wrapped lines under it; without one (a
// pipe), one row a worker as before.
TEST(WorkersTable, FitsTheTerminalByMovingColumnsUnderTheRow) {
  v1::ListWorkersResponse resp;
  v1::WorkerInfo* w = resp.add_workers();
  w->set_name("worker-1/host-a");
  w->set_owner("fleet");
  w->set_version("0.1.0+g1234567");
  w->add_engines("builtin");
  w->add_engines("/usr/games/stockfish");
  w->set_threads(16);
  w->set_units_done(1234);
  w->set_units_per_second(2.5);
  w->set_alive(true);
  w->set_trust(v1::TRUST_STATE_QUARANTINED);
  w->set_trust_reason("outvoted on unit 77 of job-12: its count differed from two other workers' counts");
  const std::string wide = workers_table(resp, 0);
  EXPECT_EQ(std::count(wide.begin(), wide.end(), '\n'), 2) << wide;
  EXPECT_GT(wide.find('\n', wide.find('\n') + 1) - wide.find('\n'), 81u) << wide;
  const std::string narrow = workers_table(resp, 80);
  for (absl::string_view l : absl::StrSplit(narrow, '\n')) EXPECT_LE(l.size(), 80u) << narrow;
  EXPECT_TRUE(absl::StrContains(narrow, "    why: outvoted on unit 77")) << narrow;
  EXPECT_TRUE(absl::StrContains(narrow, "    engines: builtin,/usr/games/stockfish")) << narrow;
  const std::string header = narrow.substr(0, narrow.find('\n'));
  EXPECT_FALSE(absl::StrContains(header, "WHY")) << narrow;
  EXPECT_FALSE(absl::StrContains(header, "ENGINES")) << narrow;
  EXPECT_TRUE(absl::StrContains(header, "NAME")) << narrow;
  EXPECT_TRUE(absl::StrContains(header, "TRUST")) << narrow;
}

}  // namespace
}  // namespace c960::cli
