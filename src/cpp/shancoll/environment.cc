#include "shancoll/environment.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <limits>
#include <mutex>

#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/on_error.h"
#include "shancoll/rules.h"
#include "shancoll/shm/ring_stores.h"

namespace shancoll {
namespace {

std::string text_of(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// The collectives whose request algorithm SHANCOLL_I<COLL>_ALGORITHM names
// (iallreduce has its own field: its registry is allreduce's).
constexpr const char* kRequestCollectives[] = {
    "barrier",
    "bcast",
    "reduce",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "allgather",
    "allgatherv",
    "alltoall",
    "alltoallv",
    "reduce_scatter",
    "reduce_scatter_block",
    "scan",
    "exscan",
};

std::string request_variable_of(const std::string& collective) {
  std::string name = "SHANCOLL_I";
  for (char c : collective) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name + "_ALGORITHM";
}

// Half the largest cache of cpu0, or no streaming where sysfs does not say.
std::size_t half_the_largest_cache() {
  const std::size_t bytes = largest_cache_bytes("/sys/devices/system/cpu/cpu0/cache");
  return bytes > 0 ? bytes / 2 : std::numeric_limits<std::size_t>::max();
}

std::size_t stream_copy_threshold() {
  const std::string set = text_of("SHANCOLL_STREAM_COPY");
  if (set.empty()) return half_the_largest_cache();
  const std::size_t bytes = std::strtoull(set.c_str(), nullptr, 10);
  return bytes > 0 ? bytes : std::numeric_limits<std::size_t>::max();
}

Environment read_environment() {
  Environment e;
  e.stream_copy_from = stream_copy_threshold();
  stream_copy_from = e.stream_copy_from;
  e.ring_stores = text_of("SHANCOLL_RING_STORES");
  // An invalid name leaves auto; check_environment() refuses it at the
  // first call on a communicator.
  if (!parse_ring_stores(e.ring_stores, &ring_stores_way))
    ring_stores_way = RingStoresWay::automatic;
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
  e.scan = text_of("SHANCOLL_SCAN_ALGORITHM");
  e.exscan = text_of("SHANCOLL_EXSCAN_ALGORITHM");
  e.reduce_scatter = text_of("SHANCOLL_REDUCE_SCATTER_ALGORITHM");
  e.reduce_scatter_block = text_of("SHANCOLL_REDUCE_SCATTER_BLOCK_ALGORITHM");
  e.reduce = text_of("SHANCOLL_REDUCE_ALGORITHM");
  e.intergroup = text_of("SHANCOLL_INTERGROUP_ALGORITHM");
  e.alltoall = text_of("SHANCOLL_ALLTOALL_ALGORITHM");
  e.alltoallv = text_of("SHANCOLL_ALLTOALLV_ALGORITHM");
  e.gather = text_of("SHANCOLL_GATHER_ALGORITHM");
  e.gatherv = text_of("SHANCOLL_GATHERV_ALGORITHM");
  e.scatter = text_of("SHANCOLL_SCATTER_ALGORITHM");
  e.scatterv = text_of("SHANCOLL_SCATTERV_ALGORITHM");
  for (const char* c : kRequestCollectives) {
    std::string value = text_of(request_variable_of(c).c_str());
    if (!value.empty()) e.requests.emplace(c, std::move(value));
  }
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

// The other variables read so far. A deque: a value's string never moves
// (the callers keep its c_str()) when another is added. Guarded: threads
// setting up different communicators read variables at once.
std::mutex cached_mutex;
std::deque<Cached> cached_values;

}  // namespace

const Environment& environment() { return current(); }

std::string request_algorithm_variable(std::string_view collective) {
  return request_variable_of(std::string(collective));
}

bool is_request_collective(std::string_view collective) {
  for (const char* c : kRequestCollectives)
    if (collective == c) return true;
  return false;
}

const std::string& algorithm_name(const std::string& requested,
                                  const std::string& from_environment) {
  static const std::string automatic = "auto";
  if (!requested.empty()) return requested;
  return from_environment.empty() ? automatic : from_environment;
}

void reload_environment() {
  current() = read_environment();
  {
    std::lock_guard<std::mutex> lock(cached_mutex);
    cached_values.clear();
  }
  bump_selection_generation();
  check_environment();
}

void check_environment() {
  check_on_error();
  RingStoresWay way;
  if (!parse_ring_stores(current().ring_stores, &way))
    throw ArgumentError("SHANCOLL_RING_STORES: expected 'auto', 'plain' or 'streamed', got '" +
                        current().ring_stores + "'");
}

// Not per call: read when a communicator or the default options are set up.
const char* environment_value(const char* name) {
  std::lock_guard<std::mutex> lock(cached_mutex);
  for (const Cached& c : cached_values)
    if (c.name == name) return c.value.c_str();
  cached_values.push_back({name, text_of(name)});
  return cached_values.back().value.c_str();
}

std::uint64_t selection_generation() { return generation.load(std::memory_order_relaxed); }

void bump_selection_generation() { generation.fetch_add(1, std::memory_order_relaxed); }

}  // namespace shancoll
