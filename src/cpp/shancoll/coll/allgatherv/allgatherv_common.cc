#include <algorithm>
#include <cstring>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/cost.h"

namespace shancoll {

std::int64_t AllgathervArgs::extent() const {
  std::int64_t e = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > 0) e = std::max(e, displs[r] + counts[r]);
  }
  return e;
}

std::int64_t AllgathervArgs::total() const {
  std::int64_t t = 0;
  for (std::int64_t c : counts) t += c;
  return t;
}

void copy_own_block(const Comm& comm, const AllgathervArgs& args) {
  const int r = comm.rank();
  if (args.send && args.counts[r] > 0) {
    local_copy(args.recv + args.displs[r], args.send, static_cast<std::size_t>(args.counts[r]));
  }
}

}  // namespace shancoll
