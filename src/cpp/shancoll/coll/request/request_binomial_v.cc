#include "shancoll/coll/request/request_binomial_v.h"

#include <utility>

#include "shancoll/error.h"
#include "shancoll/pattern/block_rooted.h"

namespace shancoll {
namespace {

constexpr std::int64_t kCountBytes = sizeof(std::int64_t);

bool at_root(const Comm& comm, const RootedvPart& part) { return comm.rank() == part.root; }

// The counts phase: the root's counts (rank order, 8 bytes each) down the
// tree; every other member receives its subtree's into `subtree`.
pattern::BlockSchedule counts_schedule(const Comm& comm, int root) {
  std::vector<std::int64_t> displs(static_cast<std::size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) displs[r] = r * kCountBytes;
  return pattern::binomial_subtree_scatter_schedule(comm.size(), comm.rank(), root, kCountBytes,
                                                    displs.data());
}

}  // namespace

BinomialVEngine::BinomialVEngine(Comm& comm, const Topology& topo, const RootedvPart& part)
    : comm_(comm), topo_(topo), part_(part) {
  const int p = comm.size();
  if (at_root(comm, part)) {
    counts_.assign(part.counts, part.counts + p);
    displs_.assign(part.displs, part.displs + p);
    part_.counts = counts_.data(), part_.displs = displs_.data();
    counts_phase_.emplace(comm, topo, counts_schedule(comm, part.root), counts_.data(), nullptr);
    data_phase_.emplace(comm, topo, data_schedule(), part.send, part.recv);
    return;
  }
  const int v = pattern::mod_rank(comm.rank() - part.root, p);
  subtree_.assign(static_cast<std::size_t>(pattern::binomial_subtree_span(p, v)), 0);
  counts_phase_.emplace(comm, topo, counts_schedule(comm, part.root), nullptr, subtree_.data());
}

// The data schedule of this rank, from the root's counts (at the root) or
// its subtree's as received.
pattern::BlockSchedule BinomialVEngine::data_schedule() const {
  const int p = comm_.size(), rank = comm_.rank();
  const int v = pattern::mod_rank(rank - part_.root, p);
  const auto bytes = [&](int u) {
    return v == 0 ? counts_[pattern::mod_rank(u + part_.root, p)] : subtree_[u - v];
  };
  const std::int64_t own = v == 0 ? counts_[rank] : part_.own_bytes;
  if (part_.gather)
    return pattern::binomial_gather_blocks(p, rank, part_.root, bytes, own, part_.displs,
                                           part_.in_place);
  return pattern::binomial_scatter_blocks(p, rank, part_.root, bytes, own, part_.displs,
                                          part_.in_place);
}

void BinomialVEngine::start() {
  tag_ = request_tag(comm_.next_epoch());
  in_data_ = false;
  mismatch_.clear();
  counts_phase_->start_on(tag_);
}

// A non-root member's data schedule is made again only when its subtree's
// counts changed (a persistent request's runs reuse it).
void BinomialVEngine::start_data() {
  if (!at_root(comm_, part_)) {
    const std::int64_t root_says = subtree_[0];
    if (root_says != part_.own_bytes)
      mismatch_ = std::string(part_.gather ? "sendbuf" : "recvbuf") + ": rank " +
                  std::to_string(comm_.rank()) + " has " + std::to_string(part_.own_bytes) +
                  " bytes, but the root's " + (part_.gather ? "recvcounts[" : "sendcounts[") +
                  std::to_string(comm_.rank()) + "] is " + std::to_string(root_says) +
                  " bytes (the ranks' counts differ)";
    if (!data_phase_ || data_for_ != subtree_) {
      data_phase_.reset();
      data_phase_.emplace(comm_, topo_, data_schedule(), part_.send, part_.recv);
      data_for_ = subtree_;
    }
  }
  data_phase_->start_on(tag_);
  in_data_ = true;
}

bool BinomialVEngine::test() {
  if (!in_data_) {
    if (!counts_phase_->test()) return false;
    start_data();
  }
  if (!data_phase_->test()) return false;
  if (!mismatch_.empty()) throw ArgumentError(std::exchange(mismatch_, {}));
  return true;
}

bool BinomialVEngine::rounds_done(std::size_t& rounds) const {
  std::size_t counted = 0;
  counts_phase_->rounds_done(rounds);
  if (in_data_) data_phase_->rounds_done(counted);
  rounds += counted;
  return true;
}

void BinomialVEngine::count(Stats& stats) const {
  Stats counts;
  counts_phase_->count(counts);
  data_phase_->count(stats);
  stats.rounds += counts.rounds;
  stats.inter_messages += counts.inter_messages, stats.inter_bytes += counts.inter_bytes;
  stats.intra_messages += counts.intra_messages, stats.intra_bytes += counts.intra_bytes;
}

}  // namespace shancoll
