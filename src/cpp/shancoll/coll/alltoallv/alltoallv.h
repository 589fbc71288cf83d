// Alltoallv: every rank sends send_counts[j] bytes from send + send_displs[j]
// to rank j, which receives them at recv + recv_displs[i] (i the sender,
// recv_counts[i] bytes). The core works in bytes: a pure data movement, so
// one implementation serves every dtype (the front ends convert counts and
// displacements). Alltoall is the regular case: every block of every rank
// has one size, which every rank knows.
//
// Every algorithm has the same signature; the registry and the rule behind
// "auto": alltoallv_select.cc; the door every front end calls: alltoallv.cc.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shancoll/call_options.h"
#include "shancoll/coll/registry.h"
#include "shancoll/comm.h"
#include "shancoll/options.h"

namespace shancoll {

struct AlltoallvArgs {
  // nullptr: in place (MPI_IN_PLACE: the blocks to send are in recv, laid
  // out by the receive counts); the door hands the algorithms a copy.
  const std::byte* send = nullptr;
  std::byte* recv = nullptr;
  std::vector<std::int64_t> send_counts, send_displs;  // bytes, one per rank
  std::vector<std::int64_t> recv_counts, recv_displs;  // bytes, one per rank
  // alltoall: every block on every rank is send_counts[0] bytes, known to
  // all (bruck then sends no block sizes).
  bool regular = false;

  std::int64_t send_extent() const;  // bytes the send blocks span
  std::int64_t recv_extent() const;  // bytes the receive blocks span
};

using AlltoallvFn = void (*)(Comm&, const AlltoallvArgs&, const Options&, Stats&);

void alltoallv_shan(Comm&, const AlltoallvArgs&, const Options&, Stats&);
void alltoallv_pairwise(Comm&, const AlltoallvArgs&, const Options&, Stats&);
void alltoallv_bruck(Comm&, const AlltoallvArgs&, const Options&, Stats&);
void alltoallv_mpi(Comm&, const AlltoallvArgs&, const Options&, Stats&);

void alltoallv_shan_channels(Comm& comm, NodeContext& ctx, const AlltoallvArgs& args,
                             const Options& opt, Stats& stats);

// Copies this rank's block for itself (send to recv; counted as one intra
// copy); around the cache when `stream` (cost.h, streams_result).
void copy_self_block(const Comm& comm, const AlltoallvArgs& args, Stats& stats,
                     bool stream = false);

// ---------------------------------------------------------------------------
// The registry and "auto" (alltoallv_select.cc)

struct AlltoallvAlgorithm {
  const char* name;
  AlltoallvFn fn;
  const char* summary;
};

const Registry<AlltoallvAlgorithm>& alltoallv_registry();

// "auto" for a call whose blocks are `block` bytes on every rank (alltoall;
// -1 for alltoallv, whose sizes no rank knows for the others): the active
// rule table (rules.h; an alltoallv row's bytes are the block's, and only
// alltoall calls match a row), else the built-in rule. Pure.
std::string choose_alltoallv(std::int64_t block, int ranks, int nodes, int hosts);

// ---------------------------------------------------------------------------
// The door: alltoall and alltoallv from every front end (Python, the C API,
// the PMPI library, the bench). Resolves the options and the algorithm
// (SHANCOLL_ALLTOALL(V)_ALGORITHM), checks before any communication, runs,
// and records what ran in the Comm (last_stats, last_algorithm).

struct AlltoallvCall {
  MPI_Comm comm = MPI_COMM_NULL;  // an intra-communicator
  AlltoallvArgs args;
  bool alltoall = false;                 // for SHANCOLL_ALLTOALL_ALGORITHM and messages
  std::string_view algorithm;            // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
};

Comm& alltoallv(const AlltoallvCall& call);

// A repeated alltoall: its buffers and its block, without the layout's
// arrays (the plan keeps them).
struct AlltoallRepeat {
  const std::byte* send = nullptr;  // nullptr: in place
  std::byte* recv = nullptr;
  std::int64_t block = 0;  // bytes per rank and block
};

// The alltoall door's repeat path alone (door.h, RepeatPlan; as
// bcast_repeat, coll/rooted.h): true when `call` repeats the door's last
// plannable alltoall on `comm` (it ran), false when not.
bool alltoall_repeat(Comm& comm, const AlltoallRepeat& call);

// Tags on comm.mpi() (a private dup), one per algorithm.
constexpr int kAlltoallTag = 0x5c20;

}  // namespace shancoll
