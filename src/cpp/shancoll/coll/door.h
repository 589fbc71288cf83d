// What every collective's door (coll/<coll>/<coll>.cc) does alike: start
// from the call's options or the defaults, and run the chosen algorithm
// under Comm::run, recording what ran for last_stats.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "shancoll/call_options.h"
#include "shancoll/coll/check.h"
#include "shancoll/comm.h"
#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/rules.h"

namespace shancoll {

// The call's options (completed by the front end), else the collective's
// defaults (SHANCOLL_<COLL>_OPTIONS).
inline const CallOptions& options_or_defaults(const CallOptions* given, Collective c) {
  return given ? *given : default_options(c);
}

// The name to run: the caller's, else (none or "auto") the environment's,
// else "auto".
inline std::string_view requested(std::string_view given, const std::string& from_environment) {
  if (!given.empty() && given != "auto") return given;
  return from_environment.empty() ? std::string_view("auto") : std::string_view(from_environment);
}

// release_gather's options name what release_gather does: with another
// algorithm asked for by name they would be silently ignored.
inline void check_release_gather_keys(const CallOptions& o, std::string_view algorithm) {
  if (!o.release_gather_keys.empty() && algorithm != "auto" && algorithm != "release_gather")
    throw ArgumentError("algorithm: options " + o.release_gather_keys +
                        " belong to release_gather, not '" + std::string(algorithm) + "'");
}

// ArgumentError naming `root` unless it is a rank of `comm`.
inline void check_root(const Comm& comm, int root) {
  if (root < 0 || root >= comm.size())
    throw ArgumentError("root: must be a rank of the communicator (0.." +
                        std::to_string(comm.size() - 1) + "), got " + std::to_string(root));
}

// Checked mode (coll/check.h), first thing in a door: the ranks compare
// their calls before any of them refuses its own arguments alone (a rank's
// bad count is then every rank's "disagree on the count"). A timeout waiting
// for the others breaks the communicator, as in any collective.
inline void verify_agreement(MPI_Comm user, const CallOptions& co, const CallShape& shape) {
  if (!co.check) return;
  const double timeout = co.resolved().timeout;
  Comm& comm = Comm::of(user, timeout);
  const std::string collective(shape.collective);
  comm.run({collective.c_str(), "check"}, [&] { check_agreement(comm, shape, timeout); });
}

// For `auto` on a call that gave no options of its own: the options of the
// rule that chose `algorithm` (rules.h), when it has some; `o` is left alone
// otherwise. `topo` is null when the call named its algorithm.
inline void take_rule_options(Options& o, const CallOptions* given, const Topology* topo,
                              const char* coll, std::int64_t bytes, const char* algorithm) {
  if (!topo || given) return;
  if (const CallOptions* r = rule_options(coll, bytes, topo->size, topo->node_count, algorithm))
    o = r->resolved();
}

// Runs body(stats) as `collective` with `algorithm` (Comm::run: a failure
// breaks the communicator, SHANCOLL_ON_ERROR) and records the statistics.
template <class C, class F>
auto run_recorded(C& comm, const char* collective, const char* algorithm, F&& body) {
  Stats stats;
  if constexpr (std::is_void_v<decltype(body(stats))>) {
    comm.run({collective, algorithm}, [&] { body(stats); });
    comm.last_stats = stats;
    comm.last_algorithm = algorithm;
  } else {
    auto result = comm.run({collective, algorithm}, [&] { return body(stats); });
    comm.last_stats = stats;
    comm.last_algorithm = algorithm;
    return result;
  }
}

}  // namespace shancoll
