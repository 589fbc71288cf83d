#include "shancoll/rooted_select.h"

#include <cstdlib>

#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/rules.h"

namespace shancoll {
namespace {

template <class Table>
[[noreturn]] void unknown(const char* collective, const std::string& name, const Table& table) {
  std::string valid = "auto";
  for (const auto& a : table) valid += std::string(", ") + a.name;
  throw ArgumentError(std::string("algorithm: unknown ") + collective + " algorithm '" + name +
                      "' (valid: " + valid + ")");
}

}  // namespace

const std::vector<BcastAlgorithm>& bcast_algorithms() {
  static const std::vector<BcastAlgorithm> table = {
      {"release_gather", bcast_release_gather,
       "shared-memory release/gather steps on a tree of cache-line flags, chunked and "
       "pipelined (Jain et al.); binomial tree of nodes between nodes"},
      {"binomial", bcast_binomial, "point-to-point binomial tree, ceil(log2 P) rounds"},
      {"mpi", bcast_mpi, "the MPI library's own MPI_Bcast"},
  };
  return table;
}

const std::vector<ReduceAlgorithm>& reduce_algorithms() {
  static const std::vector<ReduceAlgorithm> table = {
      {"release_gather", reduce_release_gather, false,
       "shared-memory release/gather steps up a tree of cache-line flags, chunked and "
       "pipelined, reducing into recvbuf (Jain et al.); binomial tree of nodes between nodes"},
      {"binomial", reduce_binomial, true,
       "point-to-point binomial tree, ceil(log2 P) rounds (rank order for non-commutative ops)"},
      {"mpi", reduce_mpi, true, "the MPI library's own MPI_Reduce"},
  };
  return table;
}

// "auto": the rule table's choice, else release_gather, the paper's
// algorithm, whenever it can run (it composes over several nodes too); for
// non-commutative ops the MPI library's reduce, which keeps rank order with
// its best tree.
std::string choose_bcast(std::int64_t bytes, int ranks, int nodes) {
  const auto valid = [](const std::string& name) {
    for (const auto& a : bcast_algorithms())
      if (name == a.name) return true;
    return false;
  };
  const std::string name = rule_choice("bcast", bytes, ranks, nodes, valid);
  return name.empty() ? "release_gather" : name;
}

std::string choose_reduce(std::int64_t bytes, bool commutative, int ranks, int nodes) {
  const auto valid = [&](const std::string& name) {
    for (const auto& a : reduce_algorithms())
      if (name == a.name) return commutative || a.rank_order;
    return false;
  };
  const std::string name = rule_choice("reduce", bytes, ranks, nodes, valid);
  if (!name.empty()) return name;
  return commutative ? "release_gather" : "mpi";
}

const BcastAlgorithm& find_bcast(const std::string& requested, std::int64_t bytes, int ranks,
                                 int nodes) {
  std::string name = algorithm_name(requested, environment().bcast);
  if (name == "auto") name = choose_bcast(bytes, ranks, nodes);
  for (const auto& a : bcast_algorithms())
    if (name == a.name) return a;
  unknown("bcast", name, bcast_algorithms());
}

const ReduceAlgorithm& find_reduce(const std::string& requested, const ReduceArgs& args, int ranks,
                                   int nodes) {
  std::string name = algorithm_name(requested, environment().reduce);
  if (name == "auto") name = choose_reduce(args.bytes(), args.reducer->commutative(), ranks, nodes);
  for (const auto& a : reduce_algorithms()) {
    if (name != a.name) continue;
    if (!args.reducer->commutative() && !a.rank_order)
      throw ArgumentError(
          "op: a non-commutative op needs an algorithm that combines in rank "
          "order; '" +
          name + "' combines in tree order (use binomial or mpi)");
    return a;
  }
  unknown("reduce", name, reduce_algorithms());
}

}  // namespace shancoll
