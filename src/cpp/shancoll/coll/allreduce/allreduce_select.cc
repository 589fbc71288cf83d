#include <cstring>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/error.h"
#include "shancoll/rules.h"

namespace shancoll {
namespace {

bool always(int) { return true; }
bool up_to_two(int size) { return size <= 2; }  // rotated orders coincide for P <= 2
bool single(int size) { return size == 1; }
bool power_of_two(int size) { return (size & (size - 1)) == 0; }

// Provisional, from the cost models, not yet fitted from a sweep: from here
// on the ring's 2(P-1)/P m bytes per rank should beat the log-round
// algorithms, which send the whole vector m in every round.
constexpr std::int64_t kRingMinBytes = 64 << 10;

}  // namespace

const Registry<AllreduceAlgorithm>& allreduce_registry() {
  // rank_order and same_tree: as reported by tests/cpp/pattern_tests.cc.
  static const Registry<AllreduceAlgorithm> registry(
      "allreduce",
      {
          {"dissemination", allreduce_dissemination, dissemination_allreduce_schedule, single,
           up_to_two, "2-way dissemination with partial reductions (GASPI), floor(log2 P) rounds"},
          {"nway_dissemination", allreduce_nway_dissemination, nway_allreduce_schedule, single,
           up_to_two, "adapted n-way dissemination (Theorem 1), ceil(log_{n+1} P) rounds"},
          {"bruck", allreduce_bruck, bruck_allreduce_schedule, single, up_to_two,
           "Bruck's global combine with n ports, ceil(log_{n+1} P) rounds"},
          {"pairwise_exchange", allreduce_pairwise_exchange, pairwise_allreduce_schedule,
           power_of_two, always, "butterfly, log2 P rounds (+2 with leftover ranks)"},
          {"binomial", allreduce_binomial, binomial_allreduce_schedule, always, always,
           "binomial tree reduce + broadcast, 2 ceil(log2 P) rounds"},
          {"ring", allreduce_ring, nullptr, single, always,
           "pipelined ring reduce-scatter + allgather, 2(P-1) rounds, bandwidth optimal"},
          {"release_gather", allreduce_release_gather, nullptr, single, always,
           "intra-node reduce + bcast on shared-memory release/gather flags (Jain et al.), "
           "node leaders' allreduce between nodes"},
          // shan: rank order needs contiguous nodes, which the flag cannot see:
          // shan checks the layout itself. same_tree given a consistent inner step.
          {"shan", allreduce_shan, nullptr, always, always,
           "hierarchical (GASPI): node-local reduction of m/n-fractions in the node segment, "
           "fraction j allreduced between the nodes' local ranks j"},
          // pieces: on one node rank order holds (local order is rank order);
          // on several it runs shan, which checks the layout itself.
          {"pieces", allreduce_pieces, nullptr, always, always,
           "one node: reduce-scatter + allgather through the node segment, inputs in "
           "pieces with a flag each, results copied out a piece behind; several: shan"},
          {"mpi", allreduce_mpi, nullptr, always, always, "the MPI library's own MPI_Allreduce"},
      });
  return registry;
}

const Registry<AllreduceAlgorithm>& iallreduce_registry() {
  static const Registry<AllreduceAlgorithm> registry("iallreduce", [] {
    std::vector<AllreduceAlgorithm> split_phase;
    for (const AllreduceAlgorithm& a : allreduce_registry().all())
      if (a.schedule || a.fn == allreduce_mpi) split_phase.push_back(a);
    return split_phase;
  }());
  return registry;
}

// auto: never an algorithm whose result differs between ranks for floating
// point (same_tree), never one that cannot take a non-commutative op.
// - one node: through shared memory, not messages: shan (measured at 2 ranks
//   faster than release_gather at every size from 4 B to 16 MiB; on one node
//   it also combines non-commutative ops in rank order);
// - non-commutative: pairwise_exchange for 2^k ranks (log2 P rounds), else
//   binomial (plain rank order for every P);
// - large messages: ring;
// - at 2^k ranks: pairwise_exchange. Its log2 P rounds are as few as the
//   n-way dissemination's there, and its partners (r xor 2^i) stay inside
//   ever larger subtrees, where the dissemination's (r + 2^i) cross the
//   fabric's top level in every round: SMPI, fat tree of 16-node leaves,
//   one rank per node, 1 int, 32 nodes: 20.9 us against 29.4 us
//   (docs/performance.md, "Simulated at scale");
// - otherwise exact types (integers, bool), or floating point when the
//   caller allows rank-varying results (args.consistent false):
//   nway_dissemination, fewest rounds with all ranks busy; floating point:
//   pairwise_exchange, the fewest rounds among the rank-consistent algorithms.
const char* builtin_allreduce(const AllreduceNeeds& n, int size, int nodes, int hosts) {
  if (hosts > 1) return "mpi";
  if (nodes == 1 && size > 1) return "shan";
  if (!n.commutative) return power_of_two(size) ? "pairwise_exchange" : "binomial";
  if (n.bytes >= kRingMinBytes && n.count >= size) return "ring";
  if (!power_of_two(size) && (!n.inexact || !n.consistent)) return "nway_dissemination";
  return "pairwise_exchange";
}

AllreduceNeeds allreduce_needs(const AllreduceArgs& args) {
  return {args.count, args.bytes(), args.reducer->commutative(),
          dtype_is_inexact(args.reducer->type()), args.consistent};
}

bool allreduce_allowed(const AllreduceAlgorithm& a, const AllreduceNeeds& n, int size) {
  if (!n.commutative && !a.rank_order(size)) return false;
  if (n.inexact && n.consistent && !a.same_tree(size)) return false;
  return std::string(a.name) != "ring" || n.count >= size;
}

std::string choose_allreduce(const AllreduceNeeds& n, int size, int nodes, int hosts) {
  const auto valid = [&](const std::string& name) {
    const AllreduceAlgorithm* a = allreduce_registry().find(name);
    return a && allreduce_allowed(*a, n, size);
  };
  const std::string name = rule_choice("allreduce", n.bytes, size, nodes, hosts, valid);
  return name.empty() ? builtin_allreduce(n, size, nodes, hosts) : name;
}

const char* auto_allreduce(const AllreduceArgs& args, int size) {
  return builtin_allreduce(allreduce_needs(args), size, 0, 1);
}

const char* between_nodes_allreduce(const AllreduceArgs& args, int size, int hosts) {
  const AllreduceNeeds n = allreduce_needs(args);
  const auto messages_alone = [&](const std::string& name) {
    const AllreduceAlgorithm* a = allreduce_registry().find(name);
    return a && (a->schedule || name == "ring") && allreduce_allowed(*a, n, size);
  };
  const std::string name = rule_choice("allreduce", n.bytes, size, size, hosts, messages_alone);
  return name.empty() ? auto_allreduce(args, size) : allreduce_registry().at(name).name;
}

namespace {

void check_op(const AllreduceAlgorithm& a, const AllreduceArgs& args, int size) {
  if (!args.reducer->commutative() && !a.rank_order(size))
    throw ArgumentError(
        "op: a non-commutative op needs an algorithm that combines in rank order; '" +
        std::string(a.name) + "' does not at " + std::to_string(size) +
        " ranks (use binomial, mpi, or pairwise_exchange at 2^k ranks)");
}

}  // namespace

const AllreduceAlgorithm& select_allreduce(std::string_view name, const AllreduceArgs& args,
                                           int size, int nodes, int hosts) {
  thread_local std::string last_name;  // a loop of calls names the same algorithm
  thread_local const AllreduceAlgorithm* last = nullptr;
  const AllreduceAlgorithm* a = nullptr;
  if (name == "auto") {
    a = &allreduce_registry().at(choose_allreduce(allreduce_needs(args), size, nodes, hosts));
  } else if (last && name == last_name) {
    a = last;
  } else {
    a = &allreduce_registry().at(name);
    last_name = name;
    last = a;
  }
  check_op(*a, args, size);
  return *a;
}

// "auto" for a split-phase call: the built-in rule, ring (no schedule)
// replaced by pairwise_exchange.
const AllreduceAlgorithm& select_iallreduce(std::string_view name, const AllreduceArgs& args,
                                            int size) {
  std::string_view chosen = name;
  if (name == "auto") {
    chosen = auto_allreduce(args, size);
    if (!iallreduce_registry().find(chosen)) chosen = "pairwise_exchange";
  }
  const AllreduceAlgorithm& a = iallreduce_registry().at(chosen);
  check_op(a, args, size);
  return a;
}

}  // namespace shancoll
