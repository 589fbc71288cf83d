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
// "auto" consults the active rule table (rules.h), then the built-in rule,
// which goes through shared memory when nodes == 1; nodes <= 0: not known.
const AllreduceAlgorithm& find_allreduce(const std::string& name, const AllreduceArgs& args,
                                         int size, int nodes = 0);

// What a call needs of an algorithm, as far as "auto" is concerned.
struct AllreduceNeeds {
  std::int64_t count = 0, bytes = 0;
  bool commutative = true;
  bool inexact = false;    // floating point
  bool consistent = true;  // the same bits on every rank required
};
AllreduceNeeds allreduce_needs(const AllreduceArgs& args);

// Can `a` run such a call at `size` ranks, as "auto" understands it (rank
// order for a non-commutative op, the same bits everywhere for consistent
// floating point, ring only with an element per rank)?
bool allreduce_allowed(const AllreduceAlgorithm& a, const AllreduceNeeds& needs, int size);

// "auto": the active rule table if it names an allowed algorithm, else the
// built-in rule. Pure: no communication.
std::string choose_allreduce(const AllreduceNeeds& needs, int size, int nodes);

// The algorithm of that name ("auto" excluded); throws ArgumentError naming `algorithm`.
const AllreduceAlgorithm& allreduce_algorithm(const std::string& name);

// The built-in rule behind "auto" (no rule table: shan's inner step and
// split-phase calls use it as it is).
const char* auto_allreduce(const AllreduceArgs& args, int size);
// "auto" for a split-phase call: the same rule among the algorithms that can
// run split-phase (schedule-driven ones).
const char* auto_split_phase(const AllreduceArgs& args, int size);

}  // namespace shancoll
