// The PMPI library's persistent requests that shancoll runs: a process-wide
// table from the MPI library's handle (the inactive persistent request that
// MPI_<Coll>_init made and handed to the program) to shancoll's request.
//
// Cost when no request is routed (the common case): every interposed
// completion call reads the count of routed requests (one relaxed atomic
// load) and branches to the PMPI_ function. Otherwise a lookup hashes the
// handle and reads at most `probes_` slots (acquire loads), no lock.
//
// Threads (docs/design.md, "Threads"): a routed request is used by one
// thread at a time (MPI's rule for any request), so its fields need no lock;
// inserts and erases (at _init and MPI_Request_free, slow paths) take a
// mutex; lookups take none. A slot's handle is stored last (release) at
// insert and cleared first at erase, before the library frees the handle and
// may give it to another request: a lookup never mistakes a new library
// request for a routed one.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

#include "shancoll.h"

namespace shancoll::pmpi {

// One routed persistent request.
struct Routed {
  std::atomic<MPI_Request> handle{MPI_REQUEST_NULL};  // MPI_REQUEST_NULL: a free slot
  shancoll_request request = SHANCOLL_REQUEST_NULL;
  MPI_Comm comm = MPI_COMM_NULL;  // its error handler reports failures
  const char* collective = "";    // "MPI_Allreduce_init", ...
  double timeout = 0;             // of shancoll's waits on it (SHANCOLL_TIMEOUT)
  std::int64_t bytes = 0;         // for the summary
  double started = 0;             // for the summary
  char algorithm[48] = "";        // shancoll's, for the summary
  bool active = false;            // started and not yet completed by a completion call
};

class RoutedTable {
 public:
  static constexpr int kSlotBits = 10;
  static constexpr std::size_t kSlots = std::size_t{1} << kSlotBits;

  // The routed request of `handle`, or null. The fast path of every
  // interposed completion call: one relaxed load and a branch when empty.
  Routed* find(MPI_Request handle) {
    if (count_.load(std::memory_order_relaxed) == 0) return nullptr;
    return lookup(handle);
  }
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }

  // A free slot for `handle`, filled by `fill` before the handle is
  // published; null when the table is full.
  template <class Fill>
  Routed* insert(MPI_Request handle, Fill&& fill) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t home = slot_of(handle);
    for (std::size_t i = 0; i < kSlots; ++i) {
      Routed& r = slots_[(home + i) % kSlots];
      if (r.handle.load(std::memory_order_relaxed) != MPI_REQUEST_NULL) continue;
      fill(r);
      if (i + 1 > probes_.load(std::memory_order_relaxed))
        probes_.store(i + 1, std::memory_order_relaxed);
      r.handle.store(handle, std::memory_order_release);
      count_.fetch_add(1, std::memory_order_relaxed);
      return &r;
    }
    return nullptr;
  }

  // Before the library frees the handle (the header).
  void erase(Routed& r) {
    std::lock_guard<std::mutex> lock(mutex_);
    r.handle.store(MPI_REQUEST_NULL, std::memory_order_release);
    r.request = SHANCOLL_REQUEST_NULL;
    r.active = false;
    count_.fetch_sub(1, std::memory_order_relaxed);
  }

  bool full() {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_.load(std::memory_order_relaxed) == kSlots;
  }

 private:
  static std::size_t slot_of(MPI_Request handle);
  Routed* lookup(MPI_Request handle);

  std::atomic<std::size_t> count_{0};
  std::atomic<std::size_t> probes_{0};  // the longest probe of any insert so far
  std::mutex mutex_;
  std::array<Routed, kSlots> slots_;
};

// A global, not a function's static: the fast path reads its count with no
// initialisation guard.
extern RoutedTable g_routed;

}  // namespace shancoll::pmpi
