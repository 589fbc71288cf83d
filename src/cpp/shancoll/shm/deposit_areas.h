// The areas of a persistent deposit engine (allreduce, bcast of more than
// 56 bytes on one node: coll/persistent_deposit.h): the large-message
// counterpart of shm/inline_lines.h. A node segment of the request's own,
// made at _init and sized for the call, holds per local rank
//   - one counter line: the last run the rank completed (what the rooted
//     engines wait for before a slot is written again);
//   - `slots` areas used in turn (run mod slots), each of `bytes` (the
//     largest deposit, the same on every rank) in chunks of kDepositChunk,
//     with one flag line per chunk holding the run whose data the chunk
//     holds; chunk 0's line also holds the deposit's bytes, so that a reader
//     whose count differs sees the writer's.
// A start deposits the rank's input (write: every chunk copied, then its
// flag), so that no peer ever needs its owner again for that run: what the
// PMPI library's routing asks (capi/pmpi_persistent.cc). Readers take the
// chunks as their flags come: a reader copies chunk c while the writer
// copies chunk c + 1.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shancoll/shm/flags.h"
#include "shancoll/shm/segment.h"
#include "shancoll/topology.h"

namespace shancoll {

// Small enough that a reader follows the writer closely (16 chunks at 512
// KiB), large enough that a flag costs nothing beside its copy.
constexpr std::size_t kDepositChunk = 32 * 1024;

// Chunks of a deposit of `bytes` (at least one: a deposit of no bytes still
// says that the run started).
constexpr std::size_t deposit_chunks(std::size_t bytes) {
  return bytes == 0 ? 1 : (bytes + kDepositChunk - 1) / kDepositChunk;
}

// The largest of the local ranks' `bytes` (collective over the node): what
// the areas are sized for, the same layout on every rank even where an
// erroneous program's counts differ (chunk 0's bytes then tell the
// readers), and what an engine's size bound is decided on, so that every
// rank makes the engine or none does.
std::size_t node_largest(const Topology& topo, std::size_t bytes);

class DepositAreas {
 public:
  // Collective over the node (the segment's handshake, `timeout`); `bytes`:
  // the largest deposit of any local rank.
  DepositAreas(const Topology& topo, int slots, std::size_t bytes, const double& timeout);

  // Copies `bytes` of `data` into this rank's area of `run`, chunk by
  // chunk, each chunk's flag after its data.
  void write(int local_rank, std::uint64_t run, const void* data, std::size_t bytes) const;
  // Chunk `c` of `local_rank`'s deposit of `run` once written, else null;
  // ArgumentError naming `what` (the counts argument) when the writer's
  // bytes differ from `bytes` (erroneous in MPI: counts that differ).
  const std::byte* chunk(int local_rank, std::uint64_t run, std::size_t c, std::size_t bytes,
                         const char* what) const;
  // `local_rank`'s area of `run` (its own deposit, read back in place).
  const std::byte* area(int local_rank, std::uint64_t run) const;

  // The rank's counter line: the last run it completed (release: its reads
  // of that run's areas come before).
  void completed(int local_rank, std::uint64_t run) const;
  std::uint64_t completed_by(int local_rank) const;
  // Whether local ranks `next` .. `end` - 1, but `except`, have all
  // completed run `need` (a writer's wait before its next start writes over
  // the areas they read); `next` keeps where a false return stopped, so
  // that each counter line is read until it holds, and no more.
  bool all_completed(int& next, int end, int except, std::uint64_t need) const;

 private:
  std::byte* counter(int local_rank) const;
  std::byte* flag(int local_rank, std::uint64_t run, std::size_t c) const;

  NodeSegment segment_;
  std::size_t slots_, chunks_, area_bytes_, flag_bytes_, rank_bytes_;
};

}  // namespace shancoll
