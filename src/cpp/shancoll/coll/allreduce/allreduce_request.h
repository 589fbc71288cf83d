// The engine of a split-phase (iallreduce) or persistent (allreduce_init)
// allreduce run by a schedule-driven algorithm (the GASPI_TEST idea of End
// et al.): the same ScheduleExecutor as the blocking call, one executor per
// run (start() copies the input and posts the first round; test() advances
// without blocking). The request around it (coll/request/request.h) gives
// test/wait, the deadline and MPI's progress rule.
//
// The engine owns its scratch memory (the communicator's shared scratch may
// be in use by another outstanding request) and the reducer; each run takes
// a tag range of its own (its call sequence number), so several requests
// may be outstanding on one communicator; at most kAllreduceTagSlots at once.
#pragma once

#include <memory>
#include <optional>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/allreduce/schedule_executor.h"
#include "shancoll/coll/request/request.h"

namespace shancoll {

class AllreduceScheduleEngine final : public Engine {
 public:
  // args.reducer is copied: the caller's Reducer need not outlive the engine.
  AllreduceScheduleEngine(Comm& comm, const Topology& topo, const AllreduceArgs& args,
                          const AllreduceAlgorithm& algorithm);

  void start() override;
  ~AllreduceScheduleEngine() override;  // keeps the scratch of a run left in flight
  bool test() override { return !executor_ || executor_->test(); }
  bool rounds_done(std::size_t& rounds) const override {
    rounds = executor_ ? executor_->rounds_done() : 0;
    return true;
  }
  void count(Stats& stats) const override;

 private:
  Comm& comm_;
  const Topology& topo_;
  Reducer reducer_;
  AllreduceArgs args_;
  std::shared_ptr<const pattern::ReduceSchedule> schedule_;
  std::unique_ptr<std::byte[]> scratch_;      // not zero-filled: every byte is written first
  std::optional<ScheduleExecutor> executor_;  // the current run's
};

}  // namespace shancoll
