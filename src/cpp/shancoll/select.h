// The algorithm registry: one name per algorithm, everywhere (file suffix,
// registry key, environment value, Python algorithm=, CSV column, legend).
// "auto" picks by the size rule in select.cc, fitted from measured sweeps.
#pragma once

#include <string>
#include <vector>

#include "shancoll/coll/allgatherv/allgatherv.h"

namespace shancoll {

struct AllgathervAlgorithm {
  const char* name;
  AllgathervFn fn;
  const char* summary;
};

const std::vector<AllgathervAlgorithm>& allgatherv_algorithms();

// Resolves a name ("auto" included, or SHANCOLL_ALLGATHERV_ALGORITHM when
// name is empty); throws ArgumentError naming the valid choices. "auto"
// looks at the node layout (collective on a communicator's first use).
const AllgathervAlgorithm& find_allgatherv(const std::string& name, const AllgathervArgs& args,
                                           Comm& comm, int ranks_per_node);

// The node count a rule table needs (collective on a communicator's first
// use, then cached per layout; a lookup per call, no copy of the table path).
int rule_nodes(Comm& comm, int ranks_per_node);

// "auto": the active rule table (rules.h), else the built-in rule (measured:
// docs/performance.md). total: bytes of the result; private_recv: false for a
// node-shared result (only shan can give one). Pure: no communication.
std::string choose_allgatherv(std::int64_t total, bool private_recv, int ranks, int nodes);

}  // namespace shancoll
