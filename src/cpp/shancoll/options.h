// Options of one collective call and the statistics it reports.
#pragma once

#include <cstdint>
#include <string>

#include "shancoll/pattern/socket_tree.h"

namespace shancoll {

struct ReleaseGatherOptions;  // coll/release_gather/release_gather.h

enum class TransportKind { rma, two_sided };

struct Options {
  std::int64_t block_size = 0;  // shan: max bytes per block (0: choose)
  TransportKind transport = TransportKind::two_sided;
  int ranks_per_node = -1;  // virtual nodes; -1: SHANCOLL_RANKS_PER_NODE, 0: physical
  double timeout = 0;       // seconds per wait; 0: SHANCOLL_TIMEOUT or 120
  // allgather(v) shan, one node of two ranks: blocks straight between the
  // ranks' buffers (-1: by size, 0: off, 1: on); gather(v), scatter(v),
  // alltoall(v) shan on one node: 1 takes the segment path with cross-memory
  // attach for large blocks instead of the pair channels; release_gather's
  // is its own (also for scan and exscan, whose shan runs it on one node of
  // two ranks).
  int single_copy = -1;
  // shan on one node through shared memory: the bytes of each ring of
  // chunks, allgather(v)'s per rank and the pair channels' per pair (gather,
  // scatter, alltoall, reduce_scatter; 0: the built-in 256 KiB; shm/chunk_ring.h).
  std::int64_t ring_window = 0;
  const ReleaseGatherOptions* release_gather = nullptr;  // nullptr: the defaults

  double wait_timeout() const;  // timeout, with 0 resolved to the default
};

// The tree of one release_gather phase as the call ran it (last_stats).
struct TreeUsed {
  bool used = false;
  pattern::TreeShape shape;
  pattern::TreeTopology topology = pattern::TreeTopology::none;  // as resolved from the options
  int sockets = 1;                 // sockets joined (1: the plain tree of shape)
  const char* socket_source = "";  // where the socket map came from (a static string)
};
// "kary k=2 right, socket_leader_last over 2 sockets (hwloc)"; "" when unused.
std::string describe(const TreeUsed& t);

// What one call did, counted by the calling rank. Tests check the algorithms'
// properties with these (e.g. inter-node messages scale with nodes).
struct Stats {
  std::int64_t rounds = 0;
  std::int64_t inter_messages = 0;  // messages sent to another node
  std::int64_t inter_bytes = 0;
  std::int64_t intra_messages = 0;  // messages/copies within the node
  std::int64_t intra_bytes = 0;
  std::int64_t forwarded = 0;  // shan: blocks this rank forwarded on
  std::int64_t node_count = 1;
  std::int64_t block_count = 0;  // shan: blocks of the whole call
  // Intergroup collectives: traffic between the two groups of an
  // inter-communicator (the intragroup phase is counted in the fields above).
  std::int64_t remote_sent_messages = 0;
  std::int64_t remote_sent_bytes = 0;
  std::int64_t remote_recv_messages = 0;
  std::int64_t remote_recv_bytes = 0;
  // Bytes this rank copied by cross-memory attach (shm/peer_memory.h),
  // straight between its buffer and another local rank's: which mechanism ran.
  std::int64_t single_copy_bytes = 0;
  // Bytes this rank stored into a shared-memory ring around the cache
  // (shm/ring_stores.h): how its ring writers chose to store.
  std::int64_t streamed_ring_bytes = 0;
  TreeUsed bcast_tree, reduce_tree;  // release_gather's phases

  // Every counter by name, in declaration order (then the trees, described):
  // what every front end reports (Python's shancoll.Stats, tests/test_stats_fields).
  template <class Visit>
  void visit(Visit&& f) const {
    f("rounds", rounds), f("inter_messages", inter_messages), f("inter_bytes", inter_bytes);
    f("intra_messages", intra_messages), f("intra_bytes", intra_bytes);
    f("forwarded", forwarded), f("node_count", node_count), f("block_count", block_count);
    f("remote_sent_messages", remote_sent_messages), f("remote_sent_bytes", remote_sent_bytes);
    f("remote_recv_messages", remote_recv_messages), f("remote_recv_bytes", remote_recv_bytes);
    f("single_copy_bytes", single_copy_bytes), f("streamed_ring_bytes", streamed_ring_bytes);
    f("bcast_tree", describe(bcast_tree)), f("reduce_tree", describe(reduce_tree));
  }
};

const char* transport_name(TransportKind kind);
TransportKind parse_transport(const std::string& name);

}  // namespace shancoll
