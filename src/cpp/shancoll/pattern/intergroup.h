// Intergroup exchange arithmetic (Kang, Träff et al., "Scalable algorithms for
// MPI intergroup Allgather and Allgatherv"): group A of p processes, group B
// of q <= p processes.
//
// Algorithm 1 (allgather): A is cut into q subgroups s_0..s_{q-1} of
// consecutive ranks, the first r = p mod q of size ceil(p/q), the others of
// size floor(p/q); b_j exchanges with the members of s_j, one per round, and
// cuts its block into |s_j| segments.
//
// Algorithm 2 (allgatherv): the bytes of a group's full message get global
// indices in rank order; [0, K) is cut into `parts` balanced ranges (the
// first K mod parts one byte longer), and part i goes to process i of the
// other group. Every process sends the pieces of its block that fall into
// each part, and every process receives the pieces of its part.
//
// Pure arithmetic: no MPI.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace shancoll::pattern {

// A balanced split of `total` units into `parts` consecutive ranges.
struct Range {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end - begin; }
};

inline Range balanced_part(std::int64_t total, std::int64_t parts, std::int64_t i) {
  const std::int64_t small = total / parts;
  const std::int64_t rem = total % parts;
  const std::int64_t begin = i * small + (i < rem ? i : rem);
  return {begin, begin + small + (i < rem ? 1 : 0)};
}

// The part that contains unit `index` (0 <= index < total).
inline std::int64_t balanced_part_of(std::int64_t total, std::int64_t parts, std::int64_t index) {
  const std::int64_t small = total / parts;
  const std::int64_t rem = total % parts;
  const std::int64_t big_units = rem * (small + 1);
  if (index < big_units) return index / (small + 1);
  return rem + (index - big_units) / small;
}

// ---------------------------------------------------------------------------
// Algorithm 1

// Subgroup s_j of A (p processes split over q): its ranks.
inline Range subgroup(int p, int q, int j) { return balanced_part(p, q, j); }

// The process of B that serves a_i, i.e. j with a_i in s_j.
inline int subgroup_of(int p, int q, int i) { return static_cast<int>(balanced_part_of(p, q, i)); }

// Rounds of the exchange: ceil(p/q), the size of the largest subgroup.
inline int segmented_rounds(int p, int q) { return (p + q - 1) / q; }

// The segment of b_j's block (k_B bytes) that b_j sends to a_i (i in s_j):
// the block cut into |s_j| balanced segments, in the order of the subgroup.
// Its offset in the full message m_B is j * k_B + the returned begin.
inline Range segment_for(int p, int q, std::int64_t k_b, int i) {
  const int j = subgroup_of(p, q, i);
  const Range s = subgroup(p, q, j);
  return balanced_part(k_b, s.size(), i - s.begin);
}

// ---------------------------------------------------------------------------
// Algorithm 2

// One message of the exchange: `bytes` bytes at global index `index` of the
// sender group's full message, between process `peer` of the other group.
struct Piece {
  int peer = 0;
  std::int64_t index = 0;
  std::int64_t bytes = 0;
};

// What a sender with the bytes [first, first + count) of a full message of
// `total` bytes sends to the `parts` receivers: one piece per part it
// overlaps, in the order of the receivers' ranks (the paper's rule for
// multi-target senders).
inline std::vector<Piece> sender_pieces(std::int64_t total, int parts, std::int64_t first,
                                        std::int64_t count) {
  std::vector<Piece> out;
  if (count == 0) return out;
  const std::int64_t last = first + count;
  for (std::int64_t part = balanced_part_of(total, parts, first); first < last; ++part) {
    const std::int64_t end = std::min(last, balanced_part(total, parts, part).end);
    out.push_back({static_cast<int>(part), first, end - first});
    first = end;
  }
  return out;
}

// What receiver `part` gets from the senders whose blocks have the byte
// counts `counts` (in rank order), in the order of the proof of Theorem 3:
// with senders a_j..a_{j+c} (j the lowest), if a_{j+c} also sends to later
// receivers (a multi-target sender), a_{j+c}, a_{j+c-1}, ..., a_j; otherwise
// a_{j+1}, ..., a_{j+c}, a_j. A multi-target sender serves its receivers in
// ascending order, so its first receiver takes it first and its last receiver
// takes it last: no sender waits for a receiver that is busy with another.
inline std::vector<Piece> receiver_pieces(const std::vector<std::int64_t>& counts, int parts,
                                          int part) {
  std::int64_t total = 0;
  for (std::int64_t c : counts) total += c;
  const Range mine = balanced_part(total, parts, part);
  std::vector<Piece> ascending;
  std::int64_t first = 0;
  bool last_multi = false;
  for (int x = 0; x < static_cast<int>(counts.size()) && first < mine.end; ++x) {
    const std::int64_t begin = std::max(first, mine.begin);
    const std::int64_t end = std::min(first + counts[x], mine.end);
    if (begin < end) {
      ascending.push_back({x, begin, end - begin});
      last_multi = first + counts[x] > mine.end;
    }
    first += counts[x];
  }
  if (ascending.size() < 2) return ascending;
  std::vector<Piece> order;
  if (last_multi) {
    order.assign(ascending.rbegin(), ascending.rend());
  } else {
    order.assign(ascending.begin() + 1, ascending.end());
    order.push_back(ascending.front());
  }
  return order;
}

}  // namespace shancoll::pattern
