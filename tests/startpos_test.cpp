#include "core/startpos.h"

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

TEST(Startpos, KnownNumbers) {
  EXPECT_EQ(*backrank_of(0), "BBQNNRKR");
  EXPECT_EQ(*backrank_of(518), "RNBQKBNR");
  EXPECT_EQ(*backrank_of(601), "RQNBBKRN");
  EXPECT_EQ(*backrank_of(959), "RKRNNQBB");
  EXPECT_EQ(*startpos_fen(518), "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1");
  EXPECT_EQ(*startpos_fen(518, true), "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAha - 0 1");
}

TEST(Startpos, AgreesWithTheReferenceTable) {
  const std::vector<test::StartposRow> rows = test::startpos_table();
  ASSERT_EQ(rows.size(), 960u);
  for (const test::StartposRow& r : rows) {
    EXPECT_EQ(*backrank_of(r.sp), r.backrank);
    EXPECT_EQ(*startpos_fen(r.sp, true), r.fen);
  }
}

// The shipped list of the 960 (data/chess960-positions.csv) is what the generator makes, byte for
// byte (regenerate it with `c960 startpos --all > data/chess960-positions.csv`), and agrees with
// the independent reference table (backrank and Shredder-FEN of tests/data's perft table).
TEST(Startpos, ShippedListIsTheGeneratorsAndTheReferences) {
  std::ifstream in(std::string(c960::test::data_dir()) + "/../../data/chess960-positions.csv", std::ios::binary);
  ASSERT_TRUE(in) << "data/chess960-positions.csv is missing";
  const std::string shipped((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(shipped, startpos_list_csv());
  std::vector<std::string> lines;
  std::stringstream ls(shipped);
  for (std::string line; std::getline(ls, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 961u);
  EXPECT_EQ(lines[0], "sp,backrank,xfen,shredder_fen");
  const std::vector<test::StartposRow> reference = test::startpos_table();
  ASSERT_EQ(reference.size(), 960u);
  for (const test::StartposRow& r : reference) {
    std::vector<std::string> f;
    std::stringstream fs(lines[size_t(r.sp) + 1]);
    for (std::string cell; std::getline(fs, cell, ',');) f.push_back(cell);
    ASSERT_EQ(f.size(), 4u) << lines[size_t(r.sp) + 1];
    EXPECT_EQ(f[0], std::to_string(r.sp));
    EXPECT_EQ(f[1], r.backrank);
    EXPECT_EQ(f[3], r.fen);
    EXPECT_EQ(*number_of_fen(f[2]), r.sp);
  }
}

TEST(Startpos, AllNumbersRoundTrip) {
  std::set<std::string> seen;
  for (int n = 0; n < kStartPositions; ++n) {
    const std::string rank = *backrank_of(n);
    seen.insert(rank);
    EXPECT_EQ(*number_of_backrank(rank), n);
    EXPECT_EQ(*number_of_fen(*startpos_fen(n)), n);
    EXPECT_EQ(*number_of_fen(*startpos_fen(n, true)), n);
  }
  EXPECT_EQ(seen.size(), 960u);
}

TEST(Startpos, BadNumbersAndBackRanksNameTheRule) {
  EXPECT_FALSE(backrank_of(-1).ok());
  EXPECT_FALSE(backrank_of(960).ok());
  const auto msg = [](const char* rank) { return std::string(number_of_backrank(rank).status().message()); };
  EXPECT_NE(msg("RNBQKBN").find("7 pieces"), std::string::npos);
  EXPECT_NE(msg("RNBQKBNX").find("only K, Q, R, B, N"), std::string::npos);
  EXPECT_NE(msg("RNBQKQNR").find("exactly one K"), std::string::npos);
  EXPECT_NE(msg("RNBQBKNR").find("one colour"), std::string::npos);
  EXPECT_NE(msg("RRBQKBNN").find("between the rooks"), std::string::npos);
  EXPECT_EQ(*number_of_backrank("rnbqkbnr"), 518);  // case does not matter
}

TEST(Startpos, FenThatIsNotAStartIsRejected) {
  EXPECT_FALSE(number_of_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1").ok());
  EXPECT_FALSE(number_of_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w Kkq - 0 1").ok());
  EXPECT_FALSE(number_of_fen("not a fen").ok());
}

TEST(Startpos, RandomIsReproducibleAndCoversAll) {
  EXPECT_EQ(random_startpos(7), random_startpos(7));
  std::set<int> seen;
  for (uint64_t s = 1; s <= 20000; ++s) {
    const int n = random_startpos(s);
    ASSERT_GE(n, 0);
    ASSERT_LT(n, 960);
    seen.insert(n);
  }
  EXPECT_EQ(seen.size(), 960u);  // P(miss) < 1e-5 at 20000 draws
}

TEST(Startpos, Ranges) {
  EXPECT_EQ(*parse_sp_ranges("0-3,518,2"), (std::vector<int>{0, 1, 2, 3, 518}));
  EXPECT_EQ(parse_sp_ranges("0-959")->size(), 960u);
  EXPECT_EQ(*parse_sp_ranges(" 5 , 7-7 "), (std::vector<int>{5, 7}));
  for (const char* bad : {"", "960", "-1", "5-", "9-3", "a", "1,,2", "0-1000", "1.5"})
    EXPECT_FALSE(parse_sp_ranges(bad).ok()) << bad;
}

}  // namespace
}  // namespace c960
