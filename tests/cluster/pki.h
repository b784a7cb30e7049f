// Certificates and tokens for the security tests, made at test time in the test's scratch
// directory with Debian's `openssl` command (no private key is ever committed): a CA, a server
// certificate for 127.0.0.1 and localhost, client certificates with a role in their OU, an
// unrelated second CA, and an expired server certificate (`openssl ca` with a past end date).
#pragma once

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/process.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace c960::test {

inline const std::string kCli = std::string(c960::test::binary_dir()) + "/cli/c960";

struct Pki {
  std::string dir;
  std::string file(const std::string& name) const { return dir + "/" + name; }
  std::string ca() const { return file("ca.pem"); }
  std::string other_ca() const { return file("other-ca.pem"); }
  std::string server_cert() const { return file("server.pem"); }
  std::string server_key() const { return file("server.key"); }
  std::string expired_cert() const { return file("expired.pem"); }
  std::string expired_key() const { return file("expired.key"); }
  // A client certificate made by client(NAME, ...): NAME.pem and NAME.key.
  std::string cert(const std::string& name) const { return file(name + ".pem"); }
  std::string key(const std::string& name) const { return file(name + ".key"); }
};

// Runs a shell command in `dir`; fails the test with its output if it fails.
inline bool sh(const std::string& dir, const std::string& cmd) {
  const CommandResult r = run_command(absl::StrCat("cd '", dir, "' && ", cmd));
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
  return r.exit_code == 0;
}

inline std::string new_key_and_csr(const std::string& name, const std::string& subject, const std::string& ext = "") {
  return absl::StrCat("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ", name,
                      ".key -out ", name, ".csr -subj '", subject, "'", ext.empty() ? "" : " -addext '" + ext + "'",
                      " 2>/dev/null");
}

// A certificate for NAME signed by the CA `ca` (ca.pem/ca.key or other-ca.pem/other-ca.key).
inline bool make_client(const Pki& pki, const std::string& name, const std::string& subject,
                        const std::string& ca = "ca") {
  return sh(pki.dir, absl::StrCat(new_key_and_csr(name, subject), " && openssl x509 -req -in ", name, ".csr -CA ", ca,
                                  ".pem -CAkey ", ca, ".key -CAcreateserial -days 2 -out ", name, ".pem 2>/dev/null"));
}

// Makes the CA, the other CA, the server certificate and the expired one in `dir`.
inline bool make_pki(const std::string& dir, Pki* pki) {
  pki->dir = dir;
  const std::string ca_cmd =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 2>/dev/null";
  write_file(dir + "/server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  // `openssl ca` is the one way in OpenSSL 3.0 to give a certificate dates in the past.
  write_file(
      dir + "/ca.cnf",
      "[ca]\ndefault_ca = c\n[c]\ndatabase = ca-index.txt\nnew_certs_dir = .\nserial = ca-serial\n"
      "default_md = sha256\npolicy = p\ncopy_extensions = copy\nunique_subject = no\n[p]\ncommonName = supplied\n");
  write_file(dir + "/ca-index.txt", "");
  write_file(dir + "/ca-serial", "01\n");
  const std::vector<std::string> steps = {
      absl::StrCat(ca_cmd, " -keyout ca.key -out ca.pem -subj '/CN=c960 test CA'"),
      absl::StrCat(ca_cmd, " -keyout other-ca.key -out other-ca.pem -subj '/CN=unrelated CA'"),
      new_key_and_csr("server", "/CN=127.0.0.1"),
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext "
      "-out server.pem 2>/dev/null",
      new_key_and_csr("expired", "/CN=127.0.0.1", "subjectAltName=IP:127.0.0.1"),
      "openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key -in expired.csr -out expired.pem "
      "-startdate 20200101000000Z -enddate 20200102000000Z 2>/dev/null",
  };
  return sh(dir, absl::StrJoin(steps, " && "));
}

// A new token of `role` named `name`: the token, and its line for the tokens file.
struct Token {
  std::string token, line;
};
inline Token new_token(const std::string& role, const std::string& name) {
  const RunResult r = run({kCli, "token", "new", "--role", role, "--name", name});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const size_t nl = r.out.find('\n');
  if (nl == std::string::npos) return {};
  return {r.out.substr(0, nl), r.out.substr(nl + 1)};
}

}  // namespace c960::test
