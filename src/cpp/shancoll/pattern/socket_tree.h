// Topology-aware trees of the release/gather collectives (seed:
// intranode-release-gather, Sec. III-A2, Fig. 6-7): who is my parent, who
// are my children, when the node's ranks sit on several sockets.
//
// Input: socket_of[r], the socket of every local rank r (dense ids 0..S-1).
//   per-socket trees  one tree of the given shape (kind, K, skew) over each
//                     socket's ranks in increasing rank order, rooted at the
//                     socket's leader: the collective's root on the root's
//                     socket (the root acts as its socket's leader), the
//                     lowest rank of the socket elsewhere;
//   socket-leader tree a tree of the same shape over the S leaders, in
//                     socket-id order, rooted at the root's socket.
// A leader's children are the two lists joined: its socket-leader children
// (other sockets) and its per-socket children, in the order of `topology`:
//   socket_leader_first  leaders first: the release step reaches the far
//                        sockets first (the paper's choice for release);
//   socket_leader_last   per-socket children first: in the gather step a
//                        socket leader reduces its own socket's subtree while
//                        the other sockets still reduce theirs (the paper's
//                        choice for reduce, its default above 512 bytes).
// Each list keeps its own tree's skew; first/last orders the lists, so a
// right skew does not turn socket-leader-last into socket-leader-first.
// A leader's parent is its leader-tree parent, any other rank's its
// per-socket parent. With one socket this is exactly tree_node() (the
// per-socket tree is the whole node's tree).
// Cost: O(P) time and memory per rank and call (scans socket_of), no
// communication; tree_node() itself when topology is none or S = 1.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "shancoll/pattern/tree.h"

namespace shancoll::pattern {

enum class TreeTopology { none, socket_leader_first, socket_leader_last };

inline const char* tree_topology_name(TreeTopology t) {
  switch (t) {
    case TreeTopology::none:
      return "none";
    case TreeTopology::socket_leader_first:
      return "socket_leader_first";
    case TreeTopology::socket_leader_last:
      return "socket_leader_last";
  }
  return "?";
}

// Socket ids renumbered 0..S-1 in order of their lowest rank; ids must be >= 0.
inline std::vector<int> dense_socket_map(const std::vector<int>& ids) {
  std::vector<int> out(ids.size());
  std::vector<std::pair<int, int>> seen;  // (id, dense id), few sockets: a linear scan
  for (std::size_t r = 0; r < ids.size(); ++r) {
    if (ids[r] < 0) throw std::invalid_argument("socket map: negative socket id");
    auto it = std::find_if(seen.begin(), seen.end(), [&](auto& p) { return p.first == ids[r]; });
    if (it == seen.end()) it = seen.insert(seen.end(), {ids[r], static_cast<int>(seen.size())});
    out[r] = it->second;
  }
  return out;
}

// A synthetic map: `size` ranks split into min(groups, size) consecutive
// groups of near-equal size (sizes differ by at most one, larger ones last).
inline std::vector<int> grouped_socket_map(int size, int groups) {
  if (size < 0 || groups < 1) throw std::invalid_argument("socket map: need groups >= 1");
  const long long g = std::min(groups, std::max(size, 1));
  std::vector<int> out(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) out[r] = static_cast<int>(r * g / size);
  return out;
}

// Number of sockets of a dense map (0 for no ranks).
inline int socket_count(const std::vector<int>& socket_of) {
  int s = 0;
  for (int id : socket_of) s = std::max(s, id + 1);
  return s;
}

// My parent and children in the topology-aware tree (see the header comment).
inline TreeNode socket_tree_node(const std::vector<int>& socket_of, int rank, int root,
                                 const TreeShape& shape, TreeTopology topology) {
  const int size = static_cast<int>(socket_of.size());
  check_tree_args(size, rank, root, shape);
  const int sockets = socket_count(socket_of);
  if (topology == TreeTopology::none || sockets <= 1) return tree_node(size, rank, root, shape);
  for (int id : socket_of)
    if (id < 0) throw std::invalid_argument("socket tree: socket ids must be dense 0..S-1");

  // Leaders: the root on its socket, else the lowest rank; and my socket's ranks.
  std::vector<int> leader(static_cast<std::size_t>(sockets), -1);
  std::vector<int> mine;
  for (int r = 0; r < size; ++r) {
    if (leader[socket_of[r]] < 0) leader[socket_of[r]] = r;
    if (socket_of[r] == socket_of[rank]) mine.push_back(r);
  }
  leader[socket_of[root]] = root;
  if (std::count(leader.begin(), leader.end(), -1) > 0)
    throw std::invalid_argument("socket tree: socket ids must be dense 0..S-1");

  const int me_socket = socket_of[rank];
  const int me_index = static_cast<int>(std::find(mine.begin(), mine.end(), rank) - mine.begin());
  const int lead_index =
      static_cast<int>(std::find(mine.begin(), mine.end(), leader[me_socket]) - mine.begin());
  const TreeNode local = tree_node(static_cast<int>(mine.size()), me_index, lead_index, shape);

  TreeNode node;
  std::vector<int> intra;
  for (int c : local.children) intra.push_back(mine[c]);
  if (rank != leader[me_socket]) {
    node.parent = mine[local.parent];
    node.children = std::move(intra);
    return node;
  }
  const TreeNode across = tree_node(sockets, me_socket, socket_of[root], shape);
  std::vector<int> inter;
  for (int s : across.children) inter.push_back(leader[s]);
  node.parent = across.parent < 0 ? -1 : leader[across.parent];
  const bool leaders_first = topology == TreeTopology::socket_leader_first;
  node.children = leaders_first ? std::move(inter) : std::move(intra);
  const std::vector<int>& rest = leaders_first ? intra : inter;
  node.children.insert(node.children.end(), rest.begin(), rest.end());
  return node;
}

}  // namespace shancoll::pattern
