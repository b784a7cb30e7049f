#include "cli/resume.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"

namespace c960::cli {
namespace {

constexpr char kMagic[] = "c960-resume";

std::string line_of(absl::string_view tag, const std::vector<std::string>& fields) {
  std::string out(tag);
  for (const std::string& f : fields) absl::StrAppend(&out, "\t", absl::CEscape(f));
  return out + "\n";
}

absl::Status write_all(int fd, absl::string_view text, const std::string& path) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
    done += size_t(n);
  }
  return absl::OkStatus();
}

}  // namespace

std::string resume_path(const std::string& output) { return output + kResumeSuffix; }

absl::StatusOr<std::optional<ResumeState>> read_resume(const std::string& path, absl::string_view kind) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::optional<ResumeState>();
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  const auto bad = [&](auto... why) {
    return absl::InvalidArgumentError(absl::StrCat("--resume: ", path, ": ", why...));
  };
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  // The piece after the last newline is empty, or a line the process was killed writing.
  lines.pop_back();
  ResumeState state;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<std::string> fields;
    for (absl::string_view f : absl::StrSplit(lines[i], '\t')) {
      std::string value;
      if (!absl::CUnescape(f, &value)) return bad("line ", i + 1, " is broken");
      fields.push_back(std::move(value));
    }
    const std::string tag = fields.front();
    fields.erase(fields.begin());
    if (i == 0) {
      if (tag != kMagic || fields.size() != 1 || fields[0] != kind)
        return bad("not the state of an interrupted '", kind, "' run");
    } else if (tag == "option" && fields.size() == 2) {
      state.options.push_back({fields[0], fields[1]});
    } else if (tag == "record") {
      state.records.push_back(std::move(fields));
    } else {
      return bad("line ", i + 1, " is broken");
    }
  }
  if (lines.empty()) return bad("not the state of an interrupted '", kind, "' run");
  return std::optional<ResumeState>(std::move(state));
}

absl::Status check_same_options(const std::vector<ResumeOption>& was, const std::vector<ResumeOption>& now) {
  const auto find = [](const std::vector<ResumeOption>& in, const std::string& name) -> const std::string* {
    for (const ResumeOption& o : in)
      if (o.name == name) return &o.value;
    return nullptr;
  };
  const auto shown = [](const std::string* v) { return v ? absl::StrCat("'", *v, "'") : std::string("none"); };
  for (const std::vector<ResumeOption>* list : {&now, &was})
    for (const ResumeOption& o : *list) {
      const std::string *a = find(was, o.name), *b = find(now, o.name);
      if (!a || !b || *a != *b)
        return absl::InvalidArgumentError(
            absl::StrCat("--resume: --", o.name, " differs: the interrupted run had ", shown(a), ", this one ",
                         shown(b), " (give the same options, or leave out --resume to start over)"));
    }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ResumeLog>> ResumeLog::create(const std::string& path, absl::string_view kind,
                                                             const std::vector<ResumeOption>& options,
                                                             const std::vector<std::vector<std::string>>& records) {
  std::string text = line_of(kMagic, {std::string(kind)});
  for (const ResumeOption& o : options) text += line_of("option", {o.name, o.value});
  for (const std::vector<std::string>& r : records) text += line_of("record", r);
  if (absl::Status s = write_output("--resume", path, text); !s.ok()) return s;
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
  return std::unique_ptr<ResumeLog>(new ResumeLog(path, fd));
}

ResumeLog::~ResumeLog() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status ResumeLog::append(const std::vector<std::string>& fields) {
  return write_all(fd_, line_of("record", fields), path_);
}

absl::Status ResumeLog::remove() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (std::remove(path_.c_str()) != 0 && errno != ENOENT)
    return absl::InvalidArgumentError(absl::StrCat("cannot remove '", path_, "': ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace c960::cli
