// RingStores: how a writer stores its chunks into a ring that another core
// reads (the pair channels, shan allgatherv's ring, release_gather's bcast
// slots and reduce leaves' slots, allreduce pieces' regions): by plain
// stores (memcpy) or around the cache (cost.h, stream_copy), whichever its
// own stores show to be faster, chunk by chunk.
//
// Why it cannot be a rule-table choice: a ring line crosses between the
// cores twice a lap (pulled by the reader, taken back by the writer's next
// store), so a plain writer's speed follows the distance between the two
// cores, and on the VMs this project runs on that distance changes every few
// seconds to minutes (the host moves the vCPUs: a cache-line round trip of
// 0.11 us "near", 0.5-1.7 us "far"). Measured in a plain-C lab on the Zen 3
// VM, 64 KiB chunks of full-duplex 1 MiB streams through a 256 KiB ring (16
// jobs, benchmarks/results/peers/zen3/session18/lab-stores.txt):
//
//   per chunk        writer's copy in     reader's copy out    1 MiB both ways
//   near, plain          3.1-5.3 us           2.5-5.0 us          97-168 us
//   near, streamed       3.6-5.1 us           5.4-9.6 us         165-293 us
//   far,  plain         11.7-20.1 us          5.4-7.5 us         298-450 us
//   far,  streamed       3.1-4.4 us           4.6-7.8 us         137-206 us
//
// Streamed, the writer's time does not depend on the distance; plain, it is
// 0.8-1.2x the streamed time near and 3-6x far. So the writer keeps the
// recent time per byte of both ways (StoreChoice), streams while plain costs
// more than kStreamWhenSlower (2) times streamed, and tries the other way
// every kTryEvery-th (64th) chunk to follow the distance. The reader cannot
// tell how the bytes came, so no rank needs to agree with another. Chunks
// under kTimedBytes are copied plainly and not timed (their cost is the
// flags'). Why 2: with 1.3, some near jobs streamed and lost 15-25 % at
// 1 MiB (session18/ring-ways-1.3.txt). With 4 MiB blocks (sources beyond
// the L2) far plain stores cost only 1.0-4.9x streamed ones in one job:
// some such calls stay plain.
// Not thread-safe: one writer's state, per ring.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace shancoll {

// SHANCOLL_RING_STORES: "auto" (or unset) chooses as above; "plain" and
// "streamed" fix the way (measurements, and a machine where the timing
// misleads). Set when the environment is read (environment.cc): read
// without a lock on every chunk, so written only by a configuration call
// (reload_environment(), with no thread inside shancoll), like
// stream_copy_from (cost.h).
enum class RingStoresWay { automatic, plain, streamed };
extern RingStoresWay ring_stores_way;
const char* ring_stores_name(RingStoresWay way);  // "auto", "plain", "streamed"
// The way named by `text` ("" is auto); false if it names none.
bool parse_ring_stores(const std::string& text, RingStoresWay* way);

// Bytes this thread's ring writers stored around the cache, ever: the doors
// count a call's as the difference (Stats::streamed_ring_bytes).
std::int64_t ring_streamed_bytes_so_far();

// The choice alone, fed each timed copy's time (tests feed it their own).
class StoreChoice {
 public:
  enum Way { kPlain = 0, kStreamed = 1 };
  static constexpr double kStreamWhenSlower = 2.0;
  static constexpr std::uint32_t kTryEvery = 64;
  static constexpr int kSamples = 3;

  // The way of the next chunk: each way once at first, then the faster,
  // and the other every kTryEvery-th chunk.
  Way next() {
    if (samples_[kPlain][0] == 0) return kPlain;
    if (samples_[kStreamed][0] == 0) return kStreamed;
    const bool try_other = ++chosen_ % kTryEvery == 0;
    return streaming_ != try_other ? kStreamed : kPlain;
  }

  void record(Way way, double ns_per_byte) {
    int& at = next_sample_[way];
    samples_[way][static_cast<std::size_t>(at)] = ns_per_byte;
    at = (at + 1) % kSamples;
    if (samples_[kStreamed][0] > 0)
      streaming_ = recent(kPlain) > kStreamWhenSlower * recent(kStreamed);
  }

  bool streaming() const { return streaming_; }

 private:
  // The smallest of the way's last kSamples (a preempted copy only ever
  // looks slower).
  double recent(Way way) const {
    double best = 0;
    for (double s : samples_[way])
      if (s > 0 && (best == 0 || s < best)) best = s;
    return best;
  }

  std::array<std::array<double, kSamples>, 2> samples_{};  // ns per byte; 0: none yet
  std::array<int, 2> next_sample_{};
  std::uint32_t chosen_ = 0;
  bool streaming_ = false;
};

class RingStores {
 public:
  // Chunks under this are copied plainly and not timed.
  static constexpr std::size_t kTimedBytes = 8 << 10;

  // Copies `bytes` from `src` into the ring at `dst`, fenced when streamed
  // (visible before the ready flag the caller raises next).
  void copy(void* dst, const void* src, std::size_t bytes);

 private:
  StoreChoice choice_;
};

}  // namespace shancoll
