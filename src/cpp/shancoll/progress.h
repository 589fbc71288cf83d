// Waiting: every blocking loop in shancoll goes through wait_until(), which
// polls, then calls the one pause hook, and gives up with TimeoutError.
//
// The default hook spins briefly (cheap when the peer runs on another core),
// then yields the core (necessary when ranks outnumber cores, the normal case
// on small machines). Under a simulator (SimGrid SMPI) the hook must sleep so
// that simulated time advances; set_pause_hook() installs such a hook.
#pragma once

#include <cstdint>
#include <string>

#include "shancoll/error.h"

namespace shancoll {

// Unsuccessful polls a wait spins through before it yields the core; far
// fewer where ranks outnumber the cores they may run on, since the rank
// waited for is then seldom running (set_oversubscribed).
constexpr std::uint64_t kSpinPolls = 128;
constexpr std::uint64_t kSpinPollsOversubscribed = 4;
std::uint64_t spin_polls();
// Called when a node layout shows more ranks than CPUs; stays set.
void set_oversubscribed();

// Called with the number of unsuccessful polls so far in the current wait.
using PauseHook = void (*)(std::uint64_t iteration);

void set_pause_hook(PauseHook hook);
PauseHook pause_hook();
void default_pause(std::uint64_t iteration);   // spin, then sched_yield
void sleeping_pause(std::uint64_t iteration);  // nanosleep 10 ns growing to 1 us

// Seconds a single wait may last before TimeoutError; from the environment
// variable SHANCOLL_TIMEOUT (default 120 s), overridable per call.
double default_timeout();

double now_seconds();

[[noreturn]] void throw_timeout(const char* what, double timeout);

// Polls `done` until it returns true. Between polls it calls `poll` (e.g. to
// drive MPI progress) and the pause hook. `what` names the wait in errors.
template <class Done, class Poll>
void wait_until(Done&& done, Poll&& poll, const char* what, double timeout) {
  if (done()) return;
  const double deadline = now_seconds() + timeout;
  PauseHook pause = pause_hook();
  for (std::uint64_t i = 0;; ++i) {
    poll();
    if (done()) return;
    pause(i);
    if ((i & 255) == 255 && now_seconds() > deadline) throw_timeout(what, timeout);
  }
}

template <class Done>
void wait_until(Done&& done, const char* what, double timeout) {
  wait_until(done, [] {}, what, timeout);
}

}  // namespace shancoll
