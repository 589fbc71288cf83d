#include "shancoll/coll/allreduce/schedule_executor.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/progress.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
int allreduce_tag_base(std::uint64_t seq) {
  return kAllreduceTagBase + static_cast<int>(seq % kAllreduceTagSlots) * kAllreduceMaxRounds;
}

ScheduleExecutor::ScheduleExecutor(std::shared_ptr<const pattern::ReduceSchedule> schedule,
                                   const AllreduceArgs& args, MPI_Comm comm, int tag_base,
                                   std::byte* scratch)
    : schedule_(std::move(schedule)),
      args_(args),
      comm_(comm),
      tag_base_(tag_base),
      scratch_(scratch),
      bytes_(static_cast<std::size_t>(args.bytes())) {
  if (schedule_->rounds.size() > static_cast<std::size_t>(kAllreduceMaxRounds))
    throw ArgumentError("comm: too many ranks for the allreduce tag space");
}

ScheduleExecutor::~ScheduleExecutor() { abandon(); }

// Receives still posted would land in memory the caller may reuse:
// cancelled. Unmatched sends cannot be cancelled portably: freed.
bool ScheduleExecutor::abandon() { return cancel_pending(requests_, request_count_); }

std::size_t ScheduleExecutor::scratch_bytes(const pattern::ReduceSchedule& schedule,
                                            const AllreduceArgs& args) {
  // slots 1.. plus the spare buffer of Reducer::combine
  return schedule.slots.size() * static_cast<std::size_t>(args.bytes());
}

std::byte* ScheduleExecutor::slot(int i) const {
  return i == 0 ? args_.recv : scratch_ + static_cast<std::size_t>(i - 1) * bytes_;
}

void ScheduleExecutor::post_round() {
  const pattern::Round& rd = schedule_->rounds[round_];
  const int tag = tag_base_ + static_cast<int>(round_);
  request_count_ = rd.recvs.size() + rd.sends.size();
  if (request_count_ > kInlineRequests) {
    more_requests_.assign(request_count_, MPI_REQUEST_NULL);
    requests_ = more_requests_.data();
  } else {
    requests_ = inline_requests_;
    std::fill_n(requests_, request_count_, MPI_REQUEST_NULL);
  }
  std::size_t i = 0;
  for (const pattern::Transfer& t : rd.recvs)
    irecv_bytes(slot(t.slot), args_.bytes(), t.peer, tag, comm_, &requests_[i++]);
  for (const pattern::Transfer& t : rd.sends)
    isend_bytes(slot(t.slot), args_.bytes(), t.peer, tag, comm_, &requests_[i++]);
}

void ScheduleExecutor::run_steps(const std::vector<pattern::Step>& steps) {
  std::byte* spare = slot(static_cast<int>(schedule_->slots.size()));
  for (const pattern::Step& s : steps) {
    if (s.kind == pattern::StepKind::kCopy)
      local_copy(slot(s.dst), slot(s.a), bytes_);
    else
      args_.reducer->combine(slot(s.dst), slot(s.a), slot(s.b), args_.count, spare);
  }
}

void ScheduleExecutor::start() {
  if (started_) return;
  started_ = true;
  run_steps(schedule_->setup);
  if (done()) return;
  post_round();
  posted_ = true;
}

bool ScheduleExecutor::test() {
  start();
  while (!done()) {
    if (!posted_) {
      post_round();
      posted_ = true;
    }
    int complete = 0;
    check_mpi(
        MPI_Testall(static_cast<int>(request_count_), requests_, &complete, MPI_STATUSES_IGNORE),
        "MPI_Testall (allreduce round)");
    if (!complete) return false;
    run_steps(schedule_->rounds[round_].steps);
    ++round_;
    posted_ = false;
  }
  return true;
}

void ScheduleExecutor::count(const Topology& topo, Stats& stats) const {
  stats.rounds = static_cast<std::int64_t>(schedule_->rounds.size());
  stats.node_count = topo.node_count;
  for (const pattern::Round& rd : schedule_->rounds)
    for (const pattern::Transfer& t : rd.sends) count_message(topo, t.peer, args_.bytes(), stats);
}

std::shared_ptr<const pattern::ReduceSchedule> cached_schedule(ScheduleFn fn, int size, int rank,
                                                               int ports) {
  using Key = std::tuple<ScheduleFn, int, int, int>;
  static std::map<Key, std::shared_ptr<const pattern::ReduceSchedule>> cache;
  static std::mutex mutex;  // bindings release the GIL around the core
  std::lock_guard<std::mutex> lock(mutex);
  const Key key{fn, size, rank, ports};
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 256) cache.clear();  // communicators of many sizes: start over
  auto schedule = std::make_shared<const pattern::ReduceSchedule>(fn(size, rank, ports));
  cache.emplace(key, schedule);
  return schedule;
}

void run_schedule(Comm& comm, const AllreduceArgs& args, const Options& options, Stats& stats,
                  ScheduleFn schedule_fn, const char* name) {
  const Topology& topo = comm.nodes(options.ranks_per_node).topo;
  copy_input(args);
  if (args.count == 0) return;  // nothing to combine: no messages
  const int ports = args.ports > 0 ? args.ports : default_ports(name, comm.size());
  auto schedule = cached_schedule(schedule_fn, comm.size(), comm.rank(), ports);
  std::byte* scratch = comm.scratch(ScheduleExecutor::scratch_bytes(*schedule, args));
  ScheduleExecutor run(schedule, args, comm.mpi(), allreduce_tag_base(comm.next_epoch()), scratch);
  const auto what = [name] { return std::string("allreduce '") + name + "': messages of a round"; };
  wait_until([&] { return run.test(); }, what, options.wait_timeout());
  run.count(topo, stats);
}

}  // namespace shancoll
