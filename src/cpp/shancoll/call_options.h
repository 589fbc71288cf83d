// The options of a collective call, parsed once, from one description.
//
// Every option of every collective is one row of the option table
// (call_options.cc): its name, the kind of value it takes, its lowest value
// and the collectives that take it. Python keywords (the bindings turn each
// keyword's value into an OptionValue), the C API's "key=value,..." strings
// and the environment's SHANCOLL_<COLL>_OPTIONS all go through
// CallOptions::set, so that a key means the same thing, and is refused in
// the same words, in every front end. complete() then checks the options as a
// whole; the collectives' doors call it before any communication, so a
// refusal is the same on every rank and leaves nothing half done.
//
// Precedence: the built-in defaults, then SHANCOLL_<COLL>_OPTIONS, then the
// call's own options (a key given in the call wins over the variable's).
// Release/gather's per-phase tree keys (bcast_tree, reduce_k, ...) win over
// the plain ones (tree, k, ...) in whatever order they are given.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "shancoll/coll/release_gather/release_gather.h"
#include "shancoll/options.h"

namespace shancoll {

// Every collective of the doors (coll/<coll>/<coll>.h).
enum class Collective : unsigned {
  allgather,
  allgatherv,
  allreduce,
  iallreduce,
  bcast,
  reduce,
  intergroup,  // allgather(v) on an inter-communicator
  barrier,
  scan,
  exscan,
  reduce_scatter,
  reduce_scatter_block,
  alltoall,
  alltoallv,
  gather,
  gatherv,
  scatter,
  scatterv,
};
constexpr int kCollectives = 18;
const char* collective_name(Collective c);

// A value as a front end hands it over: Python's bool, int, float, str or
// list of ints; the C API's text, parsed by the option's kind.
using OptionValue = std::variant<bool, std::int64_t, double, std::string, std::vector<int>>;

// The tree keys of one release/gather phase as given (unset: not given).
struct TreeKeys {
  std::string tree;  // "" not given
  int k = 0;         // 0 not given
  int skew = -2;     // -2 not given; else RgTreeOptions::skew
  int topology = -2;
};

struct CallOptions {
  Options options;  // timeout, ranks_per_node, block_size, transport
  ReleaseGatherOptions release_gather;
  int ports = 0;                    // allreduce: n of the dissemination family (0 chooses)
  bool consistent = true;           // allreduce: bitwise-identical floating-point results
  std::string intra_algorithm;      // intergroup: the intragroup allgatherv ("": auto)
  bool check = false;               // checked mode (coll/check.h); default SHANCOLL_CHECK
  TreeKeys trees[3];                // given tree keys: plain, bcast_, reduce_
  std::string release_gather_keys;  // the release_gather keys given, for messages

  // Sets one option of `collective`; ArgumentError "key: why" when the key
  // is not one of its options or the value does not fit.
  void set(Collective collective, std::string_view key, const OptionValue& value);
  // Sets "key=value,key=value" (the C API's and the environment's form);
  // ArgumentError "<source>: key: why".
  void set_text(Collective collective, std::string_view text, const char* source);
  // Checks the options as a whole and resolves the release/gather trees;
  // ArgumentError naming the option. Pure: no communication.
  void complete();
  // The core's Options, pointing at release_gather (valid while *this lives;
  // null, the shared defaults, when no release_gather key was given),
  // the timeout resolved (0: SHANCOLL_TIMEOUT or its default).
  Options resolved() const;
};

// The options a call of `collective` starts from: the built-in defaults with
// SHANCOLL_<COLL>_OPTIONS applied and completed, read once (reread after
// reload_environment). ArgumentError naming the variable if it is invalid.
// Threads: built once per selection generation under a lock, then read by
// every thread without one (an acquire load); reload_environment and
// set_rules rebuild them, so they must not run while another thread is in
// a call (environment.h).
const CallOptions& default_options(Collective collective);

// The names of `collective`'s options, comma-separated (for messages and docs).
std::string option_names(Collective collective);

}  // namespace shancoll
