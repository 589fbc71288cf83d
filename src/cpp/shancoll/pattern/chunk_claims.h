// The claim word of a persistent single-copy run (coll/persistent_single_copy.h):
// pure arithmetic, no atomics, unit-tested (tests/cpp/pattern_tests.cc).
//
// Two ranks share the chunks of a run: one claims from the front (chunk 0,
// 1, ...), the other from the back (chunk c - 1, c - 2, ...), until the two
// meet. Where both are there each takes the same chunks in every run, so
// the lines each writes stay in its own core's cache; a rank that is alone
// takes every chunk. The word is [run mod 2^16 | claimed from the front |
// claimed from the back], 16, 24 and 24 bits; a word of another run counts
// as none claimed (the caller claims run k only once run k - 1 is done).
#pragma once

#include <cstdint>

namespace shancoll::pattern {

constexpr std::uint64_t kClaimCountMask = (std::uint64_t{1} << 24) - 1;
constexpr std::uint64_t kMaxClaimedChunks = kClaimCountMask;  // chunks per run, at most

struct ChunkClaim {
  bool claimed = false;     // false: every chunk of the run is taken
  std::uint64_t word = 0;   // the word after this claim
  std::uint64_t chunk = 0;  // the chunk claimed
};

// The claim that follows `word` for run `run` of `chunks` chunks.
constexpr ChunkClaim next_chunk_claim(std::uint64_t word, std::uint64_t run, std::uint64_t chunks,
                                      bool from_back) {
  const std::uint64_t tag = (run & 0xffff) << 48;
  const bool this_run = (word >> 48) == (run & 0xffff);
  const std::uint64_t front = this_run ? word >> 24 & kClaimCountMask : 0;
  const std::uint64_t back = this_run ? word & kClaimCountMask : 0;
  if (front + back >= chunks) return {};
  return {true, tag | (front + !from_back) << 24 | (back + from_back),
          from_back ? chunks - 1 - back : front};
}

}  // namespace shancoll::pattern
