// SIGINT and SIGTERM while a long local command runs (a perft table, self-play): the first one
// asks the command to stop starting work, write what is done and leave with 128 + the signal; a
// second one kills the process at once (the handler resets itself), since the work in progress
// may take long to finish. A signal ignored when the scope starts (nohup, a background job of a
// script) stays ignored.
#pragma once

namespace c960::cli {

class InterruptScope {
 public:
  // Installs the handlers and clears any earlier request.
  InterruptScope();
  // Restores the handlers that were there before.
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
};

// The signal that asked to stop, or 0.
int interrupt_signal();
// What the handler does, callable in-process (tests): later interrupt_signal() returns signo.
void request_interrupt(int signo);

}  // namespace c960::cli
