#include "shancoll/shm/ring_stores.h"

#include <algorithm>
#include <chrono>

#include "shancoll/cost.h"

namespace shancoll {

RingStoresWay ring_stores_way = RingStoresWay::automatic;

namespace {
thread_local std::int64_t t_streamed = 0;  // ring_streamed_bytes_so_far
}

std::int64_t ring_streamed_bytes_so_far() { return t_streamed; }

const char* ring_stores_name(RingStoresWay way) {
  return way == RingStoresWay::plain      ? "plain"
         : way == RingStoresWay::streamed ? "streamed"
                                          : "auto";
}

bool parse_ring_stores(const std::string& text, RingStoresWay* way) {
  if (text.empty() || text == "auto") return *way = RingStoresWay::automatic, true;
  if (text == "plain") return *way = RingStoresWay::plain, true;
  if (text == "streamed") return *way = RingStoresWay::streamed, true;
  return false;
}

namespace {
void stream_into_ring(void* dst, const void* src, std::size_t bytes) {
  stream_copy(dst, src, bytes);
  t_streamed += static_cast<std::int64_t>(bytes);
}
}  // namespace

void RingStores::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes < kTimedBytes || ring_stores_way == RingStoresWay::plain)
    return local_copy(dst, src, bytes);
  if (ring_stores_way == RingStoresWay::streamed) return stream_into_ring(dst, src, bytes);
  const StoreChoice::Way way = choice_.next();
  const auto start = std::chrono::steady_clock::now();
  if (way == StoreChoice::kStreamed)
    stream_into_ring(dst, src, bytes);
  else
    local_copy(dst, src, bytes);
  const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
  choice_.record(way, std::max(took.count(), 1.0) / static_cast<double>(bytes));
}

}  // namespace shancoll
