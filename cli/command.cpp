#include "cli/command.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cluster/text_wrap.h"

namespace c960::cli {
namespace {

absl::Status cannot_write(absl::string_view option, const std::string& path, int error) {
  return absl::InvalidArgumentError(absl::StrCat(option, ": cannot write '", path, "': ", std::strerror(error)));
}

// A new file next to `path` that no one else uses (O_EXCL), with the mode umask gives any new file.
int create_temporary(const std::string& path, std::string* tmp) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0;; ++attempt) {
    *tmp = absl::StrCat(path, ".", getpid(), ".", counter++, ".tmp");
    const int fd = ::open(tmp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST || attempt >= 100) return fd;
  }
}

}  // namespace

std::string for_terminal(absl::string_view message, bool tty, int columns) {
  message = absl::StripSuffix(message, "\n");
  if (!tty) return absl::StrCat(message, "\n");
  return cluster::wrap_text(message, size_t(std::max(columns, cluster::kMinTerminalWidth)), "", 2);
}

std::string for_err(const Io& io, absl::string_view message) {
  return for_terminal(message, io.err_is_tty, io.err_is_tty ? cluster::stderr_columns() : 0);
}

std::string for_out(const Io& io, absl::string_view message) {
  return for_terminal(message, io.out_is_tty, io.out_is_tty ? cluster::stdout_columns() : 0);
}

int fail(const Io& io, absl::string_view command, absl::string_view problem, int code) {
  io.err << "c960 " << command << ": " << problem << "\n" << std::flush;
  return code;
}

int fail(const Io& io, absl::string_view command, const absl::Status& status, int code) {
  return fail(io, command, status.message(), code);
}

OutputFile::OutputFile(std::string option, std::string path) : option_(std::move(option)), path_(std::move(path)) {}

OutputFile::~OutputFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) std::remove(tmp_.c_str());
}

absl::Status OutputFile::open() {
  if (path_.empty()) return absl::InvalidArgumentError(absl::StrCat(option_, ": empty path"));
  fd_ = create_temporary(path_, &tmp_);
  if (fd_ < 0) {
    tmp_.clear();
    return cannot_write(option_, path_, errno);
  }
  return absl::OkStatus();
}

void OutputFile::append(absl::string_view text) {
  for (size_t done = 0; done < text.size() && !error_ && fd_ >= 0;) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) error_ = errno;
    if (n > 0) done += size_t(n);
  }
}

absl::Status OutputFile::commit() {
  if (fd_ < 0) return cannot_write(option_, path_, EBADF);
  // Durable before visible: the rename must not publish a file whose blocks are still unwritten.
  if (!error_ && ::fsync(fd_) != 0) error_ = errno;
  if (::close(fd_) != 0 && !error_) error_ = errno;
  fd_ = -1;
  if (!error_ && std::rename(tmp_.c_str(), path_.c_str()) != 0) error_ = errno;
  if (error_) return cannot_write(option_, path_, error_);
  committed_ = true;
  return absl::OkStatus();
}

absl::Status write_output(absl::string_view option, const std::string& path, absl::string_view text) {
  OutputFile f{std::string(option), path};
  if (absl::Status s = f.open(); !s.ok()) return s;
  f.append(text);
  return f.commit();
}

absl::Status check_output(absl::string_view option, const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(option, ": empty path"));
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return cannot_write(option, path, EISDIR);
  std::string tmp;
  const int fd = create_temporary(path, &tmp);
  if (fd < 0) return cannot_write(option, path, errno);
  ::close(fd);
  std::remove(tmp.c_str());
  return absl::OkStatus();
}

}  // namespace c960::cli
