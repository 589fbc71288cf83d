// The SHANCOLL_* environment variables, read once at the first call that
// needs one (like an MPI library's control variables), not on every call:
// getenv scans the whole environment, and an `auto` allreduce needed four of
// them, about a tenth of a small call. reload_environment() reads them again
// (shancoll.reload_environment()); it must not run during a collective.
//
// Threads: environment() is read on every call without a lock, so
// reload_environment() is a configuration call (like set_rules): no thread
// of the process may be inside shancoll while it runs. environment_value()
// and the selection generation are safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace shancoll {

struct Environment {
  int ranks_per_node = 0;  // SHANCOLL_RANKS_PER_NODE; 0: the physical nodes
  double timeout = 120;    // SHANCOLL_TIMEOUT, seconds per wait
  std::string rules;       // SHANCOLL_RULES; empty: not set
  std::string kernels;     // SHANCOLL_KERNELS; empty: the widest set the CPU runs
  std::string on_error;    // SHANCOLL_ON_ERROR (on_error.h); empty: raise
  bool check = false;      // SHANCOLL_CHECK=1: checked mode (coll/check.h)
  // SHANCOLL_STREAM_COPY: local copies of at least this many bytes stream
  // (cost.h; SHANCOLL_STREAM_COPY=0: never), else half the largest cache
  // in sysfs, else never (the largest size_t).
  std::size_t stream_copy_from = 0;
  // SHANCOLL_RING_STORES: how ring writers store their chunks
  // (shm/ring_stores.h): "auto" (by their own timings), "plain", "streamed";
  // empty: auto.
  std::string ring_stores;
  std::string allgather;   // SHANCOLL_<COLL>_ALGORITHM; empty: auto (allgather:
  std::string allgatherv;  // allgatherv's)
  std::string allreduce;
  std::string iallreduce;
  std::string bcast;
  std::string barrier;
  std::string scan;
  std::string exscan;
  std::string reduce_scatter;
  std::string reduce_scatter_block;
  std::string reduce;
  std::string intergroup;
  std::string alltoall;  // alltoallv's when empty
  std::string alltoallv;
  std::string gather;  // SHANCOLL_GATHER_ALGORITHM; empty: gatherv's
  std::string gatherv;
  std::string scatter;  // empty: scatterv's
  std::string scatterv;
  // SHANCOLL_I<COLL>_ALGORITHM of the request forms (iallreduce: above), by
  // collective ("bcast", "gatherv", ...); only the variables that are set.
  std::map<std::string, std::string, std::less<>> requests;
};

const Environment& environment();
// Reads them again; ArgumentError naming SHANCOLL_ON_ERROR or
// SHANCOLL_RING_STORES if it is invalid (the new values are in effect all
// the same).
void reload_environment();

// ArgumentError naming the first variable whose value names nothing
// (SHANCOLL_ON_ERROR, SHANCOLL_RING_STORES): at the first call on a
// communicator, before any communication, and at reload_environment().
void check_environment();

// The algorithm a call runs by name: `requested`, else the environment's
// SHANCOLL_<COLL>_ALGORITHM (`from_environment`), else "auto".
const std::string& algorithm_name(const std::string& requested,
                                  const std::string& from_environment);

// "SHANCOLL_IBCAST_ALGORITHM" for "bcast": the variable of a request's
// algorithm, for messages.
std::string request_algorithm_variable(std::string_view collective);
// Whether `collective` has request forms with such a variable (every
// collective but allreduce, whose iallreduce has its own).
bool is_request_collective(std::string_view collective);

// Any other variable (the C API's per-collective ones), read once like the
// rest; "" when unset. `name` must be a string literal: it is cached by address.
const char* environment_value(const char* name);

// Changes whenever what `auto` may choose can change (a reload, set_rules):
// choices cached under an older value are stale.
std::uint64_t selection_generation();
void bump_selection_generation();

}  // namespace shancoll
