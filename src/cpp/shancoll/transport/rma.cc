// rma: notified write as MPI_Put (data), MPI_Win_flush, MPI_Put (epoch into
// the notification slot).
//
// The window spans the whole communicator; each node leader exposes its node
// segment, the other ranks expose nothing, so a target is always the leader
// of the target node and displacements are segment offsets. The flush makes
// the data complete at the target before the notification is issued: a rank
// that sees the notification (acquire load) sees the data. The notification
// is flushed as well, so it is never held back. A passive-target
// epoch (lock_all) stays open for the window's lifetime. The window is
// rebuilt (collectively) whenever the segment moved.
#include "shancoll/error.h"
#include "shancoll/progress.h"
#include "shancoll/shm/flags.h"
#include "shancoll/transport/p2p.h"
#include "shancoll/transport/transport.h"

namespace shancoll {
namespace {

class Rma final : public Transport {
 public:
  Rma(MPI_Comm comm, const Topology& topo, NodeSegment& segment) : topo_(topo), segment_(segment) {
    check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup (transport)");
  }

  ~Rma() override {
    free_window();
    free_drained(comm_);
  }

  void begin(std::uint64_t epoch, std::size_t notify_offset) override {
    if (generation_ != segment_.generation()) rebuild_window();
    epoch_value_ = epoch;
    notify_offset_ = notify_offset;
  }

  bool posts_receives() const override { return false; }
  void expect(const std::vector<Expected>&) override {}

  int receiver(int node, int) const override { return topo_.leader_of(node); }

  void put_notify(int node, std::size_t offset, const void* data, std::size_t bytes,
                  int id) override {
    const int target = topo_.leader_of(node);
    check_bounds(offset, bytes, id);
    if (bytes > 0) {
      check_mpi(MPI_Put(data, static_cast<int>(bytes), MPI_BYTE, target,
                        static_cast<MPI_Aint>(offset), static_cast<int>(bytes), MPI_BYTE, win_),
                "MPI_Put (rma transport)");
      check_mpi(MPI_Win_flush(target, win_), "MPI_Win_flush (rma transport)");
    }
    const MPI_Aint slot = static_cast<MPI_Aint>(notify_offset_ + 8 * static_cast<std::size_t>(id));
    check_mpi(MPI_Put(&epoch_value_, 1, MPI_UINT64_T, target, slot, 1, MPI_UINT64_T, win_),
              "MPI_Put (rma notification)");
    // Flush the notification too: MPI may defer a put until the next
    // synchronisation, and a deferred READY or block notification can leave
    // two nodes each waiting for the other's (seen with MPICH 5).
    check_mpi(MPI_Win_flush(target, win_), "MPI_Win_flush (rma notification)");
  }

  // Passive-target RMA may need the target's MPI progress engine (e.g. when
  // MPI emulates puts with active messages): poke it while we wait.
  void progress() override {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
  }

  void end(double) override {}  // every put was flushed when issued

 private:
  // Every node's segment has the size of this one (NodeSegment grows them
  // together to the largest asked for), so a put past it would land past
  // the target's window: the ranks disagree on the layout (recvcounts).
  void check_bounds(std::size_t offset, std::size_t bytes, int id) const {
    const std::size_t slot_end = notify_offset_ + 8 * static_cast<std::size_t>(id + 1);
    if (offset + bytes > segment_.size() || slot_end > segment_.size())
      throw ArgumentError(
          "recvcounts: a block falls outside the target node's segment (the ranks' recvcounts "
          "differ: MPI requires the same on every rank)");
  }

  void rebuild_window() {
    free_window();
    const bool leader = topo_.local_rank == 0;
    check_mpi(MPI_Win_create(leader ? segment_.base() : nullptr,
                             leader ? static_cast<MPI_Aint>(segment_.size()) : 0, 1, MPI_INFO_NULL,
                             comm_, &win_),
              "MPI_Win_create (rma transport)");
    check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_), "MPI_Win_lock_all");
    generation_ = segment_.generation();
  }

  void free_window() {
    if (win_ == MPI_WIN_NULL) return;
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  const Topology& topo_;
  NodeSegment& segment_;
  MPI_Win win_ = MPI_WIN_NULL;
  std::uint64_t generation_ = ~0ull;
  std::uint64_t epoch_value_ = 0;
  std::size_t notify_offset_ = 0;
};

}  // namespace

std::unique_ptr<Transport> make_two_sided_transport(MPI_Comm comm, const Topology& topo,
                                                    NodeSegment& segment);

std::unique_ptr<Transport> make_transport(TransportKind kind, MPI_Comm comm, const Topology& topo,
                                          NodeSegment& segment) {
  if (kind == TransportKind::rma) return std::make_unique<Rma>(comm, topo, segment);
  return make_two_sided_transport(comm, topo, segment);
}

}  // namespace shancoll
