// Runs a pattern::ReduceSchedule (the representation documented at the top of
// pattern/dissemination.h) over point-to-point messages, as a resumable state
// machine: post round r's messages, test them, run the round's steps, next
// round. test() never blocks, so the blocking allreduce is "test() inside
// wait_until" and the split-phase request calls the same test().
//
// Memory: slot 0 is the receive buffer; every other slot, and one spare
// buffer for non-commutative MPI ops, lies in caller-provided scratch
// (scratch_bytes()). Tags: round r of a call uses tag_base + r.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/topology.h"

namespace shancoll {

// Tags 0x6000 .. 0x7fff: 128 calls x 64 rounds.
constexpr int kAllreduceTagBase = 0x6000;
constexpr int kAllreduceTagSlots = 128;
constexpr int kAllreduceMaxRounds = 64;

// Tag base of the call with sequence number seq (identical on all ranks).
int allreduce_tag_base(std::uint64_t seq);

class ScheduleExecutor {
 public:
  ScheduleExecutor(std::shared_ptr<const pattern::ReduceSchedule> schedule,
                   const AllreduceArgs& args, MPI_Comm comm, int tag_base, std::byte* scratch);
  ~ScheduleExecutor();  // cancels what a failed or abandoned call left in flight
  // Cancels (receives) or frees (sends) what is in flight; whether anything
  // was, so that the scratch may still be used by the library.
  bool abandon();
  ScheduleExecutor(const ScheduleExecutor&) = delete;
  ScheduleExecutor& operator=(const ScheduleExecutor&) = delete;

  static std::size_t scratch_bytes(const pattern::ReduceSchedule& schedule,
                                   const AllreduceArgs& args);

  // Runs the setup steps and posts the first round's messages (no testing),
  // so that they travel while a split-phase caller is busy elsewhere.
  void start();
  // Advances as far as possible without blocking; true when the result is in recv.
  bool test();
  bool done() const { return round_ == schedule_->rounds.size(); }
  std::size_t rounds_done() const { return round_; }

  // Rounds, and messages/bytes sent by this rank, counted as intra/inter node.
  void count(const Topology& topo, Stats& stats) const;

 private:
  std::byte* slot(int i) const;
  void post_round();
  void run_steps(const std::vector<pattern::Step>& steps);

  std::shared_ptr<const pattern::ReduceSchedule> schedule_;
  AllreduceArgs args_;
  MPI_Comm comm_;
  int tag_base_;
  std::byte* scratch_;
  std::size_t bytes_;
  // The round's requests: in place for the few messages of a usual round,
  // so that a call allocates nothing; a round of more uses more_requests_.
  static constexpr std::size_t kInlineRequests = 8;
  MPI_Request inline_requests_[kInlineRequests];
  std::vector<MPI_Request> more_requests_;
  MPI_Request* requests_ = inline_requests_;
  std::size_t request_count_ = 0;
  std::size_t round_ = 0;
  bool started_ = false;
  bool posted_ = false;
};

// The blocking allreduce of a schedule-driven algorithm.
void run_schedule(Comm& comm, const AllreduceArgs& args, const Options& options, Stats& stats,
                  ScheduleFn schedule_fn, const char* name);

// The schedule for (P, rank, ports), built once and cached (pure arithmetic).
std::shared_ptr<const pattern::ReduceSchedule> cached_schedule(ScheduleFn fn, int size, int rank,
                                                               int ports);

}  // namespace shancoll
