// shan on one node of two ranks, large messages, single copy: each rank
// reads the peer's whole input straight out of the peer's memory (one
// cross-memory copy, shm/peer_memory.h) and combines it with its own, in rank
// order, into recvbuf. Both ranks reduce the whole message; nothing goes
// through the shared segment.
//
// Why not split the message as the pipeline does: at n local ranks the split
// reads (n - 1)/n m of inputs and (n - 1)/n m of results per rank; at n = 2
// that is m, exactly what reading the peer's whole input costs, but half of
// it is lines the peer has just written (slower across cores than the clean
// lines of an input) and it needs a flag crossing per chunk. From n = 3 on
// the split reads less ((2 (n - 1)/n m against (n - 1) m), so larger nodes
// keep the pipeline (shan_node_pipeline.cc).
//
// Per call s (the same sequence on both ranks), local rank l:
//   1. writes the address of its input into its line, then publishes
//      posted[l] = s + 1;
//   2. once posted[peer] >= s + 1, reads the peer's input chunk by chunk
//      (kChunkBytes, so that the combine finds the copy in cache) into
//      recvbuf and combines it there with its own, x_0 o x_1 on both ranks;
//      in place its input is recvbuf, which the peer is still reading: it
//      reads the peer's whole input into scratch first and combines after 4;
//   3. publishes read[l] = s + 1: its reads of the peer's memory are over;
//   4. waits until read[peer] >= s + 1: nobody reads its input any more, so
//      the caller may change it.
//
// Cost model (m bytes, single-copy bandwidth B_x, gamma per byte combined,
// f one flag crossing, sigma a system call):
//   time     m/B_x + gamma m + 2 f + sigma ceil(m/C);
//   against the pipeline's 2 m/B + gamma m/2 + 3 f ceil(m/C) with copies of
//   freshly written lines. Measured here (2 ranks, from Python): 64 KiB
//   7.0 us against 8.1 us, 256 KiB 23.5 against 29.2, 4 MiB 524 against 686.
// Results: both ranks evaluate x_0 o x_1 with the same kernel: bitwise the
// same bytes; rank order kept for non-commutative ops.
#include "shancoll/coll/allreduce/shan_node_single_copy.h"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "shancoll/coll/allreduce/shan_node_pipeline.h"
#include "shancoll/comm.h"
#include "shancoll/progress.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/peer_memory.h"

namespace shancoll {
namespace {

constexpr std::size_t kChunkBytes = 256 << 10;  // in L2 (2 MiB) with its combine
// Below this the pipeline is as fast: 8 KiB took 3.1 us either way, 16 KiB
// 3.3 us against 3.8 us (2 ranks, from Python).
constexpr std::int64_t kMinBytes = 16 << 10;

// Two cache lines per local rank: posted (counter, then the input address)
// and read.
enum Line { kPosted, kRead, kLines };

struct Step {
  const AllreduceArgs& args;
  const PeerMemory& peers;
  std::byte* flags;
  int me, peer;
  std::uint64_t s;  // this call's number + 1
  double timeout;

  void* line(Line kind, int local) const { return flags + (kind * 2 + local) * kCacheLine; }
  const std::byte* input() const { return args.send ? args.send : args.recv; }
  void wait(Line kind, const char* what) const {
    wait_until([&] { return acquire_load(line(kind, peer)) >= s; }, what, timeout);
  }
};

// recv[0, count) = x_0 o x_1, where the peer's part is `theirs`.
void combine_in_order(const Step& st, std::byte* out, const std::byte* mine,
                      const std::byte* theirs, std::int64_t count, std::byte* tmp) {
  if (st.me == 0) return st.args.reducer->combine(out, mine, theirs, count, tmp);
  st.args.reducer->combine(out, theirs, mine, count, tmp);
}

}  // namespace

bool shan_single_copy_fits(NodeContext& ctx, const AllreduceArgs& args) {
  return ctx.topo.local_size() == 2 && args.bytes() >= kMinBytes && peer_memory(ctx).available();
}

void shan_node_single_copy(Comm& comm, NodeContext& ctx, const AllreduceArgs& args, double timeout,
                           Stats& stats) {
  ShanPipelineState& state = shan_pipeline_state(ctx);
  if (!state.single_copy_flags) {  // collective over the node, on first use only
    state.single_copy_flags = std::make_unique<NodeSegment>(ctx.topo.node_comm);
    state.single_copy_flags->reserve(kLines * 2 * kCacheLine);
  }
  const int me = ctx.topo.local_rank;
  const Step st{args,   *ctx.peer_memory, state.single_copy_flags->base(),
                me,     1 - me,           ++state.single_copy_calls,
                timeout};
  const std::size_t esize = args.reducer->elem_size();
  const std::size_t bytes = static_cast<std::size_t>(args.bytes());
  const std::size_t chunk = std::max<std::size_t>(1, kChunkBytes / esize) * esize;

  auto* address = static_cast<const std::byte**>(st.line(kPosted, me)) + 1;
  *address = st.input();
  release_store(st.line(kPosted, me), st.s);  // after the address (flags.h)
  st.wait(kPosted, "shan allreduce: the peer's input");
  const std::byte* theirs = *(static_cast<const std::byte* const*>(st.line(kPosted, st.peer)) + 1);

  if (args.send) {  // read a chunk into recvbuf, combine it there while in cache
    std::byte* tmp = comm.scratch(chunk);
    for (std::size_t off = 0; off < bytes; off += chunk) {
      const std::size_t len = std::min(chunk, bytes - off);
      st.peers.read(st.peer, args.recv + off, theirs + off, len);
      combine_in_order(st, args.recv + off, args.send + off, args.recv + off,
                       static_cast<std::int64_t>(len / esize), tmp);
    }
    release_store(st.line(kRead, me), st.s);
    st.wait(kRead, "shan allreduce: the peer's reads");
  } else {  // in place: recvbuf is my input until the peer has read it
    std::byte* copy = comm.scratch(2 * bytes);
    st.peers.read(st.peer, copy, theirs, bytes);
    release_store(st.line(kRead, me), st.s);
    st.wait(kRead, "shan allreduce: the peer's reads");
    combine_in_order(st, args.recv, args.recv, copy, args.count, copy + bytes);
  }
  stats.intra_messages += 1;
  stats.intra_bytes += static_cast<std::int64_t>(bytes);
}

}  // namespace shancoll
