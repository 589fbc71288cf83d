#include "shancoll/coll/request/request_schedule.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

ScheduleEngine::ScheduleEngine(Comm& comm, const Topology& topo, pattern::BlockSchedule schedule,
                               const void* send, void* recv, std::optional<Reducer> reducer)
    : comm_(comm),
      topo_(topo),
      schedule_(std::move(schedule)),
      send_(static_cast<const std::byte*>(send)),
      recv_(static_cast<std::byte*>(recv)),
      scratch_(static_cast<std::size_t>(schedule_.scratch_bytes)),
      reducer_(std::move(reducer)) {
  std::size_t most = 0;
  std::int64_t widest = 0;
  for (const pattern::BlockRound& rd : schedule_.rounds) {
    most = std::max(most, rd.sends.size() + rd.recvs.size());
    for (const pattern::BlockStep& st : rd.steps)
      if (st.combine) widest = std::max(widest, st.dst.bytes);
  }
  if (widest > 0 && !reducer_) throw std::logic_error("a schedule's combine without an op");
  spare_.resize(static_cast<std::size_t>(widest));
  requests_.reserve(most);
  statuses_.reserve(most);
  round_ = schedule_.rounds.size();  // not started: complete
}

// Receives still posted would land in memory the caller may reuse:
// cancelled. Unmatched sends cannot be cancelled portably: freed. What was
// still pending may yet use the scratch: it outlives the engine.
ScheduleEngine::~ScheduleEngine() {
  if (cancel_pending(requests_.data(), requests_.size()))
    keep_for_freed_requests(std::make_shared<std::vector<std::byte>>(std::move(scratch_)));
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

void ScheduleEngine::run_steps(const std::vector<pattern::BlockStep>& steps) {
  for (const pattern::BlockStep& st : steps) {
    if (st.dst.bytes == 0) continue;
    if (!st.combine) {
      local_copy(at(st.dst), at(st.a), static_cast<std::size_t>(st.dst.bytes));
      continue;
    }
    const auto count = st.dst.bytes / static_cast<std::int64_t>(reducer_->elem_size());
    reducer_->combine(at(st.dst), at(st.a), at(st.b), count, spare_.data());
  }
}

void ScheduleEngine::start() { start_on(request_tag(comm_.next_epoch())); }

void ScheduleEngine::start_on(int tag) {
  tag_ = tag;
  for (const pattern::Copy& c : schedule_.setup)
    if (c.dst.bytes > 0) local_copy(at(c.dst), at(c.src), static_cast<std::size_t>(c.dst.bytes));
  round_ = 0;
  posted_ = false;
  short_message_.clear();
}

void ScheduleEngine::check_sizes(const pattern::BlockRound& rd) {
  for (std::size_t i = 0; i < rd.recvs.size() && short_message_.empty(); ++i) {
    MPI_Count got = 0;
    check_mpi(MPI_Get_elements_x(&statuses_[i], MPI_BYTE, &got), "MPI_Get_elements_x");
    if (got == rd.recvs[i].region.bytes) continue;
    short_message_ = "counts: rank " + std::to_string(rd.recvs[i].peer) + " sent " +
                     std::to_string(got) + " bytes where rank " + std::to_string(comm_.rank()) +
                     " expects " + std::to_string(rd.recvs[i].region.bytes) +
                     " (the ranks' counts differ)";
  }
}

// A message longer than its receive (MPI_ERR_TRUNCATE, in the status of a
// round's MPI_Testall): that receive is complete, its buffer written up to
// its own size, so the run goes on as for a short message and raises once
// its messages are over; any other error is MPI's.
void ScheduleEngine::note_truncated(const pattern::BlockRound& rd) {
  for (std::size_t i = 0; i < requests_.size(); ++i) {
    const int code = statuses_[i].MPI_ERROR;
    if (code == MPI_SUCCESS || code == MPI_ERR_PENDING) continue;
    int error_class = code;
    MPI_Error_class(code, &error_class);
    if (error_class != MPI_ERR_TRUNCATE || i >= rd.recvs.size())
      check_mpi(code, "MPI_Testall (a request's round)");
    requests_[i] = MPI_REQUEST_NULL;
    if (short_message_.empty())
      short_message_ = "counts: rank " + std::to_string(rd.recvs[i].peer) + " sent more than " +
                       std::to_string(rd.recvs[i].region.bytes) + " bytes where rank " +
                       std::to_string(comm_.rank()) + " expects " +
                       std::to_string(rd.recvs[i].region.bytes) + " (the ranks' counts differ)";
  }
}

bool ScheduleEngine::test() {
  while (round_ < schedule_.rounds.size()) {
    if (!posted_) post_round();
    int complete = 0;
    statuses_.resize(requests_.size());
    const int rc = MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &complete,
                               statuses_.data());
    if (rc == MPI_ERR_IN_STATUS) {
      note_truncated(schedule_.rounds[round_]);
      continue;  // the truncated receives are complete; test the others again
    }
    check_mpi(rc, "MPI_Testall (a request's round)");
    if (!complete) return false;
    requests_.clear();
    check_sizes(schedule_.rounds[round_]);
    run_steps(schedule_.rounds[round_].steps);
    ++round_;
    posted_ = false;
  }
  if (!short_message_.empty()) throw ArgumentError(std::exchange(short_message_, {}));
  return true;
}

void ScheduleEngine::count(Stats& stats) const {
  stats.rounds = static_cast<std::int64_t>(schedule_.rounds.size());
  stats.node_count = topo_.node_count;
  for (const pattern::BlockRound& rd : schedule_.rounds)
    for (const pattern::Move& m : rd.sends) count_message(topo_, m.peer, m.region.bytes, stats);
}

}  // namespace shancoll
