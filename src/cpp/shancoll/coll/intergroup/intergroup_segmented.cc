// segmented, allgather: Algorithm 1 of Kang, Traeff et al. (full-duplex
// intergroup all-to-all broadcast with message segmentation).
//
// Group A has p processes with blocks of k_A bytes, group B q <= p processes
// with blocks of k_B bytes (either group of the inter-communicator may be A).
// A is cut into q subgroups s_j of consecutive ranks (sizes ceil(p/q) for the
// first p mod q, floor(p/q) for the rest; pattern/intergroup.h). In round t
// b_j exchanges with the t-th member a of s_j: a sends its whole block to b_j,
// b_j sends a the t-th of |s_j| balanced segments of its block (sizes
// floor(k_B/|s_j|) or ceil(k_B/|s_j|), possibly empty). Then both groups run
// an allgatherv concurrently, in place, with shancoll's own algorithm: the
// pieces already sit at their final offsets, no reordering.
//
// Cost model (t_s startup, t_w per byte; Theorem 1):
//   exchange     ceil(p/q) rounds, transfer max(ceil(p/q) k_A, k_B) t_w;
//   intragroup   A: allgatherv of ~q k_B / p per process over p processes,
//                B: ~(p/q) k_A per process over q processes, concurrently;
//   total        transfer <= (M + k_B) t_w with M = max(p k_A, q k_B), the
//                single-port lower bound.
// Bytes across the groups: every byte once; b_j receives |s_j| k_A, a_i one
// segment of k_B.
//
// Preconditions: args.regular (all of a group send the same bytes, the remote
// ones counts[0]), displacements as the allgather layout (packed).
#include "shancoll/coll/intergroup/intergroup.h"
#include "shancoll/pattern/intergroup.h"

namespace shancoll {
namespace {

using pattern::Range;

struct Sizes {
  int p, q;               // sizes of A and B
  std::int64_t k_a, k_b;  // bytes per block in A and in B
};

Sizes sizes(InterComm& ic, const InterAllgathervArgs& args) {
  const std::int64_t mine = args.send_bytes;
  const std::int64_t theirs = args.counts.empty() ? 0 : args.counts[0];
  return {ic.p(), ic.q(), ic.in_a() ? mine : theirs, ic.in_a() ? theirs : mine};
}

// a_i: one exchange with the b_j whose subgroup holds it, then the allgatherv
// of group A over the segments of m_B.
void run_in_a(InterComm& ic, const InterAllgathervArgs& args, const Sizes& s,
              const RemoteMessage& m_b, const Options& options, Stats& stats) {
  const int i = ic.rank();
  const int j = pattern::subgroup_of(s.p, s.q, i);
  const Range seg = pattern::segment_for(s.p, s.q, s.k_b, i);
  Exchange x(ic, options, stats);
  x.send(args.send, s.k_a, j);
  x.recv(m_b.at(j * s.k_b + seg.begin), seg.size(), j);
  x.wait_sends();
  stats.rounds = 1;
  std::vector<std::int64_t> counts(s.p), displs(s.p);
  for (int a = 0; a < s.p; ++a) {
    const Range sa = pattern::segment_for(s.p, s.q, s.k_b, a);
    counts[a] = sa.size();
    displs[a] = pattern::subgroup_of(s.p, s.q, a) * s.k_b + sa.begin;
  }
  intragroup_allgatherv(ic, m_b.at(0), std::move(counts), std::move(displs), args, options, stats);
}

// b_j: one round per member of s_j, then the allgatherv of group B over the
// blocks of m_A, |s_j| consecutive blocks per process.
void run_in_b(InterComm& ic, const InterAllgathervArgs& args, const Sizes& s,
              const RemoteMessage& m_a, const Options& options, Stats& stats) {
  const int j = ic.rank();
  const Range sub = pattern::subgroup(s.p, s.q, j);
  Exchange x(ic, options, stats);
  for (int t = 0; t < sub.size(); ++t) {
    const int a = static_cast<int>(sub.begin) + t;
    const Range seg = pattern::balanced_part(s.k_b, sub.size(), t);
    x.send(args.send + seg.begin, seg.size(), a);
    x.recv(m_a.at(a * s.k_a), s.k_a, a);
    x.wait_sends();  // one round at a time (single port)
  }
  stats.rounds = sub.size();
  std::vector<std::int64_t> counts(s.q), displs(s.q);
  for (int b = 0; b < s.q; ++b) {
    const Range sb = pattern::subgroup(s.p, s.q, b);
    counts[b] = sb.size() * s.k_a;
    displs[b] = sb.begin * s.k_a;
  }
  intragroup_allgatherv(ic, m_a.at(0), std::move(counts), std::move(displs), args, options, stats);
}

}  // namespace

void segmented_allgather(InterComm& ic, const InterAllgathervArgs& args, const Options& options,
                         Stats& stats) {
  const Sizes s = sizes(ic, args);
  const RemoteMessage remote(ic, args);
  if (ic.in_a()) {
    run_in_a(ic, args, s, remote, options, stats);
  } else {
    run_in_b(ic, args, s, remote, options, stats);
  }
  remote.finish();
}

void intergroup_segmented(InterComm& ic, const InterAllgathervArgs& args, const Options& options,
                          Stats& stats) {
  if (args.regular) {
    segmented_allgather(ic, args, options, stats);
  } else {
    segmented_allgatherv(ic, args, options, stats);
  }
}

}  // namespace shancoll
