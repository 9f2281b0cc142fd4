// Stop signals for daemons whose main thread waits for SIGINT and SIGTERM.
//
// Blocked before any other thread exists, the signals stay blocked in every
// thread (threads inherit the mask), so only the thread that waits for them
// with sigwait or sigtimedwait receives them:
//
//   const sigset_t signals = BlockStopSignals();
//   ... start the servers and their threads ...
//   int signo = 0;
//   sigwait(&signals, &signo);
//
// Call from the main thread, before it starts any other.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace fabricdiag {

// Blocks SIGINT and SIGTERM in the calling thread; returns that set.
inline sigset_t BlockStopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

}  // namespace fabricdiag
