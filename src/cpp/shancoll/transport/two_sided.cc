// two_sided: notified write as pre-posted receive + shared flag.
//
// Receives are posted by expect() at the start of a call, straight where the
// receiver named (its segment, or its recvbuf on a node of one rank). A
// sender does not wait for them: an early message waits in MPI's queue of
// unexpected messages (copied once more if it is eager). Tag = id, source =
// the rank the algorithm names (see Expected: never any-source); a
// notification id is received by local rank id % local_size of the target
// node, which is also the rank that forwards it. Messages cannot match a
// wrong call: each (sender, id) pair carries one message per call, and MPI
// matches a pair's messages in the order they were sent.
#include <cstring>

#include "shancoll/error.h"
#include "shancoll/progress.h"
#include "shancoll/shm/flags.h"
#include "shancoll/transport/p2p.h"
#include "shancoll/transport/transport.h"

namespace shancoll {
namespace {

class TwoSided final : public Transport {
 public:
  TwoSided(MPI_Comm comm, const Topology& topo, NodeSegment& segment)
      : topo_(topo), segment_(segment) {
    check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup (transport)");
  }

  // Nothing is pending here: end() completed every request, and after a
  // failed call the Comm keeps its transports alive (see ~Comm).
  ~TwoSided() override { free_drained(comm_); }

  void begin(std::uint64_t epoch, std::size_t notify_offset) override {
    epoch_ = epoch;
    notify_offset_ = notify_offset;
  }

  bool posts_receives() const override { return true; }

  void expect(const std::vector<Expected>& expected) override {
    recvs_.resize(expected.size());
    recv_ids_.resize(expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const Expected& e = expected[i];
      recv_ids_[i] = e.id;
      check_mpi(
          MPI_Irecv(e.dest, static_cast<int>(e.bytes), MPI_BYTE, e.source, e.id, comm_, &recvs_[i]),
          "MPI_Irecv (two_sided transport)");
    }
    pending_recvs_ = static_cast<int>(expected.size());
  }

  int receiver(int node, int id) const override {
    return topo_.ranks[node][id % topo_.local_size_of(node)];
  }

  void put_notify(int node, std::size_t, const void* data, std::size_t bytes, int id) override {
    sends_.emplace_back();
    check_mpi(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, receiver(node, id), id, comm_,
                        &sends_.back()),
              "MPI_Isend (two_sided transport)");
  }

  void progress() override {
    if (pending_recvs_ > 0) {
      int done = 0;
      done_.resize(recvs_.size());
      check_mpi(MPI_Testsome(static_cast<int>(recvs_.size()), recvs_.data(), &done, done_.data(),
                             MPI_STATUSES_IGNORE),
                "MPI_Testsome (two_sided transport)");
      for (int k = 0; k < done && done != MPI_UNDEFINED; ++k) {
        const int id = recv_ids_[done_[k]];
        publish(segment_.base() + notify_offset_ + 8 * static_cast<std::size_t>(id), epoch_);
        --pending_recvs_;
      }
    }
    if (!sends_.empty()) {
      int flag = 0;
      MPI_Testall(static_cast<int>(sends_.size()), sends_.data(), &flag, MPI_STATUSES_IGNORE);
      if (flag) sends_.clear();
    }
  }

  void end(double timeout) override {
    wait_until([&] { return pending_recvs_ == 0 && sends_.empty(); }, [&] { progress(); },
               "the two_sided transport to complete", timeout);
    recvs_.clear();
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  const Topology& topo_;
  NodeSegment& segment_;
  std::uint64_t epoch_ = 0;
  std::size_t notify_offset_ = 0;
  std::vector<MPI_Request> recvs_;
  std::vector<int> recv_ids_;
  std::vector<int> done_;
  std::vector<MPI_Request> sends_;
  int pending_recvs_ = 0;
};

}  // namespace

std::unique_ptr<Transport> make_two_sided_transport(MPI_Comm comm, const Topology& topo,
                                                    NodeSegment& segment);
std::unique_ptr<Transport> make_two_sided_transport(MPI_Comm comm, const Topology& topo,
                                                    NodeSegment& segment) {
  return std::make_unique<TwoSided>(comm, topo, segment);
}

}  // namespace shancoll
