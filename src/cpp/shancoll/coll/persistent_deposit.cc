// What the persistent deposit engines share (persistent_deposit.h).
#include "shancoll/coll/persistent_deposit.h"

#include <algorithm>
#include <cstring>

#include "shancoll/cost.h"

namespace shancoll {

BlockSpan span_of_blocks(const std::int64_t* counts, const std::int64_t* displs, std::size_t n) {
  std::int64_t lo = -1, hi = 0;
  for (std::size_t r = 0; r < n; ++r) {
    if (counts[r] == 0) continue;
    lo = lo < 0 ? displs[r] : std::min(lo, displs[r]);
    hi = std::max(hi, displs[r] + counts[r]);
  }
  if (lo < 0) return {};
  return {static_cast<std::size_t>(lo), static_cast<std::size_t>(hi - lo)};
}

bool combine_deposited(const DepositAreas& areas, const Reducer& reducer, int me, int ranks,
                       int size, std::uint64_t run, std::size_t c, std::size_t from, std::size_t to,
                       std::size_t bytes, const std::byte* own, std::byte* out,
                       std::vector<const std::byte*>& inputs, std::byte* tmp) {
  for (int k = 1; k < size; ++k) {  // the next rank's first: no hot spot
    const int peer = (me + k) % size;
    if (peer >= ranks) continue;
    const std::byte* theirs = areas.chunk(peer, run, c, bytes, "count");
    if (!theirs) return false;
    inputs[peer] = theirs - c * kDepositChunk;  // the deposit's start
  }
  if (me < ranks) inputs[me] = own;
  if (ranks == 0 || to <= from) return true;
  if (ranks == 1) {
    local_copy(out, inputs[0] + from, to - from);
    return true;
  }
  const auto count = static_cast<std::int64_t>((to - from) / reducer.elem_size());
  reducer.combine(out, inputs[0] + from, inputs[1] + from, count, tmp);
  for (int r = 2; r < ranks; ++r) reducer.combine(out, out, inputs[r] + from, count, tmp);
  return true;
}

}  // namespace shancoll
