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
// an algorithm that combines in tree order).
const BcastAlgorithm& find_bcast(const std::string& name);
const ReduceAlgorithm& find_reduce(const std::string& name, const ReduceArgs& args);

}  // namespace shancoll
