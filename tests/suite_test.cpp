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

// Issue 21: one malformed line cost the whole suite; now it is one bad entry, named by its line,
// and the entries around it are read as before.
TEST(Suite, AMalformedLineIsOneBadEntry) {
  const std::vector<PerftCase> c = parse_perft_suite_entries(
      "4k3/8/8/8/8/8/8/4K3 w - - ;D1 5\n"
      "4k3/8/8/8/8/8/8/4K3 w - - ;D1 five\n"
      "4k3/8/8/8/8/8/8/4K3 w - -\n"
      "perft 1 5\n"
      "id b\nepd 4k3/8/8/8/8/8/8/4K3 w - -\nperft 1 5\nperft x 1\n"
      "8/8/8/8/8/8/8/K6k w - - ;D1 3\n");
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(c[0].error, "");
  EXPECT_EQ(c[0].expected.size(), 1u);
  EXPECT_EQ(c[1].line, 2);
  EXPECT_NE(c[1].error.find("line 2: 'D1 five' is not a depth"), std::string::npos) << c[1].error;
  EXPECT_NE(c[2].error.find("line 3: no ';D<depth> <nodes>'"), std::string::npos) << c[2].error;
  EXPECT_NE(c[3].error.find("line 4: 'perft' before any 'epd' line"), std::string::npos) << c[3].error;
  EXPECT_EQ(c[4].id, "b");
  EXPECT_NE(c[4].error.find("line 8: 'x 1'"), std::string::npos) << c[4].error;
  EXPECT_EQ(c[5].error, "");
  EXPECT_EQ(c[5].line, 9);
  // The strict form still refuses the suite, naming the first bad line.
  absl::StatusOr<std::vector<PerftCase>> strict = parse_perft_suite("4k3/8/8/8/8/8/8/4K3 w - - ;D1 5\nx\n");
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(std::string(strict.status().message()).find("line 2"), std::string::npos) << strict.status();
}

}  // namespace
}  // namespace c960
