#include "shancoll/rules.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "shancoll/environment.h"
#include "shancoll/error.h"

namespace shancoll {
namespace {

const char* const kCollectives[] = {"allgatherv", "allreduce", "bcast", "reduce"};

std::int64_t parse_int(const std::string& field, bool star_ok, std::int64_t star,
                       const std::string& where) {
  if (star_ok && field == "*") return star;
  std::size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(field, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != field.size() || v < 0)
    throw ArgumentError(where + "'" + field + "' is not a count" + (star_ok ? " or '*'" : ""));
  return v;
}

Rule parse_line(std::istringstream& in, const std::string& where) {
  std::string f[8];
  for (auto& x : f)
    if (!(in >> x))
      throw ArgumentError(where +
                          "8 fields needed: coll min_bytes max_bytes min_ranks max_ranks "
                          "nodes algorithm options");
  std::string extra;
  if (in >> extra) throw ArgumentError(where + "more than 8 fields ('" + extra + "')");
  Rule r;
  r.coll = f[0] == "allgather" ? "allgatherv" : f[0];
  bool known = false;
  for (const char* c : kCollectives) known = known || r.coll == c;
  if (!known) throw ArgumentError(where + "unknown collective '" + f[0] + "'");
  r.min_bytes = parse_int(f[1], false, 0, where);
  r.max_bytes = parse_int(f[2], true, INT64_MAX, where);
  r.min_ranks = static_cast<int>(parse_int(f[3], false, 0, where));
  r.max_ranks = static_cast<int>(parse_int(f[4], true, INT32_MAX, where));
  std::string nodes = f[5];
  if (nodes != "*") {
    const bool open = nodes.back() == '+';
    if (open) nodes.pop_back();
    r.min_nodes = static_cast<int>(parse_int(nodes, false, 0, where));
    r.max_nodes = open ? INT32_MAX : r.min_nodes;
  }
  r.algorithm = f[6];
  if (f[7] != "-")
    throw ArgumentError(where + "options must be '-' (got '" + f[7] +
                        "'): a rule picks an algorithm with its default options");
  if (r.min_bytes >= r.max_bytes || r.min_ranks > r.max_ranks)
    throw ArgumentError(where + "empty range");
  return r;
}

struct Active {
  std::mutex mu;
  std::string explicit_path, default_path;
  std::string loaded_path;  // the file `rules` came from
  std::shared_ptr<const std::vector<Rule>> rules;
};

Active& active() {
  static Active a;
  return a;
}

std::vector<Rule> load(const std::string& path, const char* how) {
  std::ifstream f(path);
  if (!f) throw ArgumentError(std::string("rules: cannot read '") + path + "' (" + how + ")");
  std::stringstream text;
  text << f.rdbuf();
  return parse_rules(text.str(), path);
}

// The path in force and how it was chosen (caller holds the lock; valid
// while it does). No copy: this runs on every "auto" call.
const char* current_path(const Active& a, const char** how) {
  *how = "set_rules";
  if (!a.explicit_path.empty()) return a.explicit_path.c_str();
  *how = "SHANCOLL_RULES";
  const std::string& env = environment().rules;
  if (!env.empty()) return env.c_str();
  *how = "default table";
  return a.default_path.c_str();
}

// "builtin" (from set_rules or SHANCOLL_RULES) turns every table off.
constexpr const char* kBuiltin = "builtin";

std::shared_ptr<const std::vector<Rule>> current_rules() {
  Active& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  const char* how = "";
  const char* path = current_path(a, &how);
  if (!*path || std::strcmp(path, kBuiltin) == 0) return nullptr;
  if (a.loaded_path != path) {  // read once per path, not per call
    a.rules = std::make_shared<const std::vector<Rule>>(load(path, how));
    a.loaded_path = path;
  }
  return a.rules;
}

}  // namespace

std::vector<Rule> parse_rules(const std::string& text, const std::string& source) {
  std::vector<Rule> rules;
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    line = line.substr(0, line.find('#'));
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank or comment
    std::istringstream in(line);
    rules.push_back(parse_line(in, "rules: " + source + ":" + std::to_string(n) + ": "));
  }
  return rules;
}

const Rule* match_rule(const std::vector<Rule>& rules, const std::string& coll, std::int64_t bytes,
                       int ranks, int nodes) {
  const std::string c = coll == "allgather" ? "allgatherv" : coll;
  for (const Rule& r : rules) {
    const bool node_ok = nodes > 0 ? r.min_nodes <= nodes && nodes <= r.max_nodes
                                   : r.min_nodes <= 1 && r.max_nodes == INT32_MAX;
    if (r.coll == c && r.min_bytes <= bytes && bytes < r.max_bytes && r.min_ranks <= ranks &&
        ranks <= r.max_ranks && node_ok)
      return &r;
  }
  return nullptr;
}

void set_rules(const std::string& path) {
  if (!path.empty() && path != kBuiltin) load(path, "set_rules");  // refuse a bad file now
  Active& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  a.explicit_path = path;
  bump_selection_generation();
}

void set_default_rules(const std::string& path) {
  Active& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  a.default_path = path;
  bump_selection_generation();
}

std::string active_rules_path() {
  Active& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  const char* how = "";
  return current_path(a, &how);
}

namespace {

// The rule a call shape matches, memoised per thread for the last shapes
// seen: every "auto" call asks, and reading the table takes its lock. An
// entry keeps the table it points into; it is stale once set_rules or
// reload_environment changed what is active (the selection generation).
const Rule* matching_rule(const std::string& coll, std::int64_t bytes, int ranks, int nodes) {
  struct Memo {
    std::uint64_t generation = 0;  // 0: empty
    std::string coll;
    std::int64_t bytes = 0;
    int ranks = 0, nodes = 0;
    std::shared_ptr<const std::vector<Rule>> rules;
    const Rule* rule = nullptr;
  };
  thread_local Memo memo[8];
  const std::uint64_t generation = selection_generation();
  Memo& m = memo[(static_cast<std::uint64_t>(bytes) * 0x9E3779B97F4A7C15ull) >> 61];
  if (m.generation != generation || m.bytes != bytes || m.ranks != ranks || m.nodes != nodes ||
      m.coll != coll) {
    auto rules = current_rules();
    const Rule* rule = rules ? match_rule(*rules, coll, bytes, ranks, nodes) : nullptr;
    m = {generation, coll, bytes, ranks, nodes, std::move(rules), rule};
  }
  return m.rule;
}

}  // namespace

std::string rule_choice(const std::string& coll, std::int64_t bytes, int ranks, int nodes,
                        const std::function<bool(const std::string&)>& valid) {
  const Rule* r = matching_rule(coll, bytes, ranks, nodes);
  return r && valid(r->algorithm) ? r->algorithm : "";
}

}  // namespace shancoll
