#include <cstring>
#include <string>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/cost.h"
#include "shancoll/pattern/nway_dissemination.h"

namespace shancoll {

void copy_input(const AllreduceArgs& args) {
  if (args.send && args.send != args.recv && args.count > 0)
    local_copy(args.recv, args.send, static_cast<std::size_t>(args.bytes()));
}

int default_ports(const char* algorithm, int size) {
  // nway_dissemination: the smallest n with a 5-tuple (the paper's choice);
  // dissemination and bruck: one port, the papers' 2-way baselines.
  if (std::string(algorithm) == "nway_dissemination")
    return pattern::nway_smallest_adaptable_n(size);
  return 1;
}

}  // namespace shancoll
