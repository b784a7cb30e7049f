// HOST:PORT flags (cluster/address.h): what each kind of flag takes, and the words of a refusal.
#include "cluster/address.h"

#include <string>

#include "gtest/gtest.h"

namespace c960::cluster {
namespace {

constexpr AddressRule kListen = {.port_zero = true, .default_port = true, .unix_socket = true};
constexpr AddressRule kHttpListen = {.port_zero = true};
constexpr AddressRule kCoordinator = {.default_port = true, .unix_socket = true};

std::string ok(absl::string_view value, AddressRule rule) {
  absl::StatusOr<std::string> a = check_address("--flag", value, rule);
  EXPECT_TRUE(a.ok()) << value << ": " << a.status();
  return a.ok() ? *a : "";
}

// The refusal's message, which must name the flag and the value.
std::string refused(absl::string_view value, AddressRule rule) {
  absl::StatusOr<std::string> a = check_address("--flag", value, rule);
  EXPECT_FALSE(a.ok()) << value << " taken as " << (a.ok() ? *a : "");
  if (a.ok()) return "";
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string m(a.status().message());
  EXPECT_EQ(m.rfind("--flag: ", 0), 0u) << m;
  if (!value.empty()) {
    EXPECT_NE(m.find(std::string(value)), std::string::npos) << m;
  }
  return m;
}

TEST(Address, GoodAddressesNormalized) {
  EXPECT_EQ(ok("127.0.0.1:7960", kCoordinator), "127.0.0.1:7960");
  EXPECT_EQ(ok("localhost:1", kCoordinator), "localhost:1");
  EXPECT_EQ(ok("h:65535", kCoordinator), "h:65535");
  EXPECT_EQ(ok("h:08080", kCoordinator), "h:8080");
  EXPECT_EQ(ok("[::1]:80", kCoordinator), "[::1]:80");
  EXPECT_EQ(ok("0.0.0.0:0", kListen), "0.0.0.0:0");
  EXPECT_EQ(ok("127.0.0.1:0", kHttpListen), "127.0.0.1:0");
  EXPECT_EQ(ok("unix:/tmp/s", kListen), "unix:/tmp/s");
}

TEST(Address, DefaultPortWhereTheFlagHasOne) {
  EXPECT_EQ(ok("127.0.0.1", kCoordinator), "127.0.0.1:7960");
  EXPECT_EQ(ok("localhost", kListen), "localhost:7960");
  EXPECT_EQ(ok("[::1]", kCoordinator), "[::1]:7960");
  const std::string m = refused("127.0.0.1", kHttpListen);
  EXPECT_NE(m.find("has no port"), std::string::npos) << m;
}

TEST(Address, BadPortsNameTheRange) {
  for (const char* v : {"127.0.0.1:99999", "127.0.0.1:65536", "127.0.0.1:123456789012345678901234567890"}) {
    const std::string m = refused(v, kListen);
    EXPECT_NE(m.find("not in 1..65535 (or 0, which picks a free port)"), std::string::npos) << m;
  }
  for (const char* v : {"127.0.0.1:abc", "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:80x"}) {
    const std::string m = refused(v, kCoordinator);
    EXPECT_NE(m.find("not a number; give a port in 1..65535"), std::string::npos) << m;
  }
  std::string m = refused("127.0.0.1:", kCoordinator);
  EXPECT_NE(m.find("no port after the ':'"), std::string::npos) << m;
  // Port 0 (pick a free port) only where the flag listens.
  m = refused("127.0.0.1:0", kCoordinator);
  EXPECT_NE(m.find("port 0, not in 1..65535"), std::string::npos) << m;
  EXPECT_EQ(m.find("free port"), std::string::npos) << m;
  m = refused("127.0.0.1:00", kCoordinator);
  EXPECT_NE(m.find("port 0, not in 1..65535"), std::string::npos) << m;
}

TEST(Address, SchemesHostsAndShapes) {
  for (const char* v : {"http://127.0.0.1:7960", "https://h:443", "grpc://h:1", "dns:///h:1"}) {
    const std::string m = refused(v, kCoordinator);
    EXPECT_NE(m.find("give HOST:PORT without a scheme"), std::string::npos) << m;
  }
  EXPECT_NE(refused(":7960", kListen).find("names no host"), std::string::npos);
  EXPECT_NE(refused("::1", kCoordinator).find("IPv6 address goes in brackets"), std::string::npos);
  EXPECT_NE(refused("[::1", kCoordinator).find("without its ']'"), std::string::npos);
  EXPECT_NE(refused("[::1]x", kCoordinator).find("after its ']'"), std::string::npos);
  EXPECT_NE(refused("[]:1", kCoordinator).find("no IPv6 address"), std::string::npos);
  EXPECT_NE(refused("h :1", kCoordinator).find("a space"), std::string::npos);
  EXPECT_NE(refused("unix:/tmp/s", kHttpListen).find("is not HOST:PORT"), std::string::npos);
  const absl::StatusOr<std::string> empty = check_address("--flag", "", kCoordinator);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().message(), "--flag: empty; give HOST:PORT");
}

TEST(Address, SplitHostPort) {
  ASSERT_TRUE(split_host_port("h:1"));
  EXPECT_EQ(split_host_port("h:1")->host, "h");
  EXPECT_EQ(split_host_port("[::1]:2")->host, "::1");
  EXPECT_EQ(split_host_port("[::1]:2")->port, "2");
  EXPECT_FALSE(split_host_port("h"));
  EXPECT_FALSE(split_host_port("unix:/tmp/s"));
}

}  // namespace
}  // namespace c960::cluster
