// c960::version(): the CMake project version, then the git revision as build metadata.
#include "core/version.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

namespace {

TEST(Version, ProjectVersionPlusRevision) {
  const std::string v(c960::version());
  EXPECT_TRUE(std::regex_match(v, std::regex(R"(\d+\.\d+\.\d+\+(g[0-9a-f]{12}(\.dirty)?|unknown))"))) << v;
  EXPECT_EQ(v.substr(0, v.find('+')), C960_PROJECT_VERSION);
}

}  // namespace
