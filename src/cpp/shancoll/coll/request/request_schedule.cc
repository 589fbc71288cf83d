#include "shancoll/coll/request/request_schedule.h"

#include <algorithm>

#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

ScheduleEngine::ScheduleEngine(Comm& comm, const Topology& topo, pattern::BlockSchedule schedule,
                               const void* send, void* recv)
    : comm_(comm),
      topo_(topo),
      schedule_(std::move(schedule)),
      send_(static_cast<const std::byte*>(send)),
      recv_(static_cast<std::byte*>(recv)),
      scratch_(static_cast<std::size_t>(schedule_.scratch_bytes)) {
  std::size_t most = 0;
  for (const pattern::BlockRound& rd : schedule_.rounds)
    most = std::max(most, rd.sends.size() + rd.recvs.size());
  requests_.reserve(most);
  round_ = schedule_.rounds.size();  // not started: complete
}

ScheduleEngine::~ScheduleEngine() { cancel_posted(); }

// Receives still posted would land in memory the caller may reuse: cancel
// and complete them. Unmatched sends cannot be cancelled portably: freed.
void ScheduleEngine::cancel_posted() {
  for (MPI_Request& r : requests_) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Request_free(&r);
  }
  requests_.clear();
}

std::byte* ScheduleEngine::at(const pattern::Region& p) const {
  switch (p.buf) {
    case pattern::Buf::send:
      return const_cast<std::byte*>(send_) + p.offset;  // only ever sent or copied from
    case pattern::Buf::scratch:
      return const_cast<std::byte*>(scratch_.data()) + p.offset;
    case pattern::Buf::recv:
      break;
  }
  return recv_ ? recv_ + p.offset : nullptr;
}

void ScheduleEngine::post_round() {
  const pattern::BlockRound& rd = schedule_.rounds[round_];
  requests_.assign(rd.recvs.size() + rd.sends.size(), MPI_REQUEST_NULL);
  std::size_t i = 0;
  for (const pattern::Move& m : rd.recvs)
    irecv_bytes(at(m.region), m.region.bytes, m.peer, tag_, comm_.mpi(), &requests_[i++]);
  for (const pattern::Move& m : rd.sends)
    isend_bytes(at(m.region), m.region.bytes, m.peer, tag_, comm_.mpi(), &requests_[i++]);
  posted_ = true;
}

void ScheduleEngine::start() {
  tag_ = request_tag(comm_.next_epoch());
  for (const pattern::Copy& c : schedule_.setup)
    if (c.dst.bytes > 0) local_copy(at(c.dst), at(c.src), static_cast<std::size_t>(c.dst.bytes));
  round_ = 0;
  posted_ = false;
}

bool ScheduleEngine::test() {
  while (round_ < schedule_.rounds.size()) {
    if (!posted_) post_round();
    int complete = 0;
    check_mpi(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &complete,
                          MPI_STATUSES_IGNORE),
              "MPI_Testall (a request's round)");
    if (!complete) return false;
    requests_.clear();
    ++round_;
    posted_ = false;
  }
  return true;
}

void ScheduleEngine::count(Stats& stats) const {
  stats.rounds = static_cast<std::int64_t>(schedule_.rounds.size());
  stats.node_count = topo_.node_count;
  for (const pattern::BlockRound& rd : schedule_.rounds)
    for (const pattern::Move& m : rd.sends) count_message(topo_, m.peer, m.region.bytes, stats);
}

}  // namespace shancoll
