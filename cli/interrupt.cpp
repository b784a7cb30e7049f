#include "cli/interrupt.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <utility>

namespace c960::cli {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the flag is set from a signal handler");

struct sigaction g_old_int, g_old_term;

void on_signal(int signo) {
  g_signal.store(signo);
  // write(2) is async-signal-safe; the command says what it kept once it has stopped. Lines
  // under 80 columns, so that a terminal breaks no word (the handler cannot ask its width).
  static const char kMessage[] =
      "\nc960: interrupted: finishing the work in progress and writing what is done\n"
      "c960: interrupt again to quit at once\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
}

}  // namespace

InterruptScope::InterruptScope() {
  g_signal.store(0);
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second signal takes the default action: the process dies
  // A signal ignored on entry (nohup, a background job of a script) stays ignored, as the
  // shell meant it to.
  for (auto [signo, old] : {std::pair{SIGINT, &g_old_int}, std::pair{SIGTERM, &g_old_term}}) {
    sigaction(signo, nullptr, old);
    if (old->sa_handler != SIG_IGN) sigaction(signo, &sa, nullptr);
  }
}

InterruptScope::~InterruptScope() {
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
}

int interrupt_signal() { return g_signal.load(); }

void request_interrupt(int signo) { g_signal.store(signo); }

}  // namespace c960::cli
