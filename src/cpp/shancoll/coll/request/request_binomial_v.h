// igatherv and iscatterv as binomial schedules (`binomial`): the trees of
// igather and iscatter (pattern/block_rooted.h) with a block size per rank.
// MPI gives the counts to the root alone, so a run has two phases on one
// tag: the root scatters the counts down the tree (every member receives
// the 8-byte counts of its whole subtree), then each member builds its
// data schedule from them and the blocks move as in igather / iscatter.
//
// Cost (P ranks, n_v: the bytes of member v's subtree): 2 ceil(log2 P)
// rounds of latency; member v receives 8 span(v) bytes of counts and sends
// (gatherv) or receives (scatterv) n_v bytes of data; the root sends
// 8 (P - 1) bytes of counts in ceil(log2 P) messages. Scratch: n_v at a
// member with children, the wrapping range at the root (block_rooted.h).
// Zero counts are empty messages; gaps in the root's displacements cost one
// copy per run of adjacent blocks.
//
// A rank whose own count differs from the root's (erroneous in MPI) takes
// part in the run as the root's counts say (its block cut or padded with
// zeros in scratch), so the tree completes and no rank reads or writes past
// its own buffer, and raises ArgumentError naming both counts once the run
// is over. The root cannot see it (MPI's own igatherv is as silent about a
// short block); checked mode compares what every rank can.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shancoll/coll/request/request.h"
#include "shancoll/coll/request/request_schedule.h"

namespace shancoll {

// One rank's part of a v-form: gather (true: igatherv) or scatter; own
// bytes: its send (gatherv) or receive (scatterv) buffer's; counts and
// displs (bytes): the root's layout, P entries, read at the root only;
// in_place: the root's block stays where it is.
struct RootedvPart {
  bool gather = true;
  int root = 0;
  const void* send = nullptr;
  void* recv = nullptr;
  std::int64_t own_bytes = 0;
  const std::int64_t* counts = nullptr;
  const std::int64_t* displs = nullptr;
  bool in_place = false;
};

class BinomialVEngine final : public Engine {
 public:
  BinomialVEngine(Comm& comm, const Topology& topo, const RootedvPart& part);

  void start() override;
  bool test() override;
  bool rounds_done(std::size_t& rounds) const override;
  void count(Stats& stats) const override;

 private:
  void start_data();
  pattern::BlockSchedule data_schedule() const;

  Comm& comm_;
  const Topology& topo_;
  RootedvPart part_;
  std::vector<std::int64_t> counts_, displs_;  // the root's copies (bytes), rank order
  std::vector<std::int64_t> subtree_;          // counts of this rank's subtree, member order
  std::optional<ScheduleEngine> counts_phase_;
  std::optional<ScheduleEngine> data_phase_;
  std::vector<std::int64_t> data_for_;  // the subtree counts data_phase_ was built for
  int tag_ = 0;
  bool in_data_ = false;
  std::string mismatch_;  // this rank's count unlike the root's; empty: none
};

}  // namespace shancoll
