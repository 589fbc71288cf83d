#include "shancoll/call_options.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <string>

#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/progress.h"
#include "shancoll/topology.h"

namespace shancoll {
namespace {

// ---------------------------------------------------------------------------
// The table

enum class Kind { integer, seconds, boolean, text, sockets };

constexpr unsigned bit(Collective c) { return 1u << static_cast<unsigned>(c); }
constexpr unsigned kAll = (1u << kCollectives) - 1;
constexpr unsigned kGathers =
    bit(Collective::allgather) | bit(Collective::allgatherv) | bit(Collective::intergroup);
constexpr unsigned kAllgathers = bit(Collective::allgather) | bit(Collective::allgatherv);
// shan's single_copy (its one-node paths: 1 takes cross-memory attach
// where it fits instead of the shared segment or the pair channels; scan and
// exscan: release_gather's, kRunsReleaseGather; iallreduce: the persistent
// allreduce's engine on a node of two ranks; reduce_scatter(_block): the
// pair's reads on a node of two ranks).
constexpr unsigned kShanSingleCopy =
    kAllgathers | bit(Collective::gather) | bit(Collective::gatherv) | bit(Collective::scatter) |
    bit(Collective::scatterv) | bit(Collective::alltoall) | bit(Collective::alltoallv) |
    bit(Collective::scan) | bit(Collective::exscan) | bit(Collective::iallreduce) |
    bit(Collective::reduce_scatter) | bit(Collective::reduce_scatter_block);
// The shared-memory rings on one node (ring_window): shan allgather(v)'s,
// the pair channels of gather(v), scatter(v), alltoall(v) and
// reduce_scatter(_block)'s shan, and allreduce's pieces.
constexpr unsigned kRings = kAllgathers | bit(Collective::allreduce) | bit(Collective::gather) |
                            bit(Collective::gatherv) | bit(Collective::scatter) |
                            bit(Collective::scatterv) | bit(Collective::alltoall) |
                            bit(Collective::alltoallv) | bit(Collective::reduce_scatter) |
                            bit(Collective::reduce_scatter_block);
constexpr unsigned kAllreduces = bit(Collective::allreduce) | bit(Collective::iallreduce);
// release_gather's options: bcast, reduce, and allreduce's release_gather
// (which has no split-phase form).
constexpr unsigned kReleaseGather =
    bit(Collective::allreduce) | bit(Collective::bcast) | bit(Collective::reduce);
// Collectives whose calls may run release_gather: its own, and shan's scan
// and exscan on one node of two ranks (a reduce and a bcast), whose
// single_copy is release_gather's.
constexpr unsigned kRunsReleaseGather =
    kReleaseGather | bit(Collective::scan) | bit(Collective::exscan);

// A value checked against its kind (and the row's lowest value).
struct Checked {
  std::int64_t integer = 0;
  double seconds = 0;
  bool boolean = false;
  std::string text;
  SocketSpec sockets;
};

using Setter = void (*)(CallOptions&, std::string_view key, const Checked&);

struct Row {
  const char* name;
  Kind kind;
  std::int64_t lowest;  // integers
  unsigned collectives;
  Setter set;
};

// Release/gather's tree keys: phase 0 (both), 1 (bcast_), 2 (reduce_).
int phase_of(std::string_view key) {
  if (key.rfind("bcast_", 0) == 0) return 1;
  if (key.rfind("reduce_", 0) == 0) return 2;
  return 0;
}

[[noreturn]] void bad(std::string_view key, const std::string& why) {
  throw ArgumentError(std::string(key) + ": " + why);
}

void set_tree(CallOptions& c, std::string_view key, const Checked& v) {
  if (v.text != "auto" && v.text != "flat" && v.text != "kary" && v.text != "knomial")
    bad(key, "unknown tree '" + v.text + "' (valid: auto, flat, kary, knomial)");
  c.trees[phase_of(key)].tree = v.text;
}

void set_k(CallOptions& c, std::string_view key, const Checked& v) {
  c.trees[phase_of(key)].k = static_cast<int>(v.integer);
}

void set_skew(CallOptions& c, std::string_view key, const Checked& v) {
  int skew = -1;
  if (v.text == "left")
    skew = 0;
  else if (v.text == "right")
    skew = 1;
  else if (v.text != "auto")
    bad(key, "unknown skew '" + v.text + "' (valid: auto, left, right)");
  c.trees[phase_of(key)].skew = skew;
}

void set_topology(CallOptions& c, std::string_view key, const Checked& v) {
  using pattern::TreeTopology;
  int topology = -1;
  for (TreeTopology t :
       {TreeTopology::none, TreeTopology::socket_leader_first, TreeTopology::socket_leader_last})
    if (v.text == pattern::tree_topology_name(t)) topology = static_cast<int>(t);
  if (topology < 0 && v.text != "auto")
    bad(key, "unknown topology '" + v.text +
                 "' (valid: auto, none, socket_leader_first, socket_leader_last)");
  c.trees[phase_of(key)].topology = topology;
}

// One key for every single-copy path: release_gather's (bcast, reduce,
// allreduce) and shan allgather(v)'s; the rule tables set it per size.
void set_single_copy(CallOptions& c, std::string_view, const Checked& v) {
  c.release_gather.single_copy = v.boolean ? 1 : 0;
  c.options.single_copy = v.boolean ? 1 : 0;
}

#define SHANCOLL_SETTER(field, expression) \
  [](CallOptions& c, std::string_view, const Checked& v) { c.field = expression; }

const std::vector<Row>& table() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> r = {
        {"timeout", Kind::seconds, 0, kAll, SHANCOLL_SETTER(options.timeout, v.seconds)},
        {"check", Kind::boolean, 0, kAll, SHANCOLL_SETTER(check, v.boolean)},
        {"ranks_per_node", Kind::integer, 0, kAll,
         SHANCOLL_SETTER(options.ranks_per_node, static_cast<int>(v.integer))},
        {"block_size", Kind::integer, 0, kGathers | bit(Collective::allreduce),
         SHANCOLL_SETTER(options.block_size, v.integer)},
        {"transport", Kind::text, 0, kGathers,
         SHANCOLL_SETTER(options.transport, parse_transport(v.text))},
        {"intra_algorithm", Kind::text, 0, bit(Collective::intergroup),
         SHANCOLL_SETTER(intra_algorithm, v.text == "auto" ? "" : v.text)},
        {"ports", Kind::integer, 0, kAllreduces,
         SHANCOLL_SETTER(ports, static_cast<int>(v.integer))},
        {"consistent", Kind::boolean, 0, kAllreduces, SHANCOLL_SETTER(consistent, v.boolean)},
        {"inter_algorithm", Kind::text, 0, bit(Collective::allreduce),
         SHANCOLL_SETTER(release_gather.inter_algorithm, v.text)},
        {"sockets", Kind::sockets, 0, kReleaseGather,
         SHANCOLL_SETTER(release_gather.sockets, v.sockets)},
        {"buffer_size", Kind::integer, 0, kReleaseGather,
         SHANCOLL_SETTER(release_gather.buffer_size, v.integer)},
        {"buffers", Kind::integer, 0, kReleaseGather,
         SHANCOLL_SETTER(release_gather.buffers, static_cast<int>(v.integer))},
        {"inline", Kind::boolean, 0, kReleaseGather,
         SHANCOLL_SETTER(release_gather.inline_data, v.boolean)},
        {"read_from_parent", Kind::boolean, 0, kReleaseGather,
         SHANCOLL_SETTER(release_gather.read_from_parent, v.boolean)},
        {"data_copy", Kind::boolean, 0, kReleaseGather,
         SHANCOLL_SETTER(release_gather.data_copy, v.boolean)},
        {"single_copy", Kind::boolean, 0, kReleaseGather | kShanSingleCopy, set_single_copy},
        {"ring_window", Kind::integer, 64 << 10, kRings,
         SHANCOLL_SETTER(options.ring_window, v.integer)},
    };
    // The tree keys, plain and per phase (the names must outlive the table).
    static const char* const tree_names[3][4] = {
        {"tree", "k", "skew", "topology"},
        {"bcast_tree", "bcast_k", "bcast_skew", "bcast_topology"},
        {"reduce_tree", "reduce_k", "reduce_skew", "reduce_topology"}};
    for (const auto& names : tree_names) {
      r.push_back({names[0], Kind::text, 0, kReleaseGather, set_tree});
      r.push_back({names[1], Kind::integer, 1, kReleaseGather, set_k});
      r.push_back({names[2], Kind::text, 0, kReleaseGather, set_skew});
      r.push_back({names[3], Kind::text, 0, kReleaseGather, set_topology});
    }
    return r;
  }();
  return rows;
}

#undef SHANCOLL_SETTER

// A key that only release_gather reads for this collective (an allgather's
// single_copy is shan's; a scan's goes to the release_gather it runs).
bool is_release_gather_key(const Row& row, Collective collective) {
  return ((row.collectives & ~kShanSingleCopy) == kReleaseGather &&
          (bit(collective) & kRunsReleaseGather)) ||
         std::string_view(row.name) == "inter_algorithm";
}

// ---------------------------------------------------------------------------
// Values

std::string describe(const OptionValue& v) {
  if (auto b = std::get_if<bool>(&v)) return *b ? "True" : "False";
  if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto d = std::get_if<double>(&v)) {
    std::ostringstream out;
    out << *d;
    return out.str();
  }
  if (auto s = std::get_if<std::string>(&v)) return "'" + *s + "'";
  std::string out = "[";
  for (int x : std::get<std::vector<int>>(v))
    out += (out.size() > 1 ? ", " : "") + std::to_string(x);
  return out + "]";
}

const char* wanted(Kind kind) {
  switch (kind) {
    case Kind::integer:
      return "an integer";
    case Kind::seconds:
      return "a number of seconds";
    case Kind::boolean:
      return "a boolean";
    case Kind::text:
      return "a string";
    case Kind::sockets:
      return "'auto', a socket count or a list of sockets per local rank";
  }
  return "";
}

Checked checked_value(const Row& row, std::string_view key, const OptionValue& v) {
  Checked c;
  const auto* integer = std::get_if<std::int64_t>(&v);
  const auto* text = std::get_if<std::string>(&v);
  const auto wrong = [&] {
    bad(key, std::string("expected ") + wanted(row.kind) + ", got " + describe(v));
  };
  switch (row.kind) {
    case Kind::integer:
      if (!integer) wrong();
      if (*integer < row.lowest)
        bad(key, "must be >= " + std::to_string(row.lowest) +
                     (key == "ranks_per_node" ? " (0: the physical nodes)" : "") + ", got " +
                     std::to_string(*integer));
      c.integer = *integer;
      break;
    case Kind::seconds: {
      const auto* real = std::get_if<double>(&v);
      if (!integer && !real) wrong();
      c.seconds = integer ? static_cast<double>(*integer) : *real;
      if (!(c.seconds >= 0) || std::isinf(c.seconds))
        bad(key, "must be a finite number of seconds >= 0, got " + describe(v));
      break;
    }
    case Kind::boolean:
      if (!std::holds_alternative<bool>(v)) wrong();
      c.boolean = std::get<bool>(v);
      break;
    case Kind::text:
      if (!text) wrong();
      c.text = *text;
      break;
    case Kind::sockets:
      if (text) {
        c.sockets = parse_socket_spec(*text, "sockets");
      } else if (integer) {
        if (*integer < 1) bad(key, "a socket count must be >= 1, got " + std::to_string(*integer));
        c.sockets.groups = static_cast<int>(*integer);
      } else if (const auto* list = std::get_if<std::vector<int>>(&v)) {
        if (list->empty()) bad(key, "an empty socket map");
        c.sockets.map = *list;
      } else {
        wrong();
      }
      break;
  }
  return c;
}

// The C API's and the environment's text, as the value the key's kind takes.
OptionValue from_text(const Row& row, std::string_view key, const std::string& text) {
  char* end = nullptr;
  switch (row.kind) {
    case Kind::integer: {
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || *end) bad(key, "not an integer: '" + text + "'");
      return static_cast<std::int64_t>(v);
    }
    case Kind::seconds: {
      const double v = std::strtod(text.c_str(), &end);
      if (text.empty() || *end) bad(key, "not a number of seconds: '" + text + "'");
      return v;
    }
    case Kind::boolean:
      if (text == "1" || text == "true" || text == "yes") return true;
      if (text == "0" || text == "false" || text == "no") return false;
      bad(key, "not a boolean (1/0, true/false, yes/no): '" + text + "'");
    case Kind::sockets:  // a count as a count (a map has commas, "auto" letters)
      if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos)
        return static_cast<std::int64_t>(std::strtoll(text.c_str(), nullptr, 10));
      break;
    case Kind::text:
      break;
  }
  return text;
}

const Row* find_row(std::string_view key) {
  for (const Row& row : table())
    if (key == row.name) return &row;
  return nullptr;
}

// ---------------------------------------------------------------------------
// Trees

// The phase's tree keys over the plain ones; `phase` 1 (bcast) or 2 (reduce).
void resolve_tree(const CallOptions& c, int phase, RgTreeOptions& t) {
  const TreeKeys& own = c.trees[phase];
  const TreeKeys& plain = c.trees[0];
  const std::string& tree = own.tree.empty() ? plain.tree : own.tree;
  t.tree_auto = tree.empty() || tree == "auto";
  if (!t.tree_auto)
    t.shape.kind = tree == "flat"   ? pattern::TreeKind::flat
                   : tree == "kary" ? pattern::TreeKind::kary
                                    : pattern::TreeKind::knomial;
  const int k = own.k ? own.k : plain.k;
  if (k) t.shape.k = k;
  const int skew = own.skew != -2 ? own.skew : plain.skew;
  if (skew != -2) t.skew = skew;
  const int topology = own.topology != -2 ? own.topology : plain.topology;
  if (topology != -2) t.topology = topology;
}

// k picks the K of a kary/knomial tree: with tree=auto (the paper's kind
// and K by size) it would be ignored, so it is refused.
void check_k(const CallOptions& c) {
  const RgTreeOptions* phases[] = {nullptr, &c.release_gather.bcast_tree,
                                   &c.release_gather.reduce_tree};
  for (int p : {1, 2}) {
    const std::string prefix = p == 1 ? "bcast_" : "reduce_";
    if (c.trees[p].k && phases[p]->tree_auto)
      bad(prefix + "k", "needs " + prefix + "tree=kary or " + prefix +
                            "tree=knomial (tree=auto picks K by size)");
  }
  if (c.trees[0].k && phases[1]->tree_auto && phases[2]->tree_auto)
    bad("k", "needs tree=kary or tree=knomial (tree=auto picks K by size)");
}

const char* env_name(Collective c) {
  switch (c) {
    case Collective::allgather:
      return environment_value("SHANCOLL_ALLGATHER_OPTIONS");
    case Collective::allgatherv:
      return environment_value("SHANCOLL_ALLGATHERV_OPTIONS");
    case Collective::allreduce:
      return environment_value("SHANCOLL_ALLREDUCE_OPTIONS");
    case Collective::iallreduce:
      return environment_value("SHANCOLL_IALLREDUCE_OPTIONS");
    case Collective::bcast:
      return environment_value("SHANCOLL_BCAST_OPTIONS");
    case Collective::reduce:
      return environment_value("SHANCOLL_REDUCE_OPTIONS");
    case Collective::intergroup:
      return environment_value("SHANCOLL_INTERGROUP_OPTIONS");
    case Collective::barrier:
      return environment_value("SHANCOLL_BARRIER_OPTIONS");
    case Collective::scan:
      return environment_value("SHANCOLL_SCAN_OPTIONS");
    case Collective::exscan:
      return environment_value("SHANCOLL_EXSCAN_OPTIONS");
    case Collective::reduce_scatter:
      return environment_value("SHANCOLL_REDUCE_SCATTER_OPTIONS");
    case Collective::reduce_scatter_block:
      return environment_value("SHANCOLL_REDUCE_SCATTER_BLOCK_OPTIONS");
    case Collective::alltoall:
      return environment_value("SHANCOLL_ALLTOALL_OPTIONS");
    case Collective::alltoallv:
      return environment_value("SHANCOLL_ALLTOALLV_OPTIONS");
    case Collective::gather:
      return environment_value("SHANCOLL_GATHER_OPTIONS");
    case Collective::gatherv:
      return environment_value("SHANCOLL_GATHERV_OPTIONS");
    case Collective::scatter:
      return environment_value("SHANCOLL_SCATTER_OPTIONS");
    case Collective::scatterv:
      return environment_value("SHANCOLL_SCATTERV_OPTIONS");
  }
  return "";
}

std::string variable_of(Collective c) {
  std::string name = collective_name(c);
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return "SHANCOLL_" + name + "_OPTIONS";
}

}  // namespace

const char* collective_name(Collective c) {
  static const char* const names[kCollectives] = {
      "allgather", "allgatherv", "allreduce",      "iallreduce",
      "bcast",     "reduce",     "intergroup",     "barrier",
      "scan",      "exscan",     "reduce_scatter", "reduce_scatter_block",
      "alltoall",  "alltoallv",  "gather",         "gatherv",
      "scatter",   "scatterv"};
  return names[static_cast<unsigned>(c)];
}

std::string option_names(Collective collective) {
  std::string out;
  for (const Row& row : table())
    if (row.collectives & bit(collective)) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

void CallOptions::set(Collective collective, std::string_view key, const OptionValue& value) {
  const Row* row = find_row(key);
  if (!row || !(row->collectives & bit(collective)))
    bad(key, std::string("unknown option of ") + collective_name(collective) +
                 " (valid: " + option_names(collective) + ")");
  row->set(*this, key, checked_value(*row, key, value));
  if (is_release_gather_key(*row, collective))
    release_gather_keys += (release_gather_keys.empty() ? "" : ", ") + std::string(key);
}

void CallOptions::set_text(Collective collective, std::string_view text, const char* source) {
  std::size_t begin = 0;
  try {
    while (begin < text.size()) {
      std::size_t end = std::min(text.find(',', begin), text.size());
      const std::string item(text.substr(begin, end - begin));
      const std::size_t eq = item.find('=');
      if (item.empty()) {
        begin = end + 1;
        continue;
      }
      if (eq == std::string::npos) bad(item, "expected key=value");
      const std::string key = item.substr(0, eq);
      std::string value = item.substr(eq + 1);
      // A socket map is itself comma-separated: sockets=0,1,0,1.
      while (key == "sockets" && end < text.size()) {
        const std::size_t next = std::min(text.find(',', end + 1), text.size());
        const std::string_view more = text.substr(end + 1, next - end - 1);
        if (more.find('=') != std::string_view::npos) break;
        value += ",";
        value += more;
        end = next;
      }
      const Row* row = find_row(key);
      set(collective, key, row ? from_text(*row, key, value) : OptionValue(value));
      begin = end + 1;
    }
  } catch (const ArgumentError& e) {
    throw ArgumentError(std::string(source) + ": " + e.what());
  }
}

void CallOptions::complete() {
  resolve_tree(*this, 1, release_gather.bcast_tree);
  resolve_tree(*this, 2, release_gather.reduce_tree);
  check_k(*this);
  release_gather.validate();
}

Options CallOptions::resolved() const {
  Options o = options;
  if (o.timeout <= 0) o.timeout = default_timeout();
  // No release_gather key given: the shared defaults, which release_gather
  // recognises (a loop of calls then reuses its plan, release_gather.h).
  o.release_gather = release_gather_keys.empty() ? nullptr : &release_gather;
  return o;
}

const CallOptions& default_options(Collective collective) {
  struct Slot {
    std::atomic<std::uint64_t> generation{0};
    CallOptions options;
  };
  static Slot slots[kCollectives];
  static std::mutex lock;
  Slot& slot = slots[static_cast<unsigned>(collective)];
  const std::uint64_t now = selection_generation();  // bumped by reload_environment
  if (slot.generation.load(std::memory_order_acquire) != now) {
    std::lock_guard<std::mutex> hold(lock);
    if (slot.generation.load(std::memory_order_relaxed) != now) {
      CallOptions o;
      o.check = environment().check;
      const std::string variable = variable_of(collective);
      o.set_text(collective, env_name(collective), variable.c_str());
      try {
        o.complete();
      } catch (const ArgumentError& e) {
        throw ArgumentError(variable + ": " + e.what());
      }
      slot.options = std::move(o);
      slot.generation.store(now, std::memory_order_release);
    }
  }
  return slot.options;
}

}  // namespace shancoll
