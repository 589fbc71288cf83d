// Trees of the release/gather collectives (seed: intranode-release-gather,
// Sec. III-A): who is my parent, who are my children, in which order.
//
// Ranks are numbered 0..P-1 (local ranks of a node); the tree is built on the
// relative rank v = (rank - root) mod P, so any rank can be the root.
//   flat     every v > 0 is a child of the root (the paper's baseline).
//   kary     parent (v-1)/K, children K v + 1 .. K v + K (K = 1: a chain).
//   knomial  v's parent clears v's lowest nonzero base-K digit; its children
//            are v + j K^i for every digit position i below that digit and
//            j = 1..K-1 (K = 2: the binomial tree). Depth ceil(log_K P).
// Skew (Sec. III-A3): a left-skewed tree lists every rank's children in
// increasing rank order (a parent serves them left to right, the tree fills
// up on the left); a right-skewed tree is its mirror image, every children
// list reversed. Same parents, same edges, another service order: left for
// the release step, right for the gather step, per the paper.
// Cost: building one rank's node is O(children); no communication.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace shancoll::pattern {

enum class TreeKind { flat, kary, knomial };

struct TreeShape {
  TreeKind kind = TreeKind::knomial;
  int k = 4;                // branching factor (kary, knomial); ignored by flat
  bool right_skew = false;  // children in decreasing rank order
  bool operator==(const TreeShape& o) const {
    return kind == o.kind && k == o.k && right_skew == o.right_skew;
  }
};

struct TreeNode {
  int parent = -1;            // -1: the root
  std::vector<int> children;  // in service order
};

inline const char* tree_kind_name(TreeKind kind) {
  switch (kind) {
    case TreeKind::flat:
      return "flat";
    case TreeKind::kary:
      return "kary";
    case TreeKind::knomial:
      return "knomial";
  }
  return "?";
}

// The smallest branching factor each kind accepts (knomial K = 1 has no digits).
inline int tree_min_k(TreeKind kind) { return kind == TreeKind::knomial ? 2 : 1; }

inline void check_tree_args(int size, int rank, int root, const TreeShape& shape) {
  if (size < 1 || rank < 0 || rank >= size || root < 0 || root >= size)
    throw std::invalid_argument("tree: need 0 <= rank, root < size, got size " +
                                std::to_string(size) + ", rank " + std::to_string(rank) +
                                ", root " + std::to_string(root));
  if (shape.kind != TreeKind::flat && shape.k < tree_min_k(shape.kind))
    throw std::invalid_argument(std::string("tree: ") + tree_kind_name(shape.kind) +
                                " needs k >= " + std::to_string(tree_min_k(shape.kind)) + ", got " +
                                std::to_string(shape.k));
}

namespace detail {

// Relative-rank parent and children (children in increasing order).
inline int flat_parent(int v) { return v == 0 ? -1 : 0; }
inline void flat_children(int v, int size, std::vector<int>& out) {
  if (v == 0)
    for (int c = 1; c < size; ++c) out.push_back(c);
}

inline int kary_parent(int v, int k) { return v == 0 ? -1 : (v - 1) / k; }
inline void kary_children(int v, int size, int k, std::vector<int>& out) {
  for (long long c = 1LL * k * v + 1; c <= 1LL * k * v + k && c < size; ++c)
    out.push_back(static_cast<int>(c));
}

// The weight K^i of v's lowest nonzero base-K digit; for the root, the first
// power of K that is >= size (all its digit positions are free).
inline long long knomial_level(int v, int size, int k) {
  long long mask = 1;
  while (mask < size && (v / mask) % k == 0) mask *= k;
  return mask;
}
inline int knomial_parent(int v, int size, int k) {
  if (v == 0) return -1;
  const long long mask = knomial_level(v, size, k);
  return static_cast<int>(v - ((v / mask) % k) * mask);
}
inline void knomial_children(int v, int size, int k, std::vector<int>& out) {
  const long long top = knomial_level(v, size, k);
  for (long long mask = 1; mask < top; mask *= k)
    for (long long j = 1; j < k && v + j * mask < size; ++j)
      out.push_back(static_cast<int>(v + j * mask));
  std::sort(out.begin(), out.end());
}

}  // namespace detail

// Depth of the K-nomial tree of `size` ranks: ceil(log_K size).
inline int tree_depth(int size, int k) {
  int depth = 0;
  for (long long reach = 1; reach < size; reach *= k) ++depth;
  return depth;
}

// My parent and children (local ranks) in the tree of `shape` rooted at `root`.
inline TreeNode tree_node(int size, int rank, int root, const TreeShape& shape) {
  check_tree_args(size, rank, root, shape);
  const int v = (rank - root + size) % size;
  int parent = -1;
  std::vector<int> children;
  switch (shape.kind) {
    case TreeKind::flat:
      parent = detail::flat_parent(v);
      detail::flat_children(v, size, children);
      break;
    case TreeKind::kary:
      parent = detail::kary_parent(v, shape.k);
      detail::kary_children(v, size, shape.k, children);
      break;
    case TreeKind::knomial:
      parent = detail::knomial_parent(v, size, shape.k);
      detail::knomial_children(v, size, shape.k, children);
      break;
  }
  TreeNode node;
  node.parent = parent < 0 ? -1 : (parent + root) % size;
  for (int c : children) node.children.push_back((c + root) % size);
  if (shape.right_skew) std::reverse(node.children.begin(), node.children.end());
  return node;
}

}  // namespace shancoll::pattern
