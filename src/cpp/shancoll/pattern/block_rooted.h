// Block schedules (the representation: pattern/block_schedule.h) of the
// rooted block collectives with one block size everywhere, gather and
// scatter, over the binomial tree of pattern/binomial.h on members
// v = rank - root (mod P): member v's subtree is [v, v + span(v)), so a
// subtree's blocks travel as one message in member order.
//
// binomial gather   a member with children gathers its subtree in scratch
//                   (its own block first), receiving every child's range in
//                   one round, then sends the range to its parent; a leaf
//                   sends its send buffer. Depth ceil(log2 P) rounds,
//                   P - 1 messages, span(v) * m bytes up from member v;
//                   scratch span(v) * m.
// binomial scatter  the reverse: a member receives its subtree's range from
//                   its parent, keeps its block and sends each child its
//                   range (largest first) in one round.
// At the root, members' blocks map to ranks (v + root) mod P at the root's
// displacements: a range whose blocks lie end to end in its buffer is
// received (sent) in place, any other (the range that wraps past rank
// P - 1, irregular displacements) through scratch with one copy per run of
// adjacent blocks.
// The v-forms (igatherv, iscatterv) run the same trees with a block size per
// member: a rank in the middle of the tree needs its subtree's counts, which
// MPI gives to the root alone, so the root first scatters them down the
// same tree (binomial_subtree_scatter_schedule: every member receives its
// whole subtree's counts, ceil(log2 P) more rounds of 8 bytes per member),
// then the blocks move as above (coll/request/request_binomial_v.h).
// Preconditions: 1 <= P, 0 <= rank, root < P; m >= 0; displs: P entries
// (bytes; read at the root only). Pure arithmetic, no MPI.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "shancoll/pattern/binomial.h"
#include "shancoll/pattern/block_schedule.h"

namespace shancoll::pattern {

// Bytes of members [first, first + n) of a subtree range, `bytes(u)` each.
template <class Bytes>
std::int64_t range_bytes(int first, int n, Bytes&& bytes) {
  std::int64_t total = 0;
  for (int u = first; u < first + n; ++u) total += bytes(u);
  return total;
}

// The root's regions of members [first, first + n) in `buf`, in member
// order, adjacent blocks merged.
template <class Bytes>
std::vector<Region> member_regions(int size, int root, int first, int n, Bytes&& bytes,
                                   const std::int64_t* displs, Buf buf) {
  std::vector<Region> out;
  for (int u = first; u < first + n; ++u) {
    const std::int64_t at = displs[mod_rank(u + root, size)], m = bytes(u);
    if (!out.empty() && out.back().offset + out.back().bytes == at)
      out.back().bytes += m;
    else
      out.push_back({buf, at, m});
  }
  return out;
}

// A range of the root's buffer as one message region: itself when one run,
// else scratch at the schedule's end, with `copy` (scratch <-> buffer) per run.
template <class AddCopy>
Region message_region(BlockSchedule& s, const std::vector<Region>& runs, AddCopy&& copy) {
  if (runs.size() == 1) return runs[0];
  Region whole{Buf::scratch, s.scratch_bytes, 0};
  for (const Region& r : runs) {
    copy(Region{Buf::scratch, whole.offset + whole.bytes, r.bytes}, r);
    whole.bytes += r.bytes;
  }
  s.scratch_bytes += whole.bytes;
  return whole;
}

// The v-forms' gather: member u's block is bytes(u) (u - v for the members
// of this rank's subtree, all members at the root); own: the bytes of this
// rank's send buffer. Every message has the size the root's counts give it,
// whatever `own` is: a rank whose own differs copies at most bytes(v) of its
// buffer into a block of that size in scratch (the caller reports it), so
// the tree completes and no rank reads past its buffer.
// displs: the root's receive layout; in_place: the root's block is in recv.
template <class Bytes>
BlockSchedule binomial_gather_blocks(int size, int rank, int root, Bytes&& bytes, std::int64_t own,
                                     const std::int64_t* displs, bool in_place) {
  BlockSchedule s;
  const int v = mod_rank(rank - root, size);
  BlockRound in;
  if (v == 0) {
    if (!in_place)
      s.setup.push_back({{Buf::recv, displs[rank], bytes(0)}, {Buf::send, 0, bytes(0)}});
    for_each_binomial_child(size, v, [&](int c) {
      const auto runs =
          member_regions(size, root, c, binomial_subtree_span(size, c), bytes, displs, Buf::recv);
      in.recvs.push_back(
          {mod_rank(c + root, size), message_region(s, runs, [&](Region scratch, Region dst) {
             in.steps.push_back({false, dst, scratch, {}});
           })});
    });
    if (!in.recvs.empty()) s.rounds.push_back(std::move(in));
    return s;
  }
  const int span = binomial_subtree_span(size, v);
  const int parent = mod_rank(binomial_tree_parent(v) + root, size);
  if (span == 1 && own == bytes(v)) {
    s.rounds.push_back({{{parent, {Buf::send, 0, own}}}, {}});
    return s;
  }
  s.scratch_bytes = range_bytes(v, span, bytes);
  const std::int64_t mine = std::min(own, bytes(v));
  s.setup.push_back({{Buf::scratch, 0, mine}, {Buf::send, 0, mine}});
  for_each_binomial_child(size, v, [&](int c) {
    in.recvs.push_back({mod_rank(c + root, size),
                        {Buf::scratch, range_bytes(v, c - v, bytes),
                         range_bytes(c, binomial_subtree_span(size, c), bytes)}});
  });
  if (!in.recvs.empty()) s.rounds.push_back(std::move(in));
  s.rounds.push_back({{{parent, {Buf::scratch, 0, s.scratch_bytes}}}, {}});
  return s;
}

// The v-forms' scatter: bytes as for the gather; own: the capacity of this
// rank's receive buffer (a block larger than it arrives in scratch and only
// `own` bytes of it are kept: the caller reports the difference).
// displs: the root's send layout; in_place: the root's block stays in send.
template <class Bytes>
BlockSchedule binomial_scatter_blocks(int size, int rank, int root, Bytes&& bytes, std::int64_t own,
                                      const std::int64_t* displs, bool in_place) {
  BlockSchedule s;
  const int v = mod_rank(rank - root, size);
  std::vector<int> children;  // largest subtree first: it has the most to forward
  for_each_binomial_child(size, v, [&](int c) { children.insert(children.begin(), c); });
  BlockRound out;
  if (v == 0) {
    if (!in_place)
      s.setup.push_back({{Buf::recv, 0, bytes(0)}, {Buf::send, displs[rank], bytes(0)}});
    for (int c : children) {
      const auto runs =
          member_regions(size, root, c, binomial_subtree_span(size, c), bytes, displs, Buf::send);
      out.sends.push_back(
          {mod_rank(c + root, size), message_region(s, runs, [&](Region scratch, Region src) {
             s.setup.push_back({scratch, src});
           })});
    }
    if (!out.sends.empty()) s.rounds.push_back(std::move(out));
    return s;
  }
  const int span = binomial_subtree_span(size, v);
  const int parent = mod_rank(binomial_tree_parent(v) + root, size);
  if (span == 1 && bytes(v) <= own) {
    s.rounds.push_back({{}, {{parent, {Buf::recv, 0, bytes(v)}}}});
    return s;
  }
  s.scratch_bytes = range_bytes(v, span, bytes);
  s.rounds.push_back({{},
                      {{parent, {Buf::scratch, 0, s.scratch_bytes}}},
                      {{false,
                        {Buf::recv, 0, std::min(own, bytes(v))},
                        {Buf::scratch, 0, std::min(own, bytes(v))},
                        {}}}});
  for (int c : children)
    out.sends.push_back({mod_rank(c + root, size),
                         {Buf::scratch, range_bytes(v, c - v, bytes),
                          range_bytes(c, binomial_subtree_span(size, c), bytes)}});
  if (!out.sends.empty()) s.rounds.push_back(std::move(out));
  return s;
}

// displs: the root's receive layout; in_place: the root's block is in recv.
inline BlockSchedule binomial_gather_schedule(int size, int rank, int root, std::int64_t m,
                                              const std::int64_t* displs, bool in_place) {
  return binomial_gather_blocks(size, rank, root, [m](int) { return m; }, m, displs, in_place);
}

// displs: the root's send layout; in_place: the root's block stays in send.
inline BlockSchedule binomial_scatter_schedule(int size, int rank, int root, std::int64_t m,
                                               const std::int64_t* displs, bool in_place) {
  return binomial_scatter_blocks(size, rank, root, [m](int) { return m; }, m, displs, in_place);
}

// What the v-forms send ahead of their data: every member receives the
// m-byte entries of its whole subtree (member order) into recv [0, span * m)
// from its parent, then sends each child its subtree's entries; the root
// sends from its send buffer at displs (no entry of its own kept).
inline BlockSchedule binomial_subtree_scatter_schedule(int size, int rank, int root, std::int64_t m,
                                                       const std::int64_t* displs) {
  const int v = mod_rank(rank - root, size);
  if (v == 0) return binomial_scatter_schedule(size, rank, root, m, displs, true);
  BlockSchedule s;
  const int span = binomial_subtree_span(size, v);
  s.rounds.push_back(
      {{}, {{mod_rank(binomial_tree_parent(v) + root, size), {Buf::recv, 0, span * m}}}});
  BlockRound out;
  for_each_binomial_child(size, v, [&](int c) {
    out.sends.push_back(
        {mod_rank(c + root, size), {Buf::recv, (c - v) * m, binomial_subtree_span(size, c) * m}});
  });
  if (!out.sends.empty()) s.rounds.push_back(std::move(out));
  return s;
}

}  // namespace shancoll::pattern
