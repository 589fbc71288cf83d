#include "capi_options.h"

#include <cstdlib>
#include <string>

#include "shancoll/error.h"
#include "shancoll/progress.h"

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

// release_gather's options (bcast, reduce, and allreduce's release_gather).
bool set_release_gather(ReleaseGatherOptions& o, const std::string& key, const std::string& value) {
  if (key == "tree") {
    o.tree_auto = value == "auto";
    if (!o.tree_auto) o.tree.kind = tree_kind(value);
  } else if (key == "k") {
    o.tree.k = static_cast<int>(to_int(key, value, 1));
  } else if (key == "skew") {
    o.skew = skew(value);
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
             "buffer_size, buffers, inline, read_from_parent, data_copy, inter_algorithm";
    case Family::rooted:
      break;
  }
  return "timeout, ranks_per_node, tree, k, skew, buffer_size, buffers, inline, "
         "read_from_parent, data_copy, inter_algorithm";
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
  if (!text || !*text) text = std::getenv(env_name);
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
  if (c.release_gather.tree_auto && k_given)
    bad("k", "needs tree=kary or tree=knomial (tree=auto picks K by size)");
  c.release_gather.validate();
  return c;
}

}  // namespace shancoll::capi
