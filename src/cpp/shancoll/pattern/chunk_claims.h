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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

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

// A claim begins on a whole page of its block (claim_bounds).
constexpr std::size_t kClaimPage = 4096;

// Where the chunks of a block of `bytes` begin, then its end: the taker's
// front part [0, cut) and the giver's back part [cut, bytes) (`cut` rounded
// to whole pages), each in as few chunks of at most `largest` bytes as it
// needs, alike in size and in whole pages; a block under `unsplit` bytes is
// one chunk. Claimed from both ends, where both ranks are there each takes
// its own part (whole, when it fits in a claim: one system call).
inline std::vector<std::size_t> claim_bounds(std::size_t bytes, std::size_t cut,
                                             std::size_t largest, std::size_t unsplit) {
  std::vector<std::size_t> bounds{0};
  if (bytes < unsplit) {
    bounds.push_back(bytes);
    return bounds;
  }
  cut = std::min(bytes, (cut + kClaimPage / 2) / kClaimPage * kClaimPage);
  for (const std::size_t end : {cut, bytes}) {
    const std::size_t begin = bounds.back(), length = end - begin;
    if (length == 0) continue;
    const std::size_t chunks = (length + largest - 1) / largest;
    const std::size_t chunk = (length / chunks + kClaimPage - 1) / kClaimPage * kClaimPage;
    for (std::size_t at = begin + chunk; at < end; at += chunk) bounds.push_back(at);
    bounds.push_back(end);
  }
  return bounds;
}

}  // namespace shancoll::pattern
