// Waiting: every blocking loop in shancoll goes through wait_until(), which
// polls, then calls the one pause hook, and gives up with TimeoutError.
//
// The default hook spins briefly (cheap when the peer runs on another core),
// then yields the core (necessary when ranks outnumber cores, the normal case
// on small machines). Under a simulator (SimGrid SMPI) the hook must sleep so
// that simulated time advances; set_pause_hook() installs such a hook.
//
// Progress, the rule no wait may bypass: data that MPI moves may need this
// process to call MPI while it waits (a rendezvous send completes only when
// its sender's progress engine runs: under MPICH with UCX or OFI, a 4 MiB
// MPI_Isend to another node never completed while its sender only polled
// memory), and MPI's progress rule says a nonblocking collective completes
// once every rank waits, whatever each waits on first. So once a wait's spin
// is over, every pause also calls drive_progress(): it advances every active
// split-phase request of this process (Active, below), then pokes the MPI
// library's progress engine (MPI_Iprobe on MPI_COMM_WORLD, which progresses
// MPICH and Open MPI; on MPI_COMM_SELF it does not under MPICH). The spin
// itself polls memory only, so a flag that arrives in time costs no MPI call.
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

// Work in flight that advances without blocking: a split-phase request that
// its owner tests or waits on when it chooses. While registered, every wait
// of the process advances it too (drive_progress). Thread rule: the registry
// is process-wide and guarded by a mutex taken only outside the fast path
// (registration, and waits past their spin); advance_elsewhere() may thus run
// on another thread than the owner's, so an Active guards its own state
// (try_advance: whoever holds it advances, the other one skips). The pause
// hook and the spin count are atomics (relaxed: plain loads on x86).
class Active {
 public:
  virtual ~Active() = default;
  // Advances without blocking and never throws (an error is kept for the
  // owner's next test or wait); true once the work is complete, when the
  // registry lets go of it.
  virtual bool advance_elsewhere() noexcept = 0;
};

void register_active(Active* work);
void unregister_active(Active* work);  // no-op if not registered (or already dropped)

// Advances every registered Active, then pokes MPI's progress engine. Called
// by every wait past its spin; also callable on its own.
void drive_progress();

// A wait's name for its timeout error: a string, or a function that makes
// one, called only on a timeout (a name built from parts costs nothing on a
// call that does not time out).
inline const char* wait_name(const char* what) { return what; }
template <class Describe>
std::string wait_name(const Describe& describe) {
  return describe();
}

// The loop of a wait whose first poll failed: out of line, so that a call
// whose flags are already set carries none of it (and callgrind counts the
// waiting apart, benchmarks/c/callgrind_calls.sh).
template <class Done, class Poll, class What>
[[gnu::noinline]] void wait_loop(Done& done, Poll& poll, const What& what, double timeout) {
  const double deadline = now_seconds() + timeout;
  PauseHook pause = pause_hook();
  const std::uint64_t spins = spin_polls();
  for (std::uint64_t i = 0;; ++i) {
    poll();
    if (done()) return;
    pause(i);
    if (i >= spins) drive_progress();
    if ((i & 255) == 255 && now_seconds() > deadline)
      throw_timeout(std::string(wait_name(what)).c_str(), timeout);
  }
}

// Polls `done` until it returns true. Between polls it calls `poll` (e.g. to
// drive MPI progress) and the pause hook. `what` names the wait in errors
// (wait_name).
template <class Done, class Poll, class What>
void wait_until(Done&& done, Poll&& poll, const What& what, double timeout) {
  if (!done()) wait_loop(done, poll, what, timeout);
}

template <class Done, class What>
void wait_until(Done&& done, const What& what, double timeout) {
  wait_until(done, [] {}, what, timeout);
}

}  // namespace shancoll
