// The lines of a persistent inline engine (allreduce, bcast, reduce,
// allgather(v) of at most 56 bytes per rank on one node): a node segment of
// the request's own, made at _init, holding per local rank
//   - `slots` data lines used in turn (run mod slots): the run's flag, then
//     up to 56 bytes of data, so that a reader's wait and read are one
//     line transfer;
//   - one counter line: the last run the rank completed, which the rooted
//     engines read (rarely) to know when a slot may be written again.
// A flag holds inline_flag(run, bytes) (shm/flags.h): runs only grow, so no
// reset, and a reader whose own count differs sees the writer's.
// Why a given number of slots suffices is each engine's argument (its
// .cc's header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "shancoll/shm/flags.h"
#include "shancoll/shm/segment.h"
#include "shancoll/topology.h"

namespace shancoll {

// Where the lines serve: one node of several ranks, at most 56 bytes per rank.
inline bool inline_lines_fit(const Topology& topo, std::int64_t bytes) {
  return topo.node_count == 1 && topo.local_size() > 1 && bytes >= 0 &&
         bytes <= static_cast<std::int64_t>(kInlineBytes);
}

class InlineLines {
 public:
  // Collective over the node (the segment's handshake, `timeout`).
  InlineLines(const Topology& topo, int slots, const double& timeout);

  // Writes this rank's data of `run` (at most 56 bytes), then its flag.
  void write(int local_rank, std::uint64_t run, const void* data, std::size_t bytes) const;
  // `local_rank`'s data of `run` once written, else null; ArgumentError
  // naming `what` (the counts argument) when the writer's bytes differ from
  // `bytes` (erroneous in MPI: counts that differ between ranks).
  const std::byte* read(int local_rank, std::uint64_t run, std::size_t bytes,
                        const char* what) const;

  // The rank's counter line: the last run it completed (release: its reads
  // of that run's lines come before).
  void completed(int local_rank, std::uint64_t run) const;
  std::uint64_t completed_by(int local_rank) const;

 private:
  std::byte* line(int local_rank, std::uint64_t run) const;
  std::byte* counter(int local_rank) const;

  NodeSegment segment_;
  std::size_t slots_;
};

// What a rooted engine's completion of `run` needs from a peer: its
// completion of run + 1 - slots, so that the slot of run + 1 (the one this
// rank writes next, run + 1 - slots's) is free. 0: nothing yet.
inline std::uint64_t slot_free_after(std::uint64_t run, int slots) {
  const auto s = static_cast<std::uint64_t>(slots);
  return run + 1 > s ? run + 1 - s : 0;
}

// The completion counters of the peers whose reads a rooted engine's slot
// reuse waits for, cached: a peer's counter line is read only when the
// cached value is too old, so with peers that keep up, one line transfer
// per peer every slots - 1 runs.
class PeerCompletions {
 public:
  explicit PeerCompletions(std::vector<int> local_ranks)
      : peers_(std::move(local_ranks)), seen_(peers_.size(), 0) {}

  // Whether every peer has completed run `need`.
  bool reached(const InlineLines& lines, std::uint64_t need);

 private:
  std::vector<int> peers_;
  std::vector<std::uint64_t> seen_;  // per peer, the last value read
  std::uint64_t lowest_ = 0;         // of seen_
};

}  // namespace shancoll
