#include "core/suite.h"

#include "gtest/gtest.h"

namespace c960 {
namespace {

TEST(Suite, ParsesEpdLines) {
  absl::StatusOr<std::vector<PerftCase>> c =
      parse_perft_suite("# comment\n\n4k3/8/8/8/8/8/8/4K3 w - - 0 1 ;D1 5 ;D2 25\n");
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ((*c)[0].fen, "4k3/8/8/8/8/8/8/4K3 w - - 0 1");
  EXPECT_EQ((*c)[0].line, 3);
  EXPECT_EQ((*c)[0].expected, (std::vector<std::pair<int, uint64_t>>{{1, 5}, {2, 25}}));
}

TEST(Suite, ParsesBlocks) {
  absl::StatusOr<std::vector<PerftCase>> c = parse_perft_suite(
      "id a\nepd 4k3/8/8/8/8/8/8/4K3 w - -\nperft 1 5\nperft 2 25\n\nepd 8/8/8/8/8/8/8/K6k w - -\nperft 1 3\n");
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[0].id, "a");
  EXPECT_EQ((*c)[0].expected.size(), 2u);
  EXPECT_EQ((*c)[1].id, "line 6");
}

TEST(Suite, ErrorsNameTheLine) {
  for (const char* bad : {"perft 1 5\n", "4k3/8/8/8/8/8/8/4K3 w - - ;D1\n", "x\n", "4k3/8/8/8/8/8/8/4K3 w - - ;D0 1\n",
                          "4k3/8/8/8/8/8/8/4K3 w - - ;D1 -5\n", "epd 4k3/8/8/8/8/8/8/4K3 w - -\nperft x 1\n",
                          "4k3/8/8/8/8/8/8/4K3 w - - ;D1 99999999999999999999999\n"}) {
    absl::StatusOr<std::vector<PerftCase>> c = parse_perft_suite(bad);
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(std::string(c.status().message()).find("line "), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace c960
