// shan on one node of two ranks, single copy: the inputs and results move
// straight between the two ranks' own buffers (cross-memory attach,
// shm/peer_memory.h), never through the shared segment.
//
//   split (from kSplitMinBytes): the paper's node-local step. The message is
//     split in two fractions; local rank l reads fraction l of the peer's
//     input, chunk by chunk, combines it with its own in rank order into its
//     recvbuf (the chunk still in cache) and writes the result into the
//     peer's recvbuf. Both cores copy and combine at once, each half.
//   whole (smaller messages): each rank reads the peer's whole input and
//     reduces the whole message itself; one system call, no write.
// In place (recvbuf is the input) works unchanged for split: fraction l of
// a rank's buffer is read and then overwritten by the other rank only, in
// that order. For whole, a rank first reads the peer's whole input into
// scratch and combines only after the peer has read its own.
//
// Per call, local rank l (shm/rendezvous.h):
//   1. posts the addresses of its input and recvbuf;
//   2. once the peer posted, runs split or whole;
//   3. finishes: its reads and writes of the peer's memory are over, and
//      once the peer's are too, its input is read and its recvbuf complete,
//      so the call may return.
//
// Cost model (m bytes, single-copy bandwidth B_x, gamma per byte combined,
// f one flag crossing, sigma a system call, chunks of C bytes):
//   split  m/(2 B_x) read + gamma m/2 + m/(2 B_x) written, per rank, both
//          ranks at once; 2 f + 2 sigma ceil(m/(2C));
//   whole  m/B_x + gamma m + 2 f + sigma;
//   the shared-segment pipeline (shan_node_pipeline.cc) copies m in and out
//   through slots the peer has just written (slower across cores than the
//   clean lines of an input) and waits 3 f per chunk. From n = 3 ranks the
//   split's share per rank shrinks but each rank would copy from n - 1
//   peers; larger nodes keep the pipeline (not measurable on 2 cores).
// Measured (2 ranks, from Python): see kSplitMinBytes; docs/performance.md.
// Results: every element is x_0 o x_1, computed once (split) or by both
// ranks with the same kernel (whole): the same bytes on both ranks; rank
// order for non-commutative ops.
#include "shancoll/coll/allreduce/shan_node_single_copy.h"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "shancoll/comm.h"
#include "shancoll/shm/peer_memory.h"
#include "shancoll/shm/rendezvous.h"

namespace shancoll {
namespace {

constexpr std::size_t kChunkBytes = 256 << 10;  // in L2 (2 MiB) with its combine
// Below this the pipeline is as fast: 8 KiB took 3.1 us either way, 16 KiB
// 3.3 us against 3.8 us (2 ranks, from Python).
constexpr std::int64_t kMinBytes = 16 << 10;
// From here split beats whole (two system calls per chunk instead of one):
// speedup over MPICH's allreduce, three alternating runs each, split against
// whole: 16 KiB 2.1-2.7x against 2.7-3.0x, 32-48 KiB even, 64 KiB
// 2.5-2.7x against 2.2-2.4x, 256 KiB 2.6-3.1x against 1.6-2.5x, 1 MiB
// 2.5-3.1x against 1.5-1.7x.
constexpr std::int64_t kSplitMinBytes = 64 << 10;

struct Step {
  const AllreduceArgs& args;
  const PeerMemory& peers;
  int me, peer;
  std::size_t esize;

  const std::byte* input() const { return args.send ? args.send : args.recv; }
  // out[0, bytes) = x_0 o x_1, where the peer's part is `theirs`.
  void combine(std::byte* out, const std::byte* mine, const std::byte* theirs, std::size_t bytes,
               std::byte* tmp) const {
    const auto count = static_cast<std::int64_t>(bytes / esize);
    if (me == 0) return args.reducer->combine(out, mine, theirs, count, tmp);
    args.reducer->combine(out, theirs, mine, count, tmp);
  }
};

void run_split(const Step& st, const std::byte* their_input, std::byte* their_recv,
               std::byte* scratch, std::size_t chunk, Stats& stats) {
  const std::int64_t count = st.args.count;
  const std::size_t lo = static_cast<std::size_t>(count * st.me / 2) * st.esize;
  const std::size_t hi = static_cast<std::size_t>(count * (st.me + 1) / 2) * st.esize;
  for (std::size_t off = lo; off < hi; off += chunk) {
    const std::size_t len = std::min(chunk, hi - off);
    std::byte* out = st.args.recv + off;
    std::byte* theirs = st.args.send ? out : scratch;  // in place: out holds my input
    st.peers.read(st.peer, theirs, their_input + off, len);
    st.combine(out, st.input() + off, theirs, len, scratch + chunk);
    st.peers.write(st.peer, their_recv + off, out, len);
  }
  stats.intra_messages += 2;
  stats.intra_bytes += static_cast<std::int64_t>(2 * (hi - lo));
}

void run_whole(const Step& st, const std::byte* their_input, std::byte* scratch, std::size_t chunk,
               Stats& stats) {
  const std::size_t bytes = static_cast<std::size_t>(st.args.bytes());
  if (st.args.send) {  // a chunk into recvbuf, combined there while in cache
    for (std::size_t off = 0; off < bytes; off += chunk) {
      const std::size_t len = std::min(chunk, bytes - off);
      st.peers.read(st.peer, st.args.recv + off, their_input + off, len);
      st.combine(st.args.recv + off, st.args.send + off, st.args.recv + off, len, scratch);
    }
  } else {  // in place: recvbuf is my input until the peer has read it (step 4)
    st.peers.read(st.peer, scratch, their_input, bytes);
  }
  stats.intra_messages += 1;
  stats.intra_bytes += static_cast<std::int64_t>(bytes);
}

}  // namespace

bool shan_single_copy_fits(NodeContext& ctx, const AllreduceArgs& args) {
  return ctx.topo.local_size() == 2 && args.bytes() >= kMinBytes && ctx.peer_memory->available();
}

void shan_node_single_copy(Comm& comm, NodeContext& ctx, const AllreduceArgs& args, double timeout,
                           Stats& stats) {
  Rendezvous meet(ctx, timeout);
  const int me = ctx.topo.local_rank;
  const std::size_t esize = args.reducer->elem_size();
  const Step st{args, *ctx.peer_memory, me, 1 - me, esize};
  const std::size_t bytes = static_cast<std::size_t>(args.bytes());
  const std::size_t chunk = std::max<std::size_t>(1, kChunkBytes / esize) * esize;
  const bool split = args.bytes() >= kSplitMinBytes;

  meet.post(st.input(), args.recv);
  const std::byte* their_input = meet.first(st.peer);
  std::byte* their_recv = meet.second(st.peer);
  // split: a chunk of the peer's input and a combine's temporary; whole in
  // place: the peer's whole input and a combine's temporary
  std::byte* scratch = comm.scratch(split || args.send ? 2 * chunk : 2 * bytes);
  if (split) {
    run_split(st, their_input, their_recv, scratch, chunk, stats);
  } else {
    run_whole(st, their_input, scratch, chunk, stats);
  }
  meet.finish();  // the peer has read my input and written my recvbuf
  if (!split && !args.send) st.combine(args.recv, args.recv, scratch, bytes, scratch + bytes);
}

}  // namespace shancoll
