// The shape of every collective's algorithm registry.
//
// One table per collective, beside its algorithms (coll/<coll>/<coll>_select.cc):
// each entry an algorithm with its name (one name everywhere: file suffix,
// registry key, SHANCOLL_<COLL>_ALGORITHM, Python algorithm=, benchmark
// column, plot legend), what it can run and a one-line summary. The entry
// type is the collective's own (its function's signature differs); it needs
// `name` and `summary`.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shancoll {

// One algorithm as the front ends list it.
struct AlgorithmInfo {
  std::string name;
  std::string summary;
};

// ArgumentError "algorithm: unknown <collective> algorithm '<name>' (valid: auto, ...)".
[[noreturn]] void unknown_algorithm(const char* collective, std::string_view name,
                                    const std::vector<AlgorithmInfo>& valid);

template <class Algorithm>
class Registry {
 public:
  Registry(const char* collective, std::vector<Algorithm> table)
      : collective_(collective), table_(std::move(table)) {}

  const char* collective() const { return collective_; }
  const std::vector<Algorithm>& all() const { return table_; }

  const Algorithm* find(std::string_view name) const {
    for (const Algorithm& a : table_)
      if (name == a.name) return &a;
    return nullptr;
  }
  // The algorithm of that name ("auto" is not one); ArgumentError naming `algorithm`.
  const Algorithm& at(std::string_view name) const {
    if (const Algorithm* a = find(name)) return *a;
    unknown_algorithm(collective_, name, listing());
  }
  std::vector<AlgorithmInfo> listing() const {
    std::vector<AlgorithmInfo> out;
    for (const Algorithm& a : table_) out.push_back({a.name, a.summary});
    return out;
  }

 private:
  const char* collective_;
  std::vector<Algorithm> table_;
};

// The listing of a collective by name: allgather, allgatherv, allreduce,
// iallreduce (the split-phase ones), bcast, reduce, intergroup, barrier, scan, exscan,
// reduce_scatter, reduce_scatter_block, alltoall, alltoallv, gather, gatherv,
// scatter, scatterv, and i<coll> for the request forms of all but allreduce
// and intergroup (coll/request/requests.h: request_listing). Every front
// end lists algorithms through this one function. ArgumentError naming
// `collective` for any other name.
std::vector<AlgorithmInfo> algorithm_listing(std::string_view collective);

}  // namespace shancoll
