// Rule tables behind algorithm="auto": measured data (python -m shancoll.bench.sweep
// rules), kept as text, read here in the core so that Python, the C API and
// the PMPI library choose alike.
//
// Format: one rule per line, whitespace-separated, '#' starts a comment:
//
//   coll  min_bytes  max_bytes  min_ranks  max_ranks  nodes  algorithm  options
//
// coll: allgatherv (allgather too), allreduce, bcast, reduce. bytes: the
// message of one rank (allgatherv: the result's bytes / ranks, rounded
// down), the rule holds for min_bytes <= bytes < max_bytes; ranks: min_ranks
// <= ranks <= max_ranks; max_* may be '*' (no limit). nodes: '*', N or N+
// (at least N). options: '-' (the algorithm's defaults; rules with options
// are refused, since the selectors return an algorithm name only). The
// first rule that holds decides; if its algorithm cannot run this call
// (unknown, a non-commutative op, rank-varying floating point, ...) the
// built-in rule decides instead.
//
// The active table: set_rules(path), else $SHANCOLL_RULES, else the table
// named by set_default_rules (the Python package sets the one it ships),
// else none (built-in rules); the path "builtin" means none. Every rank must
// see the same table.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace shancoll {

struct Rule {
  std::string coll;
  std::int64_t min_bytes = 0, max_bytes = INT64_MAX;  // [min, max)
  int min_ranks = 1, max_ranks = INT32_MAX;           // [min, max]
  int min_nodes = 1, max_nodes = INT32_MAX;           // [min, max]
  std::string algorithm;
};

// Parses a table; throws ArgumentError naming `rules`, the source and the line.
std::vector<Rule> parse_rules(const std::string& text, const std::string& source);

// The first rule of `coll` that holds for the call, or nullptr. nodes <= 0:
// unknown (only rules with nodes '*' hold).
const Rule* match_rule(const std::vector<Rule>& rules, const std::string& coll, std::int64_t bytes,
                       int ranks, int nodes);

// Path "" drops the explicit choice (back to $SHANCOLL_RULES / the default).
// Reads and checks the file at once; throws ArgumentError if it cannot.
void set_rules(const std::string& path);
void set_default_rules(const std::string& path);
std::string active_rules_path();

// The algorithm the active table picks for this call if valid(name) holds,
// else "" (the caller applies its built-in rule).
std::string rule_choice(const std::string& coll, std::int64_t bytes, int ranks, int nodes,
                        const std::function<bool(const std::string&)>& valid);

}  // namespace shancoll
