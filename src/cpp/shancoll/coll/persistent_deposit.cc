// What the persistent deposit engines share (persistent_deposit.h).
#include "shancoll/coll/persistent_deposit.h"

#include <algorithm>

namespace shancoll {

bool combine_deposited_chunk(const DepositAreas& areas, const Reducer& reducer, int me, int size,
                             std::uint64_t run, std::size_t c, std::size_t bytes,
                             const std::byte* own, std::byte* out,
                             std::vector<const std::byte*>& inputs, std::byte* tmp) {
  const std::size_t at = c * kDepositChunk, n = std::min(kDepositChunk, bytes - at);
  for (int k = 1; k < size; ++k) {  // the next rank's first: no hot spot
    const int peer = (me + k) % size;
    const std::byte* theirs = areas.chunk(peer, run, c, bytes, "count");
    if (!theirs) return false;
    inputs[peer] = theirs;
  }
  inputs[me] = own + at;
  const auto count = static_cast<std::int64_t>(n / reducer.elem_size());
  reducer.combine(out + at, inputs[0], inputs[1], count, tmp);
  for (int r = 2; r < size; ++r) reducer.combine(out + at, out + at, inputs[r], count, tmp);
  return true;
}

}  // namespace shancoll
