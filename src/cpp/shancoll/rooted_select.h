// The bcast and reduce registries: one name per algorithm (file suffix,
// registry key, SHANCOLL_BCAST_ALGORITHM / SHANCOLL_REDUCE_ALGORITHM, Python
// algorithm=) and the rule behind "auto".
#pragma once

#include <string>
#include <vector>

#include "shancoll/coll/rooted.h"

namespace shancoll {

struct BcastAlgorithm {
  const char* name;
  BcastFn fn;
  const char* summary;
};

struct ReduceAlgorithm {
  const char* name;
  ReduceFn fn;
  bool rank_order;  // combines in rank order: non-commutative ops allowed
  const char* summary;
};

const std::vector<BcastAlgorithm>& bcast_algorithms();
const std::vector<ReduceAlgorithm>& reduce_algorithms();

// Resolve a name ("auto", or the environment variable when empty); throw
// ArgumentError naming `algorithm` (unknown) or `op` (non-commutative op on
// an algorithm that combines in tree order). "auto" consults the active rule
// table (rules.h) for a call on `ranks` ranks and `nodes` nodes (<= 0: not
// known), else the built-in rule.
const BcastAlgorithm& find_bcast(const std::string& name, std::int64_t bytes, int ranks, int nodes);
const ReduceAlgorithm& find_reduce(const std::string& name, const ReduceArgs& args, int ranks,
                                   int nodes);

// "auto" of each, pure (no communication).
std::string choose_bcast(std::int64_t bytes, int ranks, int nodes);
std::string choose_reduce(std::int64_t bytes, bool commutative, int ranks, int nodes);

}  // namespace shancoll
