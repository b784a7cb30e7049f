// Roles, tokens, the tokens file, the permission table and the call authenticator's decisions
// (cluster/auth.h, cluster/server.h), listen address classes, and the client's security options
// (cluster/channel.h); no sockets.
#include <filesystem>
#include <fstream>
#include <google/protobuf/descriptor.h>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/auth.h"
#include "cluster/channel.h"
#include "cluster/server.h"
#include "gtest/gtest.h"

namespace c960::cluster {
namespace {

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (absl::StrContains(text, part)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' lacks '" << part << "'";
}

constexpr Role kRoles[] = {Role::kAdmin, Role::kSubmit, Role::kRead, Role::kWorker, Role::kEnroll};

std::string line_for(Role r, const std::string& name, const std::string& token) {
  return absl::StrCat(role_name(r), " ", name, " ", token_hash(token), "\n");
}

// The error message of parsing `text`, or "" if it parsed.
std::string parse_error(const std::string& text) {
  absl::StatusOr<TokenSet> s = TokenSet::parse(text, "tokens.txt");
  return s.ok() ? "" : std::string(s.status().message());
}

TEST(Roles, NamesParseAndPrint) {
  for (Role r : kRoles) EXPECT_EQ(parse_role(role_name(r)), r);
  EXPECT_EQ(role_name(Role::kSubmit), "submit");
  EXPECT_EQ(parse_role("Admin"), std::nullopt);
  EXPECT_EQ(parse_role(""), std::nullopt);
  EXPECT_EQ(parse_role("root"), std::nullopt);
}

TEST(Names, CharactersAndLength) {
  EXPECT_TRUE(valid_caller_name("worker-1.a_B"));
  EXPECT_TRUE(valid_caller_name(std::string(64, 'x')));
  EXPECT_FALSE(valid_caller_name(std::string(65, 'x')));
  EXPECT_FALSE(valid_caller_name(""));
  EXPECT_FALSE(valid_caller_name("a b"));
  EXPECT_FALSE(valid_caller_name("a/b"));
  EXPECT_FALSE(valid_caller_name("caf\xc3\xa9"));
}

TEST(Tokens, NewTokensAreRandomPrefixedAndUrlSafe) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<std::string> t = new_token();
    ASSERT_TRUE(t.ok());
    EXPECT_TRUE(absl::StartsWith(*t, "c960_")) << *t;
    EXPECT_EQ(t->size(), 5 + 43) << *t;  // 32 bytes in unpadded base64
    for (char c : t->substr(5)) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') << *t;
    EXPECT_TRUE(valid_token_text(*t));
    EXPECT_TRUE(seen.insert(*t).second) << "a token came twice";
  }
}

TEST(Tokens, HashIsSha256InHex) {
  // sha256("abc"), FIPS 180-2 appendix B.1.
  EXPECT_EQ(token_hash("abc"), "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(token_hash("abc"), token_hash("abd"));
}

TEST(Tokens, TokenText) {
  EXPECT_FALSE(valid_token_text(""));
  EXPECT_FALSE(valid_token_text("a b"));
  EXPECT_FALSE(valid_token_text("a\nb"));
  EXPECT_FALSE(valid_token_text(std::string(4097, 'a')));
  EXPECT_TRUE(valid_token_text("c960_abc-_"));
}

TEST(TokensFile, ParsesLinesCommentsAndBlanks) {
  const std::string text =
      absl::StrCat("# the cluster's tokens\n\n", line_for(Role::kAdmin, "boss", "t1"), "  ", role_name(Role::kWorker),
                   "\tw1  ", token_hash("t2"), "   # a worker\r\n", line_for(Role::kRead, "viewer", "t3"));
  absl::StatusOr<TokenSet> set = TokenSet::parse(text, "f");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->size(), 3u);
  ASSERT_NE(set->find("t2"), nullptr);
  EXPECT_EQ(set->find("t2")->name, "w1");
  EXPECT_EQ(set->find("t2")->role, Role::kWorker);
  EXPECT_EQ(set->find("t1")->role, Role::kAdmin);
  EXPECT_EQ(set->find("t4"), nullptr);
  EXPECT_EQ(set->find(token_hash("t1")), nullptr) << "the hash itself is no token";
  EXPECT_TRUE(TokenSet::parse("", "f").ok());
}

TEST(TokensFile, EveryErrorNamesFileLineAndProblem) {
  const std::string ok = line_for(Role::kAdmin, "boss", "t1");
  EXPECT_TRUE(contains(parse_error(ok + "boss " + token_hash("t2") + "\n"), "tokens.txt:2: expected 'ROLE NAME HASH'"));
  EXPECT_TRUE(contains(parse_error(ok + "admin x " + token_hash("t2") + " extra\n"), "tokens.txt:2: expected"));
  EXPECT_TRUE(contains(parse_error("\n\nroot x " + token_hash("t") + "\n"), "tokens.txt:3: unknown role 'root'"));
  EXPECT_TRUE(contains(parse_error("read a/b " + token_hash("t") + "\n"), "tokens.txt:1: bad name 'a/b'"));
  EXPECT_TRUE(
      contains(parse_error("read " + std::string(65, 'n') + " " + token_hash("t") + "\n"), "tokens.txt:1: bad name"));
  EXPECT_TRUE(contains(parse_error("read a sha256:abc\n"), "tokens.txt:1: bad hash 'sha256:abc'"));
  EXPECT_TRUE(contains(parse_error("read a md5:" + std::string(64, '0') + "\n"), "bad hash"));
  EXPECT_TRUE(contains(parse_error("read a sha256:" + std::string(64, 'g') + "\n"), "bad hash"));
  EXPECT_TRUE(contains(parse_error("read a c960_plaintexttoken\n"), "bad hash"));
  EXPECT_TRUE(contains(parse_error(ok + line_for(Role::kRead, "boss", "t2")),
                       "tokens.txt:2: duplicate name 'boss' (also on line 1)"));
  EXPECT_TRUE(contains(parse_error(ok + "\n" + line_for(Role::kRead, "other", "t1")),
                       "tokens.txt:3: duplicate hash (also on line 1)"));
  // Upper-case hex is the same hash.
  std::string upper = token_hash("t1");
  for (char& c : upper.replace(0, 7, "")) c = char(std::toupper(static_cast<unsigned char>(c)));
  EXPECT_TRUE(contains(parse_error(ok + "read other sha256:" + upper + "\n"), "duplicate hash"));
}

// A join token's line carries its bound; the callers it makes carry it too.
TEST(TokensFile, AJoinTokenCarriesItsUses) {
  absl::StatusOr<TokenSet> set = TokenSet::parse("enroll fleet " + token_hash("j") + " uses=20\n", "tokens.txt");
  ASSERT_TRUE(set.ok()) << set.status();
  const TokenEntry* e = set->find("j");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->role, Role::kEnroll);
  EXPECT_EQ(e->uses, 20);
  EXPECT_TRUE(contains(parse_error("enroll fleet " + token_hash("j") + "\n"),
                       "tokens.txt:1: expected 'enroll NAME HASH uses=N [owner=OWNER]'"));
  for (const char* bad : {"uses=0", "uses=-1", "uses=x", "use=3", "uses=100001"})
    EXPECT_TRUE(contains(parse_error("enroll fleet " + token_hash("j") + " " + bad + "\n"), "expected uses=N")) << bad;
  // Issued credentials are found beside the file's, and survive a reload of it.
  TokenTable table(std::move(*set));
  table.add_issued(token_hash("issued"), "fleet:1", "");
  ASSERT_TRUE(table.find("issued").has_value());
  EXPECT_EQ(table.find("issued")->identity, "fleet:1");
  EXPECT_EQ(table.find("issued")->role, Role::kWorker);
  table.replace(*TokenSet::parse("", "tokens.txt"));
  EXPECT_TRUE(table.find("issued").has_value());
  EXPECT_FALSE(table.find("j").has_value());
}

// Worker and join tokens name their owner; credentials a join token was traded for inherit it,
// and a credential without one is its own owner (one voter each, as before owners).
TEST(TokensFile, OwnersAreNamedAndInherited) {
  const std::string text = "worker ops-1 " + token_hash("w1") + " owner=ops\n" + "worker ops-2 " + token_hash("w2") +
                           " owner=ops\n" + "worker solo " + token_hash("w3") + "\n" + "enroll alice-join " +
                           token_hash("j") + " uses=4 owner=alice\n" + "enroll bob-join " + token_hash("k") +
                           " uses=4\n";
  absl::StatusOr<TokenSet> set = TokenSet::parse(text, "tokens.txt");
  ASSERT_TRUE(set.ok()) << set.status();
  TokenTable table(std::move(*set));
  EXPECT_EQ(table.find("w1")->owner_or_identity(), "ops");
  EXPECT_EQ(table.find("w2")->owner_or_identity(), "ops");
  EXPECT_EQ(table.find("w3")->owner_or_identity(), "solo");
  EXPECT_EQ(table.find("j")->owner_or_identity(), "alice");
  // The coordinator issues with the join token's owner; older stores kept none (the join token's
  // name stands for it).
  table.add_issued(token_hash("a1"), "alice-join:1", "alice");
  table.add_issued(token_hash("a2"), "alice-join:2", "alice");
  table.add_issued(token_hash("b1"), "bob-join:1", "");
  EXPECT_EQ(table.find("a1")->owner_or_identity(), "alice");
  EXPECT_EQ(table.find("a2")->owner_or_identity(), "alice");
  EXPECT_EQ(table.find("b1")->owner_or_identity(), "bob-join");
  EXPECT_EQ(table.find("a1")->identity, "alice-join:1");
  for (const char* bad : {"owner=", "owner=a/b", "ownr=x", "owner=x owner=y"})
    EXPECT_TRUE(contains(parse_error("worker w " + token_hash("w") + " " + bad + "\n"), "tokens.txt:1:")) << bad;
  EXPECT_TRUE(contains(parse_error("admin a " + token_hash("w") + " owner=x\n"), "expected 'ROLE NAME HASH'"));
}

// A stolen worker VM's enrolled credential is revoked in the tokens file: one credential, or
// every one of a join token, from the reload on; the others, and the file's tokens, stay.
TEST(TokensFile, RevokeLinesEndIssuedCredentials) {
  const std::string join = "enroll fleet " + token_hash("j") + " uses=20\n";
  TokenTable table(*TokenSet::parse(join, "tokens.txt"));
  table.add_issued(token_hash("w1"), "fleet:1", "");
  table.add_issued(token_hash("w2"), "fleet:2", "");
  table.add_issued(token_hash("o1"), "other:1", "");
  ASSERT_TRUE(table.find("w2").has_value());
  absl::StatusOr<TokenSet> one = TokenSet::parse(join + "revoke fleet:2  # stolen VM\n", "tokens.txt");
  ASSERT_TRUE(one.ok()) << one.status();
  table.replace(std::move(*one));
  EXPECT_FALSE(table.find("w2").has_value());
  EXPECT_FALSE(table.find_recent("w2").has_value());  // no grace for a revoked credential
  EXPECT_TRUE(table.find("w1").has_value());
  EXPECT_TRUE(table.find("j").has_value());
  table.replace(*TokenSet::parse(join + "revoke fleet\n", "tokens.txt"));
  EXPECT_FALSE(table.find("w1").has_value());
  EXPECT_FALSE(table.find("w2").has_value());
  EXPECT_TRUE(table.find("o1").has_value());  // another join token's
  EXPECT_TRUE(table.find("j").has_value());   // the join token itself: remove its line for that
  // Credentials added after the reload are revoked too (the coordinator adds them at start).
  table.add_issued(token_hash("w3"), "fleet:3", "");
  EXPECT_FALSE(table.find("w3").has_value());
  // Taken back out of the file, the revocation ends.
  table.replace(*TokenSet::parse(join, "tokens.txt"));
  EXPECT_TRUE(table.find("w1").has_value());
  for (const char* bad : {"revoke\n", "revoke a b\n", "revoke fleet:0\n", "revoke fleet:x\n", "revoke a:1:2\n",
                          "revoke :1\n", "revoke bad/name\n"})
    EXPECT_TRUE(contains(parse_error(join + bad), "tokens.txt:2:")) << bad;
  EXPECT_TRUE(contains(parse_error(join + "revoke fleet:x\n"), "bad name 'fleet:x' to revoke"));
}

TEST(TokensFile, LoadNamesAMissingFile) {
  absl::StatusOr<TokenSet> s = TokenSet::load("/nonexistent/tokens");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(contains(std::string(s.status().message()), "/nonexistent/tokens: cannot read"));
}

TEST(TokenTable, FindsAndIsReplacedWhole) {
  TokenTable table(*TokenSet::parse(line_for(Role::kSubmit, "alice", "ta"), "f"));
  std::optional<Caller> c = table.find("ta");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->identity, "alice");
  EXPECT_EQ(c->role, Role::kSubmit);
  EXPECT_TRUE(c->authenticated);
  EXPECT_FALSE(table.find("tb"));
  table.replace(*TokenSet::parse(line_for(Role::kRead, "bob", "tb"), "f"));
  EXPECT_FALSE(table.find("ta")) << "a removed token still works";
  ASSERT_TRUE(table.find("tb"));
  EXPECT_EQ(table.find("tb")->role, Role::kRead);
  EXPECT_EQ(table.size(), 1u);
  // The set before the last reload answers find_recent, not find; two reloads later it is gone.
  EXPECT_FALSE(table.find("ta"));
  ASSERT_TRUE(table.find_recent("ta"));
  EXPECT_EQ(table.find_recent("ta")->identity, "alice");
  table.replace(*TokenSet::parse("", "f"));
  EXPECT_FALSE(table.find_recent("ta"));
  ASSERT_TRUE(table.find_recent("tb"));
  EXPECT_FALSE(table.find("tb"));
}

// A credential remembered by its hash only (a dashboard session): found as by its token, for
// file tokens and issued credentials, and gone with a reload that drops or revokes it; every
// change of the table moves its generation.
TEST(TokenTable, FindsByHashAndCountsChanges) {
  TokenTable table(*TokenSet::parse(line_for(Role::kRead, "alice", "ta"), "f"));
  const uint64_t g0 = table.generation();
  ASSERT_TRUE(table.find_hash(token_hash("ta")));
  EXPECT_EQ(table.find_hash(token_hash("ta"))->identity, "alice");
  EXPECT_EQ(table.find_hash(token_hash("ta"))->role, Role::kRead);
  for (const std::string& bad : {std::string("ta"), token_hash("tb"), std::string("sha256:xyz"), std::string()})
    EXPECT_FALSE(table.find_hash(bad)) << bad;
  table.add_issued(token_hash("w1"), "join:1", "");
  EXPECT_GT(table.generation(), g0);
  ASSERT_TRUE(table.find_hash(token_hash("w1")));
  EXPECT_EQ(table.find_hash(token_hash("w1"))->role, Role::kWorker);
  const uint64_t g1 = table.generation();
  table.replace(*TokenSet::parse("revoke join:1\n", "f"));
  EXPECT_GT(table.generation(), g1);
  EXPECT_FALSE(table.find_hash(token_hash("w1")));
  EXPECT_FALSE(table.find_hash(token_hash("ta")));
}

// The permission matrix of the proto's header comment, written out once more by hand.
const std::map<std::string, std::set<Role>> kExpected = {
    {"SubmitJob", {Role::kSubmit}},
    {"CancelJob", {Role::kSubmit}},
    {"GetJob", {Role::kSubmit, Role::kRead}},
    {"ListJobs", {Role::kSubmit, Role::kRead}},
    {"WatchJob", {Role::kSubmit, Role::kRead}},
    {"GetResults", {Role::kSubmit, Role::kRead}},
    {"ListWorkers", {Role::kRead}},
    {"Hello", {Role::kWorker}},
    {"AcquireWork", {Role::kWorker}},
    {"RenewLeases", {Role::kWorker}},
    {"CompleteUnit", {Role::kWorker}},
    {"CompleteUnits", {Role::kWorker}},
    {"ReleaseUnits", {Role::kWorker}},
    {"Enroll", {Role::kEnroll}},
};

TEST(Permissions, EveryMethodOfBothServicesAsTheProtoSays) {
  // Through a message of the same file, so that the linker keeps its descriptors.
  const google::protobuf::FileDescriptor* file = v1::Job::descriptor()->file();
  int methods = 0;
  for (const char* service : {"JobService", "WorkerService"}) {
    const google::protobuf::ServiceDescriptor* sd = file->FindServiceByName(service);
    ASSERT_NE(sd, nullptr) << service;
    for (int i = 0; i < sd->method_count(); ++i, ++methods) {
      const std::string name = sd->method(i)->name();
      const std::string path = absl::StrCat("/", sd->full_name(), "/", name);
      auto it = kExpected.find(name);
      ASSERT_NE(it, kExpected.end()) << path << " is new: add it to the table in cluster/auth.cpp and here";
      EXPECT_FALSE(permission_for(path).open) << path;
      for (Role r : kRoles)
        EXPECT_EQ(role_may_call(r, path), r == Role::kAdmin || it->second.count(r) > 0)
            << path << " for " << role_name(r);
    }
  }
  EXPECT_EQ(methods, int(kExpected.size()));
}

TEST(Permissions, HealthOpenReflectionAnyRoleUnknownAdminOnly) {
  EXPECT_TRUE(permission_for("/grpc.health.v1.Health/Check").open);
  EXPECT_TRUE(permission_for("/grpc.health.v1.Health/Watch").open);
  for (Role r : kRoles) {
    // A join token reaches Enroll and nothing else, not even the schema.
    EXPECT_EQ(role_may_call(r, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"), r != Role::kEnroll);
    EXPECT_EQ(role_may_call(r, "/c960.v1.Other/Thing"), r == Role::kAdmin);
    EXPECT_EQ(role_may_call(r, "/c960.v1.JobService/SubmitJobX"), r == Role::kAdmin);
    EXPECT_EQ(role_may_call(r, ""), r == Role::kAdmin);
  }
  EXPECT_FALSE(permission_for("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo").open);
}

TEST(Permissions, RolesAllowedForMessages) {
  EXPECT_EQ(roles_allowed("/c960.v1.JobService/SubmitJob"), "submit or admin");
  EXPECT_EQ(roles_allowed("/c960.v1.JobService/GetJob"), "submit, read or admin");
  EXPECT_EQ(roles_allowed("/c960.v1.WorkerService/Hello"), "worker or admin");
  EXPECT_EQ(roles_allowed("/c960.v1.Unknown/X"), "admin");
  EXPECT_EQ(roles_allowed("/grpc.health.v1.Health/Check"), "any caller");
}

TEST(Authorize, UnauthenticatedDeniedOrThrough) {
  const Caller reader{"r", Role::kRead, true};
  const absl::StatusOr<Caller> nobody = absl::UnauthenticatedError("no token");
  auto code = [](const absl::StatusOr<std::optional<Caller>>& d) { return d.status().code(); };
  EXPECT_EQ(code(authorize("/c960.v1.JobService/GetJob", nobody)), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(contains(std::string(authorize("/c960.v1.JobService/GetJob", nobody).status().message()), "no token"));
  const absl::StatusOr<std::optional<Caller>> denied = authorize("/c960.v1.JobService/SubmitJob", reader);
  EXPECT_EQ(code(denied), absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(contains(std::string(denied.status().message()), "'r' (role read)"));
  EXPECT_TRUE(contains(std::string(denied.status().message()), "needs role submit or admin"));
  const absl::StatusOr<std::optional<Caller>> through = authorize("/c960.v1.JobService/GetJob", reader);
  ASSERT_TRUE(through.ok());
  ASSERT_TRUE(*through);
  EXPECT_EQ((*through)->identity, "r");
  // Health: through without credentials, and with a bad token too.
  const absl::StatusOr<std::optional<Caller>> health = authorize("/grpc.health.v1.Health/Check", nobody);
  ASSERT_TRUE(health.ok());
  EXPECT_FALSE(*health);
}

class Authenticator : public ::testing::Test {
 protected:
  std::shared_ptr<TokenTable> tokens_ = std::make_shared<TokenTable>(
      *TokenSet::parse(line_for(Role::kWorker, "w1", "tw") + line_for(Role::kSubmit, "alice", "ts"), "f"));
};

TEST_F(Authenticator, BearerTokenEstablishesTheCaller) {
  const CallAuthenticator auth(tokens_, false);
  absl::StatusOr<std::optional<Caller>> d = auth.decide("/c960.v1.WorkerService/Hello", "Bearer tw", std::nullopt);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->identity, "w1");
  EXPECT_EQ((*d)->role, Role::kWorker);
  EXPECT_TRUE(auth.decide("/c960.v1.JobService/SubmitJob", "bearer  ts ", std::nullopt).ok()) << "scheme is case-blind";
  EXPECT_EQ(auth.decide("/c960.v1.JobService/SubmitJob", "Bearer tw", std::nullopt).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(auth.decide("/c960.v1.WorkerService/Hello", "Bearer nope", std::nullopt).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.decide("/c960.v1.WorkerService/Hello", "Basic dHc=", std::nullopt).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(auth.decide("/c960.v1.WorkerService/Hello", std::nullopt, std::nullopt).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth.decide("/grpc.health.v1.Health/Check", std::nullopt, std::nullopt).ok());
}

TEST_F(Authenticator, TokensAreReloadedThroughTheSharedTable) {
  const CallAuthenticator auth(tokens_, false);
  EXPECT_TRUE(auth.decide("/c960.v1.WorkerService/Hello", "Bearer tw", std::nullopt).ok());
  tokens_->replace(*TokenSet::parse(line_for(Role::kWorker, "w2", "tw2"), "f"));
  EXPECT_EQ(auth.decide("/c960.v1.WorkerService/Hello", "Bearer tw", std::nullopt).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(auth.decide("/c960.v1.WorkerService/Hello", "Bearer tw2", std::nullopt).ok());
}

TEST_F(Authenticator, WithoutTokensATokenIsRefusedAndCertificatesAreNeeded) {
  const CallAuthenticator auth(nullptr, true);
  absl::StatusOr<std::optional<Caller>> d = auth.decide("/c960.v1.JobService/GetJob", "Bearer tw", std::nullopt);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(contains(std::string(d.status().message()), "takes no tokens"));
  d = auth.decide("/c960.v1.JobService/GetJob", std::nullopt, std::nullopt);
  EXPECT_TRUE(contains(std::string(d.status().message()), "no client certificate"));
  EXPECT_EQ(auth.decide("/c960.v1.JobService/GetJob", std::nullopt, "not a certificate").status().code(),
            absl::StatusCode::kUnauthenticated);
}

// A standby knows the tokens file, not the credentials the leader issued: a token it does not
// know is let through to its NOT_LEADER answer (a worker then goes on to the leader; refused
// UNAUTHENTICATED, it stopped). What is not a bearer token, or no credential, is still refused.
TEST_F(Authenticator, AStandbyLetsUnknownTokensThroughToItsNotLeaderAnswer) {
  const CallAuthenticator leader(tokens_, false), standby(tokens_, false, true);
  EXPECT_EQ(leader.decide("/c960.v1.WorkerService/CompleteUnits", "Bearer issued-by-the-leader", std::nullopt)
                .status()
                .code(),
            absl::StatusCode::kUnauthenticated);
  absl::StatusOr<std::optional<Caller>> d =
      standby.decide("/c960.v1.WorkerService/CompleteUnits", "Bearer issued-by-the-leader", std::nullopt);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_FALSE(*d) << "let in with no caller";
  d = standby.decide("/c960.v1.WorkerService/Hello", "Bearer tw", std::nullopt);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_TRUE(*d);
  EXPECT_EQ((*d)->identity, "w1");
  // A known token is still held to its role.
  EXPECT_EQ(standby.decide("/c960.v1.JobService/SubmitJob", "Bearer tw", std::nullopt).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(standby.decide("/c960.v1.WorkerService/Hello", "Basic dHc=", std::nullopt).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(standby.decide("/c960.v1.WorkerService/Hello", std::nullopt, std::nullopt).status().code(),
            absl::StatusCode::kUnauthenticated);
  const CallAuthenticator standby_without_tokens(nullptr, true, true);
  EXPECT_EQ(standby_without_tokens.decide("/c960.v1.JobService/GetJob", "Bearer tw", std::nullopt).status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(ListenAddress, LoopbackOrNot) {
  EXPECT_TRUE(is_loopback_listen("127.0.0.1:7960"));
  EXPECT_TRUE(is_loopback_listen("127.1.2.3:0"));
  EXPECT_TRUE(is_loopback_listen("[::1]:7960"));
  EXPECT_TRUE(is_loopback_listen("localhost:7960"));
  EXPECT_TRUE(is_loopback_listen("unix:/tmp/c960.sock"));
  EXPECT_FALSE(is_loopback_listen("0.0.0.0:7960"));
  EXPECT_FALSE(is_loopback_listen("[::]:7960"));
  EXPECT_FALSE(is_loopback_listen(":7960"));
  EXPECT_FALSE(is_loopback_listen("10.1.2.3:7960"));
  EXPECT_FALSE(is_loopback_listen("[::ffff:10.1.2.3]:7960"));
  EXPECT_FALSE(is_loopback_listen("192.168.1.1:7960"));
}

class ClientOptions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/c960-client-options-", getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  static std::string error(const ClientSecurityFlags& f) {
    absl::StatusOr<ChannelOptions> o = client_channel_options("127.0.0.1:1", f);
    return o.ok() ? "" : std::string(o.status().message());
  }
  std::string dir_;
};

TEST_F(ClientOptions, PlaintextWithoutFlags) {
  absl::StatusOr<ChannelOptions> o = client_channel_options("h:1", {});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->address, "h:1");
  EXPECT_FALSE(o->tls);
  EXPECT_EQ(o->token, "");
}

TEST_F(ClientOptions, TokensNeedTlsAndAreChecked) {
  ClientSecurityFlags f;
  f.token = "c960_abc";
  EXPECT_TRUE(contains(error(f), "$C960_TOKEN) needs TLS"));
  f.token = "two words";
  EXPECT_TRUE(contains(error(f), "$C960_TOKEN: not a token"));
  f = {};
  f.token_file = write("tok", "c960_abc\n");
  EXPECT_TRUE(contains(error(f), "(--token-file) needs TLS"));
  f.token_file = write("two", "c960_abc\nc960_def\n");
  EXPECT_TRUE(contains(error(f), "not a token"));
  f.token_file = write("empty", "\n");
  EXPECT_TRUE(contains(error(f), "holds no token"));
  f.token_file = dir_ + "/missing";
  EXPECT_TRUE(contains(error(f), "--token-file: cannot read"));
}

TEST_F(ClientOptions, TlsFlagsNeedTheCaAndReadableCertificates) {
  ClientSecurityFlags f;
  f.tls_cert = write("c.pem", "x");
  f.tls_key = write("k.pem", "x");
  EXPECT_TRUE(contains(error(f), "--tls-ca: needed for TLS"));
  f.tls_ca = write("ca.pem", "not a certificate");
  EXPECT_TRUE(contains(error(f), "--tls-ca: '" + f.tls_ca + "' holds no PEM certificate"));
  f.tls_ca = dir_ + "/missing.pem";
  EXPECT_TRUE(contains(error(f), "--tls-ca: cannot read"));
  f = {};
  f.tls_ca = write("ca.pem", "x");
  f.tls_cert = write("c.pem", "x");
  EXPECT_TRUE(contains(error(f), "--tls-cert: needs --tls-key"));
}

}  // namespace
}  // namespace c960::cluster
