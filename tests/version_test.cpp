// c960::version(): the CMake project version, then the git revision as build metadata.
#include "core/version.h"

#include <gtest/gtest.h>
#include <regex>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "cli/commands.h"
#include "core/bitboard.h"

namespace {

TEST(Version, ProjectVersionPlusRevision) {
  const std::string v(c960::version());
  EXPECT_TRUE(std::regex_match(v, std::regex(R"(\d+\.\d+\.\d+\+(g[0-9a-f]{12}(\.dirty)?|unknown))"))) << v;
  EXPECT_EQ(v.substr(0, v.find('+')), C960_PROJECT_VERSION);
}

// c960 --version prints the version alone; c960 version also the slider method in use.
TEST(Version, TheToolPrintsIt) {
  for (const std::string arg : {"--version", "version"}) {
    std::ostringstream out, err;
    const c960::cli::Io io{out, err};
    EXPECT_EQ(c960::cli::run({arg}, io), c960::cli::kExitOk);
    std::string want = "c960 " + std::string(c960::version()) + "\n";
    if (arg == "version") want += std::string("sliders: ") + c960::to_string(c960::sliders()) + "\n";
    EXPECT_EQ(out.str(), want);
    EXPECT_EQ(err.str(), "");
  }
}

}  // namespace
