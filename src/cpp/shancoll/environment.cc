#include "shancoll/environment.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <vector>

#include "shancoll/on_error.h"

namespace shancoll {
namespace {

std::string text_of(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

Environment read_environment() {
  Environment e;
  e.ranks_per_node = std::max(0, std::atoi(text_of("SHANCOLL_RANKS_PER_NODE").c_str()));
  const double timeout = std::atof(text_of("SHANCOLL_TIMEOUT").c_str());
  if (timeout > 0) e.timeout = timeout;
  e.rules = text_of("SHANCOLL_RULES");
  e.kernels = text_of("SHANCOLL_KERNELS");
  e.on_error = text_of("SHANCOLL_ON_ERROR");
  const std::string check = text_of("SHANCOLL_CHECK");
  e.check = !check.empty() && check != "0" && check != "false" && check != "no";
  e.allgather = text_of("SHANCOLL_ALLGATHER_ALGORITHM");
  e.allgatherv = text_of("SHANCOLL_ALLGATHERV_ALGORITHM");
  e.iallreduce = text_of("SHANCOLL_IALLREDUCE_ALGORITHM");
  e.allreduce = text_of("SHANCOLL_ALLREDUCE_ALGORITHM");
  e.bcast = text_of("SHANCOLL_BCAST_ALGORITHM");
  e.barrier = text_of("SHANCOLL_BARRIER_ALGORITHM");
  e.reduce = text_of("SHANCOLL_REDUCE_ALGORITHM");
  e.intergroup = text_of("SHANCOLL_INTERGROUP_ALGORITHM");
  return e;
}

Environment& current() {
  static Environment e = read_environment();
  return e;
}

std::atomic<std::uint64_t> generation{1};

struct Cached {
  const char* name;
  std::string value;
};

std::vector<Cached>& cached_values() {
  static std::vector<Cached> values;
  return values;
}

}  // namespace

const Environment& environment() { return current(); }

const std::string& algorithm_name(const std::string& requested,
                                  const std::string& from_environment) {
  static const std::string automatic = "auto";
  if (!requested.empty()) return requested;
  return from_environment.empty() ? automatic : from_environment;
}

void reload_environment() {
  current() = read_environment();
  cached_values().clear();
  bump_selection_generation();
  check_on_error();
}

const char* environment_value(const char* name) {
  std::vector<Cached>& values = cached_values();
  for (const Cached& c : values)
    if (c.name == name) return c.value.c_str();
  values.push_back({name, text_of(name)});
  return values.back().value.c_str();
}

std::uint64_t selection_generation() { return generation.load(std::memory_order_relaxed); }

void bump_selection_generation() { generation.fetch_add(1, std::memory_order_relaxed); }

}  // namespace shancoll
