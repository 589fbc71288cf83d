// The persistent deposit engines: allreduce, bcast, reduce and allgather(v)
// of more than 56 bytes (per rank) on one node of several ranks, the
// inline engines' (coll/persistent_inline.h) large-message counterparts,
// under the same names (allreduce and allgather(v) `shan`, bcast and reduce
// `release_gather`); and `shan` of alltoall(v) (blocks of at most 4 KiB),
// gather and gatherv (16 KiB), scatter (2 KiB), reduce_scatter_block and
// reduce_scatter (8 KiB), scan and exscan (16 KiB), at every size up to
// those bounds. At _init the request gets a
// node segment of its own sized for the call (shm/deposit_areas.h); a start
// copies the rank's input into its area of the run, so that no peer needs
// its owner after the start (what the PMPI library's routing asks,
// capi/pmpi_persistent.cc); the peers take it chunk by chunk. No MPI call,
// no allocation per run.
//
// Each function makes its engine where it fits, else returns null, alike on
// every rank (a size bound is decided on node_largest). Making one is
// collective over the node. Why each engine's number of areas per rank
// suffices: its .cc's header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/coll/request/request.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/coll/scan/scan.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/ops.h"
#include "shancoll/shm/deposit_areas.h"
#include "shancoll/shm/flags.h"
#include "shancoll/topology.h"

namespace shancoll {

// Where the deposit engines serve: one node of several ranks, `bytes` past
// the inline lines' 56.
inline bool deposit_fits(const Topology& topo, std::int64_t bytes) {
  return topo.node_count == 1 && topo.local_size() > 1 &&
         bytes > static_cast<std::int64_t>(kInlineBytes);
}

// Where one rank's block lies in another's deposit, its bytes, and the
// deposit's bytes: what the v-forms' writers tell their readers at _init
// (a reader does not know the writer's layout).
struct DepositPiece {
  std::uint64_t offset = 0, bytes = 0, deposit = 0;
};

// Where a rank's blocks lie together: from the first non-empty block's start
// to the last one's end (gaps and overlaps included), what it deposits.
struct BlockSpan {
  std::size_t lo = 0, bytes = 0;
};
BlockSpan span_of_blocks(const std::int64_t* counts, const std::int64_t* displs, std::size_t n);

// Bytes [from, to) of the deposits of run `run` (within one chunk, `c`),
// the deposits of local ranks 0 .. ranks - 1 combined in rank order into
// `out` (where byte `from` of the result goes), once each of them has chunk
// c there; false before. This rank's input, if among them, is read at
// `own` (the input's start), not from its area. `bytes`: each deposit's;
// `inputs`: one pointer per rank (scratch); `tmp`: a non-commutative MPI
// op's (Reducer::combine), or null. One rank copies; none writes nothing.
// The reductions' engines (allreduce, reduce: every rank, all bytes;
// reduce_scatter_block: the own block; scan: the ranks up to this one).
bool combine_deposited(const DepositAreas& areas, const Reducer& reducer, int me, int ranks,
                       int size, std::uint64_t run, std::size_t c, std::size_t from, std::size_t to,
                       std::size_t bytes, const std::byte* own, std::byte* out,
                       std::vector<const std::byte*>& inputs, std::byte* tmp);

// Chunk `c` of the result of every rank's deposit, combined into `out` (the
// result's start): combine_deposited over all ranks and the chunk's bytes.
inline bool combine_deposited_chunk(const DepositAreas& areas, const Reducer& reducer, int me,
                                    int size, std::uint64_t run, std::size_t c, std::size_t bytes,
                                    const std::byte* own, std::byte* out,
                                    std::vector<const std::byte*>& inputs, std::byte* tmp) {
  const std::size_t from = c * kDepositChunk, to = std::min(bytes, from + kDepositChunk);
  return combine_deposited(areas, reducer, me, size, size, run, c, from, to, bytes, own, out + from,
                           inputs, tmp);
}

// allreduce_persistent_deposit.cc
std::unique_ptr<Engine> deposit_allreduce(const Topology& topo, const AllreduceArgs& args,
                                          const double& timeout);
// bcast_persistent_deposit.cc
std::unique_ptr<Engine> deposit_bcast(const Topology& topo, const BcastCall& call,
                                      const double& timeout);
// reduce_persistent_deposit.cc: predefined ops on the typed kernels only.
std::unique_ptr<Engine> deposit_reduce(const Topology& topo, const ReduceCall& call,
                                       const double& timeout);
// allgatherv_persistent_deposit.cc: allgather and allgatherv, the largest block past 56 bytes.
std::unique_ptr<Engine> deposit_allgatherv(const Topology& topo, const AllgathervCall& call,
                                           const double& timeout);
// alltoallv_persistent_deposit.cc: alltoall and alltoallv, blocks of at most 4 KiB.
std::unique_ptr<Engine> deposit_alltoallv(const Topology& topo, const AlltoallvCall& call,
                                          const double& timeout);
// gather_persistent_deposit.cc: gather and gatherv, blocks of at most 16 KiB.
std::unique_ptr<Engine> deposit_gather(const Topology& topo, const GathervCall& call,
                                       const double& timeout);
// scatter_persistent_deposit.cc: scatter and scatterv, blocks of at most 2 KiB.
std::unique_ptr<Engine> deposit_scatter(const Topology& topo, const ScattervCall& call,
                                        const double& timeout);
// reduce_scatter_persistent_deposit.cc: reduce_scatter_block (`block`) and
// reduce_scatter, predefined ops on the typed kernels only.
std::unique_ptr<Engine> deposit_reduce_scatter(const Topology& topo, const ReduceScatterCall& call,
                                               bool block, const double& timeout);
// scan_persistent_deposit.cc: scan and exscan (`exclusive`), predefined ops
// on the typed kernels only.
std::unique_ptr<Engine> deposit_scan(const Topology& topo, const ScanCall& call, bool exclusive,
                                     const double& timeout);

}  // namespace shancoll
