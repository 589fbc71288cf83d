// shancoll_bench: times shancoll's collectives the way the papers do.
//
//   shancoll_bench --coll allgatherv --algorithms shan,mpi,ring
//                  --sizes 1024,65536,1048576 --dist regular|decreasing|bcast
//                  --iters N --warmup W --repeats R [--ranks-per-node K]
//                  [--transport rma|two_sided] [--shared]
//   shancoll_bench --coll intergroup --setting 1..8 --algorithms segmented,root_gather,mpi
//                  --sizes ... [--first-group N]
//
// Method: W warm-up calls, then R repeats of N calls with a barrier before
// every call; a call's time is the slowest rank's (MPI_Reduce MAX of every
// call's time, after the repeat), a repeat's time the mean over its N calls;
// reported are the median, min and max over the repeats, in microseconds.
//
// Distributions (c = --sizes value, bytes per rank): regular m_i = c;
// linearly decreasing m_i = 2c(P-1-i)/(P-1) (c when P = 1); broadcast
// m_0 = P c, the others 0. --shared leaves shan's result in the node segment
// (recv == nullptr); the other algorithms ignore it.
//
// Output on rank 0: CSV with the header below; "transport" is "-" for the
// algorithms without one. For the largest size a row with collective
// "memcpy" times one memcpy of a rank's whole result (the floor of any
// allgatherv on one node), and stderr gets its bandwidth.
//
// --coll intergroup: MPI_COMM_WORLD split into a first group of N ranks and
// the rest, joined by an inter-communicator; the settings of Kang, Traeff et
// al. (Section 5; A the larger group of p, B the smaller of q, c = --sizes
// value, the largest block in bytes): 1 p = q, allgather, k_A = k_B = c;
// 2 p/q ~ 25/7 (default N = round(25 P / 32)), the same; 3 as 2 with
// k_B = c/4; 4 as 2 with k_A = c/4 (the ratios that give the paper's Eq. 5
// values 4.84, 4.21, 6.68); 5-8 allgatherv: 5 p = q, k = c; 6 p = q, rank i
// of each group sends c i / (n - 1); 7 as 2 with allgatherv; 8 as 7 with the
// arithmetic sizes of 6. The distribution column reads "setting<s>_p<p>_q<q>".
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "shancoll/coll/intergroup/intergroup.h"
#include "shancoll/comm.h"
#include "shancoll/error.h"
#include "shancoll/progress.h"
#include "shancoll/select.h"

using namespace shancoll;

namespace {

struct Config {
  std::string coll = "allgatherv";
  std::vector<std::string> algorithms = {"shan", "mpi"};
  std::vector<std::int64_t> sizes = {1024, 65536, 1048576};
  std::string dist = "regular";
  int iters = 100;
  int warmup = 10;
  int repeats = 5;
  Options options;
  bool shared = false;
  int setting = 1;       // intergroup
  int first_group = -1;  // intergroup: ranks of the first group (-1: from the setting)
};

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::int64_t parse_int(const std::string& text, const char* what) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0) {
    throw ArgumentError(std::string(what) + ": not a non-negative integer: '" + text + "'");
  }
  return v;
}

const char* kUsage =
    "usage: shancoll_bench --coll allgatherv --algorithms shan,mpi,ring --sizes 1024,65536 "
    "--dist regular|decreasing|bcast --iters N --warmup W --repeats R [--ranks-per-node K] "
    "[--transport rma|two_sided] [--shared] | --coll intergroup --setting 1..8 "
    "[--first-group N]";

Config parse(int argc, char** argv) {
  Config c;
  c.options.ranks_per_node = -1;
  c.options.timeout = default_timeout();  // SHANCOLL_TIMEOUT or 120 s per wait
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw ArgumentError(arg + ": missing value");
      return argv[++i];
    };
    if (arg == "--coll") {
      c.coll = value();
    } else if (arg == "--algorithms") {
      c.algorithms = split(value());
    } else if (arg == "--sizes") {
      c.sizes.clear();
      for (const auto& s : split(value())) c.sizes.push_back(parse_int(s, "--sizes"));
    } else if (arg == "--dist") {
      c.dist = value();
    } else if (arg == "--iters") {
      c.iters = static_cast<int>(parse_int(value(), "--iters"));
    } else if (arg == "--warmup") {
      c.warmup = static_cast<int>(parse_int(value(), "--warmup"));
    } else if (arg == "--repeats") {
      c.repeats = static_cast<int>(parse_int(value(), "--repeats"));
    } else if (arg == "--ranks-per-node") {
      c.options.ranks_per_node = static_cast<int>(parse_int(value(), "--ranks-per-node"));
    } else if (arg == "--transport") {
      c.options.transport = parse_transport(value());
    } else if (arg == "--setting") {
      c.setting = static_cast<int>(parse_int(value(), "--setting"));
    } else if (arg == "--first-group") {
      c.first_group = static_cast<int>(parse_int(value(), "--first-group"));
    } else if (arg == "--shared") {
      c.shared = true;
    } else if (arg == "--help" || arg == "-h") {
      throw ArgumentError(kUsage);
    } else {
      throw ArgumentError("unknown option '" + arg + "'\n" + kUsage);
    }
  }
  if (c.coll != "allgatherv" && c.coll != "intergroup") {
    throw ArgumentError("--coll: '" + c.coll + "' (valid: allgatherv, intergroup)");
  }
  if (c.setting < 1 || c.setting > 8) throw ArgumentError("--setting: 1 to 8");
  if (c.dist != "regular" && c.dist != "decreasing" && c.dist != "bcast") {
    throw ArgumentError("--dist: '" + c.dist + "' (valid: regular, decreasing, bcast)");
  }
  if (c.iters < 1 || c.repeats < 1) throw ArgumentError("--iters and --repeats must be >= 1");
  return c;
}

std::vector<std::int64_t> make_counts(const std::string& dist, int p, std::int64_t c) {
  std::vector<std::int64_t> counts(p, c);
  for (int i = 0; i < p; ++i) {
    if (dist == "decreasing" && p > 1) counts[i] = 2 * c * (p - 1 - i) / (p - 1);
    if (dist == "bcast") counts[i] = i == 0 ? p * c : 0;
  }
  return counts;
}

struct Summary {
  double median, min, max;  // microseconds per call
};

// Times `call` as described at the top; the result is meaningful on rank 0.
template <class Call>
Summary time_calls(const Config& cfg, MPI_Comm comm, Call&& call) {
  for (int i = 0; i < cfg.warmup; ++i) call();
  std::vector<double> per_call(cfg.iters), slowest(cfg.iters), repeats;
  for (int rep = 0; rep < cfg.repeats; ++rep) {
    for (int i = 0; i < cfg.iters; ++i) {
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      call();
      per_call[i] = MPI_Wtime() - t0;
    }
    MPI_Reduce(per_call.data(), slowest.data(), cfg.iters, MPI_DOUBLE, MPI_MAX, 0, comm);
    double sum = 0;
    for (double t : slowest) sum += t;
    repeats.push_back(1e6 * sum / cfg.iters);
  }
  std::sort(repeats.begin(), repeats.end());
  const std::size_t n = repeats.size();
  const double median = n % 2 ? repeats[n / 2] : (repeats[n / 2 - 1] + repeats[n / 2]) / 2;
  return {median, repeats.front(), repeats.back()};
}

void print_row(const char* coll, const std::string& algorithm, const char* transport,
               const std::string& dist, int p, int rpn, std::int64_t size, const Summary& s) {
  std::printf("%s,%s,%s,%s,%d,%d,%lld,%.3f,%.3f,%.3f\n", coll, algorithm.c_str(), transport,
              dist.c_str(), p, rpn, static_cast<long long>(size), s.median, s.min, s.max);
  std::fflush(stdout);
}

void bench_allgatherv(const Config& cfg, MPI_Comm user) {
  Comm& comm = Comm::of(user);
  const int p = comm.size(), r = comm.rank();
  const int rpn = comm.nodes(cfg.options.ranks_per_node).topo.max_local_size();
  if (r == 0) {
    std::printf(
        "collective,algorithm,transport,distribution,ranks,ranks_per_node,bytes_per_rank,"
        "median_us,min_us,max_us\n");
  }
  for (std::int64_t size : cfg.sizes) {
    AllgathervArgs args;
    args.counts = make_counts(cfg.dist, p, size);
    args.displs.assign(p, 0);
    for (int i = 1; i < p; ++i) args.displs[i] = args.displs[i - 1] + args.counts[i - 1];
    std::vector<std::byte> send(args.counts[r], std::byte{1}), recv(args.total() + 1);
    for (const std::string& name : cfg.algorithms) {
      const AllgathervAlgorithm& algo =
          find_allgatherv(name, args, comm, cfg.options.ranks_per_node);
      const bool shan = std::string(algo.name) == "shan";
      args.send = send.data();
      args.recv = shan && cfg.shared ? nullptr : recv.data();
      Stats stats;
      const Summary s =
          time_calls(cfg, comm.mpi(), [&] { algo.fn(comm, args, cfg.options, stats); });
      if (r == 0) {
        print_row("allgatherv", algo.name, shan ? transport_name(cfg.options.transport) : "-",
                  cfg.dist, p, rpn, size, s);
      }
    }
  }
  // The floor: one memcpy of a whole result per rank, all ranks at once.
  const std::int64_t largest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
  const std::vector<std::int64_t> counts = make_counts(cfg.dist, p, largest);
  std::int64_t total = 0;
  for (std::int64_t c : counts) total += c;
  std::vector<std::byte> from(total, std::byte{1}), to(total);
  const Summary s = time_calls(cfg, comm.mpi(), [&] {
    if (total > 0) std::memcpy(to.data(), from.data(), static_cast<std::size_t>(total));
  });
  if (r == 0) {
    print_row("memcpy", "memcpy", "-", cfg.dist, p, rpn, largest, s);
    std::fprintf(stderr, "memcpy: %lld bytes in %.3f us (median, slowest of %d ranks): %.2f GB/s\n",
                 static_cast<long long>(total), s.median, p,
                 s.median > 0 ? total / (s.median * 1e3) : 0.0);
  }
}

// Block bytes of rank i of a group of n ranks (A: the larger) in a setting.
std::int64_t setting_block(int setting, bool in_a, int i, int n, std::int64_t c) {
  if (setting == 3 && !in_a) return c / 4;
  if (setting == 4 && in_a) return c / 4;
  if (setting == 6 || setting == 8) return n > 1 ? c * i / (n - 1) : c;
  return c;
}

void bench_intergroup(const Config& cfg) {
  int size = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const bool equal = cfg.setting == 1 || cfg.setting == 5 || cfg.setting == 6;
  const int first = cfg.first_group >= 0 ? cfg.first_group
                                         : std::max(1, equal ? size / 2 : (25 * size + 16) / 32);
  if (size < 2 || first < 1 || first >= size) {
    throw ArgumentError("--first-group: both groups need a rank (" + std::to_string(size) +
                        " ranks, first group " + std::to_string(first) + ")");
  }
  const int color = rank < first ? 0 : 1;
  MPI_Comm local, inter;
  MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? first : 0, 7, &inter);
  InterComm& ic = InterComm::of(inter);
  const int n_remote = ic.remote_size();
  const bool remote_in_a = !ic.in_a();
  const std::string dist = "setting" + std::to_string(cfg.setting) + "_p" + std::to_string(ic.p()) +
                           "_q" + std::to_string(ic.q());
  if (rank == 0) {
    std::printf(
        "collective,algorithm,transport,distribution,ranks,ranks_per_node,bytes_per_rank,"
        "median_us,min_us,max_us\n");
  }
  for (std::int64_t c : cfg.sizes) {
    InterAllgathervArgs args;
    args.regular = cfg.setting <= 4;
    args.send_bytes = setting_block(cfg.setting, ic.in_a(), ic.rank(), ic.size(), c);
    for (int i = 0; i < n_remote; ++i) {
      args.displs.push_back(args.remote_total());
      args.counts.push_back(setting_block(cfg.setting, remote_in_a, i, n_remote, c));
    }
    std::vector<std::byte> send(args.send_bytes, std::byte{1}), recv(args.remote_total() + 1);
    args.send = send.data();
    args.recv = recv.data();
    for (const std::string& name : cfg.algorithms) {
      const IntergroupAlgorithm& algo = find_intergroup(name);
      Stats stats;
      const Summary s =
          time_calls(cfg, MPI_COMM_WORLD, [&] { algo.fn(ic, args, cfg.options, stats); });
      if (rank == 0) {
        print_row(args.regular ? "intergroup_allgather" : "intergroup_allgatherv", algo.name, "-",
                  dist, size, 0, c, s);
      }
    }
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    const Config cfg = parse(argc, argv);
    if (cfg.sizes.empty()) throw ArgumentError("--sizes: no size given");
    if (cfg.coll == "intergroup") {
      bench_intergroup(cfg);
    } else {
      bench_allgatherv(cfg, MPI_COMM_WORLD);
    }
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "shancoll_bench: %s\n", e.what());
    rc = 2;
  }
  MPI_Finalize();
  return rc;
}
