// The state file of a local self-play run (cli/resume.h): the options that decide its games and
// outputs, its date, and each finished game, so that `c960 selfplay --resume` plays only the rest.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/resume.h"
#include "selfplay/local_runner.h"
#include "selfplay/spec.h"

namespace c960::cli {

inline constexpr char kSelfPlayResumeKind[] = "selfplay";

// The options of a run as the state file keeps them, named as on the command line (the start
// positions under "positions"). Not the date: a resumed run takes the interrupted run's.
std::vector<ResumeOption> selfplay_resume_options(const selfplay::SelfPlaySpec& spec, const std::string& format,
                                                  const std::string& out, const std::string& pgn);

// The records: ("date", DATE) and one ("game", position index, game index, result, termination,
// opening plies, UCI moves, White, Black, detail, PGN) per game.
std::vector<std::string> date_record(const selfplay::SelfPlaySpec& spec);
std::vector<std::string> game_record(const selfplay::PlayedGame& game);
// A game record read back, checked against the spec (selfplay::check_game) and given its PGN as
// written. INVALID_ARGUMENT naming the problem.
absl::StatusOr<selfplay::PlayedGame> game_from_record(const selfplay::SelfPlaySpec& spec,
                                                      const std::vector<std::string>& fields);

}  // namespace c960::cli
