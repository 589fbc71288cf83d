#include "shancoll/coll/allreduce/allreduce_request.h"

#include <memory>

#include "shancoll/transport/p2p.h"

namespace shancoll {

AllreduceScheduleEngine::AllreduceScheduleEngine(Comm& comm, const Topology& topo,
                                                 const AllreduceArgs& args,
                                                 const AllreduceAlgorithm& algorithm)
    : comm_(comm), topo_(topo), reducer_(*args.reducer), args_(args) {
  args_.reducer = &reducer_;
  if (args_.count == 0) return;  // nothing to combine: no messages
  const int ports = args_.ports > 0 ? args_.ports : default_ports(algorithm.name, comm.size());
  schedule_ = cached_schedule(algorithm.schedule, comm.size(), comm.rank(), ports);
  scratch_.reset(new std::byte[ScheduleExecutor::scratch_bytes(*schedule_, args_)]);
}

AllreduceScheduleEngine::~AllreduceScheduleEngine() {
  if (executor_ && executor_->abandon() && scratch_)
    keep_for_freed_requests(std::shared_ptr<std::byte[]>(std::move(scratch_)));
}

void AllreduceScheduleEngine::start() {
  copy_input(args_);
  if (!schedule_) return;
  executor_.reset();  // cancels nothing: the previous run is complete
  executor_.emplace(schedule_, args_, comm_.mpi(), allreduce_tag_base(comm_.next_epoch()),
                    scratch_.get());
  executor_->start();  // the first round travels while the caller returns
}

void AllreduceScheduleEngine::count(Stats& stats) const {
  stats.node_count = topo_.node_count;
  if (executor_) executor_->count(topo_, stats);
}

}  // namespace shancoll
