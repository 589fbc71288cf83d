#include "shancoll/comm.h"

#include <algorithm>
#include <atomic>
#include <string>

#include "shancoll/attached.h"
#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/handshake.h"
#include "shancoll/progress.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/peer_memory.h"
#include "shancoll/transport/p2p.h"
#include "shancoll/transport/transport.h"

namespace shancoll {

NodeContext::NodeContext(const double& call_timeout) : call_timeout(call_timeout) {}

std::size_t StateSlots::next_slot() {
  static std::atomic<std::size_t> slots{0};
  return slots.fetch_add(1);
}

NodeContext::~NodeContext() {
  states_.clear();  // the algorithms' first
  for (auto& t : transports) t.reset();
  peer_memory.reset();
  rendezvous.reset();
  segment.reset();
  free_topology(topo);
}

Comm& Comm::of(MPI_Comm user, double timeout) {
  if (user == MPI_COMM_NULL) throw ArgumentError("comm: the communicator is null (freed?)");
  if (Comm* known = find(user)) {  // the hot path: already set up
    known->call_timeout_ = timeout;
    return *known;
  }
  check_environment();  // at the first call on a communicator, before any communication
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(user, &inter), "MPI_Comm_test_inter");
  if (inter) {
    throw ArgumentError(
        "comm: inter-communicators are supported by allgather and allgatherv only, not by this "
        "collective");
  }
  Comm& comm = Attached<Comm>::attach(user, new Comm(user, timeout));
  comm.run([&] {
    handshake(user, "the communicator (the first shancoll call on it)", timeout);
    comm.set_up(user);
  });
  return comm;
}

namespace {
std::atomic<std::uint64_t> g_states_freed{0};
}  // namespace

void note_state_freed() { g_states_freed.fetch_add(1, std::memory_order_acq_rel); }

std::uint64_t states_freed() { return g_states_freed.load(std::memory_order_acquire); }

Comm* Comm::find(MPI_Comm user) { return Attached<Comm>::find(user); }

void Comm::release_all() { Attached<Comm>::release_all(); }

Comm::Comm(MPI_Comm comm, double timeout) : call_timeout_(timeout) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &size_);
}

void Comm::set_up(MPI_Comm comm) {
  check_mpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  void* value = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &value, &found);
  if (found) tag_ub_ = *static_cast<int*>(value);
}

// Whether no member's calls on this communicator failed, agreed by every
// member (a nonblocking allreduce on the dup's collective context, which a
// failed call's stray point-to-point messages cannot match), with the
// deadline of the last call's waits. A rank whose set-up failed has no dup
// and keeps everything (~Comm); a member that does not come in time counts
// as failed. If any failed, nobody frees collectively: the failed
// rank keeps its windows, so a healthy one would wait in MPI_Win_free
// forever (measured: a job whose collective timed out on one rank hung in
// MPI_Finalize, caught or not; so did comm.Free() after it).
bool Comm::healthy_everywhere() {
  CollectiveBuffer<int> healthy(1);
  healthy[0] = broken_ ? 0 : 1;
  MPI_Request req = MPI_REQUEST_NULL;
  if (PMPI_Iallreduce(MPI_IN_PLACE, healthy.data(), 1, MPI_INT, MPI_MIN, comm_, &req) !=
      MPI_SUCCESS)
    return false;
  try {
    healthy.wait(req, "every rank to free the communicator", call_timeout_);
  } catch (const std::exception&) {
    return false;
  }
  return healthy[0] == 1;
}

std::unique_ptr<Comm> Comm::of_sub(MPI_Comm comm, double timeout) {
  auto sub = std::make_unique<Comm>(comm, timeout);
  sub->set_up(comm);
  return sub;
}

Comm::~Comm() {
  if (comm_ == MPI_COMM_NULL) return;
  if (!healthy_everywhere()) {
    // A failed call may have left MPI operations in flight: receives posted
    // into the segments, sends nobody will match, puts. Freeing would let
    // them land in reused memory or match a later communicator that reuses
    // the context id, so the internal communicators and segments are kept
    // (leaked) until MPI_Finalize, on every member (see above).
    for (auto& entry : nodes_) (void)entry.second.release();
    return;
  }
  nodes_.clear();
  free_drained(comm_);
}

void Comm::refuse_broken(const CallSite& site) const {
  const std::string why = "comm: an earlier shancoll call on this communicator failed (" +
                          broken_why_ +
                          "); its state is undefined: use a new communicator (e.g. comm.Dup())";
  if (site.collective) on_failure(site.collective, site.algorithm, why.c_str());
  throw MpiError(why);
}

// Through run() even where no collective runs yet (the selection of `auto`
// builds layouts too): refused on a broken Comm, and a failure breaks it.
NodeContext& Comm::nodes(int ranks_per_node) {
  if (ranks_per_node < 0) ranks_per_node = environment().ranks_per_node;
  if (ranks_per_node == last_layout_) return *last_nodes_;  // a loop of calls: one layout
  auto& slot = nodes_[ranks_per_node];
  if (!slot) slot = run([&] { return make_nodes(ranks_per_node); });
  last_layout_ = ranks_per_node;
  last_nodes_ = slot.get();
  return *slot;
}

std::unique_ptr<NodeContext> Comm::make_nodes(int ranks_per_node) {
  handshake(comm_,
            ranks_per_node > 0
                ? "the node layout of " + std::to_string(ranks_per_node) + " ranks per node"
                : std::string("the node layout of the physical nodes"),
            call_timeout_);
  auto ctx = std::make_unique<NodeContext>(call_timeout_);
  ctx->topo = build_topology(comm_, ranks_per_node);
  if (ctx->topo.oversubscribed) set_oversubscribed();  // every wait yields sooner
  // Every node grows this segment in the same call (the layouts of shan and
  // shan allreduce are identical on every node), and the rma transport's
  // window spans it: its growth is collective over the whole communicator.
  ctx->segment = std::make_unique<NodeSegment>(ctx->topo.node_comm, comm_, call_timeout_);
  ctx->segment->reserve(segment_header_bytes(ctx->topo));
  ctx->peer_memory = std::make_unique<PeerMemory>(ctx->topo.node_comm);
  return ctx;
}

Transport& Comm::transport(NodeContext& ctx, TransportKind kind) {
  auto& slot = ctx.transports[static_cast<int>(kind)];
  if (!slot) {
    handshake(comm_, std::string("the ") + transport_name(kind) + " transport", call_timeout_);
    slot = make_transport(kind, comm_, ctx.topo, *ctx.segment);
  }
  return *slot;
}

std::byte* Comm::scratch(std::size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(std::max(bytes, 2 * scratch_.size()));
  return scratch_.data();
}

std::size_t segment_header_bytes(const Topology& topo) {
  return (static_cast<std::size_t>(topo.max_local_size()) + 1) * kCacheLine;
}

std::byte* ready_flag(NodeContext& ctx) {
  return ctx.segment->base() + ctx.topo.max_local_size() * kCacheLine;
}

namespace {
// For the timeout message: the barrier this rank is in and where its local
// peers are (a peer behind is stuck elsewhere, one ahead left without us).
std::string describe_barrier(const std::byte* flags, int local_size, std::uint64_t count) {
  std::string text = "; in node barrier " + std::to_string(count) + ", local ranks at:";
  for (int i = 0; i < local_size; ++i) {
    text += " " + std::to_string(acquire_load(flags + i * kCacheLine));
  }
  return text;
}
}  // namespace

void node_barrier(NodeContext& ctx, double timeout) {
  if (ctx.topo.local_size() == 1) return;
  std::byte* flags = ctx.segment->base();
  const std::uint64_t count = ++ctx.barrier_count;
  release_store(flags + ctx.topo.local_rank * kCacheLine, count);
  const int n = ctx.topo.local_size();
  int next = 0;  // ranks before `next` have arrived
  // Keep the transports progressing while we wait: a peer of another node
  // may be inside MPI_Win_flush on our window, which completes only when we
  // drive MPI's progress engine (MPICH emulates such puts with messages).
  auto progress = [&] {
    for (auto& t : ctx.transports) {
      if (t) t->progress();
    }
  };
  try {
    wait_until(
        [&] {
          while (next < n && acquire_load(flags + next * kCacheLine) >= count) ++next;
          return next == n;
        },
        progress, "the node barrier", timeout);
  } catch (const TimeoutError& e) {
    throw TimeoutError(e.what() + describe_barrier(flags, n, count));
  }
}

}  // namespace shancoll
