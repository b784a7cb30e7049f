#include "coordinator/file_lease.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <sys/file.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace c960::cluster {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr size_t kMaxLeaseFile = 1024;

}  // namespace

FileLease::FileLease(std::string path) : path_(std::move(path)) {}

FileLease::~FileLease() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

absl::StatusOr<LeaseRow> FileLease::read_row() const {
  char buf[kMaxLeaseFile];
  const ssize_t n = ::pread(fd_, buf, sizeof buf, 0);
  if (n < 0) return absl::UnavailableError(absl::StrCat("leader lease ", path_, ": ", std::strerror(errno)));
  // "EPOCH HOLDER\n"; anything else (empty: never taken, or being written) reads as unknown.
  LeaseRow row;
  const std::string text(buf, size_t(n));
  const std::vector<std::string> parts = absl::StrSplit(absl::StripSuffix(text, "\n"), absl::MaxSplits(' ', 1));
  if (parts.size() == 2 && absl::SimpleAtoi(parts[0], &row.epoch) && row.epoch > 0)
    row.holder = parts[1];
  else
    row.epoch = 0;
  return row;
}

absl::Status FileLease::write_row(int64_t epoch, const std::string& holder) {
  const std::string text = absl::StrCat(epoch, " ", holder, "\n");
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) != ssize_t(text.size()) ||
      ::fdatasync(fd_) != 0)
    return absl::UnavailableError(absl::StrCat("leader lease ", path_, ": ", std::strerror(errno)));
  return absl::OkStatus();
}

absl::StatusOr<LeaseStore::Step> FileLease::take_or_renew_lease(const std::string& holder, int64_t epoch,
                                                                int64_t ttl_ms) {
  Step step;
  step.now_ms = now_ms();
  if (held_) {
    // Held since taken: the lock cannot be lost while this process lives. A holder that learned
    // its own address since (a port picked at start) is written down for the standbys.
    step.granted = epoch == row_.epoch;
    if (step.granted && holder != row_.holder) {
      if (absl::Status w = write_row(row_.epoch, holder); !w.ok()) return w;
      row_.holder = holder;
    }
    row_.expires_ms = step.now_ms + ttl_ms;
    step.row = row_;
    return step;
  }
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat("leader lease ", path_, ": ", std::strerror(errno)));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK)
      return absl::UnavailableError(absl::StrCat("leader lease ", path_, ": ", std::strerror(errno)));
    // Held by a live process: who, as it wrote.
    absl::StatusOr<LeaseRow> row = read_row();
    if (!row.ok()) return row.status();
    step.row = *row;
    step.row.expires_ms = step.now_ms + ttl_ms;
    return step;
  }
  absl::StatusOr<LeaseRow> before = read_row();
  if (!before.ok()) {
    ::flock(fd_, LOCK_UN);
    return before.status();
  }
  LeaseRow row{holder, before->epoch + 1, step.now_ms + ttl_ms};
  if (absl::Status w = write_row(row.epoch, holder); !w.ok()) {
    ::flock(fd_, LOCK_UN);
    return w;
  }
  held_ = true;
  row_ = row;
  step.row = row;
  step.granted = true;
  return step;
}

absl::Status FileLease::release_lease(const std::string& /*holder*/, int64_t epoch) {
  if (!held_ || epoch != row_.epoch) return absl::OkStatus();
  held_ = false;
  if (::flock(fd_, LOCK_UN) != 0)
    return absl::UnavailableError(absl::StrCat("leader lease ", path_, ": ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace c960::cluster
