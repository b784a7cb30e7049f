#include "cli/progress.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace c960::cli {

std::string with_separators(absl::string_view digits) {
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string hms(double seconds) {
  if (!(seconds >= 0) || seconds >= 9999.0 * 3600) return "-:--:--";
  const long long s = std::llround(seconds);
  return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
}

double eta_seconds(double done, double total, double seconds) {
  if (!(done > 0) || !(seconds > 0)) return -1;
  return seconds * std::max(0.0, total - done) / done;
}

ProgressLine::ProgressLine(const Io& io, bool enabled, std::function<std::string()> render,
                           std::chrono::milliseconds period)
    : io_(io), render_(std::move(render)), period_(period) {
  if (!enabled || !io.err_is_tty) return;
  {
    std::lock_guard lock(mu_);
    draw();
  }
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, period_, [this] { return stopping_; })) draw();
  });
}

ProgressLine::~ProgressLine() { stop(); }

void ProgressLine::draw() {
  std::string line = render_();
  if (line.size() > kProgressWidth) line.resize(kProgressWidth);
  const size_t width = line.size();
  // Blanks over what is left of a longer line before.
  if (width < drawn_) line.append(drawn_ - width, ' ');
  io_.err << '\r' << line << std::flush;
  drawn_ = width;
}

void ProgressLine::clear() {
  if (drawn_ == 0) return;
  io_.err << '\r' << std::string(drawn_, ' ') << '\r' << std::flush;
  drawn_ = 0;
}

void ProgressLine::write_out(absl::string_view text) {
  std::lock_guard lock(mu_);
  const bool shared_screen = active() && io_.out_is_tty;
  if (shared_screen) clear();
  io_.out << text << std::flush;
  if (shared_screen) draw();
}

void ProgressLine::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
  std::lock_guard lock(mu_);
  draw();
  clear();
}

}  // namespace c960::cli
