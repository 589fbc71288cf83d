#include "shancoll/on_error.h"

#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "shancoll/environment.h"
#include "shancoll/error.h"

namespace shancoll {
namespace {

constexpr int kUnset = -1;
std::atomic<int> g_explicit{kUnset};  // set_on_error's choice, an OnError, or kUnset
std::atomic<void (*)()> g_abort_hook{nullptr};

bool parse(const std::string& text, OnError& mode) {
  if (text == "raise") return mode = OnError::raise, true;
  if (text == "abort") return mode = OnError::abort, true;
  return false;
}

}  // namespace

OnError on_error() {
  const int chosen = g_explicit.load(std::memory_order_relaxed);
  if (chosen != kUnset) return static_cast<OnError>(chosen);
  OnError mode = OnError::raise;
  parse(environment().on_error, mode);
  return mode;
}

const char* on_error_name(OnError mode) { return mode == OnError::abort ? "abort" : "raise"; }

void set_on_error(const std::string& mode) {
  if (mode.empty()) {
    g_explicit.store(kUnset, std::memory_order_relaxed);
    return;
  }
  OnError parsed;
  if (!parse(mode, parsed))
    throw ArgumentError("on_error: expected 'raise', 'abort' or None (SHANCOLL_ON_ERROR), got '" +
                        mode + "'");
  g_explicit.store(static_cast<int>(parsed), std::memory_order_relaxed);
}

void check_on_error() {
  if (g_explicit.load(std::memory_order_relaxed) != kUnset) return;
  const std::string& text = environment().on_error;
  OnError parsed;
  if (!text.empty() && !parse(text, parsed))
    throw ArgumentError("SHANCOLL_ON_ERROR: expected 'raise' or 'abort', got '" + text + "'");
}

void on_failure(const char* collective, const char* algorithm, const char* what) {
  if (on_error() != OnError::abort) return;
  int rank = -1, initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // One write of one line, so that the lines of several ranks do not mix.
  const std::string line = "shancoll: rank " + std::to_string(rank) + ": " + collective +
                           " (algorithm " + (*algorithm ? algorithm : "?") +
                           ") failed, aborting the job (on_error=abort): " + what + "\n";
  if (void (*hook)() = g_abort_hook.load()) hook();
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(nullptr);  // every C stream, stderr included
  // The launcher forwards the line through its own proxies, and MPI_Abort
  // makes it kill every process: without a pause the line was lost in about
  // 1 run of 8 (MPICH's hydra, 2 ranks). A job that aborts can spare 0.2 s.
  const timespec pause{0, 200 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  if (initialized && !finalized) PMPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);  // MPI_Abort returned, or MPI is not running
}

void set_abort_hook(void (*hook)()) { g_abort_hook.store(hook); }

}  // namespace shancoll
