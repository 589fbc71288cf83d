// Split-phase allreduce (the GASPI_TEST idea of End et al.): start() posts
// the first round, test() advances the schedule without blocking, wait()
// blocks with a timeout. No thread: progress happens inside these calls and,
// by MPI's progress rule, inside every other wait of the process: while in
// flight, the request is registered as Active (progress.h), so a rank that
// waits on another request or collective first still advances this one.
//
// Schedule-driven algorithms run the same ScheduleExecutor as the blocking
// call; 'mpi' is MPI_Iallreduce. Each request owns its scratch memory (the
// communicator's shared scratch may be in use by another outstanding
// request) and a tag range of its own (its call sequence number), so several
// requests may be outstanding on one communicator; at most
// kAllreduceTagSlots at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/allreduce/schedule_executor.h"
#include "shancoll/progress.h"

namespace shancoll {

class AllreduceRequest final : public Active {
 public:
  // args.reducer is copied: the caller's Reducer need not outlive the request.
  AllreduceRequest(Comm& comm, const AllreduceArgs& args, const AllreduceAlgorithm& algorithm,
                   const Options& options);
  ~AllreduceRequest() override;
  AllreduceRequest(const AllreduceRequest&) = delete;
  AllreduceRequest& operator=(const AllreduceRequest&) = delete;

  bool test();                // advances without blocking; true when done (see .cc: yields)
  void wait(double timeout);  // TimeoutError after `timeout` s; may be called again
  bool done() const { return done_; }
  std::int64_t test_calls() const { return test_calls_; }
  const Stats& stats() const { return stats_; }
  const char* algorithm() const { return algorithm_.name; }
  double timeout() const { return timeout_; }  // the call's: what its waits default to
  // Rounds of shancoll's schedule completed so far; false for `mpi` (MPI's
  // own request, whose progress shancoll cannot see).
  // Read from any thread (a poll may run while another thread advances it).
  bool rounds_done(std::size_t& rounds) const {
    rounds = rounds_.load(std::memory_order_relaxed);
    return executor_ != nullptr;
  }

  bool advance_elsewhere() noexcept override;

 private:
  bool advance();  // the owner's step: rethrows an error kept by advance_elsewhere
  bool step();     // one step; the caller holds busy_
  void finish();

  Comm& comm_;
  Reducer reducer_;
  AllreduceArgs args_;
  const AllreduceAlgorithm& algorithm_;
  const Topology& topo_;
  const double timeout_;
  std::unique_ptr<std::byte[]> scratch_;  // not zero-filled: every byte is written first
  std::unique_ptr<ScheduleExecutor> executor_;
  MPI_Request mpi_request_ = MPI_REQUEST_NULL;
  Stats stats_;
  std::int64_t test_calls_ = 0;
  std::uint64_t idle_tests_ = 0;  // unsuccessful test() calls so far
  std::atomic<bool> done_{false};
  std::atomic<std::size_t> rounds_{0};  // the executor's, published by step()
  bool registered_ = false;
  bool recorded_ = false;          // stats given to the communicator (the owner's thread)
  std::atomic<bool> busy_{false};  // a thread is in step(); the other one skips
  std::exception_ptr error_;       // from advance_elsewhere, for the owner (under busy_)
};

}  // namespace shancoll
