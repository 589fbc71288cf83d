// Reduce_scatter and reduce_scatter_block: every rank contributes a vector
// of T elements made of P consecutive blocks (block q: counts[q] elements at
// displs[q], the prefix sums of counts); rank r ends with block r of the
// elementwise reduction x_0 o x_1 o ... o x_{P-1}. Block: every count the same.
//
// One set of algorithms serves both; each has the same signature. The
// registries are reduce_scatter_select.cc, the doors every front end calls
// reduce_scatter.cc.
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
#include "shancoll/ops.h"
#include "shancoll/options.h"

namespace shancoll {

struct ReduceScatterArgs {
  const std::byte* send = nullptr;       // nullptr: in place, the input (T elements) is in recv
  std::byte* recv = nullptr;             // counts[rank] elements (in place: T, result at its start)
  const std::int64_t* counts = nullptr;  // elements of each rank's block (P entries)
  const std::int64_t* displs = nullptr;  // their prefix sums (P entries)
  std::int64_t total = 0;                // T
  const Reducer* reducer = nullptr;
  bool block = false;  // reduce_scatter_block (mpi calls MPI_Reduce_scatter_block)

  std::int64_t esize() const { return static_cast<std::int64_t>(reducer->elem_size()); }
  const std::byte* input() const { return send ? send : recv; }
  const std::byte* block_of(const std::byte* vector, int q) const {
    return vector + displs[q] * esize();
  }
};

using ReduceScatterFn = void (*)(Comm&, const ReduceScatterArgs&, const Options&, Stats&);

void reduce_scatter_shan(Comm&, const ReduceScatterArgs&, const Options&, Stats&);
void reduce_scatter_ring(Comm&, const ReduceScatterArgs&, const Options&, Stats&);
void reduce_scatter_pairwise(Comm&, const ReduceScatterArgs&, const Options&, Stats&);
void reduce_scatter_mpi(Comm&, const ReduceScatterArgs&, const Options&, Stats&);

// shan's path on one node of at least two ranks (reduce_scatter_shan_channels.cc):
// whether it runs (alike on every rank: the layout and the element size decide),
// and the path.
bool reduce_scatter_channels_fit(const NodeContext& ctx, const ReduceScatterArgs& args);
void reduce_scatter_shan_channels(Comm& comm, NodeContext& ctx, const ReduceScatterArgs& args,
                                  const Options& opt, Stats& stats);

// shan's path on one node of two ranks by cross-memory attach
// (reduce_scatter_shan_single_copy.cc): whether it runs (alike on both ranks:
// the layout, the counts and the single_copy option decide), and the path.
bool reduce_scatter_single_copy_fits(const NodeContext& ctx, const ReduceScatterArgs& args,
                                     int single_copy);
void reduce_scatter_shan_single_copy(Comm& comm, NodeContext& ctx, const ReduceScatterArgs& args,
                                     const Options& opt, Stats& stats);

// ---------------------------------------------------------------------------
// The registries and "auto"

struct ReduceScatterAlgorithm {
  const char* name;
  ReduceScatterFn fn;
  bool rank_order;  // combines in rank order: non-commutative ops allowed
  const char* summary;
};

const Registry<ReduceScatterAlgorithm>& reduce_scatter_registry();
const Registry<ReduceScatterAlgorithm>& reduce_scatter_block_registry();

// "auto": the active rule table (rules.h; bytes: the input of one rank / P)
// for `ranks` ranks on `nodes` nodes of `hosts` hosts, else the built-in rule: the MPI
// library's own call (not measured on an idle machine yet). A rule naming
// an algorithm that cannot take the op (or shan on a layout whose nodes are
// not contiguous) is passed over. Pure.
std::string choose_reduce_scatter(std::int64_t bytes, bool block, bool commutative, int ranks,
                                  int nodes, int hosts, bool contiguous = true);

// ---------------------------------------------------------------------------
// The doors: reduce_scatter and reduce_scatter_block from every front end.
// Resolve the options and the algorithm (SHANCOLL_REDUCE_SCATTER_ALGORITHM,
// SHANCOLL_REDUCE_SCATTER_BLOCK_ALGORITHM), check before any communication,
// run, and record what ran in the Comm.

struct ReduceScatterCall {
  MPI_Comm comm = MPI_COMM_NULL;  // an intra-communicator
  const void* send = nullptr;     // nullptr: in place (the input is in recv)
  void* recv = nullptr;
  // reduce_scatter: P counts (elements); reduce_scatter_block: null, and
  // every rank's block has `count` elements.
  const std::int64_t* counts = nullptr;
  std::int64_t count = 0;
  DType type{};
  MPI_Datatype datatype = MPI_DATATYPE_NULL;  // the caller's (user ops); NULL: type's own
  MPI_Op op = MPI_SUM;
  std::string_view algorithm;            // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
};

Comm& reduce_scatter(const ReduceScatterCall& call);
Comm& reduce_scatter_block(const ReduceScatterCall& call);

// reduce_scatter_block's repeat path alone (as bcast_repeat, coll/rooted.h).
bool reduce_scatter_block_repeat(Comm& comm, const ReduceScatterCall& call);

// Tag on comm.mpi() (a private dup): one message per ordered pair and call.
constexpr int kReduceScatterTag = 0x5e40;

}  // namespace shancoll
