#include "shancoll/progress.h"

#include <mpi.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <thread>
#include <vector>

#include "shancoll/environment.h"

namespace shancoll {
namespace {

std::atomic<PauseHook> g_pause{default_pause};  // read once per wait, set from any thread
std::atomic<std::uint64_t> g_spin_polls{kSpinPolls};

std::mutex g_active_mutex;
std::vector<Active*> g_active;  // guarded by g_active_mutex

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

std::uint64_t spin_polls() { return g_spin_polls.load(std::memory_order_relaxed); }

// 4 ranks on 2 cores, allreduce against MPICH's (whose own waits never
// yield), spinning 128 polls / 4: pairwise_exchange 8 B 0.38-0.48x /
// 1.08-1.09x, 2040 B 0.63-0.66x / 1.65-1.72x; shan 8 B 1.44-1.49x /
// 1.69-2.04x (two runs each; 0 and 16 polls within their noise).
void set_oversubscribed() {
  g_spin_polls.store(kSpinPollsOversubscribed, std::memory_order_relaxed);
}

// Spinning pays when the peer runs on its own core (a flag crosses cores in
// ~50-100 ns); past a few microseconds the peer is probably not running, so
// give the core away.
void default_pause(std::uint64_t iteration) {
  if (iteration < spin_polls()) {
    cpu_relax();
  } else {
    sched_yield();
  }
}

void sleeping_pause(std::uint64_t iteration) {
  const long ns = static_cast<long>(std::min<std::uint64_t>(10 + iteration * 10, 1000));
  timespec t{0, ns};
  nanosleep(&t, nullptr);
}

void set_pause_hook(PauseHook hook) {
  g_pause.store(hook ? hook : default_pause, std::memory_order_relaxed);
}

PauseHook pause_hook() { return g_pause.load(std::memory_order_relaxed); }

void register_active(Active* work) {
  std::lock_guard<std::mutex> lock(g_active_mutex);
  g_active.push_back(work);
}

void unregister_active(Active* work) {
  std::lock_guard<std::mutex> lock(g_active_mutex);
  g_active.erase(std::remove(g_active.begin(), g_active.end(), work), g_active.end());
}

// Holds the registry while it advances, so an Active's owner cannot free it
// meanwhile (unregister_active waits); a thread that finds the registry busy
// skips it: another thread is advancing the same work.
void drive_progress() {
  if (std::unique_lock<std::mutex> lock(g_active_mutex, std::try_to_lock); lock) {
    g_active.erase(std::remove_if(g_active.begin(), g_active.end(),
                                  [](Active* work) { return work->advance_elsewhere(); }),
                   g_active.end());
  }
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return;
  int flag = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

double default_timeout() { return environment().timeout; }

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

void throw_timeout(const char* what, double timeout) {
  int rank = -1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw TimeoutError("shancoll: rank " + std::to_string(rank) + " waited more than " +
                     std::to_string(timeout) + " s for " + what +
                     " (a peer rank is missing from the collective, or passed different "
                     "arguments; see SHANCOLL_TIMEOUT)");
}

}  // namespace shancoll
