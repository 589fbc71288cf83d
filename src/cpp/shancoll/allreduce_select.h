// The allreduce registry: one name per algorithm (file suffix, registry key,
// SHANCOLL_ALLREDUCE_ALGORITHM, Python algorithm=), what each can do, and the
// rule behind "auto".
#pragma once

#include <string>
#include <vector>

#include "shancoll/coll/allreduce/allreduce.h"

namespace shancoll {

struct AllreduceAlgorithm {
  const char* name;
  AllreduceFn fn;
  ScheduleFn schedule;           // schedule-driven (split-phase capable); nullptr otherwise
  bool (*rank_order)(int size);  // combines in plain rank order: non-commutative ops allowed
  bool (*same_tree)(int size);   // the same expression on every rank: bitwise-identical floats
  const char* summary;
};

const std::vector<AllreduceAlgorithm>& allreduce_algorithms();

// Resolves a name ("auto", or SHANCOLL_ALLREDUCE_ALGORITHM when empty) and
// checks that it can run this op; throws ArgumentError naming `algorithm` or `op`.
// `nodes`: the node count of the call's layout, 0 if unknown.
const AllreduceAlgorithm& find_allreduce(const std::string& name, const AllreduceArgs& args,
                                         int size, int nodes = 0);

// The algorithm of that name ("auto" excluded); throws ArgumentError naming `algorithm`.
const AllreduceAlgorithm& allreduce_algorithm(const std::string& name);

// The rule behind "auto" (nodes: as for find_allreduce).
const char* auto_allreduce(const AllreduceArgs& args, int size, int nodes = 0);
// "auto" for a split-phase call: the same rule among the algorithms that can
// run split-phase (schedule-driven ones).
const char* auto_split_phase(const AllreduceArgs& args, int size);

}  // namespace shancoll
