#include "capi_options.h"

#include <cstdlib>
#include <string>

#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/pattern/socket_tree.h"
#include "shancoll/progress.h"
#include "shancoll/topology.h"

namespace shancoll::capi {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& why) {
  throw ArgumentError("options: " + key + ": " + why);
}

std::int64_t to_int(const std::string& key, const std::string& value, std::int64_t lowest) {
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end) bad(key, "not an integer: '" + value + "'");
  if (v < lowest) bad(key, "must be >= " + std::to_string(lowest) + ", got " + value);
  return v;
}

double to_seconds(const std::string& key, const std::string& value) {
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end || !(v >= 0)) bad(key, "not a number of seconds >= 0: '" + value + "'");
  return v;
}

bool to_bool(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true" || value == "yes") return true;
  if (value == "0" || value == "false" || value == "no") return false;
  bad(key, "not a boolean (1/0, true/false, yes/no): '" + value + "'");
}

bool set_common(CallOptions& c, const std::string& key, const std::string& value) {
  if (key == "timeout") {
    c.options.timeout = to_seconds(key, value);
  } else if (key == "ranks_per_node") {
    c.options.ranks_per_node = static_cast<int>(to_int(key, value, 0));
  } else {
    return false;
  }
  return true;
}

bool set_allgather(CallOptions& c, const std::string& key, const std::string& value) {
  if (key == "block_size") {
    c.options.block_size = to_int(key, value, 0);
  } else if (key == "transport") {
    c.options.transport = parse_transport(value);
  } else {
    return false;
  }
  return true;
}

bool set_allreduce(CallOptions& c, const std::string& key, const std::string& value) {
  if (key == "ports") {
    c.ports = static_cast<int>(to_int(key, value, 0));
  } else if (key == "consistent") {
    c.consistent = to_bool(key, value);
  } else {
    return false;
  }
  return true;
}

pattern::TreeKind tree_kind(const std::string& value) {
  if (value == "flat") return pattern::TreeKind::flat;
  if (value == "kary") return pattern::TreeKind::kary;
  if (value == "knomial") return pattern::TreeKind::knomial;
  bad("tree", "unknown tree '" + value + "' (valid: auto, flat, kary, knomial)");
}

int skew(const std::string& value) {
  if (value == "auto") return -1;
  if (value == "left") return 0;
  if (value == "right") return 1;
  bad("skew", "unknown skew '" + value + "' (valid: auto, left, right)");
}

pattern::TreeTopology topology(const std::string& key, const std::string& value) {
  using pattern::TreeTopology;
  for (TreeTopology t :
       {TreeTopology::none, TreeTopology::socket_leader_first, TreeTopology::socket_leader_last})
    if (value == pattern::tree_topology_name(t)) return t;
  bad(key, "unknown topology '" + value +
               "' (valid: auto, none, socket_leader_first, socket_leader_last)");
}

// One phase's tree option (`axis`: tree, k, skew or topology); false for other axes.
bool set_tree(RgTreeOptions& t, const std::string& axis, const std::string& key,
              const std::string& value) {
  if (axis == "tree") {
    t.tree_auto = value == "auto";
    if (!t.tree_auto) t.shape.kind = tree_kind(value);
  } else if (axis == "k") {
    t.shape.k = static_cast<int>(to_int(key, value, 1));
  } else if (axis == "skew") {
    t.skew = skew(value);
  } else if (axis == "topology") {
    t.topology = value == "auto" ? -1 : static_cast<int>(topology(key, value));
  } else {
    return false;
  }
  return true;
}

// release_gather's options (bcast, reduce, and allreduce's release_gather):
// tree, k, skew and topology set both phases' trees, their bcast_ and
// reduce_ forms one phase's (given later, they win).
bool set_release_gather(ReleaseGatherOptions& o, const std::string& key, const std::string& value) {
  for (const char* phase : {"bcast_", "reduce_"}) {
    const std::string prefix = phase;
    if (key.rfind(prefix, 0) == 0)
      return set_tree(phase[0] == 'b' ? o.bcast_tree : o.reduce_tree, key.substr(prefix.size()),
                      key, value);
  }
  if (set_tree(o.bcast_tree, key, key, value)) return set_tree(o.reduce_tree, key, key, value);
  if (key == "sockets") {
    o.sockets = parse_socket_spec(value, "sockets");
  } else if (key == "buffer_size") {
    o.buffer_size = to_int(key, value, 1);
  } else if (key == "buffers") {
    o.buffers = static_cast<int>(to_int(key, value, 1));
  } else if (key == "inline") {
    o.inline_data = to_bool(key, value);
  } else if (key == "read_from_parent") {
    o.read_from_parent = to_bool(key, value);
  } else if (key == "data_copy") {
    o.data_copy = to_bool(key, value);
  } else if (key == "single_copy") {
    o.single_copy = to_bool(key, value) ? 1 : 0;
  } else if (key == "inter_algorithm") {
    o.inter_algorithm = value;
  } else {
    return false;
  }
  return true;
}

bool set(CallOptions& c, Family family, const std::string& key, const std::string& value) {
  if (set_common(c, key, value)) return true;
  switch (family) {
    case Family::allgather:
      return set_allgather(c, key, value);
    case Family::allreduce:
      return set_allreduce(c, key, value) || set_release_gather(c.release_gather, key, value);
    case Family::rooted:
      return set_release_gather(c.release_gather, key, value);
  }
  return false;
}

const char* valid_keys(Family family) {
  switch (family) {
    case Family::allgather:
      return "timeout, ranks_per_node, block_size, transport";
    case Family::allreduce:
      return "timeout, ranks_per_node, ports, consistent, and release_gather's tree, k, skew, "
             "topology (and their bcast_/reduce_ forms), sockets, buffer_size, buffers, inline, "
             "read_from_parent, data_copy, single_copy, inter_algorithm";
    case Family::rooted:
      break;
  }
  return "timeout, ranks_per_node, tree, k, skew, topology (and their bcast_/reduce_ forms), "
         "sockets, buffer_size, buffers, inline, read_from_parent, data_copy, single_copy, "
         "inter_algorithm";
}

// Sets one "key=value"; returns the key.
std::string parse_item(CallOptions& c, Family family, const std::string& item) {
  const std::size_t eq = item.find('=');
  if (eq == std::string::npos) bad(item, "expected key=value");
  const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
  if (!set(c, family, key, value))
    throw ArgumentError("options: unknown key '" + key + "' (valid: " + valid_keys(family) + ")");
  return key;
}

}  // namespace

Options CallOptions::resolved() const {
  Options o = options;
  if (o.timeout <= 0) o.timeout = default_timeout();
  o.release_gather = &release_gather;
  return o;
}

CallOptions parse_options(const char* text, const char* env_name, Family family) {
  if (!text || !*text) text = environment_value(env_name);
  CallOptions c;
  const std::string all = text ? text : "";
  bool k_given = false;
  std::size_t begin = 0;
  while (begin < all.size()) {
    std::size_t end = all.find(',', begin);
    if (end == std::string::npos) end = all.size();
    if (end > begin) k_given |= parse_item(c, family, all.substr(begin, end - begin)) == "k";
    begin = end + 1;
  }
  const ReleaseGatherOptions& rg = c.release_gather;
  if (rg.bcast_tree.tree_auto && rg.reduce_tree.tree_auto && k_given)
    bad("k", "needs tree=kary or tree=knomial (tree=auto picks K by size)");
  c.release_gather.validate();
  return c;
}

}  // namespace shancoll::capi
