// Comm: shancoll's state for one user communicator.
//
// It owns a dup of the user's communicator (a private tag space and a
// lifetime of its own) and caches everything expensive: the topology, the
// node segment and the transports, per virtual-node layout. It is attached
// to the user's communicator with an attribute keyval and freed with it;
// whatever is still alive at MPI_Finalize is deleted first thing in
// MPI_Finalize (through an attribute on MPI_COMM_SELF), without the
// collective frees of its windows and communicators (attached.h).
//
// The core calls the MPI collectives that libshancoll_pmpi.so interposes
// (MPI_Allgather(v), MPI_Allreduce, MPI_Iallreduce, MPI_Barrier, MPI_Bcast, MPI_Reduce,
// MPI_Alltoall(v))
// MPI_Gather(v), MPI_Scatter(v))
// by their PMPI_ names: under that library (LD_PRELOAD, mpi4py.profile) the
// Python module's `mpi` baselines and internal calls must still reach the
// MPI library, not shancoll again. tests/test_pmpi.py checks the sources.
//
// Threads (MPI_THREAD_MULTIPLE): MPI forbids concurrent collectives on one
// communicator, so a Comm, its NodeContexts and their states are used by
// one thread at a time and hold no lock. What several threads share is
// process-wide and guarded on its slow path only: the attribute keyvals and
// the list of Comms (attached.h), the state slot counter (an atomic, once
// per LayoutState type). The exception: a split-phase request completes its
// communicator's last_stats/last_algorithm from whichever thread completes
// it (statistics only; MPI lets a request be completed on any thread).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shancoll/error.h"
#include "shancoll/on_error.h"
#include "shancoll/options.h"
#include "shancoll/shm/segment.h"
#include "shancoll/topology.h"

namespace shancoll {

class PeerMemory;  // shm/peer_memory.h
class Transport;
class Comm;

// What an algorithm keeps per node layout across calls (its segment,
// counters, sub-communicators), in a slot of its own: NodeContext::state<T>();
// or a door per communicator (its plan for a repeated call): Comm::state<T>().
// The communicator knows no algorithm.
struct LayoutState {
  virtual ~LayoutState() = default;
};

// Slots of LayoutStates found by type: each T has an index of its own.
class StateSlots {
 public:
  template <class T>
  T& get() {
    const std::size_t slot = kSlot<T>;
    if (slot >= states_.size()) states_.resize(slot + 1);
    std::unique_ptr<LayoutState>& s = states_[slot];
    if (!s) s = std::make_unique<T>();
    return static_cast<T&>(*s);
  }
  void clear() {
    while (!states_.empty()) states_.pop_back();  // newest first
  }

 private:
  static std::size_t next_slot();
  // Set before main (no state is looked up during static initialisation):
  // a lookup reads it without the guard a function-local static costs on
  // every call (the small-message path looks up three states per call).
  template <class T>
  static inline const std::size_t kSlot = next_slot();
  std::vector<std::unique_ptr<LayoutState>> states_;
};

// What Comm::run reports when a call fails under SHANCOLL_ON_ERROR=abort.
struct CallSite {
  const char* collective = nullptr;  // null: inside another collective, which decides
  const char* algorithm = "";
  // A split-phase wait: its timeout leaves the request, and so the
  // communicator, intact (the caller may wait again).
  bool resumable_timeout = false;
};

// Everything that depends on the node layout.
struct NodeContext {
  explicit NodeContext(const double& call_timeout);
  // The owning Comm's call timeout (Comm::set_call_timeout): the deadline of
  // the handshake before a segment of this layout is allocated or grows.
  const double& call_timeout;
  Topology topo;
  std::unique_ptr<NodeSegment> segment;
  std::unique_ptr<Transport> transports[2];  // by TransportKind
  std::uint64_t barrier_count = 0;
  // Where the segment's growing layout ends (shan allgatherv's: its blocks'
  // notification and claim words, identical on every node); other users of
  // the segment lay out their data after it, so they never write over it.
  std::size_t segment_reserved = 0;
  // Single-copy reads and writes between local ranks, probed with the layout.
  std::unique_ptr<PeerMemory> peer_memory;
  // The single-copy calls' handshake lines, calls so far and scratch for
  // chunks in flight (shm/rendezvous.h).
  std::unique_ptr<NodeSegment> rendezvous;
  std::uint64_t rendezvous_calls = 0;
  std::vector<std::byte> rendezvous_scratch;

  // The state of type T (a LayoutState) an algorithm keeps for this layout,
  // made on first use.
  template <class T>
  T& state() {
    return states_.get<T>();
  }
  ~NodeContext();

 private:
  StateSlots states_;
};

class Comm {
 public:
  // The Comm of a user communicator, created on first use: collective then,
  // behind a handshake (handshake.h) that waits at most `timeout` for every
  // rank; a set-up that fails leaves it attached and broken, so that later
  // calls are refused, not matched against a stray barrier. `timeout`
  // becomes the call timeout (set_call_timeout).
  static Comm& of(MPI_Comm user, double timeout);
  // The Comm of a user communicator if it has one (not collective).
  static Comm* find(MPI_Comm user);
  // Frees every Comm now (not collective; no Comm may be in use), as
  // MPI_Finalize otherwise does: for runtimes such as SimGrid SMPI whose
  // MPI_Finalize no longer allows the MPI calls that freeing needs.
  static void release_all();

  // A Comm not set up yet: the rank and size of `comm`, mpi() null.
  Comm(MPI_Comm comm, double timeout);
  // Dups `comm`. Collective: every rank of `comm` must be here, which a
  // handshake on `comm` or on a communicator it was split from ensures.
  void set_up(MPI_Comm comm);
  // A set-up Comm of a sub-communicator (collective, as set_up).
  static std::unique_ptr<Comm> of_sub(MPI_Comm comm, double timeout);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  MPI_Comm mpi() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int tag_ub() const { return tag_ub_; }
  bool broken() const { return broken_; }  // an earlier call failed (see run)

  // The timeout of the call in progress: the deadline of the set-up it
  // starts lazily (a node layout, a transport, a segment that grows, a
  // sub-communicator), whose handshakes run deep inside the algorithms.
  // Comm::of sets it on every call; a caller running a collective on a
  // sub-communicator sets it first.
  void set_call_timeout(double timeout) { call_timeout_ = timeout; }

  // The node layout for `ranks_per_node` (-1: from the environment); built
  // on first use, collectively, behind a handshake.
  NodeContext& nodes(int ranks_per_node);
  // Built on first use, collectively, behind a handshake.
  Transport& transport(NodeContext& ctx, TransportKind kind);

  // Runs one collective. After a timeout or MPI error the ranks may be in
  // different calls, with receives still posted: the communicator's shancoll
  // state is undefined, so later calls are refused instead of corrupting data.
  // `site` names the call for SHANCOLL_ON_ERROR=abort (on_error.h), which
  // ends the job here instead of throwing; a call inside another collective
  // (no site) leaves that to the outer call. Bad arguments (ArgumentError,
  // raised before any communication) pass through and break nothing.
  template <class F>
  auto run(const CallSite& site, F&& collective) {
    if (broken_) refuse_broken(site);
    try {
      return collective();
    } catch (const ArgumentError&) {
      throw;  // checked before any communication: nothing to undo
    } catch (const TimeoutError& e) {
      if (!site.resumable_timeout) mark_broken(e.what());
      if (site.collective) on_failure(site.collective, site.algorithm, e.what());
      throw;
    } catch (const std::exception& e) {
      mark_broken(e.what());
      if (site.collective) on_failure(site.collective, site.algorithm, e.what());
      throw;
    }
  }
  template <class F>
  auto run(F&& collective) {
    return run(CallSite{}, std::forward<F>(collective));
  }

  // The state of type T (a LayoutState) a door keeps for this communicator,
  // made on first use.
  template <class T>
  T& state() {
    return states_.get<T>();
  }

  // Sequence number of the current collective call, identical on all ranks.
  std::uint64_t next_epoch() { return ++epoch_; }

  Stats last_stats;
  const char* last_algorithm = "";

  // Scratch memory kept per communicator and grown, never allocated per call
  // (per-call allocation costs page faults on every large call).
  std::byte* scratch(std::size_t bytes);

 private:
  std::unique_ptr<NodeContext> make_nodes(int ranks_per_node);

  bool healthy_everywhere();  // collective, see comm.cc
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int tag_ub_ = 32767;
  double call_timeout_;
  std::uint64_t epoch_ = 0;
  std::map<int, std::unique_ptr<NodeContext>> nodes_;
  int last_layout_ = -2;  // the layout nodes() returned last (never -2), and its context
  NodeContext* last_nodes_ = nullptr;
  std::vector<std::byte> scratch_;
  StateSlots states_;
  bool broken_ = false;
  std::string broken_why_;

  void mark_broken(const char* why) {
    broken_ = true;
    broken_why_ = why;
  }
  [[noreturn]] void refuse_broken(const CallSite& site) const;
};

// How many communicators' shancoll states (Comm, InterComm: attached.h) have
// been deleted so far in this process: a communicator freed (MPI calls the
// attribute's delete callback from MPI_Comm_free), or MPI_Finalize (which
// deletes whatever is left, and moves this even when nothing is). What a
// caller keeps about a call on a communicator outside its Comm (the Python
// entries' kept calls, bindings/entry.h) is stale once this moves: the
// communicator's handle may have been freed and come back as another one.
// One atomic load (any thread).
std::uint64_t states_freed();

// Every node segment starts with a fixed header: one barrier flag per local
// rank, then the READY flag that the next node sets (through the rma
// transport; two_sided needs none) when its segment may be
// written for the current call. Each a cache line of its own (no false
// sharing). Algorithms lay out their data after the header.
std::size_t segment_header_bytes(const Topology& topo);
std::byte* ready_flag(NodeContext& ctx);

// Node-local barrier on the header's flags; spin-then-yield waits.
void node_barrier(NodeContext& ctx, double timeout);

}  // namespace shancoll
