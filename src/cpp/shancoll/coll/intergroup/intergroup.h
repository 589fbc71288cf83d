// Allgather and allgatherv on inter-communicators: every process of one group
// receives the blocks of every process of the other group, in the other
// group's rank order; nothing is exchanged within a group. As for the
// intra-communicator collectives the core works in bytes.
//
// Every algorithm has this signature. The receive side describes the REMOTE
// group (MPI's rule for inter-communicators): counts[i] and displs[i] are the
// bytes of remote process i and where they go in recv.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shancoll/call_options.h"
#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/registry.h"
#include "shancoll/intercomm.h"
#include "shancoll/options.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

struct InterAllgathervArgs {
  const std::byte* send = nullptr;  // this process's block (never in place on an intercomm)
  std::int64_t send_bytes = 0;
  std::byte* recv = nullptr;
  std::vector<std::int64_t> counts;  // bytes, one per remote process
  std::vector<std::int64_t> displs;  // bytes, one per remote process
  // allgather: every process of a group sends the same number of bytes
  // (send_bytes here, counts[0] in the remote group): the paper's Algorithm 1.
  bool regular = false;
  std::string intra_algorithm;  // the intragroup allgatherv's ("" or "auto": auto)

  std::int64_t remote_total() const;  // sum of counts: the remote group's full message
};

using InterAllgathervFn = void (*)(InterComm&, const InterAllgathervArgs&, const Options&, Stats&);

void intergroup_segmented(InterComm&, const InterAllgathervArgs&, const Options&, Stats&);
void intergroup_root_gather(InterComm&, const InterAllgathervArgs&, const Options&, Stats&);
void intergroup_mpi(InterComm&, const InterAllgathervArgs&, const Options&, Stats&);

// The two variants of segmented (dispatched on args.regular).
void segmented_allgather(InterComm&, const InterAllgathervArgs&, const Options&, Stats&);
void segmented_allgatherv(InterComm&, const InterAllgathervArgs&, const Options&, Stats&);

struct IntergroupAlgorithm {
  const char* name;
  InterAllgathervFn fn;
  const char* summary;
};

// The registry (intergroup_select.cc); "auto" is segmented, the paper's.
const Registry<IntergroupAlgorithm>& intergroup_registry();

// ---------------------------------------------------------------------------
// The door: allgather(v) on an inter-communicator from every front end.
// Resolves the options (intra_algorithm among them) and the algorithm
// (SHANCOLL_INTERGROUP_ALGORITHM), checks everything before any
// communication, runs, and records what ran in the InterComm.

struct IntergroupCall {
  MPI_Comm comm = MPI_COMM_NULL;  // an inter-communicator
  InterAllgathervArgs args;       // intra_algorithm: set from the options
  std::int64_t recv_bytes = -1;   // bytes at args.recv, checked against the layout; -1: not known
  std::string_view algorithm;     // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
};

InterComm& intergroup_allgatherv(const IntergroupCall& call);

// ---------------------------------------------------------------------------
// Shared by the algorithms (intergroup_common.cc).

// Where the remote group's full message is assembled, packed in rank order:
// straight in recv when the displacements are packed (displs[i] = base +
// counts[0] + ... + counts[i-1]), else in scratch, scattered to the
// displacements by finish().
class RemoteMessage {
 public:
  RemoteMessage(InterComm& ic, const InterAllgathervArgs& args);
  std::byte* at(std::int64_t index) const { return data_ + index; }
  void finish() const;

 private:
  const InterAllgathervArgs& args_;
  std::byte* data_ = nullptr;
  bool packed_ = true;
};

// Point-to-point between the groups (on the InterComm's dup), counted in the
// remote_* statistics. Sends are posted at once; a receive is waited for
// before the next one is posted, so the receiver decides the order in which
// its senders' data arrive (the single-port order of the paper).
class Exchange {
 public:
  // After a failure the posted requests are left alone: the call's exception
  // breaks the InterComm (InterComm::run), which then keeps its dup.
  Exchange(InterComm& ic, const Options& options, Stats& stats);
  void send(const std::byte* data, std::int64_t bytes, int peer);
  void recv(std::byte* data, std::int64_t bytes, int peer);
  void wait_sends();

 private:
  InterComm& ic_;
  double timeout_;
  Stats& stats_;
  std::vector<MPI_Request> sends_;
};

// The intragroup phase: allgatherv of `buf` in place over the local group,
// with shancoll's own allgatherv (counts and displs: bytes per local process).
void intragroup_allgatherv(InterComm& ic, std::byte* buf, std::vector<std::int64_t> counts,
                           std::vector<std::int64_t> displs, const InterAllgathervArgs& args,
                           const Options& options, Stats& stats);

}  // namespace shancoll
