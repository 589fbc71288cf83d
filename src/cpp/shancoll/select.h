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
// name is empty); throws ArgumentError naming the valid choices.
const AllgathervAlgorithm& find_allgatherv(const std::string& name, const AllgathervArgs& args,
                                           int comm_size);

}  // namespace shancoll
