#include "shancoll/shm/inline_lines.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "shancoll/error.h"

namespace shancoll {

// Per local rank: its counter line, then its data slots.
InlineLines::InlineLines(const Topology& topo, int slots, const double& timeout)
    : segment_(topo.node_comm, topo.node_comm, timeout), slots_(static_cast<std::size_t>(slots)) {
  segment_.reserve(kCacheLine * (slots_ + 1) * static_cast<std::size_t>(topo.local_size()));
}

std::byte* InlineLines::counter(int local_rank) const {
  return segment_.base() + kCacheLine * (slots_ + 1) * static_cast<std::size_t>(local_rank);
}

std::byte* InlineLines::line(int local_rank, std::uint64_t run) const {
  return counter(local_rank) + kCacheLine * (1 + run % slots_);
}

void InlineLines::write(int local_rank, std::uint64_t run, const void* data,
                        std::size_t bytes) const {
  std::byte* mine = line(local_rank, run);
  if (bytes > 0) std::memcpy(mine + kFlagBytes, data, bytes);
  release_store(mine, inline_flag(run, bytes));  // data before flag
}

const std::byte* InlineLines::read(int local_rank, std::uint64_t run, std::size_t bytes,
                                   const char* what) const {
  const std::byte* theirs = line(local_rank, run);
  const std::uint64_t flag = acquire_load(theirs);
  if (flag < inline_flag(run, 0)) return nullptr;
  if (inline_size(flag) != bytes)
    throw ArgumentError(std::string(what) + ": rank " + std::to_string(local_rank) +
                        " contributes " + std::to_string(inline_size(flag)) +
                        " bytes where this rank expects " + std::to_string(bytes) +
                        " (counts must match on every rank)");
  return theirs + kFlagBytes;
}

void InlineLines::completed(int local_rank, std::uint64_t run) const {
  release_store(counter(local_rank), run);
}

std::uint64_t InlineLines::completed_by(int local_rank) const {
  return acquire_load(counter(local_rank));
}

bool PeerCompletions::reached(const InlineLines& lines, std::uint64_t need) {
  if (lowest_ >= need) return true;
  std::uint64_t lowest = ~std::uint64_t{0};
  for (std::size_t i = 0; i < peers_.size(); ++i) {
    if (seen_[i] < need) seen_[i] = lines.completed_by(peers_[i]);
    lowest = std::min(lowest, seen_[i]);
  }
  lowest_ = lowest;
  return lowest_ >= need;
}

}  // namespace shancoll
