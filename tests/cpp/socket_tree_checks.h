// Checks of pattern/socket_tree.h (topology-aware trees), included by
// pattern_tests.cc (which defines check() and tree_depths()). On synthetic
// socket maps (consecutive groups of 1..4 sockets, interleaved 2 and 3
// sockets, uneven) for P = 1..20, roots 0, 1, P/2, P-1, every kind, K, skew
// and both orders:
//   - parent and children agree, every rank is reached from the root once;
//   - each socket has one leader (the root on the root's socket, the lowest
//     rank elsewhere): the only rank whose parent is on another socket, and
//     that parent is a leader; S - 1 edges cross sockets;
//   - a leader serves the other sockets' leaders before (socket_leader_first)
//     or after (socket_leader_last) its own socket's children, each list in
//     its tree's skew; the two orders differ only in that;
//   - one socket, or topology none: exactly tree_node();
//   - worked examples: 8 ranks on 2 sockets (root 0 and root 5), 12 ranks on
//     3 sockets as in the paper's Fig. 7, an interleaved map; the synthetic
//     map helpers.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "shancoll/pattern/socket_tree.h"

namespace socket_tree_checks {

using shancoll::pattern::TreeKind;
using shancoll::pattern::TreeNode;
using shancoll::pattern::TreeShape;
using shancoll::pattern::TreeTopology;
using V = std::vector<int>;

inline std::vector<TreeNode> all_nodes(const V& map, int root, TreeShape shape, TreeTopology t) {
  std::vector<TreeNode> nodes;
  for (int r = 0; r < static_cast<int>(map.size()); ++r)
    nodes.push_back(shancoll::pattern::socket_tree_node(map, r, root, shape, t));
  return nodes;
}

inline void check_shape(const V& map, int root, TreeShape shape, TreeTopology t,
                        const std::string& what) {
  const int P = static_cast<int>(map.size());
  const int S = shancoll::pattern::socket_count(map);
  const std::vector<TreeNode> nodes = all_nodes(map, root, shape, t);
  bool linked = nodes[root].parent == -1;
  for (int r = 0; r < P; ++r) {
    if (r != root) linked = linked && nodes[r].parent >= 0 && nodes[r].parent < P;
    for (int c : nodes[r].children) linked = linked && c >= 0 && c < P && nodes[c].parent == r;
  }
  check(linked, what + ": parent and children lists agree");
  if (!linked) return;
  bool twice = false;
  const V depth = tree_depths(nodes, root, twice);
  check(!twice && *std::min_element(depth.begin(), depth.end()) == 0,
        what + ": every rank reached exactly once");

  if (S <= 1 || t == TreeTopology::none) {
    bool same = true;
    for (int r = 0; r < P; ++r) {
      const TreeNode plain = shancoll::pattern::tree_node(P, r, root, shape);
      same = same && plain.parent == nodes[r].parent && plain.children == nodes[r].children;
    }
    check(same, what + ": one socket or no topology is the plain tree");
    return;
  }
  V leader(S, -1);
  for (int r = P - 1; r >= 0; --r) leader[map[r]] = r;
  leader[map[root]] = root;
  int crossing = 0;
  bool leaders_ok = true, order_ok = true;
  for (int r = 0; r < P; ++r) {
    const int p = nodes[r].parent;
    const bool is_leader = leader[map[r]] == r;
    if (p >= 0 && map[p] != map[r]) {
      ++crossing;
      leaders_ok = leaders_ok && is_leader && leader[map[p]] == p;
    }
    if (p >= 0 && map[p] == map[r]) leaders_ok = leaders_ok && !is_leader;
    // Children: the other sockets' leaders all before (first) or after (last) my socket's.
    const V& ch = nodes[r].children;
    bool seen_own = false, seen_other = false, ok = true;
    for (int c : ch) {
      const bool other = map[c] != map[r];
      if (t == TreeTopology::socket_leader_first) ok = ok && !(other && seen_own);
      if (t == TreeTopology::socket_leader_last) ok = ok && !(!other && seen_other);
      (other ? seen_other : seen_own) = true;
    }
    order_ok = order_ok && ok;
  }
  check(leaders_ok && crossing == S - 1,
        what + ": one leader per socket; only leaders link sockets, S-1 crossing edges");
  check(order_ok,
        what + ": leaders served " + (t == TreeTopology::socket_leader_first ? "first" : "last"));
  const TreeTopology other = t == TreeTopology::socket_leader_first
                                 ? TreeTopology::socket_leader_last
                                 : TreeTopology::socket_leader_first;
  const std::vector<TreeNode> swapped = all_nodes(map, root, shape, other);
  bool permuted = true;
  for (int r = 0; r < P; ++r) {
    V a = nodes[r].children, b = swapped[r].children;
    V own_a, own_b;
    for (int c : a)
      if (map[c] == map[r]) own_a.push_back(c);
    for (int c : b)
      if (map[c] == map[r]) own_b.push_back(c);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    permuted = permuted && nodes[r].parent == swapped[r].parent && a == b && own_a == own_b;
  }
  check(permuted, what + ": first and last differ only in the order of the two lists");
}

inline V children(const V& map, int rank, int root, TreeShape shape, TreeTopology t) {
  return shancoll::pattern::socket_tree_node(map, rank, root, shape, t).children;
}
inline int parent(const V& map, int rank, int root, TreeShape shape, TreeTopology t) {
  return shancoll::pattern::socket_tree_node(map, rank, root, shape, t).parent;
}

inline void examples() {
  using shancoll::pattern::grouped_socket_map;
  const TreeTopology first = TreeTopology::socket_leader_first;
  const TreeTopology last = TreeTopology::socket_leader_last;
  // 8 ranks on 2 sockets {0-3} {4-7}, binary K-ary trees.
  const V two = grouped_socket_map(8, 2);
  check(two == V{0, 0, 0, 0, 1, 1, 1, 1}, "grouped_socket_map(8, 2)");
  const TreeShape k2{TreeKind::kary, 2, false}, k2r{TreeKind::kary, 2, true};
  check(children(two, 0, 0, k2, last) == V{1, 2, 4} && children(two, 0, 0, k2, first) == V{4, 1, 2},
        "8 ranks, 2 sockets, root 0: leader 4 after / before 0's socket children");
  check(children(two, 0, 0, k2r, last) == V{2, 1, 4} && children(two, 4, 0, k2r, last) == V{6, 5} &&
            parent(two, 4, 0, k2r, last) == 0 && parent(two, 7, 0, k2r, last) == 5,
        "8 ranks, 2 sockets, right skew: each list mirrored, the lists' order kept");
  // Root 5 leads socket 1 (members 4..7 rotated to start at 5); 0 leads socket 0.
  check(children(two, 5, 5, k2, last) == V{6, 7, 0} && children(two, 6, 5, k2, last) == V{4} &&
            parent(two, 0, 5, k2, last) == 5 && children(two, 0, 5, k2, last) == V{1, 2},
        "8 ranks, 2 sockets, root 5 acts as its socket's leader");
  // The paper's Fig. 7 shape: sockets of 4, per-socket 3-ary trees; leaders 4 and 8 under 0.
  const V three = grouped_socket_map(12, 3);
  const TreeShape k3{TreeKind::kary, 3, false};
  check(children(three, 0, 0, k3, first) == V{4, 8, 1, 2, 3} &&
            children(three, 0, 0, k3, last) == V{1, 2, 3, 4, 8} &&
            children(three, 8, 0, k3, last) == V{9, 10, 11},
        "paper Fig. 7: socket-leader-first (a) and -last (b)");
  // Interleaved (round-robin) binding: sockets {0,2,4,6} and {1,3,5,7}.
  const V rr{0, 1, 0, 1, 0, 1, 0, 1};
  check(children(rr, 0, 0, k2, first) == V{1, 2, 4} && children(rr, 1, 0, k2, first) == V{3, 5} &&
            children(rr, 2, 0, k2, first) == V{6},
        "interleaved sockets: per-socket trees over non-consecutive ranks");
  check(grouped_socket_map(5, 2) == V{0, 0, 0, 1, 1} && grouped_socket_map(3, 8) == V{0, 1, 2} &&
            shancoll::pattern::dense_socket_map({7, 7, 2, 7, 0}) == V{0, 0, 1, 0, 2},
        "synthetic maps: near-equal consecutive groups, dense renumbering by lowest rank");
}

inline void run() {
  examples();
  const TreeTopology orders[] = {TreeTopology::socket_leader_first,
                                 TreeTopology::socket_leader_last, TreeTopology::none};
  for (int P = 1; P <= 20; ++P) {
    std::vector<std::pair<std::string, V>> maps;
    for (int g = 1; g <= 4; ++g)
      maps.emplace_back("groups" + std::to_string(g), shancoll::pattern::grouped_socket_map(P, g));
    V rr2, rr3, uneven;
    for (int r = 0; r < P; ++r) {
      rr2.push_back(r % 2);
      rr3.push_back((r * 5) % 3);
      uneven.push_back(r < 1 ? 0 : r < P / 3 + 1 ? 1 : 2);
    }
    maps.emplace_back("interleaved2", shancoll::pattern::dense_socket_map(rr2));
    maps.emplace_back("interleaved3", shancoll::pattern::dense_socket_map(rr3));
    maps.emplace_back("uneven", shancoll::pattern::dense_socket_map(uneven));
    std::vector<TreeShape> shapes{{TreeKind::flat, 1, false}, {TreeKind::flat, 1, true}};
    for (int k = 1; k <= 4; ++k)
      for (bool right : {false, true}) {
        shapes.push_back({TreeKind::kary, k, right});
        if (k >= 2) shapes.push_back({TreeKind::knomial, k, right});
      }
    for (const auto& [name, map] : maps)
      for (int root : {0, std::min(1, P - 1), P / 2, P - 1})
        for (const TreeShape& s : shapes)
          for (TreeTopology t : orders)
            check_shape(map, root, s, t,
                        std::string("socket tree ") + name + " P=" + std::to_string(P) +
                            " root=" + std::to_string(root) + " " + tree_kind_name(s.kind) +
                            " k=" + std::to_string(s.k) + (s.right_skew ? " right " : " left ") +
                            tree_topology_name(t));
  }
  bool threw = false;
  try {
    shancoll::pattern::socket_tree_node({0, 2, 2}, 0, 0, {TreeKind::kary, 2, false},
                                        TreeTopology::socket_leader_last);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  check(threw, "socket tree: a map with a gap in its ids throws std::invalid_argument");
}

}  // namespace socket_tree_checks
