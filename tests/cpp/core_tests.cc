// shancoll_core_tests: the C++ core checked without Python.
//
//   (a) pure pattern checks: for P = 1..64 the ring, Bruck and recursive
//       doubling schedules, simulated, deliver every block to every rank
//       exactly once, and only blocks the sender holds;
//   (b) every registered allgatherv algorithm against MPI_Allgatherv:
//       distributions (regular, decreasing, broadcast, random with zeros),
//       layouts (packed, gapped, reversed with gaps), in place, sizes from 0
//       to 1 MiB per rank; shan also on virtual nodes of 1, 2, 3 ranks with
//       both transports and with the result left in the node segment;
//       communicators WORLD, SELF and a reversed split; Stats properties;
//   (c) local_copy (cost.h): a copy whose destination lies 1-31 bytes past
//       its source modulo 4 KiB (glibc's slow rep movsb on AMD) goes by
//       vector moves from 2 KiB on, and every copy is exact, tails and
//       short sizes included, writing nothing past its end.
//
// One line per failure; rank 0 ends with "core_tests: N passed, M failed";
// the exit code is nonzero on failure on every rank.
//
// Run: timeout 120 mpiexec -n 4 shancoll_core_tests
// SHANCOLL_TEST_ALGORITHMS=ring,bruck runs only those algorithms;
// SHANCOLL_TEST_VERBOSE=1 prints progress times on stderr;
// SHANCOLL_TEST_LARGE=1 adds a > 2^31-byte block (several GB of memory).
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/comm.h"
#include "shancoll/cost.h"
#include "shancoll/pattern/bruck.h"
#include "shancoll/pattern/recursive_doubling.h"
#include "shancoll/pattern/ring.h"
#include "shancoll/progress.h"

using namespace shancoll;

namespace {

int g_rank = 0;
int g_passed = 0;
int g_failed = 0;

std::vector<int> g_pending;  // outcomes not yet agreed on (same order on all ranks)
int g_failures_printed = 0;

// One test case; it passes when it passed on every rank, decided by agree().
void record(bool ok, const std::string& name, const std::string& why) {
  if (!ok && ++g_failures_printed <= 200) {
    std::printf("FAIL [rank %d] %s: %s\n", g_rank, name.c_str(), why.c_str());
    std::fflush(stdout);
  }
  g_pending.push_back(ok ? 1 : 0);
}

// Agrees on the recorded outcomes across MPI_COMM_WORLD (one collective for
// many cases: on an oversubscribed machine every collective costs).
void agree() {
  std::vector<int> all(g_pending.size());
  MPI_Allreduce(g_pending.data(), all.data(), static_cast<int>(all.size()), MPI_INT, MPI_MIN,
                MPI_COMM_WORLD);
  for (int ok : all) (ok ? g_passed : g_failed) += 1;
  g_pending.clear();
}

// ---------------------------------------------------------------- patterns

// Collects the first problem of a simulation.
struct Sim {
  std::string error;
  std::vector<std::vector<int>> have;  // have[rank][block]: times received/held
  explicit Sim(int p) : have(p, std::vector<int>(p, 0)) {
    for (int r = 0; r < p; ++r) have[r][r] = 1;
  }
  void fail(const std::string& e) {
    if (error.empty()) error = e;
  }
  void check_holds(int r, int b, int step) {
    if (have[r][b] == 0)
      fail("step " + std::to_string(step) + ": rank " + std::to_string(r) + " sends block " +
           std::to_string(b) + " it does not hold");
  }
  void deliver(int to, int b, int step) {
    if (++have[to][b] > 1)
      fail("step " + std::to_string(step) + ": rank " + std::to_string(to) + " gets block " +
           std::to_string(b) + " twice");
  }
  void check_complete() {
    for (std::size_t r = 0; r < have.size(); ++r)
      for (std::size_t b = 0; b < have.size(); ++b)
        if (have[r][b] != 1)
          fail("rank " + std::to_string(r) + " lacks block " + std::to_string(b));
  }
};

std::string check_ring(int p) {
  Sim sim(p);
  for (int s = 0; s < pattern::ring_rounds(p); ++s) {
    std::vector<std::pair<int, int>> sent;  // (to, block): delivered after the step
    for (int r = 0; r < p; ++r) {
      const int to = pattern::ring_send_to(r, p), b = pattern::ring_send_block(r, p, s);
      sim.check_holds(r, b, s);
      if (pattern::ring_recv_from(to, p) != r) sim.fail("recv_from is not the sender");
      if (pattern::ring_recv_block(to, p, s) != b) sim.fail("recv_block != send_block of sender");
      sent.push_back({to, b});
    }
    for (auto [to, b] : sent) sim.deliver(to, b, s);
  }
  sim.check_complete();
  return sim.error;
}

std::string check_bruck(int p) {
  Sim sim(p);
  std::vector<int> held(p, 1);  // relative blocks [0, held) are present
  for (int s = 0; s < pattern::bruck_rounds(p); ++s) {
    const int d = pattern::bruck_distance(s), n = pattern::bruck_block_count(p, s);
    std::vector<std::pair<int, int>> sent;
    for (int r = 0; r < p; ++r) {
      const int to = pattern::bruck_send_to(r, p, s);
      if (pattern::bruck_recv_from(to, p, s) != r) sim.fail("recv_from is not the sender");
      if (held[r] < n || held[to] != d) sim.fail("rotated buffer is not a prefix");
      for (int j = 0; j < n; ++j) {
        const int b = pattern::bruck_block(r, p, j);
        sim.check_holds(r, b, s);
        if (pattern::bruck_block(to, p, d + j) != b) sim.fail("block lands at the wrong slot");
        sent.push_back({to, b});
      }
    }
    for (auto [to, b] : sent) sim.deliver(to, b, s);
    for (int r = 0; r < p; ++r) held[r] += n;
  }
  sim.check_complete();
  return sim.error;
}

std::string check_recursive_doubling(int p) {
  Sim sim(p);
  std::vector<pattern::RecursiveDoubling> rd;
  for (int r = 0; r < p; ++r) rd.emplace_back(r, p);
  std::vector<int> seen(rd[0].pof2, 0);
  for (int r = 0; r < p; ++r) {
    if (rd[r].is_extra()) {
      const int core = rd[r].fold_partner();
      if (rd[core].is_extra() || rd[core].fold_partner() != r) sim.fail("bad fold partner");
      sim.deliver(core, r, -1);
    } else if (rd[r].real_rank(rd[r].vrank()) != r || ++seen[rd[r].vrank()] > 1) {
      sim.fail("virtual ranks are not a permutation");
    }
  }
  for (int s = 0; s < rd[0].rounds; ++s) {
    std::vector<std::pair<int, int>> sent;
    for (int r = 0; r < p; ++r) {
      if (rd[r].is_extra()) continue;
      const int peer = rd[r].peer(s);
      const pattern::BlockRange out = rd[r].send_blocks(s), in = rd[peer].recv_blocks(s);
      if (rd[peer].peer(s) != r) sim.fail("peers do not match");
      if (in.first != out.first || in.count != out.count) sim.fail("ranges do not match");
      for (int b = out.first; b < out.first + out.count; ++b) {
        sim.check_holds(r, b, s);
        sent.push_back({peer, b});
      }
    }
    for (auto [to, b] : sent) sim.deliver(to, b, s);
  }
  for (int r = 0; r < p; ++r) {
    if (!rd[r].is_extra()) continue;
    for (int b = 0; b < p; ++b) {
      if (b == r) continue;
      sim.check_holds(rd[r].fold_partner(), b, rd[0].rounds);
      sim.deliver(r, b, rd[0].rounds);
    }
  }
  sim.check_complete();
  return sim.error;
}

void pattern_tests() {
  struct Named {
    const char* name;
    std::string (*check)(int);
  };
  const Named checks[] = {{"ring", check_ring},
                          {"bruck", check_bruck},
                          {"recursive_doubling", check_recursive_doubling}};
  for (const auto& c : checks) {
    std::string error;
    for (int p = 1; p <= 64 && error.empty() && g_rank == 0; ++p) {
      error = c.check(p);
      if (!error.empty()) error = "P=" + std::to_string(p) + ": " + error;
    }
    record(error.empty(), std::string("pattern/") + c.name, error);
  }
}

// -------------------------------------------------------------- allgatherv

enum class Dist { regular, decreasing, bcast, random };
enum class Layout { packed, gapped, reversed };
const char* const kDistNames[] = {"regular", "decreasing", "bcast", "random"};
const char* const kLayoutNames[] = {"packed", "gapped", "reversed"};

std::vector<std::int64_t> make_counts(Dist dist, int p, std::int64_t c, unsigned seed) {
  std::vector<std::int64_t> counts(p, c);
  std::mt19937 rng(seed);  // same seed, same counts on every rank
  for (int i = 0; i < p; ++i) {
    if (dist == Dist::decreasing && p > 1) counts[i] = 2 * c * (p - 1 - i) / (p - 1);
    if (dist == Dist::bcast) counts[i] = i == 0 ? p * c : 0;
    if (dist == Dist::random) counts[i] = rng() % 3 == 0 ? 0 : rng() % (2 * c + 1);
  }
  return counts;
}

// Gaps of 1..13 bytes between blocks; "reversed" also lays blocks out in
// reverse rank order. Empty blocks get displacement 0 (they own no bytes).
std::vector<std::int64_t> make_displs(Layout layout, const std::vector<std::int64_t>& counts) {
  const int p = static_cast<int>(counts.size());
  std::vector<std::int64_t> displs(p, 0);
  std::int64_t at = layout == Layout::packed ? 0 : 5;
  for (int k = 0; k < p; ++k) {
    const int i = layout == Layout::reversed ? p - 1 - k : k;
    displs[i] = at;
    at += counts[i] + (layout == Layout::packed ? 0 : 1 + (i * 7) % 13);
    if (layout != Layout::packed && counts[i] == 0) displs[i] = 0;
  }
  return displs;
}

std::byte pattern_byte(int rank, std::int64_t j, unsigned salt) {
  return static_cast<std::byte>((rank * 37 + j * 11 + salt) & 0xff);
}

constexpr std::byte kSentinel{0xEE};
constexpr std::int64_t kMargin = 64;

// One input of the collective, with MPI_Allgatherv's answer for it; every
// algorithm configuration is checked against the same reference.
struct Input {
  Dist dist;
  Layout layout;
  std::int64_t size;  // c: bytes per rank of the distribution
  bool in_place;
  unsigned salt;
  std::vector<std::int64_t> counts, displs;
  std::vector<std::byte> send, expect;
};

Input make_input(MPI_Comm comm, Dist dist, Layout layout, std::int64_t size, bool in_place) {
  int p = 0, r = 0;
  MPI_Comm_size(comm, &p);
  MPI_Comm_rank(comm, &r);
  Input in{dist, layout, size, in_place, 0, {}, {}, {}, {}};
  in.salt = static_cast<unsigned>(size * 3 + int(dist) * 5 + int(layout) + p);
  in.counts = make_counts(dist, p, size, in.salt);
  in.displs = make_displs(layout, in.counts);
  in.send.resize(in.counts[r]);
  for (std::int64_t j = 0; j < in.counts[r]; ++j) in.send[j] = pattern_byte(r, j, in.salt);
  std::int64_t extent = 0;
  for (int i = 0; i < p; ++i) extent = std::max(extent, in.displs[i] + in.counts[i]);
  in.expect.assign(extent + kMargin, kSentinel);
#if MPI_VERSION >= 4
  std::vector<MPI_Count> c(in.counts.begin(), in.counts.end());
  std::vector<MPI_Aint> d(in.displs.begin(), in.displs.end());
  MPI_Allgatherv_c(in.send.data(), c[r], MPI_BYTE, in.expect.data(), c.data(), d.data(), MPI_BYTE,
                   comm);
#else
  std::vector<int> c(in.counts.begin(), in.counts.end()), d(in.displs.begin(), in.displs.end());
  MPI_Allgatherv(in.send.data(), c[r], MPI_BYTE, in.expect.data(), c.data(), d.data(), MPI_BYTE,
                 comm);
#endif
  return in;
}

// An algorithm with its options.
struct Config {
  const AllgathervAlgorithm* algo;
  Options options;
  std::string name;
  bool shared;  // recv == nullptr (shan only)
  bool full;    // every input, or only the smaller sizes
};

std::string case_name(const Config& cfg, const Input& in, MPI_Comm comm, const char* comm_name) {
  int p = 0;
  MPI_Comm_size(comm, &p);
  return cfg.name + " comm=" + comm_name + " P=" + std::to_string(p) +
         " dist=" + kDistNames[int(in.dist)] + " layout=" + kLayoutNames[int(in.layout)] +
         " c=" + std::to_string(in.size) + (in.in_place ? " in_place" : "");
}

// Expected Stats for the flat algorithms: rounds and bytes sent.
std::string check_stats(const Config& cfg, const Comm& comm, const AllgathervArgs& args,
                        const Stats& st) {
  const int p = comm.size(), r = comm.rank();
  const std::string name = cfg.algo->name;
  std::int64_t rounds = -1, bytes = -1;
  if (name == "ring") {
    rounds = pattern::ring_rounds(p);
    bytes = p > 1 ? args.total() - args.counts[(r + 1) % p] : 0;
  } else if (name == "bruck") {
    rounds = pattern::bruck_rounds(p);
    bytes = 0;
    for (int s = 0; s < rounds; ++s)
      for (int j = 0; j < pattern::bruck_block_count(p, s); ++j)
        bytes += args.counts[pattern::bruck_block(r, p, j)];
  } else if (name == "recursive_doubling") {
    pattern::RecursiveDoubling rd(r, p);
    rounds = rd.rounds + (rd.extra > 0 ? 2 : 0);
  } else {
    return "";
  }
  if (st.rounds != rounds) {
    return "stats.rounds " + std::to_string(st.rounds) + " != " + std::to_string(rounds);
  }
  if (bytes >= 0 && st.intra_bytes + st.inter_bytes != bytes) {
    return "stats bytes " + std::to_string(st.intra_bytes + st.inter_bytes) +
           " != " + std::to_string(bytes);
  }
  return "";
}

// Runs one configuration on one input; "" or the first problem on this rank.
std::string run_case(const Config& cfg, const Input& in, MPI_Comm user) {
  Comm& comm = Comm::of(user, default_timeout());
  const int p = comm.size(), r = comm.rank();
  AllgathervArgs args;
  args.counts = in.counts;
  args.displs = in.displs;
  const std::int64_t bytes = static_cast<std::int64_t>(in.expect.size());
  std::vector<std::byte> got(bytes, kSentinel);
  args.send = in.send.data();
  args.recv = cfg.shared ? nullptr : got.data();
  if (in.in_place) {
    if (!in.send.empty()) std::memcpy(got.data() + args.displs[r], in.send.data(), in.send.size());
    args.send = nullptr;
  }
  Stats stats;
  const std::byte* result = cfg.algo->fn(comm, args, cfg.options, stats);
  if (!cfg.shared && result != got.data()) return "returned pointer is not recvbuf";
  for (int i = 0; i < p; ++i) {  // the blocks (shared: only they are defined)
    const std::byte* a = result + args.displs[i];
    const std::byte* e = in.expect.data() + args.displs[i];
    if (args.counts[i] > 0 && std::memcmp(a, e, args.counts[i]) != 0) {
      std::int64_t j = 0;
      while (a[j] == e[j]) ++j;
      return "block " + std::to_string(i) + " differs at byte " + std::to_string(j) + " of " +
             std::to_string(args.counts[i]);
    }
  }
  if (!cfg.shared && std::memcmp(got.data(), in.expect.data(), bytes) != 0) {
    return "bytes outside the blocks (gaps, margin) were written";
  }
  return check_stats(cfg, comm, args, stats);
}

// Every registered algorithm; shan on virtual nodes of 1, 2, 3 ranks with both
// transports (all inputs for the first, smaller ones for the others) and with
// the result left in the node segment.
// SHANCOLL_TEST_ALGORITHMS=ring,bruck restricts the run to those algorithms.
bool selected(const std::string& name) {
  const char* only = std::getenv("SHANCOLL_TEST_ALGORITHMS");
  if (!only || !*only) return true;
  return ("," + std::string(only) + ",").find("," + name + ",") != std::string::npos;
}

std::vector<Config> make_configs() {
  std::vector<Config> out;
  for (const auto& a : allgatherv_registry().all()) {
    if (!selected(a.name)) continue;
    Options o;
    o.timeout = 15;  // a hang fails the case instead of the run
    if (std::string(a.name) != "shan") {
      o.ranks_per_node = 2;
      out.push_back({&a, o, a.name, false, true});
      continue;
    }
    for (int rpn : {2, 1, 3}) {
      for (TransportKind t : {TransportKind::two_sided, TransportKind::rma}) {
        o.ranks_per_node = rpn;
        o.transport = t;
        const std::string name =
            std::string("shan[rpn=") + std::to_string(rpn) + "," + transport_name(t) + "]";
        out.push_back({&a, o, name, false, rpn == 2});
        if (rpn == 2) out.push_back({&a, o, name + "[shared]", true, false});
      }
    }
  }
  return out;
}

bool g_verbose = false;  // SHANCOLL_TEST_VERBOSE=1: seconds per communicator on rank 0

// (c): the distances and sizes around memcpy_slow_distance's bounds.
void copy_tests() {
  constexpr std::size_t kPage = 4096;
  std::vector<unsigned char> memory(6 * kPage + (256 << 10));
  auto page = [&](std::size_t i) {  // page-aligned places in `memory`
    const auto base = reinterpret_cast<std::uintptr_t>(memory.data());
    return memory.data() + ((base + kPage - 1) / kPage * kPage - base) + i * kPage;
  };
  unsigned char* src = page(0) + 16;  // a malloc'd buffer's place, 16 past a page
  for (std::size_t i = 0; i < (64 << 10) + 200; ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
  for (std::size_t distance : {0, 1, 16, 31, 32, 63, 4095}) {
    for (std::size_t bytes : {0, 1, 63, 64, 2048, 2049, 3000, 4096 + 17, (64 << 10) + 5}) {
      unsigned char* dst = page(20) + 16 + distance;
      std::memset(dst, 0xEE, bytes + 64);
      local_copy(dst, src, bytes);
      const std::string name =
          "local_copy distance " + std::to_string(distance) + " bytes " + std::to_string(bytes);
      const bool slow = memcpy_slow_distance(dst, src, bytes);
      record(slow == (bytes > 2048 && distance >= 1 && distance <= 31), name,
             "slow case misjudged");
      bool exact = std::memcmp(dst, src, bytes) == 0;
      for (std::size_t i = bytes; i < bytes + 64; ++i) exact = exact && dst[i] == 0xEE;
      record(exact, name, "bytes differ, or written past the end");
    }
  }
}

void algorithm_tests(MPI_Comm comm, const char* comm_name, bool full) {
  const double start = MPI_Wtime();
  const std::vector<Config> configs = make_configs();
  const std::vector<std::int64_t> sizes =
      full ? std::vector<std::int64_t>{0, 1, 7, 1000, 65539, 1 << 20}
           : std::vector<std::int64_t>{0, 7, 1000};
  for (std::int64_t size : sizes) {
    const bool big = size > 1000;
    for (Dist dist : {Dist::regular, Dist::decreasing, Dist::bcast, Dist::random}) {
      for (Layout layout : {Layout::packed, Layout::gapped, Layout::reversed}) {
        if (size >= (1 << 20) && layout == Layout::reversed) continue;  // keep runs short
        for (bool in_place : {false, true}) {
          const Input in = make_input(comm, dist, layout, size, in_place);
          for (const Config& cfg : configs) {
            if ((big && !cfg.full) || (cfg.shared && in_place)) continue;
            std::string error;
            try {
              error = run_case(cfg, in, comm);
            } catch (const std::exception& e) {
              error = std::string("exception: ") + e.what();
            }
            record(error.empty(), case_name(cfg, in, comm, comm_name), error);
          }
        }
      }
    }
    agree();
    if (g_verbose && g_rank == 0) {
      std::fprintf(stderr, "  c=%lld done at %.2f s\n", static_cast<long long>(size),
                   MPI_Wtime() - start);
    }
  }
  if (g_verbose && g_rank == 0) {
    std::fprintf(stderr, "allgatherv comm=%s: %.2f s\n", comm_name, MPI_Wtime() - start);
  }
}

// The flat algorithms' traffic goes where the topology says.
void stats_placement_tests(MPI_Comm comm) {
  Comm& c = Comm::of(comm, default_timeout());
  const int p = c.size();
  for (const char* name : {"ring", "bruck", "recursive_doubling"}) {
    if (!selected(name)) continue;
    for (int rpn : {1, p}) {
      std::string error;
      try {
        AllgathervArgs args;
        args.counts.assign(p, 100);
        args.displs = make_displs(Layout::packed, args.counts);
        std::vector<std::byte> buf(args.extent());
        args.recv = buf.data();
        Options o;
        o.ranks_per_node = rpn;
        Stats st;
        allgatherv_registry().at(name).fn(c, args, o, st);
        if (rpn == 1 && st.intra_messages != 0) error = "intra-node messages on 1-rank nodes";
        if (rpn == p && st.inter_messages != 0) error = "inter-node messages on one node";
        if (p > 1 && st.intra_messages + st.inter_messages == 0) error = "no messages counted";
        if (st.node_count != (rpn == 1 ? p : 1)) error = "node_count";
      } catch (const std::exception& e) {
        error = e.what();
      }
      record(error.empty(), std::string("stats/") + name + " rpn=" + std::to_string(rpn), error);
    }
  }
}

// An empty result needs no buffer: recv == nullptr is accepted then.
void empty_tests(MPI_Comm comm) {
  Comm& c = Comm::of(comm, default_timeout());
  for (const char* name : {"ring", "bruck", "recursive_doubling"}) {
    if (!selected(name)) continue;
    std::string error;
    try {
      AllgathervArgs args;
      args.counts.assign(c.size(), 0);
      args.displs.assign(c.size(), 0);
      Stats st;
      allgatherv_registry().at(name).fn(c, args, Options{}, st);
      if (st.intra_messages + st.inter_messages != 0) error = "messages sent for nothing";
    } catch (const std::exception& e) {
      error = e.what();
    }
    record(error.empty(), std::string("empty/") + name, error);
  }
}

// Opt-in: one block over INT_MAX bytes, checked against the fill pattern.
void large_tests(MPI_Comm comm) {
  Comm& c = Comm::of(comm, default_timeout());
  const int p = c.size(), r = c.rank();
  const std::int64_t big = (std::int64_t{1} << 31) + 13;
  for (const char* name : {"ring", "bruck", "recursive_doubling", "mpi"}) {
    if (!selected(name)) continue;
    std::string error;
    try {
      AllgathervArgs args;
      args.counts.assign(p, 5);
      args.counts[0] = big;
      args.displs = make_displs(Layout::packed, args.counts);
      std::vector<std::byte> buf(args.extent());
      for (std::int64_t j = 0; j < args.counts[r]; ++j)
        buf[args.displs[r] + j] = pattern_byte(r, j, 1);
      args.recv = buf.data();  // in place
      Stats st;
      allgatherv_registry().at(name).fn(c, args, Options{}, st);
      for (int i = 0; i < p && error.empty(); ++i)
        for (std::int64_t j = 0; j < args.counts[i]; j += (i == 0 ? 4093 : 1))
          if (buf[args.displs[i] + j] != pattern_byte(i, j, 1)) {
            error = "block " + std::to_string(i) + " byte " + std::to_string(j);
            break;
          }
    } catch (const std::exception& e) {
      error = e.what();
    }
    record(error.empty(), std::string("large/") + name, error);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  const char* verbose = std::getenv("SHANCOLL_TEST_VERBOSE");
  g_verbose = verbose && *verbose && std::string(verbose) != "0";
  pattern_tests();
  copy_tests();
  agree();
  algorithm_tests(MPI_COMM_WORLD, "world", true);
  algorithm_tests(MPI_COMM_SELF, "self", false);
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - g_rank, &reversed);
  algorithm_tests(reversed, "reversed", false);
  stats_placement_tests(MPI_COMM_WORLD);
  empty_tests(MPI_COMM_WORLD);
  const char* large = std::getenv("SHANCOLL_TEST_LARGE");
  if (large && *large && std::string(large) != "0") large_tests(MPI_COMM_WORLD);
  MPI_Comm_free(&reversed);
  agree();

  if (g_rank == 0) std::printf("core_tests: %d passed, %d failed\n", g_passed, g_failed);
  std::fflush(stdout);
  MPI_Finalize();
  return g_failed ? 1 : 0;
}
