// shancoll_pattern_tests: the allreduce schedules of src/cpp/shancoll/pattern
// run by a symbolic executor for all ranks at once (no MPI). A value is an
// expression over the inputs x_0..x_{P-1}. Checked, for P = 1..130, n = 1..8:
//   - well formed: peers in range, no self messages, every send matched by a
//     recv in the same round, no undefined slot, same round count everywhere;
//   - every rank ends with every x_i EXACTLY once (non-idempotent ops);
//   - rounds and messages per rank against the papers' formulas;
//   - the 5-tuple search against a brute force over the paper's eq. (8);
//   - the papers' worked examples.
// Reported, not failed: which schedules build the same expression tree on all
// ranks (bitwise-identical results on all ranks for commutative ops such as
// IEEE +) and which combine in plain rank order (needed for non-commutative ops).
// Trees of the release/gather collectives (pattern/tree.h), P = 1..70, every
// kind, K = 1..9, several roots: parent and children agree, every rank is
// reached from the root exactly once, depth and fan-out per kind, skew
// mirrors the children order, and the paper's Fig. 8 example; topology-aware
// (per-socket) trees on synthetic socket maps (socket_tree_checks.h).
// The claim word of the persistent single-copy runs (pattern/chunk_claims.h):
// every chunk claimed once in every run, whatever the interleaving; where
// both ranks claim in turn each keeps its own end, run after run.
// shan allgatherv's block size rule (pattern/shan_blocks.h): the default
// unless the input is broadcast-shaped on 3+ nodes, then the pipelined
// chain's optimum, clamped.
// The ring writers' store choice (shm/ring_stores.h) fed the Zen 3 VM's
// timings: plain near, streamed once the plain stores turn slow, back when
// they turn fast, and a preempted copy does not switch it.
// Last line: "pattern_tests: N passed, M failed"; exit code 1 on any failure.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "block_schedule_checks.h"
#include "shancoll/pattern/binomial.h"
#include "shancoll/pattern/bruck_combine.h"
#include "shancoll/pattern/chunk_claims.h"
#include "shancoll/pattern/dissemination.h"
#include "shancoll/pattern/nway_dissemination.h"
#include "shancoll/pattern/pairwise_exchange.h"
#include "shancoll/pattern/reduce_scatter.h"
#include "shancoll/pattern/scan.h"
#include "shancoll/pattern/shan_blocks.h"
#include "shancoll/pattern/tree.h"
#include "shancoll/shm/ring_stores.h"

using namespace shancoll::pattern;

namespace {

int g_passed = 0, g_failed = 0;

void check(bool ok, const std::string& what) {
  if (ok) return void(++g_passed);
  if (++g_failed <= 100) std::printf("FAIL %s\n", what.c_str());
}

// Expression nodes: multiset of inputs, a canonical id equal for trees equal up
// to swapping operands, and whether every combine joins adjacent ranges in order.
struct Exprs {
  int P;
  std::vector<int> counts, canon, lo, hi;
  std::vector<char> ordered;
  std::map<std::pair<int, int>, int> interned;
  int leaf(int i) {
    std::vector<int> c(P, 0);
    c[i] = 1;
    return add(c, i, i, i, true);
  }
  int combine(int a, int b) {
    const auto key = std::minmax(canon[a], canon[b]);
    const int id = interned.emplace(key, P + int(interned.size())).first->second;
    std::vector<int> c(counts.begin() + a * P, counts.begin() + (a + 1) * P);
    for (int i = 0; i < P; ++i) c[i] += counts[b * P + i];
    return add(c, id, lo[a], hi[b], ordered[a] && ordered[b] && hi[a] + 1 == lo[b]);
  }
  int add(const std::vector<int>& c, int id, int l, int h, bool ord) {
    counts.insert(counts.end(), c.begin(), c.end());
    canon.push_back(id), lo.push_back(l), hi.push_back(h), ordered.push_back(ord);
    return int(canon.size()) - 1;
  }
};

struct Outcome {
  std::string error;  // empty: correct
  bool same_tree = false, in_order = false;
};

// Runs the schedules of ranks 0..P-1 round by round.
Outcome execute(const std::vector<ReduceSchedule>& sch) {
  const int P = int(sch.size());
  Exprs ex{P, {}, {}, {}, {}, {}, {}};
  std::vector<std::vector<int>> val(P);
  auto get = [&](int r, int slot) {
    return slot >= 0 && slot < int(val[r].size()) ? val[r][slot] : -1;
  };
  auto run_steps = [&](int r, const std::vector<Step>& steps) {
    for (const Step& st : steps) {
      const int a = get(r, st.a), b = st.kind == StepKind::kCopy ? a : get(r, st.b);
      if (a < 0 || b < 0 || st.dst < 0 || st.dst >= int(val[r].size())) return false;
      val[r][st.dst] = st.kind == StepKind::kCopy ? a : ex.combine(a, b);
    }
    return true;
  };
  for (int r = 0; r < P; ++r) {
    if (sch[r].size != P || sch[r].rank != r || sch[r].rounds.size() != sch[0].rounds.size())
      return {"rank " + std::to_string(r) + ": size, rank or round count differs"};
    val[r].assign(sch[r].slots.size(), -1);
    val[r][0] = ex.leaf(r);
    if (!run_steps(r, sch[r].setup)) return {"bad setup step"};
  }
  for (size_t rd = 0; rd < sch[0].rounds.size(); ++rd) {
    const std::string at = "round " + std::to_string(rd) + ", rank ";
    std::map<std::pair<int, int>, std::vector<int>> queue;  // (from, to) -> values, FIFO
    for (int r = 0; r < P; ++r)
      for (const Transfer& t : sch[r].rounds[rd].sends) {
        if (t.peer < 0 || t.peer >= P || t.peer == r || get(r, t.slot) < 0)
          return {at + std::to_string(r) + ": bad send"};
        queue[{r, t.peer}].push_back(get(r, t.slot));
      }
    for (int r = 0; r < P; ++r) {
      std::vector<char> busy(val[r].size(), 0);
      for (const Transfer& t : sch[r].rounds[rd].sends) busy[t.slot] = 1;
      for (const Transfer& t : sch[r].rounds[rd].recvs) {
        auto& q = queue[{t.peer, r}];
        if (t.slot < 0 || t.slot >= int(busy.size()) || busy[t.slot] || q.empty())
          return {at + std::to_string(r) + ": bad or unmatched recv from " +
                  std::to_string(t.peer)};
        busy[t.slot] = 1;
        val[r][t.slot] = q.front();
        q.erase(q.begin());
      }
    }
    for (const auto& [pair, q] : queue)
      if (!q.empty()) return {at + std::to_string(pair.first) + ": unmatched send"};
    for (int r = 0; r < P; ++r)
      if (!run_steps(r, sch[r].rounds[rd].steps)) return {at + std::to_string(r) + ": bad step"};
  }
  Outcome out{"", true, true};
  for (int r = 0; r < P; ++r) {
    const int v = val[r][0];
    for (int i = 0; i < P; ++i)
      if (ex.counts[v * P + i] != 1)
        return {"rank " + std::to_string(r) + " has x_" + std::to_string(i) + " " +
                std::to_string(ex.counts[v * P + i]) + " times"};
    out.same_tree = out.same_tree && ex.canon[v] == ex.canon[val[0][0]];
    out.in_order = out.in_order && ex.ordered[v];
  }
  return out;
}

using Builder = std::function<ReduceSchedule(int P, int rank)>;
std::vector<ReduceSchedule> build(int P, const Builder& b) {
  std::vector<ReduceSchedule> s;
  for (int r = 0; r < P; ++r) s.push_back(b(P, r));
  return s;
}

int ilog_floor(long long P, int base) {  // floor(log_base P)
  int k = 0;
  for (long long v = base; v <= P; v *= base) ++k;
  return k;
}
int ilog_ceil(long long P, int base) {  // ceil(log_base P)
  int k = 0;
  for (long long v = 1; v < P; v *= base) ++k;
  return k;
}

std::string ranges(const std::vector<int>& v) {  // "1-4, 8"
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    s += (s.empty() ? "" : ", ") + std::to_string(v[i]) + (j > i ? "-" + std::to_string(v[j]) : "");
    i = j + 1;
  }
  return s.empty() ? "none" : s;
}

struct OrderReport {
  std::vector<int> same, ordered;
};
std::map<std::string, OrderReport> g_order;
std::map<int, int> g_cases;  // Theorem 1 case (+10: base border) -> how many (n, P)

// Runs one algorithm at one (P, n): correctness, rounds, messages per rank.
void verify(const std::string& name, int P, const Builder& b, int rounds,
            const std::function<int(int rank)>& messages) {
  const std::string tag = name + " P=" + std::to_string(P);
  const std::vector<ReduceSchedule> sch = build(P, b);
  const Outcome out = execute(sch);
  check(out.error.empty(), tag + ": " + out.error);
  check(int(sch[0].rounds.size()) == rounds, tag + ": " + std::to_string(sch[0].rounds.size()) +
                                                 " rounds, expected " + std::to_string(rounds));
  bool msg_ok = true;
  for (int r = 0; r < P; ++r) msg_ok = msg_ok && sch[r].messages_sent() == messages(r);
  check(msg_ok, tag + ": messages per rank differ from the cost model");
  auto note = [P](std::vector<int>& v) {
    if (v.empty() || v.back() != P) v.push_back(P);
  };
  if (out.same_tree) note(g_order[name].same);
  if (out.in_order) note(g_order[name].ordered);
}

// ---- the papers' worked examples
std::vector<int> peers(const std::vector<Transfer>& ts) {
  std::vector<int> p;
  for (const Transfer& t : ts) p.push_back(t.peer);
  return p;
}

void paper_examples() {
  using V = std::vector<int>;
  const ReduceSchedule t9 = nway_dissemination_schedule(9, 0, 2);  // Table I, P = 9
  check(peers(t9.rounds[0].recvs) == V{8, 7} && peers(t9.rounds[1].recvs) == V{6, 3},
        "butterfly Table I (P=9, n=2): rank 0 receives from 8, 7 then 6, 3");
  const NwayPlan p8 = nway_plan(8, 2);  // Fig. 3: rank 2 sends x2 o x1 to rank 0
  check(p8.paper_case == 4 && p8.s == 2 && p8.j_snd == 2 && p8.senders == 2 && p8.len_snd == 2,
        "butterfly Fig. 3 (P=8, n=2): case 4, sender 2 sends a 2-rank prefix");
  const ReduceSchedule t8 = nway_dissemination_schedule(8, 0, 2);
  check(peers(t8.rounds[1].recvs) == V{5, 2}, "butterfly Fig. 3: rank 0 receives from 5, 2");
  const ReduceSchedule b8 = bruck_combine_schedule(8, 0, 2);  // eq. (15)-(24)
  check(b8.rounds.size() == 2 && peers(b8.rounds[0].sends) == V{7, 6} &&
            peers(b8.rounds[1].sends) == V{5, 3} && b8.rounds[1].sends[0].slot == 0 &&
            b8.rounds[1].sends[1].slot != 0 && peers(b8.rounds[1].recvs) == V{3, 5},
        "butterfly Bruck example (P=8, n=2): S[1] to 5, S[0] to 3, from 3 and 5");
  const ReduceSchedule g11 = dissemination_schedule(11, 0);  // GASPI Fig. 5: 11 = 8 + 2 + 1
  check(peers(g11.rounds[0].sends) == V{1, 10} && peers(g11.rounds[1].sends) == V{2, 8} &&
            peers(g11.rounds[2].sends) == V{4},
        "GASPI Fig. 5 (P=11): rank 0 sends to {1, 10}, {2, 8}, {4}");
  const ReduceSchedule g7 = dissemination_schedule(7, 0);  // GASPI Fig. 4: 7 = 4 + 2 + 1
  check(peers(g7.rounds[0].sends) == V{1, 6} && peers(g7.rounds[1].sends) == V{2, 4},
        "GASPI Fig. 4 (P=7): rank 0 sends to {1, 6}, {2, 4}");
  const ReduceSchedule pe = pairwise_exchange_schedule(5, 4);  // Fig. 1 right
  check(peers(pe.rounds[0].sends) == V{0} && peers(pe.rounds.back().recvs) == V{0},
        "butterfly Fig. 1 (P=5): leftover 4 folds in and out through 0");
}

// The paper's distance p - g_l[j] (eq. 5): n sum_{i=0}^{l-2} (n+1)^i + j (n+1)^{l-1}.
long long paper_T(int n, int l, int j) {
  long long t = 0, pw = 1;
  for (int i = 0; i + 2 <= l; ++i, pw *= n + 1) t += n * pw;
  return l == 0 ? 0 : t + j * pw;
}

// The paper's eq. (8) over its own tuple space, and the base border gB.
bool paper_adaptable(int P, int n) {
  const int k = ilog_ceil(P, n + 1);
  if (k == 0) return true;
  const long long m = paper_T(n, k - 1, n) + 1;  // (n+1)^(k-1)
  for (int s = 1; s <= n; ++s)
    for (int ls = 0; ls < k; ++ls)
      for (int js = 1; js <= n; ++js) {
        if (P - 1 == s * m + paper_T(n, ls, js)) return true;  // gB
        for (int lr = 0; lr < k; ++lr)
          for (int jr = 1; jr <= n; ++jr)
            if (P == s * m + paper_T(n, ls, js) - paper_T(n, lr, jr)) return true;
      }
  return false;
}

// The reported 5-tuple satisfies the equation of its Theorem 1 case.
bool tuple_matches_case(const NwayPlan& p) {
  const long long P = p.size, sm = p.s * p.m, ts = paper_T(p.n, p.l_snd, p.j_snd);
  const long long tr = paper_T(p.n, p.l_rcv, p.j_rcv);
  switch (p.paper_case) {
    case 0:
      return P == 1 || P == (p.n + 1) * p.m;
    case 1:
      return p.l_rcv > 0 && p.l_snd > 0 && P == sm + ts - tr;
    case 2:
      return p.l_rcv > 0 && p.l_snd == 0 && P == sm - tr;
    case 3:
      return p.l_rcv == 0 && p.l_snd == 0 && P == sm;
    case 4:
      return p.base_border ? P - 1 == sm + ts : p.l_snd == 1 && P == sm + p.j_snd;
    case 5:
      return p.l_rcv == 0 && p.l_snd > 1 && P == sm + ts;
  }
  return false;
}

// Depth of every rank (-1 when unreachable) walking down from the root; also
// checks that no rank is reached twice.
std::vector<int> tree_depths(const std::vector<TreeNode>& nodes, int root, bool& twice) {
  std::vector<int> depth(nodes.size(), -1);
  std::vector<int> todo{root};
  depth[root] = 0;
  twice = false;
  while (!todo.empty()) {
    const int r = todo.back();
    todo.pop_back();
    for (int c : nodes[r].children) {
      if (depth[c] >= 0) twice = true;
      depth[c] = depth[r] + 1;
      todo.push_back(c);
    }
  }
  return depth;
}

void check_tree(int P, int root, TreeShape shape) {
  const std::string what = std::string(tree_kind_name(shape.kind)) + " P=" + std::to_string(P) +
                           " root=" + std::to_string(root) + " k=" + std::to_string(shape.k);
  std::vector<TreeNode> nodes;
  for (int r = 0; r < P; ++r) nodes.push_back(tree_node(P, r, root, shape));
  bool linked = nodes[root].parent == -1;
  for (int r = 0; r < P; ++r) {
    if (r != root) linked = linked && nodes[r].parent >= 0 && nodes[r].parent < P;
    for (int c : nodes[r].children) linked = linked && c >= 0 && c < P && nodes[c].parent == r;
  }
  check(linked, what + ": parent and children lists agree");
  if (!linked) return;
  bool twice = false;
  const std::vector<int> depth = tree_depths(nodes, root, twice);
  const int deepest = *std::max_element(depth.begin(), depth.end());
  check(!twice && *std::min_element(depth.begin(), depth.end()) == 0,
        what + ": every rank reached exactly once");
  std::size_t fan = 0;
  for (const auto& n : nodes) fan = std::max(fan, n.children.size());
  if (shape.kind == TreeKind::flat) {
    check(deepest == (P > 1) && int(fan) == P - 1, what + ": flat is one level");
  } else if (shape.kind == TreeKind::kary) {
    int levels = 0;  // complete K-ary tree: the smallest d with 1 + K + ... + K^d >= P
    for (long long have = 1, width = 1; have < P; ++levels) width *= shape.k, have += width;
    check(deepest == levels && int(fan) <= shape.k, what + ": kary depth and fan-out");
  } else {
    int digits = 0;  // a rank's depth is the number of nonzero base-K digits of v
    for (int v = 0; v < P; ++v) {
      int d = 0;
      for (int x = v; x > 0; x /= shape.k) d += x % shape.k != 0;
      digits = std::max(digits, d);
    }
    const int levels = ilog_ceil(P, shape.k);
    check(deepest == digits && deepest <= levels && int(fan) <= (shape.k - 1) * levels,
          what +
              ": knomial depth = most nonzero base-K digits <= ceil(log_K P), fan-out <= "
              "(K-1) ceil(log_K P)");
  }
  TreeShape mirrored = shape;
  mirrored.right_skew = !shape.right_skew;
  bool mirror = true;
  for (int r = 0; r < P; ++r) {
    TreeNode m = tree_node(P, r, root, mirrored);
    std::reverse(m.children.begin(), m.children.end());
    mirror = mirror && m.parent == nodes[r].parent && m.children == nodes[r].children;
  }
  check(mirror, what + ": the other skew mirrors the children order");
}

void tree_tests() {
  for (int P = 1; P <= 70; ++P)
    for (int root : {0, P / 2, P - 1}) {
      check_tree(P, root, {TreeKind::flat, 1, false});
      for (int k = 1; k <= 9; ++k) {
        check_tree(P, root, {TreeKind::kary, k, false});
        if (k >= 2) check_tree(P, root, {TreeKind::knomial, k, true});
      }
    }
  // Fig. 8 of the paper: K-ary, K = 2, 8 ranks; 7 is the leftmost leaf of the
  // left-skewed tree and the rightmost of the right-skewed one.
  const TreeNode left0 = tree_node(8, 0, 0, {TreeKind::kary, 2, false});
  const TreeNode left3 = tree_node(8, 3, 0, {TreeKind::kary, 2, false});
  const TreeNode right0 = tree_node(8, 0, 0, {TreeKind::kary, 2, true});
  check(left0.children == std::vector<int>{1, 2} && left3.children == std::vector<int>{7} &&
            right0.children == std::vector<int>{2, 1},
        "paper Fig. 8: 2-ary tree of 8 ranks, left and right skew");
  // Binomial (knomial K = 2) from root 0 of 8 ranks: 0 -> 1 2 4, 4 -> 5 6, 6 -> 7.
  check(tree_node(8, 0, 0, {TreeKind::knomial, 2, false}).children == std::vector<int>{1, 2, 4} &&
            tree_node(8, 4, 0, {TreeKind::knomial, 2, false}).children == std::vector<int>{5, 6} &&
            tree_node(8, 7, 0, {TreeKind::knomial, 2, false}).parent == 6,
        "knomial K=2 of 8 ranks is the binomial tree");
  // Roots other than 0 rotate the tree: 4-nomial of 6 ranks rooted at 5.
  check(
      tree_node(6, 5, 5, {TreeKind::knomial, 4, false}).children == std::vector<int>{0, 1, 2, 3} &&
          tree_node(6, 3, 5, {TreeKind::knomial, 4, false}).children == std::vector<int>{4},
      "knomial K=4 of 6 ranks rooted at 5");
}

// The gather/scatter tree (binomial.h): every member but the root has one
// parent whose child it is, the subtrees are the contiguous ranges
// [v, v + span) that their children's subtrees tile after v, and the depth
// is at most ceil(log2 P).
void gather_tree_tests() {
  for (int P = 1; P <= 130; ++P) {
    bool ok = binomial_tree_parent(0) == -1 && binomial_subtree_span(P, 0) == P;
    int deepest = 0;
    for (int v = 0; v < P; ++v) {
      int next = v + 1;  // the children's subtrees follow v's own block, in order
      for_each_binomial_child(P, v, [&](int c) {
        ok = ok && c == next && binomial_tree_parent(c) == v;
        next = c + binomial_subtree_span(P, c);
      });
      ok = ok && next == v + binomial_subtree_span(P, v);
      int depth = 0;
      for (int u = v; u > 0; u = binomial_tree_parent(u)) ++depth;
      deepest = std::max(deepest, depth);
    }
    check(ok && deepest <= ilog_ceil(P, 2),
          "gather tree P=" + std::to_string(P) +
              ": subtrees tile [v, v + span), depth <= ceil(log2 P)");
  }
}

}  // namespace

// The intergroup exchange arithmetic; uses check() above.
#include "intergroup_pattern_checks.h"  // NOLINT(build/include_order)
// The topology-aware trees; use check() and tree_depths() above.
#include "socket_tree_checks.h"  // NOLINT(build/include_order)
// The recursive doubling prefix of scan/exscan; uses check() and Exprs above.
#include "scan_pattern_checks.h"  // NOLINT(build/include_order)
// The point-to-point reduce-scatters' arithmetic; uses check() above.
#include "reduce_scatter_pattern_checks.h"  // NOLINT(build/include_order)
// The alltoall(v) arithmetic (pattern/alltoall.h); uses check() above.
#include "alltoall_pattern_checks.h"  // NOLINT(build/include_order)

// Claims of one run from `word` in the order `who` gives (true: the back
// claimer), each claimer skipping once its end has met the other's; the
// chunks each one got, and the word after.
std::uint64_t claim_run(std::uint64_t word, std::uint64_t run, std::uint64_t chunks,
                        const std::vector<bool>& who, std::vector<std::uint64_t> got[2]) {
  for (bool back : who) {
    const shancoll::pattern::ChunkClaim c =
        shancoll::pattern::next_chunk_claim(word, run, chunks, back);
    if (!c.claimed) continue;
    word = c.word;
    got[back].push_back(c.chunk);
  }
  return word;
}

void chunk_claim_tests() {
  using shancoll::pattern::next_chunk_claim;
  for (std::uint64_t chunks = 1; chunks <= 9; ++chunks) {
    const std::string sc = " (" + std::to_string(chunks) + " chunks)";
    std::uint64_t word = 0;
    // Runs 1, 2, ... and across the tag's wrap: alternating claims, then the
    // front alone, then the back alone, then a random order.
    const std::uint64_t runs[] = {1, 2, 3, 4, 0xfffe, 0xffff, 0x10000, 0x10001};
    unsigned seed = 7;
    for (std::size_t i = 0; i < std::size(runs); ++i) {
      const std::uint64_t run = runs[i];
      std::vector<bool> who;
      for (std::uint64_t k = 0; k < 2 * chunks + 2; ++k) {
        seed = seed * 1103515245u + 12345u;
        const int mode = static_cast<int>(i % 4);
        who.push_back(mode == 0   ? k % 2 == 1
                      : mode == 1 ? false
                      : mode == 2 ? true
                                  : (seed >> 16) & 1);
      }
      std::vector<std::uint64_t> got[2];
      word = claim_run(word, run, chunks, who, got);
      std::vector<int> times(chunks, 0);
      for (const auto& g : got)
        for (std::uint64_t c : g) ++times[c];
      check(std::all_of(times.begin(), times.end(), [](int t) { return t == 1; }),
            "claims: every chunk once in run " + std::to_string(run) + sc);
      check(!next_chunk_claim(word, run, chunks, false).claimed &&
                !next_chunk_claim(word, run, chunks, true).claimed,
            "claims: nothing left after the run" + sc);
      for (std::size_t k = 0; k < got[0].size(); ++k)
        check(got[0][k] == k, "claims: the front claimer takes 0, 1, ..." + sc);
      for (std::size_t k = 0; k < got[1].size(); ++k)
        check(got[1][k] == chunks - 1 - k, "claims: the back claimer takes c - 1, c - 2, ..." + sc);
      if (i % 4 == 0)  // in turn: each its own half, the same in every such run
        check(got[0].size() == (chunks + 1) / 2 && got[1].size() == chunks / 2,
              "claims: in turn, the front half and the back half" + sc);
    }
  }
}

// The chunks of a block (claim_bounds): they tile it in order, none past
// the largest claim, every bound but the end on a page, the cut a bound, as
// few chunks on each side of it as the largest claim allows.
void claim_bounds_tests() {
  using shancoll::pattern::claim_bounds;
  constexpr std::size_t kKiB = 1024, kLargest = 256 * kKiB, kUnsplit = 32 * kKiB;
  check(claim_bounds(20 * kKiB, 5 * kKiB, kLargest, kUnsplit) ==
            std::vector<std::size_t>{0, 20 * kKiB},
        "claim bounds: a block under the unsplit size is one chunk");
  check(claim_bounds(64 * kKiB, 16 * kKiB, kLargest, kUnsplit) ==
            std::vector<std::size_t>{0, 16 * kKiB, 64 * kKiB},
        "claim bounds: 64 KiB cut at a quarter: the front quarter, then the rest whole");
  check(claim_bounds(64 * kKiB, 64 * kKiB, kLargest, kUnsplit) ==
            std::vector<std::size_t>{0, 64 * kKiB},
        "claim bounds: the taker's whole block is one chunk");
  check(claim_bounds(1024 * kKiB, 256 * kKiB, kLargest, kUnsplit).size() == 5,
        "claim bounds: 1 MiB cut at 256 KiB: one chunk in front, three behind");
  for (std::size_t bytes : {32 * kKiB, 65 * kKiB + 3, 300 * kKiB, 1000 * kKiB + 17, 4096 * kKiB})
    for (double share : {0.0, 0.125, 0.25, 0.5, 0.75, 1.0}) {
      const auto cut = static_cast<std::size_t>(static_cast<double>(bytes) * share);
      const std::vector<std::size_t> b = claim_bounds(bytes, cut, kLargest, kUnsplit);
      const std::string sc =
          " (" + std::to_string(bytes) + " bytes, share " + std::to_string(share) + ")";
      check(b.front() == 0 && b.back() == bytes, "claim bounds: from 0 to the end" + sc);
      bool pages = true, sizes = true, order = true;
      for (std::size_t k = 0; k + 1 < b.size(); ++k) {
        order = order && b[k] < b[k + 1];
        sizes = sizes && b[k + 1] - b[k] <= kLargest;
        pages = pages && b[k] % 4096 == 0;
      }
      check(order && sizes && pages,
            "claim bounds: in order, at most the largest claim, on pages" + sc);
      const std::size_t rounded = std::min(bytes, (cut + 2048) / 4096 * 4096);
      const auto at_cut = std::find(b.begin(), b.end(), rounded);
      check(at_cut != b.end(), "claim bounds: the cut is a bound" + sc);
      const auto front = static_cast<std::size_t>(at_cut - b.begin());
      const std::size_t back = b.size() - 1 - front;
      check(front == (rounded + kLargest - 1) / kLargest &&
                back == (bytes - rounded + kLargest - 1) / kLargest,
            "claim bounds: as few chunks on each side as the largest claim allows" + sc);
    }
}

// pipeline_block_size / choose_block_size (shan_blocks.h).
void shan_block_size_tests() {
  using namespace shancoll::shan;
  constexpr std::int64_t KiB = 1024, MiB = 1024 * KiB;
  check(pipeline_block_size(1 * MiB, 1 * MiB, 2) == 0, "shan block: 2 nodes keep the default");
  check(pipeline_block_size(MiB / 32, 1 * MiB, 32) == 0, "shan block: regular keeps the default");
  check(pipeline_block_size(MiB / 2 - 1, 1 * MiB, 32) == 0, "shan block: under half is not bcast");
  // 1 MiB from one node over 32: sqrt(2^20 * 2^13 / 30) = 16921 B (16.5 KiB)
  const std::int64_t b32 = pipeline_block_size(1 * MiB, 1 * MiB, 32);
  check(b32 == 16921, "shan block: 1 MiB over 32 nodes 16921 B");
  check(pipeline_block_size(MiB / 2, 1 * MiB, 32) > 0, "shan block: half is bcast-shaped");
  check(pipeline_block_size(1024 * MiB, 1024 * MiB, 3) == kDefaultBlockSize,
        "shan block: capped at the default");
  check(pipeline_block_size(4 * KiB, 4 * KiB, 32) == kLatencyBytes, "shan block: floor");
  const std::vector<std::int64_t> counts = {1 * MiB, 0, 0, 0};
  check(choose_block_size(0, counts, 1 << 20, b32) == b32, "shan block: preferred when none asked");
  check(choose_block_size(4096, counts, 1 << 20, b32) == 4096, "shan block: requested wins");
  check(choose_block_size(0, counts, 1 << 20) == kDefaultBlockSize, "shan block: default");
  check(choose_block_size(0, counts, 4 + 8, b32) == MiB / 8, "shan block: raised to fit the ids");
  // working_rank inverts Listing 3: every block's owner holds it in its share.
  for (std::int64_t blocks = 0; blocks <= 40; ++blocks) {
    for (int n = 1; n <= 9; ++n) {
      for (std::int64_t i = 0; i < blocks; ++i) {
        const int l = working_rank(blocks, n, i);
        const std::int64_t begin = working_offset(blocks, n, l);
        check(l >= 0 && l < n && i >= begin && i < begin + working_blocks(blocks, n, l),
              "shan working_rank: block " + std::to_string(i) + " of " + std::to_string(blocks) +
                  " over " + std::to_string(n));
      }
    }
  }
}

// Chunks through a StoreChoice whose copies take `plain` and `streamed`
// ns per byte; how many of them streamed.
int streamed_of(shancoll::StoreChoice& c, int chunks, double plain, double streamed) {
  int n = 0;
  for (int i = 0; i < chunks; ++i) {
    const auto way = c.next();
    n += way == shancoll::StoreChoice::kStreamed;
    c.record(way, way == shancoll::StoreChoice::kStreamed ? streamed : plain);
  }
  return n;
}

void store_choice_tests() {
  using shancoll::StoreChoice;
  constexpr int kEvery = StoreChoice::kTryEvery;
  StoreChoice c;  // near: plain 0.055 ns/B (3.6 us per 64 KiB), streamed 0.067
  const int near = streamed_of(c, 10 * kEvery, 0.055, 0.067);
  check(near >= 1 && near <= 12 && !c.streaming(), "store choice: near stays plain but tries");
  // Far: plain 0.28 (18 us), streamed 0.062: streams within the samples
  // the old plain figures leave, then only tries plain.
  const int far = streamed_of(c, 10 * kEvery, 0.28, 0.062);
  check(c.streaming() && far >= 10 * kEvery - 2 * StoreChoice::kSamples - 12,
        "store choice: far streams (" + std::to_string(far) + ")");
  check(streamed_of(c, 3 * kEvery, 0.055, 0.067) <= 3 * kEvery / 2 && !c.streaming(),
        "store choice: near again, back to plain");
  // One preempted plain copy (100x) among fast ones: still plain.
  const auto way = c.next();
  c.record(way, 100 * (way == StoreChoice::kStreamed ? 0.067 : 0.055));
  check(streamed_of(c, kEvery / 2, 0.055, 0.067) <= 1 && !c.streaming(),
        "store choice: one slow copy does not switch");
  // Where plain is slower but by less than kStreamWhenSlower (near, 1.2x): plain.
  StoreChoice close;
  streamed_of(close, 4 * kEvery, 0.08, 0.067);  // 1.2x
  check(!close.streaming(), "store choice: a small difference keeps plain");
}

int main() {
  store_choice_tests();
  chunk_claim_tests();
  claim_bounds_tests();
  shan_block_size_tests();
  gather_tree_tests();
  tree_tests();
  socket_tree_checks::run();
  const int kMaxP = 130, kMaxN = 8;
  paper_examples();
  intergroup_checks::run();
  scan_checks::run();
  reduce_scatter_checks::run();
  alltoall_checks::run();
  block_schedule_checks::run_all(check);
  for (int n = 1; n <= kMaxN; ++n) {
    const std::string sn = "(n=" + std::to_string(n) + ")";
    std::vector<int> fallback;
    for (int P = 1; P <= kMaxP; ++P) {
      const std::vector<int> c = base_digits(P, n + 1);  // dissemination, radix n+1
      const int l = int(c.size()) - 1, top = c.back();
      int lower = 0;
      for (int j = 0; j < l; ++j) lower += c[j];
      verify(
          "dissemination" + sn, P, [n](int p, int r) { return dissemination_schedule(p, r, n); },
          l + (top > 1), [&](int) { return n * l + lower + top - 1; });
      check(l + (top > 1) <= ilog_ceil(P, n + 1), "dissemination rounds <= ceil(log_{n+1} P)");
      const NwayPlan plan = nway_plan(P, n);  // n-way dissemination
      const int k = ilog_ceil(P, n + 1);
      check(plan.adaptable == paper_adaptable(P, n),
            "nway P=" + std::to_string(P) + sn + ": 5-tuple search disagrees with eq. (8)");
      if (!plan.adaptable) fallback.push_back(P);
      if (plan.adaptable) ++g_cases[plan.paper_case + (plan.base_border ? 10 : 0)];
      check(!plan.adaptable || tuple_matches_case(plan),
            "nway P=" + std::to_string(P) + sn + ": 5-tuple does not satisfy its case");
      auto nway = [n](int p, int r) { return nway_dissemination_schedule(p, r, n); };
      if (plan.adaptable)
        verify("nway" + sn, P, nway, k,
               [&](int) { return P == 1 ? 0 : n * (k - 1) + plan.senders; });
      else
        verify("nway" + sn, P, nway, l + (top > 1), [&](int) { return n * l + lower + top - 1; });
      const std::vector<int> alpha = base_digits(P - 1, n + 1);  // Bruck
      verify(
          "bruck" + sn, P, [n](int p, int r) { return bruck_combine_schedule(p, r, n); }, k,
          [&](int) { return P == 1 ? 0 : alpha.back() + n * (k - 1); });
    }
    std::printf("nway n=%d: no 5-tuple (fallback schedule) for P in {%s}\n", n,
                ranges(fallback).c_str());
  }
  for (int P = 1; P <= kMaxP; ++P) {
    const int core = 1 << ilog_floor(P, 2), q = P - core, K = ilog_floor(P, 2);
    verify("pairwise_exchange", P, pairwise_exchange_schedule, q ? K + 2 : K,
           [&](int r) { return r >= core ? 1 : K + (r < q); });
    for (int root : {0, P / 2, P - 1}) {
      const auto sch = build(P, [root](int p, int r) { return binomial_schedule(p, r, root); });
      int total = 0;
      for (const auto& s : sch) total += s.messages_sent();
      check(total == 2 * (P - 1), "binomial P=" + std::to_string(P) + ": 2(P-1) messages");
      verify(
          root ? "binomial(root=P/2 or P-1)" : "binomial(root=0)", P,
          [root](int p, int r) { return binomial_schedule(p, r, root); }, 2 * ilog_ceil(P, 2),
          [&](int r) { return sch[r].messages_sent(); });
    }
    const int best = nway_smallest_adaptable_n(P);
    bool minimal = nway_adaptable(P, best);
    for (int n = 1; n < best; ++n) minimal = minimal && !nway_adaptable(P, n);
    check(minimal, "nway_smallest_adaptable_n(" + std::to_string(P) + ")");
  }
  for (auto [P, n] : {std::pair{8, 2}, {9, 2}, {10, 1}, {11, 1}, {12, 2}, {13, 1}, {100, 3}})
    std::printf("nway plan %s\n", nway_plan_text(nway_plan(P, n)).c_str());
  std::map<int, std::vector<int>> smallest;  // n -> P needing it
  for (int P = 1; P <= kMaxP; ++P) smallest[nway_smallest_adaptable_n(P)].push_back(P);
  for (const auto& [n, ps] : smallest)
    std::printf("nway smallest adaptable n=%d for P in {%s}\n", n, ranges(ps).c_str());
  std::string cases;
  for (const auto& [c, count] : g_cases)
    cases += " " + (c >= 10 ? "4(gB)" : std::to_string(c)) + ":" + std::to_string(count);
  std::printf("nway Theorem 1 cases used (case:count, 0 = P is a power of n+1):%s\n",
              cases.c_str());
  for (int n = 1; n <= kMaxN; ++n) {  // plans only, wider range
    int none = 0;
    for (int P = 1; P <= 4096; ++P) none += !nway_adaptable(P, n);
    std::printf("nway n=%d: %d of P = 1..4096 have no 5-tuple\n", n, none);
  }
  for (const auto& [name, rep] : g_order)
    std::printf("order %s: same tree on all ranks for P in {%s}; plain rank order for P in {%s}\n",
                name.c_str(), ranges(rep.same).c_str(), ranges(rep.ordered).c_str());
  bool threw = false;
  try {
    nway_dissemination_schedule(4, 4, 1);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  check(threw, "rank out of range throws std::invalid_argument");
  std::printf("pattern_tests: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
