#include "shancoll/shm/rendezvous.h"

#include <memory>
#include <string>
#include <vector>

#include "shancoll/error.h"
#include "shancoll/progress.h"
#include "shancoll/shm/flags.h"

namespace shancoll {
namespace {

enum Kind { kPost, kDone, kKinds };

std::uint64_t* words(std::byte* line) { return reinterpret_cast<std::uint64_t*>(line); }

}  // namespace

Rendezvous::Rendezvous(NodeContext& ctx, double timeout)
    : ctx_(ctx), me_(ctx.topo.local_rank), size_(ctx.topo.local_size()), timeout_(timeout) {
  if (!ctx.rendezvous) {  // collective over the node, on the first call only
    ctx.rendezvous =
        std::make_unique<NodeSegment>(ctx.topo.node_comm, ctx.topo.node_comm, ctx.call_timeout);
    ctx.rendezvous->reserve(kKinds * ctx.topo.max_local_size() * kCacheLine);
  }
  base_ = ctx.rendezvous->base();
  call_ = ++ctx.rendezvous_calls;
}

std::byte* Rendezvous::line(int kind, int local) const {
  return base_ + (kind * size_ + local) * kCacheLine;
}

void Rendezvous::wait(int kind, int peer, const char* what) const {
  const std::byte* flag = line(kind, peer) + (kind == kPost ? 16 : 0);
  wait_flag_reaches(flag, call_, what, timeout_);
}

void Rendezvous::post(const void* first, const void* second, std::uint64_t shape,
                      const char* what) {
  std::uint64_t* w = words(line(kPost, me_));
  w[0] = reinterpret_cast<std::uint64_t>(first);
  w[1] = reinterpret_cast<std::uint64_t>(second);
  w[3] = shape;
  release_store(&w[2], call_);  // after the addresses and the shape (flags.h)
  for (int j = 0; j < size_; ++j) {
    if (j == me_) continue;
    wait(kPost, j, "single copy: a local rank's buffers");
    if (words(line(kPost, j))[3] == shape) continue;
    finish();  // every local rank sees the same posts and refuses alike: none copies
    throw ArgumentError(std::string(what) + ": the local ranks' calls differ (local rank " +
                        std::to_string(j) + " and this one, " + std::to_string(me_) +
                        "): MPI requires the same on every rank (check=True names them)");
  }
}

std::byte* Rendezvous::first(int peer) const {
  wait(kPost, peer, "single copy: a local rank's buffers");
  return reinterpret_cast<std::byte*>(words(line(kPost, peer))[0]);
}

std::byte* Rendezvous::second(int peer) const {
  wait(kPost, peer, "single copy: a local rank's buffers");
  return reinterpret_cast<std::byte*>(words(line(kPost, peer))[1]);
}

std::byte* Rendezvous::scratch(std::size_t bytes) {
  std::vector<std::byte>& s = ctx_.rendezvous_scratch;
  if (s.size() < bytes) s.resize(bytes);
  return s.data();
}

void Rendezvous::finish() const {
  release_store(line(kDone, me_), call_);  // after my copies
  for (int j = 0; j < size_; ++j)
    if (j != me_) wait(kDone, j, "single copy: a local rank's copies");
}

}  // namespace shancoll
