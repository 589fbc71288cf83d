// The schedule engine of a request: runs a pattern::BlockSchedule (the
// representation at the top of pattern/block_schedule.h) over point-to-point
// messages on shancoll's dup of the communicator, as a resumable state
// machine: setup copies, then per round post every receive and send, test
// them, run the round's steps (copies, and combines with the reduction's op),
// next round. The schedule and the scratch are made once (at _init for
// a persistent request); a start costs the setup copies and the first
// round's posts, and allocates nothing for rounds of up to 8 messages.
// A message shorter or longer than its receive (the ranks' counts differ:
// erroneous in MPI; MPI cuts a longer one at the receive's size) is an
// ArgumentError once the run's messages are over: the schedule completes on
// every rank, nothing is left in flight, and the communicator stays usable.
// Each run takes a tag of its own (request_tag of the communicator's next
// call number), so runs of several requests may be in flight on one
// communicator.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shancoll/coll/request/request.h"
#include "shancoll/ops.h"
#include "shancoll/pattern/block_schedule.h"
#include "shancoll/topology.h"

namespace shancoll {

class ScheduleEngine final : public Engine {
 public:
  // reducer: the op of a reduction's combine steps (none without them).
  ScheduleEngine(Comm& comm, const Topology& topo, pattern::BlockSchedule schedule,
                 const void* send, void* recv, std::optional<Reducer> reducer = std::nullopt);
  ~ScheduleEngine() override;  // cancels what an abandoned run left in flight
  ScheduleEngine(const ScheduleEngine&) = delete;
  ScheduleEngine& operator=(const ScheduleEngine&) = delete;

  void start() override;
  // A run on a tag taken already (an engine of several schedules run one
  // after the other on one tag: request_binomial_v.h).
  void start_on(int tag);
  bool test() override;
  bool rounds_done(std::size_t& rounds) const override {
    rounds = round_;
    return true;
  }
  void count(Stats& stats) const override;

 private:
  std::byte* at(const pattern::Region& region) const;
  void post_round();
  void run_steps(const std::vector<pattern::BlockStep>& steps);
  void check_sizes(const pattern::BlockRound& rd);
  void note_truncated(const pattern::BlockRound& rd);

  Comm& comm_;
  const Topology& topo_;
  const pattern::BlockSchedule schedule_;
  const std::byte* send_;
  std::byte* recv_;
  std::vector<std::byte> scratch_;
  std::optional<Reducer> reducer_;
  std::vector<std::byte> spare_;       // Reducer::combine's tmp: a combine's largest dst
  std::vector<MPI_Request> requests_;  // the round's; capacity kept between rounds and runs
  std::vector<MPI_Status> statuses_;   // the round's receives first, as requests_
  std::string short_message_;          // the run's first short message; empty: none
  int tag_ = 0;
  std::size_t round_ = 0;
  bool posted_ = false;
};

}  // namespace shancoll
