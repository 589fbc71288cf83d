#include "shancoll/rules.h"

#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "shancoll/call_options.h"
#include "shancoll/environment.h"
#include "shancoll/error.h"

namespace shancoll {
namespace {

const char* const kCollectives[] = {"allgatherv", "allreduce",      "bcast",
                                    "reduce",     "barrier",        "scan",
                                    "exscan",     "reduce_scatter", "reduce_scatter_block",
                                    "alltoallv",  "gather",         "gatherv",
                                    "scatter",    "scatterv"};

// The table a collective's rows live in: allgather's are allgatherv's,
// alltoall's alltoallv's (rules.h).
std::string table_coll(const std::string& coll) {
  if (coll == "allgather") return "allgatherv";
  if (coll == "alltoall") return "alltoallv";
  return coll;
}

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

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// A count range: '*' (any), N, or N+ (at least N), into [min, max].
void parse_range(std::string text, int* min, int* max, const std::string& where) {
  if (text == "*") return;
  const bool open = text.back() == '+';
  if (open) text.pop_back();
  *min = static_cast<int>(parse_int(text, false, 0, where));
  *max = open ? INT32_MAX : *min;
}

// The hosts field: a range, and after '@' the network module it needs.
void parse_hosts(const std::string& text, Rule* r, const std::string& where) {
  const std::size_t at = text.find('@');
  parse_range(text.substr(0, at), &r->min_hosts, &r->max_hosts, where);
  if (at == std::string::npos) return;
  r->network = lower(text.substr(at + 1));
  const bool word = std::all_of(r->network.begin(), r->network.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
  if (r->network.empty() || !word)
    throw ArgumentError(where + "hosts: '" + text + "' names no network module (N@ucx, N@ofi)");
}

// A row's fields with the hosts column in place: 9 as written, or 8 from a
// table written before the column (hosts '*').
std::vector<std::string> row_fields(std::istringstream& in, const std::string& where) {
  std::vector<std::string> f;
  for (std::string x; in >> x;) f.push_back(x);
  if (f.size() == 8) f.insert(f.begin() + 6, "*");
  if (f.size() != 9)
    throw ArgumentError(where + std::to_string(f.size()) +
                        " fields; 9 needed: coll min_bytes max_bytes min_ranks max_ranks nodes "
                        "hosts algorithm options (8 without hosts)");
  return f;
}

Rule parse_line(std::istringstream& in, const std::string& where) {
  std::vector<std::string> f = row_fields(in, where);
  Rule r;
  // "<coll>_init": the persistent form's rows (persistent_choice).
  const bool persistent = f[0].size() > 5 && f[0].compare(f[0].size() - 5, 5, "_init") == 0;
  r.coll = table_coll(persistent ? f[0].substr(0, f[0].size() - 5) : f[0]);
  bool known = false;
  for (const char* c : kCollectives) known = known || r.coll == c;
  if (!known) throw ArgumentError(where + "unknown collective '" + f[0] + "'");
  if (persistent && f[8] != "-" && f[8] != "single_copy=0" && f[8] != "single_copy=1")
    throw ArgumentError(where + "options: '" + f[8] + "' on a persistent row (its engines " +
                        "take '-', single_copy=0 or single_copy=1)");
  r.min_bytes = parse_int(f[1], false, 0, where);
  r.max_bytes = parse_int(f[2], true, INT64_MAX, where);
  r.min_ranks = static_cast<int>(parse_int(f[3], false, 0, where));
  r.max_ranks = static_cast<int>(parse_int(f[4], true, INT32_MAX, where));
  parse_range(f[5], &r.min_nodes, &r.max_nodes, where);
  parse_hosts(f[6], &r, where);
  r.algorithm = f[7];
  if (f[8] != "-") {  // the collective's options over its defaults, checked now
    const Collective c = r.coll == "allgatherv"             ? Collective::allgatherv
                         : r.coll == "allreduce"            ? Collective::allreduce
                         : r.coll == "bcast"                ? Collective::bcast
                         : r.coll == "barrier"              ? Collective::barrier
                         : r.coll == "scan"                 ? Collective::scan
                         : r.coll == "exscan"               ? Collective::exscan
                         : r.coll == "reduce_scatter"       ? Collective::reduce_scatter
                         : r.coll == "reduce_scatter_block" ? Collective::reduce_scatter_block
                         : r.coll == "alltoallv"            ? Collective::alltoallv
                         : r.coll == "gather"               ? Collective::gather
                         : r.coll == "gatherv"              ? Collective::gatherv
                         : r.coll == "scatter"              ? Collective::scatter
                         : r.coll == "scatterv"             ? Collective::scatterv
                                                            : Collective::reduce;
    auto options = std::make_shared<CallOptions>(default_options(c));
    options->set_text(c, f[8], (where + "options").c_str());
    options->complete();
    r.options_text = f[8];
    r.options = std::move(options);
  }
  if (r.min_bytes >= r.max_bytes || r.min_ranks > r.max_ranks)
    throw ArgumentError(where + "empty range");
  if (persistent) r.coll += "_init";
  return r;
}

struct RuleState {
  std::mutex mu;
  std::string explicit_path, default_dirs;
  bool dirs_set = false;                // set_default_rules called, or the library's own found
  std::string loaded_path;              // the file `rules` came from
  std::uint64_t loaded_generation = 0;  // rule options hold the environment's defaults
  std::shared_ptr<const std::vector<Rule>> rules;
  std::string load_error;  // why `loaded_path` could not be used ("" if it could)
  // The default directories' choice, searched once per selection generation.
  std::uint64_t searched_generation = 0;
  std::string found_path, found_how;
};

RuleState& active() {
  static RuleState a;
  return a;
}

std::string read_text(const std::string& path, const char* how) {
  std::ifstream f(path);
  if (!f) throw ArgumentError(std::string("rules: cannot read '") + path + "' (" + how + ")");
  std::stringstream text;
  text << f.rdbuf();
  return text.str();
}

std::vector<Rule> load(const std::string& path, const char* how) {
  return parse_rules(read_text(path, how), path);
}

// The tables of the default directories, in search order: a directory's
// *.tsv files by name; a file stands for itself; missing ones are skipped.
std::vector<std::string> candidates(const std::string& dirs) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::stringstream list(dirs);
  for (std::string dir; std::getline(list, dir, ':');) {
    std::error_code ec;
    if (dir.empty()) continue;
    if (fs::is_regular_file(dir, ec)) {
      out.push_back(dir);
      continue;
    }
    std::vector<std::string> tables;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".tsv") tables.push_back(e.path().string());
    std::sort(tables.begin(), tables.end());
    out.insert(out.end(), tables.begin(), tables.end());
  }
  return out;
}

std::string describe(const Match& machine) {
  std::string out;
  for (const auto& [key, value] : machine) out += (out.empty() ? "" : ", ") + key + "=" + value;
  return out;
}

// Where a library that set no default directories (the C API's, the PMPI
// library's: the Python module sets its own) looks: the user's calibrated
// tables, then the package's, beside this library (<package>/lib/.. /rules).
std::string library_default_dirs() {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  std::string dirs = cache && *cache ? std::string(cache) + "/shancoll/rules"
                     : home          ? std::string(home) + "/.cache/shancoll/rules"
                                     : "";
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_default_dirs), &info) && info.dli_fname) {
    const std::filesystem::path self(info.dli_fname);
    dirs += ":" + (self.parent_path().parent_path() / "rules").string();
  }
  return dirs;
}

// The table of the default directories that holds here (caller holds the lock).
void search_defaults(RuleState& a) {
  if (!a.dirs_set) a.default_dirs = library_default_dirs(), a.dirs_set = true;
  if (a.searched_generation == selection_generation()) return;
  a.found_path = table_for(a.default_dirs, machine_fingerprint(), &a.found_how);
  a.searched_generation = selection_generation();
}

// The path in force and how it was chosen (caller holds the lock; valid
// while it does). No copy: this runs on every "auto" call.
const char* current_path(RuleState& a, const char** how) {
  *how = "set_rules";
  if (!a.explicit_path.empty()) return a.explicit_path.c_str();
  *how = "SHANCOLL_RULES";
  const std::string& env = environment().rules;
  if (!env.empty()) return env.c_str();
  search_defaults(a);
  *how = a.found_how.c_str();
  return a.found_path.c_str();
}

// "builtin" (from set_rules or SHANCOLL_RULES) turns every table off.
constexpr const char* kBuiltin = "builtin";

std::shared_ptr<const std::vector<Rule>> current_rules() {
  RuleState& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  const char* how = "";
  const char* path = current_path(a, &how);
  if (!*path || std::strcmp(path, kBuiltin) == 0) return nullptr;
  if (a.loaded_path != path || a.loaded_generation != selection_generation()) {  // not per call
    a.loaded_path = path;
    a.loaded_generation = selection_generation();
    a.rules.reset();
    a.load_error.clear();
    try {
      a.rules = std::make_shared<const std::vector<Rule>>(load(path, how));
    } catch (const ArgumentError& e) {
      a.load_error = e.what();
    }
  }
  // A table that cannot be used fails every auto call alike, without reading
  // the file again on each (that took 18 us per call, 2 ranks, AMD EPYC VM).
  if (!a.load_error.empty()) throw ArgumentError(a.load_error);
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
    std::string first;
    if (std::istringstream(line) >> first && first == "match") continue;  // parse_match's
    rules.push_back(parse_line(in, "rules: " + source + ":" + std::to_string(n) + ": "));
  }
  return rules;
}

namespace {

// n in [min, max]; an unknown n (<= 0) only in a '*' range.
bool in_range(int n, int min, int max) {
  return n > 0 ? min <= n && n <= max : min <= 1 && max == INT32_MAX;
}

}  // namespace

const Rule* match_rule(const std::vector<Rule>& rules, const std::string& coll, std::int64_t bytes,
                       int ranks, int nodes, int hosts, const std::string& network) {
  const std::string c = table_coll(coll);
  for (const Rule& r : rules) {
    if (r.coll == c && r.min_bytes <= bytes && bytes < r.max_bytes && r.min_ranks <= ranks &&
        ranks <= r.max_ranks && in_range(nodes, r.min_nodes, r.max_nodes) &&
        in_range(hosts, r.min_hosts, r.max_hosts) &&
        (r.network.empty() || (r.network == network && network != "unknown")))
      return &r;
  }
  return nullptr;
}

void set_rules(const std::string& path) {
  if (!path.empty() && path != kBuiltin) load(path, "set_rules");  // refuse a bad file now
  RuleState& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  a.explicit_path = path;
  bump_selection_generation();
}

void set_default_rules(const std::string& dirs) {
  RuleState& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  a.default_dirs = dirs;
  a.dirs_set = true;
  bump_selection_generation();
}

std::string active_rules_path() {
  RuleState& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  const char* how = "";
  const std::string path = current_path(a, &how);
  return path == kBuiltin ? "" : path;
}

RulesInfo rules_info() {
  RuleState& a = active();
  std::lock_guard<std::mutex> lock(a.mu);
  const char* how = "";
  std::string path = current_path(a, &how);
  std::string why = how;
  if (path == kBuiltin) path.clear(), why += ": builtin, no table";
  return {path, why, describe(machine_fingerprint()) + ", network=" + machine_network()};
}

namespace {

// Runs of blanks as one space, none at the ends: "MPICH Version:      5.0.2"
// and "MPICH Version: 5.0.2" are the same library.
std::string squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

using Pairs = std::vector<std::pair<std::string, std::string>>;

// "L1d 48K L2 1M": its name-value pairs (a lone last word has value "").
Pairs pairs_of(const std::string& text) {
  Pairs out;
  std::istringstream in(text);
  for (std::string name, value; in >> name;) {
    value.clear();
    in >> value;
    out.emplace_back(name, value);
  }
  return out;
}

// A cache size's KiB ("32768K", "32M"), -1 for other text.
long long size_kib(const std::string& text) {
  std::size_t used = 0;
  long long n = -1;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
    return -1;
  }
  const std::string unit = text.substr(used);
  const long long kib = unit == "K" ? n : unit == "M" ? n << 10 : unit == "G" ? n << 20 : -1;
  return n > 0 && kib > 0 ? kib : -1;
}

// A cache size in one spelling: "32768K" and "32M" are "32M"; other text as it is.
std::string size_text(const std::string& text) {
  const long long kib = size_kib(text);
  if (kib <= 0) return text;
  return kib % 1024 == 0 ? std::to_string(kib >> 10) + "M" : std::to_string(kib) + "K";
}

// The names a cpuid or caches line may use: a misspelt one would never hold.
void check_pairs(const std::string& key, const std::string& value, const std::string& where) {
  const bool cpuid = key == "cpuid";
  const std::vector<std::string> names = cpuid ? std::vector<std::string>{"family", "model"}
                                               : std::vector<std::string>{"L1d", "L2", "L3"};
  for (const auto& [name, v] : pairs_of(value)) {
    if (std::find(names.begin(), names.end(), name) == names.end() || v.empty())
      throw ArgumentError(where + key + ": '" + value + "' is not " +
                          (cpuid ? "family <F> model <M>" : "L1d <size> L2 <size> L3 <size>") +
                          " (or some of them)");
  }
}

// Whether a match line's value holds for this machine's value of `key`.
bool holds(const std::string& key, const std::string& want, const std::string& have) {
  if (have == "unknown") return false;
  if (key == "cpu" || key == "mpi") return squeezed(have).rfind(squeezed(want), 0) == 0;
  const Pairs here = pairs_of(have);
  for (const auto& [name, value] : pairs_of(want)) {
    bool equal = false;
    for (const auto& [n, v] : here)
      equal = equal || (n == name && size_text(v) == size_text(value));
    if (!equal) return false;
  }
  return true;
}

std::string first_word(const std::filesystem::path& file) {
  std::ifstream f(file);
  std::string word;
  f >> word;
  return word;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) return squeezed(line.substr(colon + 1));
  }
  return "unknown";
}

// "family 25 model 1": /proc/cpuinfo's first processor (x86 has these lines).
std::string cpu_id() {
  std::ifstream f("/proc/cpuinfo");
  std::string family, model;
  for (std::string line; std::getline(f, line) && !squeezed(line).empty();) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = squeezed(line.substr(0, colon));
    if (name == "cpu family") family = squeezed(line.substr(colon + 1));
    if (name == "model") model = squeezed(line.substr(colon + 1));
  }
  return family.empty() || model.empty() ? "unknown" : "family " + family + " model " + model;
}

// The MPI library's whole version text.
std::string mpi_version_text() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int length = 0;
  MPI_Get_library_version(text, &length);
  // Open MPI counts the terminating NUL in length: a table written from the
  // fingerprint would carry it into its match line.
  return std::string(text, strnlen(text, static_cast<std::size_t>(std::max(length, 0))));
}

std::string mpi_version() {
  const std::string all = mpi_version_text();
  return squeezed(all.substr(0, all.find('\n')));
}

}  // namespace

Match parse_match(const std::string& text, const std::string& source) {
  Match out;
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line); ++n) {
    line = line.substr(0, line.find('#'));
    std::istringstream in(line);
    std::string word, key, value;
    if (!(in >> word) || word != "match") continue;
    const std::string where = "rules: " + source + ":" + std::to_string(n) + ": match ";
    if (!(in >> key) || (key != "cpu" && key != "cpuid" && key != "caches" && key != "mpi"))
      throw ArgumentError(where + "needs cpu, cpuid, caches or mpi and a value");
    std::getline(in >> std::ws, value);
    while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back())))
      value.pop_back();
    if (value.empty()) throw ArgumentError(where + key + " needs a value");
    if (key == "cpuid" || key == "caches") check_pairs(key, value, where);
    out.emplace_back(key, value);
  }
  return out;
}

std::string table_for(const std::string& dirs, const Match& machine, std::string* how) {
  std::string generic;
  for (const std::string& path : candidates(dirs)) {
    const Match match = parse_match(read_text(path, "default table"), path);
    if (match.empty()) {
      if (generic.empty()) generic = path;
    } else if (matches(match, machine)) {
      *how = "the table measured on this machine (" + describe(machine) + ")";
      return path;
    }
  }
  *how = generic.empty()
             ? "no table: the built-in rules"
             : "no table measured on this machine (" + describe(machine) +
                   "): the conservative table (choices that won on every machine measured); "
                   "measure this machine's with: python -m shancoll.bench.tune";
  return generic;
}

std::string read_caches(const std::string& dir) {
  std::string sizes[4];  // by level: the first data or unified cache of each
  for (int i = 0; i < 16; ++i) {
    const std::filesystem::path index = std::filesystem::path(dir) / ("index" + std::to_string(i));
    const std::string level = first_word(index / "level"), size = first_word(index / "size");
    if (level.size() != 1 || level[0] < '1' || level[0] > '3' || size.empty()) continue;
    if (first_word(index / "type") == "Instruction") continue;
    std::string& slot = sizes[level[0] - '0'];
    if (slot.empty()) slot = size_text(size);
  }
  std::string out;
  for (int level = 1; level <= 3; ++level) {
    if (sizes[level].empty()) continue;
    const std::string name = level == 1 ? "L1d" : "L" + std::to_string(level);
    out += (out.empty() ? "" : " ") + name + " " + sizes[level];
  }
  return out.empty() ? "unknown" : out;
}

std::size_t largest_cache_bytes(const std::string& dir) {
  const std::string caches = read_caches(dir);
  const long long kib = size_kib(caches.substr(caches.rfind(' ') + 1));  // the last level's
  return kib > 0 ? static_cast<std::size_t>(kib) << 10 : 0;
}

const Match& machine_fingerprint() {
  static const Match fingerprint = {{"cpu", cpu_model()},
                                    {"cpuid", cpu_id()},
                                    {"caches", read_caches("/sys/devices/system/cpu/cpu0/cache")},
                                    {"mpi", mpi_version()}};
  return fingerprint;
}

const std::string& machine_mpi() {
  static const std::string mpi = [] {
    for (const auto& [key, value] : machine_fingerprint())
      if (key == "mpi") return value;
    return std::string("unknown");
  }();
  return mpi;
}

std::string network_of(const std::string& version, const char* netmod) {
  if (version.rfind("Intel(R) MPI", 0) == 0) return "ofi";
  if (version.rfind("MPICH", 0) != 0) return "unknown";
  if (netmod && *netmod) return lower(netmod);
  const std::string device = "MPICH Device:";
  const std::size_t at = version.find(device);
  if (at == std::string::npos) return "unknown";
  const std::size_t end = version.find('\n', at);
  std::istringstream line(version.substr(at + device.size(), end - at - device.size()));
  std::string word;  // "ch4:ucx"
  line >> word;
  if (word.rfind("ch4:", 0) != 0 || word.size() == 4) return "unknown";
  return lower(word.substr(4, word.find(',') - 4));
}

const std::string& machine_network() {
  static const std::string network =
      network_of(mpi_version_text(), std::getenv("MPIR_CVAR_CH4_NETMOD"));
  return network;
}

bool matches(const Match& match, const Match& machine) {
  for (const auto& [key, value] : match) {
    bool held = false;
    for (const auto& [k, v] : machine) held = held || (k == key && holds(k, value, v));
    if (!held) return false;
  }
  return true;
}

bool matches(const Match& match) { return matches(match, machine_fingerprint()); }

namespace {

// The rule a call shape matches, memoised per thread for the last shapes
// seen: every "auto" call asks, and reading the table takes its lock. An
// entry keeps the table it points into; it is stale once set_rules or
// reload_environment changed what is active (the selection generation).
const Rule* matching_rule(const std::string& coll, std::int64_t bytes, int ranks, int nodes,
                          int hosts) {
  struct Memo {
    std::uint64_t generation = 0;  // 0: empty
    std::string coll;
    std::int64_t bytes = 0;
    int ranks = 0, nodes = 0, hosts = 0;
    std::shared_ptr<const std::vector<Rule>> rules;
    const Rule* rule = nullptr;
  };
  thread_local Memo memo[8];
  const std::uint64_t generation = selection_generation();
  Memo& m = memo[(static_cast<std::uint64_t>(bytes) * 0x9E3779B97F4A7C15ull) >> 61];
  if (m.generation != generation || m.bytes != bytes || m.ranks != ranks || m.nodes != nodes ||
      m.hosts != hosts || m.coll != coll) {
    auto rules = current_rules();
    const Rule* rule =
        rules ? match_rule(*rules, coll, bytes, ranks, nodes, hosts, machine_network()) : nullptr;
    m = {generation, coll, bytes, ranks, nodes, hosts, std::move(rules), rule};
  }
  return m.rule;
}

}  // namespace

std::string rule_choice(const std::string& coll, std::int64_t bytes, int ranks, int nodes,
                        int hosts, const std::function<bool(const std::string&)>& valid) {
  const Rule* r = matching_rule(coll, bytes, ranks, nodes, hosts);
  return r && valid(r->algorithm) ? r->algorithm : "";
}

PersistentChoice persistent_choice(const std::string& coll, std::int64_t bytes, int ranks,
                                   int nodes, int hosts, const char* engine) {
  const Rule* r = matching_rule(table_coll(coll) + "_init", bytes, ranks, nodes, hosts);
  if (!r || (r->algorithm != engine && r->algorithm != "mpi")) return {};
  return {r->algorithm, r->options ? r->options->resolved().single_copy : -1};
}

const CallOptions* rule_options(const std::string& coll, std::int64_t bytes, int ranks, int nodes,
                                int hosts, const char* algorithm) {
  const Rule* r = matching_rule(coll, bytes, ranks, nodes, hosts);
  return r && r->options && r->algorithm == algorithm ? r->options.get() : nullptr;
}

}  // namespace shancoll
