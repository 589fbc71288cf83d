// Split-phase allreduce (the GASPI_TEST idea of End et al.): start() posts
// the first round, test() advances the schedule without blocking, wait()
// blocks with a timeout. Progress happens only inside these calls, no thread.
//
// Schedule-driven algorithms run the same ScheduleExecutor as the blocking
// call; 'mpi' is MPI_Iallreduce. Each request owns its scratch memory (the
// communicator's shared scratch may be in use by another outstanding
// request) and a tag range of its own (its call sequence number), so several
// requests may be outstanding on one communicator; at most
// kAllreduceTagSlots at once.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "shancoll/allreduce_select.h"
#include "shancoll/coll/allreduce/schedule_executor.h"

namespace shancoll {

class AllreduceRequest {
 public:
  // args.reducer is copied: the caller's Reducer need not outlive the request.
  AllreduceRequest(Comm& comm, const AllreduceArgs& args, const AllreduceAlgorithm& algorithm,
                   const Options& options);
  ~AllreduceRequest();
  AllreduceRequest(const AllreduceRequest&) = delete;
  AllreduceRequest& operator=(const AllreduceRequest&) = delete;

  bool test();                // advances without blocking; true when done (see .cc: yields)
  void wait(double timeout);  // TimeoutError after `timeout` s; may be called again
  bool done() const { return done_; }
  std::int64_t test_calls() const { return test_calls_; }
  const Stats& stats() const { return stats_; }
  const char* algorithm() const { return algorithm_.name; }

 private:
  bool advance();
  void finish();

  Comm& comm_;
  Reducer reducer_;
  AllreduceArgs args_;
  const AllreduceAlgorithm& algorithm_;
  const Topology& topo_;
  std::unique_ptr<std::byte[]> scratch_;  // not zero-filled: every byte is written first
  std::unique_ptr<ScheduleExecutor> executor_;
  MPI_Request mpi_request_ = MPI_REQUEST_NULL;
  Stats stats_;
  std::int64_t test_calls_ = 0;
  std::uint64_t idle_tests_ = 0;  // unsuccessful test() calls so far
  bool done_ = false;
};

}  // namespace shancoll
