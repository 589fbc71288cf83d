// The members of the rooted gathers' and scatters' binomial tree and the
// messages along its edges (rooted_tree.h).
#include "shancoll/coll/rooted_tree.h"

#include "shancoll/coll/release_gather/release_gather.h"
#include "shancoll/pattern/binomial.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

struct RankMembers : LayoutState {
  TreeMembers m;
};
struct NodeMembers : LayoutState {
  TreeMembers m;
};

// The tree shape of member me among m.count, once the members are listed.
void finish(TreeMembers& m) {
  m.children.clear();
  pattern::for_each_binomial_child(m.count, m.me, [&](int c) { m.children.push_back(c); });
  m.header.assign(static_cast<std::size_t>(m.first[m.subtree_end(m.me)] - m.first[m.me]), 0);
  m.requests.assign(2 * m.children.size(), MPI_REQUEST_NULL);
}

}  // namespace

int TreeMembers::subtree_end(int v) const { return v + pattern::binomial_subtree_span(count, v); }

TreeMembers& rank_members(NodeContext& ctx, int root) {
  TreeMembers& m = ctx.state<RankMembers>().m;
  if (m.root == root) return m;
  const int p = ctx.topo.size;
  m.count = p;
  m.me = (ctx.topo.rank - root + p) % p;
  m.ranks.resize(static_cast<std::size_t>(p));
  m.first.resize(static_cast<std::size_t>(p) + 1);
  for (int u = 0; u < p; ++u) m.ranks[u] = (u + root) % p, m.first[u] = u;
  m.first[p] = p;
  m.rep = m.ranks;
  finish(m);
  m.root = root;
  return m;
}

TreeMembers& node_members(NodeContext& ctx, int root) {
  TreeMembers& m = ctx.state<NodeMembers>().m;
  if (m.root == root) return m;
  const Topology& t = ctx.topo;
  const int n = t.node_count, root_node = t.node_of[root];
  m.count = n;
  m.me = (t.node - root_node + n) % n;
  m.ranks.clear(), m.first.clear(), m.rep.clear();
  for (int u = 0; u < n; ++u) {
    const int node = (root_node + u) % n;
    m.first.push_back(static_cast<int>(m.ranks.size()));
    m.ranks.insert(m.ranks.end(), t.ranks[node].begin(), t.ranks[node].end());
    m.rep.push_back(node_representative(t, node, root));
  }
  m.first.push_back(static_cast<int>(m.ranks.size()));
  finish(m);
  m.root = root;
  return m;
}

// ---------------------------------------------------------------------------

TreeGather::TreeGather(Comm& comm, TreeMembers& m, const Topology& topo, double timeout,
                       Stats& stats)
    : comm_(comm), m_(m), topo_(topo), timeout_(timeout), stats_(stats) {}

void TreeGather::post_headers() {
  for (std::size_t i = 0; i < m_.children.size(); ++i) {
    const int c = m_.children[i];
    const int n = m_.first[m_.subtree_end(c)] - m_.first[c];
    irecv_bytes(reinterpret_cast<std::byte*>(m_.header.data() + m_.index_of(c)), 8LL * n, m_.rep[c],
                kGatherHeaderTag, comm_.mpi(), &m_.requests[i]);
  }
}

std::int64_t TreeGather::wait_headers() {
  wait_requests(m_.requests.data(), m_.children.size(), "gather: the counts of a subtree",
                timeout_);
  std::int64_t bytes = 0;
  for (std::size_t k = static_cast<std::size_t>(m_.own_ranks()); k < m_.header.size(); ++k)
    bytes += m_.header[k];
  return bytes;
}

void TreeGather::receive(std::byte* into) {
  const std::size_t n = m_.children.size();
  std::int64_t at = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int c = m_.children[i];
    std::int64_t bytes = 0;
    for (int k = m_.index_of(c); k < m_.index_of(m_.subtree_end(c)); ++k) bytes += m_.header[k];
    irecv_bytes(into + at, bytes, m_.rep[c], kGatherDataTag, comm_.mpi(), &m_.requests[n + i]);
    at += bytes;
  }
  wait_requests(&m_.requests[n], n, "gather: the blocks of a subtree", timeout_);
}

void TreeGather::send_up(const std::byte* data, std::int64_t bytes) {
  const int parent = m_.rep[pattern::binomial_tree_parent(m_.me)];
  MPI_Request sends[2];
  isend_bytes(reinterpret_cast<const std::byte*>(m_.header.data()),
              8 * static_cast<std::int64_t>(m_.header.size()), parent, kGatherHeaderTag,
              comm_.mpi(), &sends[0]);
  isend_bytes(data, bytes, parent, kGatherDataTag, comm_.mpi(), &sends[1]);
  wait_requests(sends, 2, "gather: the counts and blocks to the parent", timeout_);
  count_message(topo_, parent, bytes, stats_);
}

// ---------------------------------------------------------------------------

TreeScatter::TreeScatter(Comm& comm, TreeMembers& m, const Topology& topo, double timeout,
                         Stats& stats)
    : comm_(comm), m_(m), topo_(topo), timeout_(timeout), stats_(stats) {}

std::int64_t TreeScatter::receive_header() {
  const int parent = m_.rep[pattern::binomial_tree_parent(m_.me)];
  MPI_Request req;
  irecv_bytes(reinterpret_cast<std::byte*>(m_.header.data()),
              8 * static_cast<std::int64_t>(m_.header.size()), parent, kScatterHeaderTag,
              comm_.mpi(), &req);
  wait_request(req, "scatter: the counts of my subtree", timeout_);
  std::int64_t bytes = 0;
  for (std::int64_t c : m_.header) bytes += c;
  return bytes;
}

void TreeScatter::receive(std::byte* into, std::int64_t bytes) {
  const int parent = m_.rep[pattern::binomial_tree_parent(m_.me)];
  MPI_Request req;
  irecv_bytes(into, bytes, parent, kScatterDataTag, comm_.mpi(), &req);
  wait_request(req, "scatter: the blocks of my subtree", timeout_);
}

std::int64_t TreeScatter::own_bytes() const {
  std::int64_t bytes = 0;
  for (int k = 0; k < m_.own_ranks(); ++k) bytes += m_.header[k];
  return bytes;
}

void TreeScatter::send_down(const std::byte* children_data) {
  std::int64_t at = 0;
  posted_ = 0;
  for (int c : m_.children) {
    const int from = m_.index_of(c), to = m_.index_of(m_.subtree_end(c));
    std::int64_t bytes = 0;
    for (int k = from; k < to; ++k) bytes += m_.header[k];
    isend_bytes(reinterpret_cast<const std::byte*>(m_.header.data() + from), 8LL * (to - from),
                m_.rep[c], kScatterHeaderTag, comm_.mpi(), &m_.requests[posted_++]);
    isend_bytes(children_data + at, bytes, m_.rep[c], kScatterDataTag, comm_.mpi(),
                &m_.requests[posted_++]);
    count_message(topo_, m_.rep[c], bytes, stats_);
    at += bytes;
  }
}

void TreeScatter::wait_sends() {
  wait_requests(m_.requests.data(), static_cast<std::size_t>(posted_),
                "scatter: a subtree's blocks to a child", timeout_);
  posted_ = 0;
}

}  // namespace shancoll
