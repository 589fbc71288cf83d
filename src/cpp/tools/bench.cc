// shancoll_bench: times shancoll's collectives the way the papers do.
//
//   shancoll_bench --coll allgatherv --algorithms shan,mpi,ring
//                  --sizes 1024,65536,1048576 --dist regular|decreasing|bcast
//                  --iters N --warmup W --repeats R [--ranks-per-node K]
//                  [--transport rma|two_sided] [--shared] [--block-size B]
//   shancoll_bench --coll intergroup --setting 1..8 --algorithms segmented,root_gather,mpi
//                  --sizes ... [--first-group N]
//   shancoll_bench --coll allreduce --algorithms shan,nway_dissemination,mpi
//                  --sizes 1,255 (elements) --dtype int|double --op sum|max
//   shancoll_bench --coll barrier --algorithms release_gather,mpi [--native]
//   shancoll_bench --coll scan|exscan --algorithms shan,recursive_doubling,mpi
//                  --sizes 1,255 (elements) --dtype int|double --op sum|max [--native]
//   shancoll_bench --coll reduce_scatter_block --algorithms shan,ring,pairwise,mpi
//                  --sizes 1,255 (elements per block) --dtype int|double --op sum|max [--native]
//   shancoll_bench --coll alltoall --algorithms shan,pairwise,bruck,mpi
//                  --sizes 8,1024 (bytes per block) [--native] [--check]
//   shancoll_bench --coll gather|scatter --algorithms shan,binomial,mpi
//                  --sizes 65536 (bytes per rank, root 0) [--native] [--check]
//   add --check to any allgatherv/allreduce run: every algorithm once on real
//   data, compared byte for byte with MPI's own collective ("check" rows);
//   --native times the MPI collective alone, without shancoll's setup.
//
// Every call goes through the core's door (shancoll/coll/<coll>/<coll>.h),
// as the Python module, the C API and the PMPI library call it; --options
// key=value,... sets any option of the collective (call_options.h). Why a
// timing loop of its own beside the Python kernel (shancoll.bench.kernel):
// under SimGrid SMPI there is no Python, and this driver is what runs there.
//
// Method: W warm-up calls, then R repeats of N calls; a repeat's time is the
// mean over its N calls; reported are the median, min and max over the
// repeats, in microseconds. A call's time (--timing):
//   barrier (default): a barrier before every call, the slowest rank's own
//     time (MPI_Reduce MAX after the repeat). Includes the barrier's exit
//     skew: a rank released late reads a shorter time, one released early
//     also times its wait for the late ones.
//   global (SMPI builds only, where MPI_Wtime is one simulated clock for all
//     ranks): before every call the ranks agree on a start time (MPI_Allreduce
//     MAX of their clocks + 1 ms) and each sleeps until it, so all enter at
//     the same instant; a call's time is the last rank's exit minus that
//     common entry (max exit - max entry). No barrier skew. A rank that got
//     there late (never seen) is reported on stderr.
// --intra-overhead-us X (SMPI builds only): every MPI message between two
// ranks on the same simulated host costs X us of software overhead on the
// sender (MPI_Send and MPI_Isend) and X us on the receiver (SMPI's smpi/os,
// smpi/ois, smpi/or for intra-node messages only; inter-node messages keep
// the platform's cost). A sensitivity knob, off by default.
//
// Distributions (c = --sizes value, bytes per rank): regular m_i = c;
// linearly decreasing m_i = 2c(P-1-i)/(P-1) (c when P = 1); broadcast
// m_0 = P c, the others 0. --shared leaves shan's result in the node segment
// (recv == nullptr); the other algorithms ignore it. --block-size B sets
// shan's block size (Options::block_size; 0, the default, lets shan choose).
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
//
// --coll barrier: no sizes (one row, 0 bytes). Timed back to back, as OSU's
// osu_barrier: W warm-up calls, then R repeats of N consecutive calls, a
// repeat's time the slowest rank's own time / N (a barrier before each call
// would time the barrier's exit skew only). --iters 0 is allowed (instruction
// counts: N calls against none).
//
// --coll alltoall: --sizes are the bytes of one block (every rank sends one
// to every rank); bytes_per_rank is that block; the distribution column
// reads "regular".
// --coll gather, scatter: one block of --sizes bytes per rank to (from)
// root 0, timed as allgatherv; the distribution column reads "regular".
//
// --coll allreduce: --sizes are element counts; bytes_per_rank is count x
// element size; the distribution column reads "<dtype>_<op>".
//
// Built with smpicxx (benchmarks/smpi, SHANCOLL_SMPI) the driver installs the
// sleeping pause hook (simulated time must advance while a rank waits) and,
// except with --check, takes its buffers from SMPI_SHARED_MALLOC: one
// physical copy shared by all simulated ranks, contents garbage, which is
// what lets 1024 ranks of 1 MiB results fit in memory. Times are simulated.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "shancoll/call_options.h"
#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/barrier/barrier.h"
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/intergroup/intergroup.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/coll/scan/scan.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/comm.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/ops.h"
#include "shancoll/progress.h"

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
  std::string option_text;  // key=value,... (--options and the flags that set one key)
  CallOptions options;      // from option_text, completed
  bool shared = false;
  int setting = 1;                 // intergroup
  int first_group = -1;            // intergroup: ranks of the first group (-1: from the setting)
  std::string dtype = "int";       // allreduce
  std::string op = "sum";          // allreduce
  bool check = false;              // compare with MPI's own collective instead of timing
  bool native = false;             // the MPI collective alone, no shancoll setup (bench_native)
  std::string timing = "barrier";  // barrier | global (see the top of this file)
  double intra_overhead_us = 0;    // SMPI: software overhead per intra-node message side
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

void option_text_append(std::string& text, const std::string& more) {
  text += (text.empty() ? "" : ",") + more;
}

const char* kUsage =
    "usage: shancoll_bench --coll allgatherv --algorithms shan,mpi,ring --sizes 1024,65536 "
    "--dist regular|decreasing|bcast --iters N --warmup W --repeats R [--ranks-per-node K] "
    "[--transport rma|two_sided] [--shared] [--block-size B] [--check] "
    "[--timing barrier|global] [--intra-overhead-us X] [--options key=value,...] | --coll "
    "allreduce --sizes 1,255 "
    "--dtype int|double --op sum|max [--check] | --coll intergroup --setting 1..8 "
    "[--first-group N]";

Config parse(int argc, char** argv) {
  Config c;
  const auto option = [&](const char* key, const std::string& value) {
    c.option_text += std::string(c.option_text.empty() ? "" : ",") + key + "=" + value;
  };
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
      option("ranks_per_node", value());
    } else if (arg == "--block-size") {
      option("block_size", value());
    } else if (arg == "--transport") {
      option("transport", value());
    } else if (arg == "--options") {
      option_text_append(c.option_text, value());
    } else if (arg == "--setting") {
      c.setting = static_cast<int>(parse_int(value(), "--setting"));
    } else if (arg == "--first-group") {
      c.first_group = static_cast<int>(parse_int(value(), "--first-group"));
    } else if (arg == "--shared") {
      c.shared = true;
    } else if (arg == "--dtype") {
      c.dtype = value();
    } else if (arg == "--op") {
      c.op = value();
    } else if (arg == "--check") {
      c.check = true;
    } else if (arg == "--native") {
      c.native = true;
    } else if (arg == "--timing") {
      c.timing = value();
    } else if (arg == "--intra-overhead-us") {
      c.intra_overhead_us = std::atof(value().c_str());
    } else if (arg == "--help" || arg == "-h") {
      throw ArgumentError(kUsage);
    } else {
      throw ArgumentError("unknown option '" + arg + "'\n" + kUsage);
    }
  }
  const bool scans = c.coll == "scan" || c.coll == "exscan";
  const bool reduce_scatters = c.coll == "reduce_scatter_block";
  if (c.coll != "allgatherv" && c.coll != "intergroup" && c.coll != "allreduce" &&
      c.coll != "barrier" && c.coll != "alltoall" && c.coll != "gather" && c.coll != "scatter" &&
      !scans && !reduce_scatters) {
    throw ArgumentError("--coll: '" + c.coll +
                        "' (valid: allgatherv, allreduce, intergroup, barrier, scan, exscan, "
                        "reduce_scatter_block, alltoall, gather, scatter)");
  }
  if (c.dtype != "int" && c.dtype != "double") throw ArgumentError("--dtype: int or double");
  if (c.op != "sum" && c.op != "max") throw ArgumentError("--op: sum or max");
  if (c.setting < 1 || c.setting > 8) throw ArgumentError("--setting: 1 to 8");
  if (c.dist != "regular" && c.dist != "decreasing" && c.dist != "bcast") {
    throw ArgumentError("--dist: '" + c.dist + "' (valid: regular, decreasing, bcast)");
  }
  if (c.iters < (c.coll == "barrier" ? 0 : 1) || c.repeats < 1)
    throw ArgumentError("--iters and --repeats must be >= 1 (barrier: --iters >= 0)");
  if (c.timing != "barrier" && c.timing != "global") {
    throw ArgumentError("--timing: '" + c.timing + "' (valid: barrier, global)");
  }
#ifndef SHANCOLL_SMPI
  if (c.timing == "global") {
    throw ArgumentError("--timing global needs one clock for all ranks: SMPI builds only");
  }
  if (c.intra_overhead_us != 0) throw ArgumentError("--intra-overhead-us: SMPI builds only");
#endif
  if (c.intra_overhead_us < 0) throw ArgumentError("--intra-overhead-us: not negative");
  const Collective which = c.coll == "allreduce"              ? Collective::allreduce
                           : c.coll == "intergroup"           ? Collective::intergroup
                           : c.coll == "barrier"              ? Collective::barrier
                           : c.coll == "scan"                 ? Collective::scan
                           : c.coll == "exscan"               ? Collective::exscan
                           : c.coll == "reduce_scatter_block" ? Collective::reduce_scatter_block
                           : c.coll == "alltoall"             ? Collective::alltoall
                           : c.coll == "gather"               ? Collective::gather
                           : c.coll == "scatter"              ? Collective::scatter
                                                              : Collective::allgatherv;
  c.options = default_options(which);
  c.options.set_text(which, c.option_text, "options");
  c.options.complete();
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

// A benchmark buffer: real memory, or under SMPI (timing runs) one shared
// physical copy for all simulated ranks (see the top of this file).
class Buffer {
 public:
  Buffer(std::size_t bytes, bool real) : bytes_(bytes) {
#ifdef SHANCOLL_SMPI
    if (!real) {
      data_ = static_cast<std::byte*>(SMPI_SHARED_MALLOC(bytes + 1));
      return;
    }
#endif
    (void)real;
    own_.assign(bytes + 1, std::byte{1});
    data_ = own_.data();
  }
  ~Buffer() {
#ifdef SHANCOLL_SMPI
    if (own_.empty()) SMPI_SHARED_FREE(data_);
#endif
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  std::byte* data() { return data_; }
  std::size_t size() const { return bytes_; }

 private:
  std::size_t bytes_;
  std::vector<std::byte> own_;
  std::byte* data_ = nullptr;
};

// Rank 0 prints one "check" row per algorithm: ok when every rank's result
// equals MPI's own collective's byte for byte.
void report_check(MPI_Comm comm, const char* coll, const std::string& algorithm,
                  const std::string& dist, int p, int rpn, std::int64_t size, bool mine_ok) {
  int ok = mine_ok ? 1 : 0, all = 0;
  MPI_Reduce(&ok, &all, 1, MPI_INT, MPI_MIN, 0, comm);
  int r = 0;
  MPI_Comm_rank(comm, &r);
  if (r == 0) {
    std::printf("check,%s,%s,%s,%d,%d,%lld,%s\n", coll, algorithm.c_str(), dist.c_str(), p, rpn,
                static_cast<long long>(size), all ? "ok" : "FAIL");
    std::fflush(stdout);
  }
}

struct Summary {
  double median, min, max;  // microseconds per call
};

// --timing global: every rank returns at the same simulated instant, the
// latest clock of all ranks plus a margin that covers the allreduce's own
// exit skew (simulated time only: the sleep costs no wall time).
double start_together(MPI_Comm comm) {
  const double now = MPI_Wtime();
  double latest = 0;
  MPI_Allreduce(&now, &latest, 1, MPI_DOUBLE, MPI_MAX, comm);
  const double start = latest + 1e-3;
  const double wait = start - MPI_Wtime();
  if (wait > 0) {
    const long long ns = static_cast<long long>(wait * 1e9) + 1;  // never wake early
    timespec t{static_cast<time_t>(ns / 1000000000LL), static_cast<long>(ns % 1000000000LL)};
    nanosleep(&t, nullptr);  // simulated sleep under SMPI (smpi_helpers.h)
  }
  return MPI_Wtime();
}

// Times `call` as described at the top; the result is meaningful on rank 0.
template <class Call>
Summary time_calls(const Config& cfg, MPI_Comm comm, Call&& call) {
  for (int i = 0; i < cfg.warmup; ++i) call();
  const bool global = cfg.timing == "global";
  // Per call [entry, exit] (global) or [0, own time] (barrier); MAX over the
  // ranks gives [max entry, max exit] or [0, slowest rank's own time].
  std::vector<double> mine(2 * cfg.iters), most(2 * cfg.iters), least(2 * cfg.iters), repeats;
  int late = 0;
  for (int rep = 0; rep < cfg.repeats; ++rep) {
    for (int i = 0; i < cfg.iters; ++i) {
      double t0 = 0;
      if (global) {
        t0 = start_together(comm);
      } else {
        MPI_Barrier(comm);
        t0 = MPI_Wtime();
      }
      call();
      const double t1 = MPI_Wtime();
      mine[2 * i] = global ? t0 : 0.0;
      mine[2 * i + 1] = global ? t1 : t1 - t0;
    }
    MPI_Reduce(mine.data(), most.data(), 2 * cfg.iters, MPI_DOUBLE, MPI_MAX, 0, comm);
    if (global) {
      MPI_Reduce(mine.data(), least.data(), 2 * cfg.iters, MPI_DOUBLE, MPI_MIN, 0, comm);
    }
    double sum = 0;
    for (int i = 0; i < cfg.iters; ++i) {
      sum += most[2 * i + 1] - most[2 * i];
      if (global && most[2 * i] - least[2 * i] > 1e-9) ++late;
    }
    repeats.push_back(1e6 * sum / cfg.iters);
  }
  int r = 0;
  MPI_Comm_rank(comm, &r);
  if (r == 0 && late > 0) {
    std::fprintf(stderr, "shancoll_bench: --timing global: entries differed in %d calls\n", late);
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

const char* kHeader =
    "collective,algorithm,transport,distribution,ranks,ranks_per_node,bytes_per_rank,"
    "median_us,min_us,max_us\n";

// Contribution of rank r: bytes that differ per rank and per position, so a
// block in the wrong place or from the wrong rank shows.
void fill(std::byte* p, std::int64_t n, int r) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>((r * 131 + i * 7) & 255);
}

void bench_allgatherv(const Config& cfg, MPI_Comm user) {
  Comm& comm = Comm::of(user, cfg.options.resolved().timeout);
  const int p = comm.size(), r = comm.rank();
  const int rpn = comm.nodes(cfg.options.options.ranks_per_node).topo.max_local_size();
  if (r == 0 && !cfg.check) std::printf("%s", kHeader);
  for (std::int64_t size : cfg.sizes) {
    AllgathervArgs args;
    args.counts = make_counts(cfg.dist, p, size);
    args.displs.assign(p, 0);
    for (int i = 1; i < p; ++i) args.displs[i] = args.displs[i - 1] + args.counts[i - 1];
    const std::size_t total = static_cast<std::size_t>(args.total());
    Buffer send(static_cast<std::size_t>(args.counts[r]), cfg.check), recv(total, cfg.check);
    std::vector<std::byte> expect;
    if (cfg.check) {
      fill(send.data(), args.counts[r], r);
      std::vector<int> counts(p), displs(p);
      for (int i = 0; i < p; ++i) {
        counts[i] = static_cast<int>(args.counts[i]);
        displs[i] = static_cast<int>(args.displs[i]);
      }
      expect.resize(total + 1);
      MPI_Allgatherv(send.data(), counts[r], MPI_BYTE, expect.data(), counts.data(), displs.data(),
                     MPI_BYTE, comm.mpi());
    }
    for (const std::string& name : cfg.algorithms) {
      // Through the door, as every front end calls it.
      const bool shan = name == "shan";
      AllgathervCall call;
      call.comm = user;
      call.args = args;
      call.args.send = send.data();
      call.args.recv = shan && cfg.shared ? nullptr : recv.data();
      call.algorithm = name;
      call.options = &cfg.options;
      if (cfg.check) {
        std::memset(recv.data(), 0, total);
        const std::byte* got = allgatherv(call).data;
        const bool ok = total == 0 || std::memcmp(got, expect.data(), total) == 0;
        report_check(comm.mpi(), "allgatherv", comm.last_algorithm, cfg.dist, p, rpn, size, ok);
        continue;
      }
      const Summary s = time_calls(cfg, comm.mpi(), [&] { allgatherv(call); });
      if (r == 0) {
        print_row("allgatherv", name, shan ? transport_name(cfg.options.options.transport) : "-",
                  cfg.dist, p, rpn, size, s);
      }
    }
  }
  if (cfg.check) return;
  // The floor: one memcpy of a whole result per rank, all ranks at once.
  const std::int64_t largest = *std::max_element(cfg.sizes.begin(), cfg.sizes.end());
  const std::vector<std::int64_t> counts = make_counts(cfg.dist, p, largest);
  std::int64_t total = 0;
  for (std::int64_t c : counts) total += c;
  Buffer from(static_cast<std::size_t>(total), false), to(static_cast<std::size_t>(total), false);
  const Summary s = time_calls(cfg, comm.mpi(), [&] {
    if (total > 0) local_copy(to.data(), from.data(), static_cast<std::size_t>(total));
  });
  if (r == 0) {
    print_row("memcpy", "memcpy", "-", cfg.dist, p, rpn, largest, s);
    std::fprintf(stderr, "memcpy: %lld bytes in %.3f us (median, slowest of %d ranks): %.2f GB/s\n",
                 static_cast<long long>(total), s.median, p,
                 s.median > 0 ? total / (s.median * 1e3) : 0.0);
  }
}

void bench_allreduce(const Config& cfg, MPI_Comm user) {
  Comm& comm = Comm::of(user, cfg.options.resolved().timeout);
  const int p = comm.size(), r = comm.rank();
  const int rpn = comm.nodes(cfg.options.options.ranks_per_node).topo.max_local_size();
  const DType type = cfg.dtype == "int" ? DType::kInt32 : DType::kFloat64;
  const Reducer reducer(cfg.op == "sum" ? MPI_SUM : MPI_MAX, type);
  const std::string dist = cfg.dtype + "_" + cfg.op;
  if (r == 0 && !cfg.check) std::printf("%s", kHeader);
  for (std::int64_t count : cfg.sizes) {
    AllreduceArgs args;
    args.count = count;
    args.reducer = &reducer;
    const std::size_t bytes = static_cast<std::size_t>(args.bytes());
    Buffer send(bytes, cfg.check), recv(bytes, cfg.check);
    std::vector<std::byte> expect(bytes + 1);
    if (cfg.check) {
      // Small integers in both types: every combine order gives the same sum.
      for (std::int64_t i = 0; i < count; ++i) {
        const int v = (r * 37 + static_cast<int>(i) * 11) % 101;
        if (type == DType::kInt32) {
          reinterpret_cast<std::int32_t*>(send.data())[i] = v;
        } else {
          reinterpret_cast<double*>(send.data())[i] = v;
        }
      }
      MPI_Allreduce(send.data(), expect.data(), static_cast<int>(count), dtype_mpi(type),
                    reducer.op(), comm.mpi());
    }
    for (const std::string& name : cfg.algorithms) {
      // Through the door, as every front end calls it.
      AllreduceCall call;
      call.comm = user;
      call.send = send.data();
      call.recv = recv.data();
      call.count = count;
      call.type = type;
      call.op = reducer.op();
      call.algorithm = name;
      call.options = &cfg.options;
      if (cfg.check) {
        std::memset(recv.data(), 0, bytes);
        allreduce(call);
        const bool ok = bytes == 0 || std::memcmp(recv.data(), expect.data(), bytes) == 0;
        report_check(comm.mpi(), "allreduce", comm.last_algorithm, dist, p, rpn,
                     static_cast<std::int64_t>(bytes), ok);
        continue;
      }
      const Summary s = time_calls(cfg, comm.mpi(), [&] { allreduce(call); });
      if (r == 0) print_row("allreduce", name, "-", dist, p, rpn, bytes, s);
    }
  }
}

// --native: the MPI library's own collective called straight on the user's
// communicator, without building shancoll's Comm (dup, node split, segment,
// windows). Under SMPI that setup costs minutes of wall time at 1024 ranks
// (SMPI's MPI_Comm_split gathers with a linear wait per request), and the
// baselines need none of it. Rows read algorithm "mpi", ranks_per_node 0.
// Barrier, timed back to back (see the top); `call` is one barrier.
template <class Call>
Summary time_back_to_back(const Config& cfg, MPI_Comm comm, Call&& call) {
  for (int i = 0; i < cfg.warmup; ++i) call();
  std::vector<double> repeats;
  for (int rep = 0; rep < cfg.repeats; ++rep) {
    PMPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < cfg.iters; ++i) call();
    const double mine = MPI_Wtime() - t0;
    double most = 0;
    MPI_Reduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    repeats.push_back(cfg.iters ? 1e6 * most / cfg.iters : 0);
  }
  std::sort(repeats.begin(), repeats.end());
  const std::size_t n = repeats.size();
  const double median = n % 2 ? repeats[n / 2] : (repeats[n / 2 - 1] + repeats[n / 2]) / 2;
  return {median, repeats.front(), repeats.back()};
}

void bench_barrier(const Config& cfg, MPI_Comm user) {
  int p = 0, r = 0;
  MPI_Comm_size(user, &p);
  MPI_Comm_rank(user, &r);
  if (r == 0) std::printf("%s", kHeader);
  if (cfg.native) {
    const Summary s = time_back_to_back(cfg, user, [&] { PMPI_Barrier(user); });
    if (r == 0) print_row("barrier", "mpi", "-", "-", p, 0, 0, s);
    return;
  }
  Comm& comm = Comm::of(user, cfg.options.resolved().timeout);
  const int rpn = comm.nodes(cfg.options.options.ranks_per_node).topo.max_local_size();
  for (const std::string& name : cfg.algorithms) {
    BarrierCall call;  // through the door, as every front end calls it
    call.comm = user;
    call.algorithm = name;
    call.options = &cfg.options;
    const Summary s = time_back_to_back(cfg, user, [&] { barrier(call); });
    if (r == 0) print_row("barrier", comm.last_algorithm, "-", "-", p, rpn, 0, s);
  }
}

// Alltoall of `block` bytes per rank pair: --native times MPI_Alltoall alone,
// else every algorithm through the door (--check: once each, against MPI's).
void bench_alltoall(const Config& cfg, MPI_Comm user) {
  int p = 0, r = 0;
  MPI_Comm_size(user, &p);
  MPI_Comm_rank(user, &r);
  if (r == 0 && !cfg.check) std::printf("%s", kHeader);
  Comm* comm = cfg.native ? nullptr : &Comm::of(user, cfg.options.resolved().timeout);
  const int rpn = comm ? comm->nodes(cfg.options.options.ranks_per_node).topo.max_local_size() : 0;
  for (std::int64_t block : cfg.sizes) {
    const std::size_t bytes = static_cast<std::size_t>(block * p);
    Buffer send(bytes, cfg.check), recv(bytes, cfg.check);
    std::vector<std::byte> expect(bytes + 1);
    if (cfg.native) {
      const Summary s = time_calls(cfg, user, [&] {
        MPI_Alltoall(send.data(), static_cast<int>(block), MPI_BYTE, recv.data(),
                     static_cast<int>(block), MPI_BYTE, user);
      });
      if (r == 0) print_row("alltoall", "mpi", "-", "regular", p, 0, block, s);
      continue;
    }
    if (cfg.check) {
      fill(send.data(), static_cast<std::int64_t>(bytes), r);
      MPI_Alltoall(send.data(), static_cast<int>(block), MPI_BYTE, expect.data(),
                   static_cast<int>(block), MPI_BYTE, user);
    }
    AlltoallvCall call;  // through the door, as every front end calls it
    call.comm = user;
    call.alltoall = true;
    call.options = &cfg.options;
    AlltoallvArgs& a = call.args;
    a.send = send.data(), a.recv = recv.data(), a.regular = true;
    a.send_counts.assign(static_cast<std::size_t>(p), block);
    for (int i = 0; i < p; ++i) a.send_displs.push_back(i * block);
    a.recv_counts = a.send_counts, a.recv_displs = a.send_displs;
    for (const std::string& name : cfg.algorithms) {
      call.algorithm = name;
      if (cfg.check) {
        std::memset(recv.data(), 0, bytes);
        alltoallv(call);
        const bool ok = bytes == 0 || std::memcmp(recv.data(), expect.data(), bytes) == 0;
        report_check(user, "alltoall", comm->last_algorithm, "regular", p, rpn, block, ok);
        continue;
      }
      const Summary s = time_calls(cfg, user, [&] { alltoallv(call); });
      if (r == 0) print_row("alltoall", comm->last_algorithm, "-", "regular", p, rpn, block, s);
    }
  }
}

// Gather or scatter of `size` bytes per rank, root 0: each algorithm through
// the door (as every front end calls it), or with --native MPI's own
// MPI_Gather/MPI_Scatter on the user's communicator; --check compares each
// algorithm's result with MPI's once.
void bench_rooted_blocks(const Config& cfg, MPI_Comm user) {
  int p = 0, r = 0;
  MPI_Comm_size(user, &p);
  MPI_Comm_rank(user, &r);
  const bool gather = cfg.coll == "gather";
  if (r == 0 && !cfg.check) std::printf("%s", kHeader);
  Comm* comm = cfg.native ? nullptr : &Comm::of(user, cfg.options.resolved().timeout);
  const int rpn = comm ? comm->nodes(cfg.options.options.ranks_per_node).topo.max_local_size() : 0;
  for (std::int64_t size : cfg.sizes) {
    const auto bytes = static_cast<std::size_t>(size);
    Buffer mine(bytes, cfg.check), all(bytes * static_cast<std::size_t>(p), cfg.check);
    if (cfg.check) {  // every rank's block its own bytes; the root's P blocks likewise
      for (std::size_t i = 0; i < bytes; ++i) mine.data()[i] = std::byte((r * 7 + i) % 251);
      for (std::size_t i = 0; i < all.size(); ++i) all.data()[i] = std::byte((i * 13) % 241);
    }
    const int n = static_cast<int>(size);
    const auto native = [&](void* into, void* own) {
      if (gather)
        MPI_Gather(mine.data(), n, MPI_BYTE, into, n, MPI_BYTE, 0, user);
      else
        MPI_Scatter(all.data(), n, MPI_BYTE, own, n, MPI_BYTE, 0, user);
    };
    if (cfg.native) {
      const Summary s = time_calls(cfg, user, [&] { native(all.data(), mine.data()); });
      if (r == 0) print_row(cfg.coll.c_str(), "mpi", "-", "regular", p, 0, size, s);
      continue;
    }
    std::vector<std::int64_t> counts(static_cast<std::size_t>(p), size), displs;
    for (int i = 0; i < p; ++i) displs.push_back(i * size);
    std::vector<std::byte> expect(bytes * static_cast<std::size_t>(p) + 1);
    if (cfg.check) native(expect.data(), expect.data());
    for (const std::string& name : cfg.algorithms) {
      GathervCall g;
      g.comm = user;
      g.args = {mine.data(), size, all.data(), counts.data(), displs.data(), 0, true};
      g.algorithm = name;
      g.options = &cfg.options;
      ScattervCall sc;
      sc.comm = user;
      sc.args = {all.data(), counts.data(), displs.data(), mine.data(), size, 0, true};
      sc.algorithm = name;
      sc.options = &cfg.options;
      const auto call = [&] { gather ? (void)gatherv(g) : (void)scatterv(sc); };
      if (cfg.check) {
        std::memset(gather ? all.data() : mine.data(), 0, gather ? all.size() : bytes);
        call();
        const bool ok = gather ? r != 0 || std::memcmp(all.data(), expect.data(), all.size()) == 0
                               : std::memcmp(mine.data(), expect.data(), bytes) == 0;
        report_check(comm->mpi(), cfg.coll.c_str(), comm->last_algorithm, "regular", p, rpn, size,
                     ok);
        continue;
      }
      const Summary s = time_calls(cfg, comm->mpi(), call);
      if (r == 0) print_row(cfg.coll.c_str(), name, "-", "regular", p, rpn, size, s);
    }
  }
}

void bench_native(const Config& cfg, MPI_Comm comm) {
  int p = 0, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  if (r == 0) std::printf("%s", kHeader);
  const bool allreduce = cfg.coll == "allreduce";
  const MPI_Datatype type = cfg.dtype == "int" ? MPI_INT : MPI_DOUBLE;
  const int elem = cfg.dtype == "int" ? 4 : 8;
  for (std::int64_t size : cfg.sizes) {
    if (allreduce) {
      const int n = static_cast<int>(size);
      Buffer send(static_cast<std::size_t>(n) * elem, false), recv(send.size(), false);
      const MPI_Op op = cfg.op == "sum" ? MPI_SUM : MPI_MAX;
      const Summary s = time_calls(
          cfg, comm, [&] { MPI_Allreduce(send.data(), recv.data(), n, type, op, comm); });
      if (r == 0) print_row("allreduce", "mpi", "-", cfg.dtype + "_" + cfg.op, p, 0, n * elem, s);
      continue;
    }
    const std::vector<std::int64_t> c = make_counts(cfg.dist, p, size);
    std::vector<int> counts(p), displs(p);
    std::int64_t total = 0;
    for (int i = 0; i < p; ++i) {
      counts[i] = static_cast<int>(c[i]);
      displs[i] = static_cast<int>(total);
      total += c[i];
    }
    Buffer send(static_cast<std::size_t>(counts[r]), false);
    Buffer recv(static_cast<std::size_t>(total), false);
    const Summary s = time_calls(cfg, comm, [&] {
      MPI_Allgatherv(send.data(), counts[r], MPI_BYTE, recv.data(), counts.data(), displs.data(),
                     MPI_BYTE, comm);
    });
    if (r == 0) print_row("allgatherv", "mpi", "-", cfg.dist, p, 0, size, s);
  }
}

// Scan and exscan through their doors (--native: MPI_Scan / MPI_Exscan on the
// user's communicator); --sizes in elements, as allreduce's.
void bench_scan(const Config& cfg, MPI_Comm user) {
  const bool exclusive = cfg.coll == "exscan";
  const DType type = cfg.dtype == "int" ? DType::kInt32 : DType::kFloat64;
  const MPI_Op op = cfg.op == "sum" ? MPI_SUM : MPI_MAX;
  const std::string dist = cfg.dtype + "_" + cfg.op;
  int p = 0, r = 0;
  MPI_Comm_size(user, &p);
  MPI_Comm_rank(user, &r);
  if (r == 0) std::printf("%s", kHeader);
  for (std::int64_t count : cfg.sizes) {
    const std::int64_t bytes = count * static_cast<std::int64_t>(dtype_size(type));
    Buffer send(static_cast<std::size_t>(bytes), false), recv(send.size(), false);
    if (cfg.native) {
      const int n = static_cast<int>(count);
      const Summary s = time_calls(cfg, user, [&] {
        if (exclusive)
          MPI_Exscan(send.data(), recv.data(), n, dtype_mpi(type), op, user);
        else
          MPI_Scan(send.data(), recv.data(), n, dtype_mpi(type), op, user);
      });
      if (r == 0) print_row(cfg.coll.c_str(), "mpi", "-", dist, p, 0, bytes, s);
      continue;
    }
    Comm& comm = Comm::of(user, cfg.options.resolved().timeout);
    const int rpn = comm.nodes(cfg.options.options.ranks_per_node).topo.max_local_size();
    for (const std::string& name : cfg.algorithms) {
      ScanCall call;  // through the door, as every front end calls it
      call.comm = user;
      call.send = send.data();
      call.recv = recv.data();
      call.count = count;
      call.type = type;
      call.op = op;
      call.algorithm = name;
      call.options = &cfg.options;
      const Summary s = time_calls(cfg, comm.mpi(), [&] { exclusive ? exscan(call) : scan(call); });
      if (r == 0) print_row(cfg.coll.c_str(), name, "-", dist, p, rpn, bytes, s);
    }
  }
}

// Reduce_scatter_block through its door (--native: MPI_Reduce_scatter_block
// on the user's communicator); --sizes: elements of one rank's block.
void bench_reduce_scatter_block(const Config& cfg, MPI_Comm user) {
  const DType type = cfg.dtype == "int" ? DType::kInt32 : DType::kFloat64;
  const MPI_Op op = cfg.op == "sum" ? MPI_SUM : MPI_MAX;
  const std::string dist = cfg.dtype + "_" + cfg.op;
  int p = 0, r = 0;
  MPI_Comm_size(user, &p);
  MPI_Comm_rank(user, &r);
  if (r == 0) std::printf("%s", kHeader);
  for (std::int64_t count : cfg.sizes) {
    const std::int64_t bytes = count * static_cast<std::int64_t>(dtype_size(type));
    Buffer send(static_cast<std::size_t>(bytes * p), false), recv(bytes, false);
    if (cfg.native) {
      const Summary s = time_calls(cfg, user, [&] {
        MPI_Reduce_scatter_block(send.data(), recv.data(), static_cast<int>(count), dtype_mpi(type),
                                 op, user);
      });
      if (r == 0) print_row("reduce_scatter_block", "mpi", "-", dist, p, 0, bytes, s);
      continue;
    }
    Comm& comm = Comm::of(user, cfg.options.resolved().timeout);
    const int rpn = comm.nodes(cfg.options.options.ranks_per_node).topo.max_local_size();
    for (const std::string& name : cfg.algorithms) {
      ReduceScatterCall call;  // through the door, as every front end calls it
      call.comm = user;
      call.send = send.data();
      call.recv = recv.data();
      call.count = count;
      call.type = type;
      call.op = op;
      call.algorithm = name;
      call.options = &cfg.options;
      const Summary s = time_calls(cfg, comm.mpi(), [&] { reduce_scatter_block(call); });
      if (r == 0) print_row("reduce_scatter_block", name, "-", dist, p, rpn, bytes, s);
    }
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
  InterComm& ic = InterComm::of(inter, cfg.options.resolved().timeout);
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
      IntergroupCall call;  // through the door, as every front end calls it
      call.comm = inter;
      call.args = args;
      call.algorithm = name;
      call.options = &cfg.options;
      const Summary s = time_calls(cfg, MPI_COMM_WORLD, [&] { intergroup_allgatherv(call); });
      if (rank == 0) {
        print_row(args.regular ? "intergroup_allgather" : "intergroup_allgatherv", name, "-", dist,
                  size, 0, c, s);
      }
    }
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

#ifdef SHANCOLL_SMPI
// --intra-overhead-us: SMPI's cost callbacks replace smpi/os, smpi/ois and
// smpi/or, and unlike those options see both hosts, so the overhead can be
// charged to intra-node messages alone (SimGrid applies it to messages below
// smpi/send-is-detached-thresh, 64 KiB by default: the sender sleeps before
// posting, the receiver after the match).
void set_intra_node_overhead(double seconds) {
  const auto intra = [seconds](std::size_t, simgrid::s4u::Host* src, simgrid::s4u::Host* dst) {
    return src == dst ? seconds : 0.0;
  };
  smpi_register_op_cost_callback(SmpiOperation::SEND, intra);
  smpi_register_op_cost_callback(SmpiOperation::ISEND, intra);
  smpi_register_op_cost_callback(SmpiOperation::RECV, intra);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, rc = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
#ifdef SHANCOLL_SMPI
  // A spinning or yielding wait would freeze simulated time (progress.h).
  set_pause_hook(sleeping_pause);
#endif
  try {
    const Config cfg = parse(argc, argv);
#ifdef SHANCOLL_SMPI
    if (cfg.intra_overhead_us > 0) set_intra_node_overhead(cfg.intra_overhead_us * 1e-6);
#endif
    if (cfg.sizes.empty()) throw ArgumentError("--sizes: no size given");
    if (cfg.coll == "barrier") {
      bench_barrier(cfg, MPI_COMM_WORLD);
    } else if (cfg.coll == "scan" || cfg.coll == "exscan") {
      bench_scan(cfg, MPI_COMM_WORLD);
    } else if (cfg.coll == "reduce_scatter_block") {
      bench_reduce_scatter_block(cfg, MPI_COMM_WORLD);
    } else if (cfg.coll == "alltoall") {
      bench_alltoall(cfg, MPI_COMM_WORLD);
    } else if (cfg.coll == "gather" || cfg.coll == "scatter") {
      bench_rooted_blocks(cfg, MPI_COMM_WORLD);
    } else if (cfg.native && cfg.coll != "intergroup") {
      bench_native(cfg, MPI_COMM_WORLD);
    } else if (cfg.coll == "intergroup") {
      bench_intergroup(cfg);
    } else if (cfg.coll == "allreduce") {
      bench_allreduce(cfg, MPI_COMM_WORLD);
    } else {
      bench_allgatherv(cfg, MPI_COMM_WORLD);
    }
  } catch (const std::exception& e) {
    if (rank == 0) std::fprintf(stderr, "shancoll_bench: %s\n", e.what());
    rc = 2;
  }
  Comm::release_all();  // before MPI_Finalize: SMPI's cannot run MPI calls in callbacks
  MPI_Finalize();
  return rc;
}
