// Checks of pattern/block_schedule.h for P = 1..40: every rank's schedule
// is run together with the others' (sends complete at once, a round ends
// when its receives have arrived), each message matched to the receive in
// the order both ranks post them (MPI's non-overtaking rule, which the
// schedules' one tag per run relies on); the sizes must agree, every
// message must be received, and the receive buffers must end as the
// collective defines them.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shancoll/pattern/block_schedule.h"

namespace block_schedule_checks {

using shancoll::pattern::BlockSchedule;
using shancoll::pattern::Buf;
using shancoll::pattern::Region;
using Bytes = std::vector<long>;  // a label per byte: where its value came from

struct RankState {
  BlockSchedule s;
  Bytes buf[3];  // send, recv, scratch (Buf's order)
  std::size_t round = 0;
  bool posted = false;
};

inline Bytes& of(RankState& r, const Region& p) { return r.buf[static_cast<int>(p.buf)]; }

// Runs the ranks' schedules; false (and `error`) if they do not complete alike.
inline bool run(std::vector<RankState>& ranks, std::string& error) {
  std::map<std::pair<int, int>, std::deque<Bytes>> wire;
  for (RankState& r : ranks) {
    r.buf[2].assign(static_cast<std::size_t>(r.s.scratch_bytes), -1);
    for (const auto& c : r.s.setup)
      for (long i = 0; i < c.dst.bytes; ++i)
        of(r, c.dst)[c.dst.offset + i] = of(r, c.src)[c.src.offset + i];
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (int me = 0; me < static_cast<int>(ranks.size()); ++me) {
      RankState& r = ranks[me];
      if (r.round == r.s.rounds.size()) continue;
      const auto& rd = r.s.rounds[r.round];
      if (!r.posted) {
        for (const auto& m : rd.sends) {
          const Bytes& b = of(r, m.region);
          wire[{me, m.peer}].emplace_back(b.begin() + m.region.offset,
                                          b.begin() + m.region.offset + m.region.bytes);
        }
        r.posted = moved = true;
      }
      std::map<int, std::size_t> want;
      for (const auto& m : rd.recvs) ++want[m.peer];
      bool arrived = true;
      for (const auto& [peer, n] : want) arrived = arrived && wire[{peer, me}].size() >= n;
      if (!arrived) continue;
      for (const auto& m : rd.recvs) {
        Bytes msg = std::move(wire[{m.peer, me}].front());
        wire[{m.peer, me}].pop_front();
        if (static_cast<long>(msg.size()) != m.region.bytes) {
          error = "a message's size differs from its receive";
          return false;
        }
        std::copy(msg.begin(), msg.end(), of(r, m.region).begin() + m.region.offset);
      }
      ++r.round;
      r.posted = false;
      moved = true;
    }
  }
  for (const RankState& r : ranks)
    if (r.round != r.s.rounds.size()) error = "a rank never completed (deadlock)";
  for (const auto& [pair, q] : wire)
    if (!q.empty()) error = "a message was never received";
  return error.empty();
}

inline long label(int rank, long byte) { return rank * 1000000L + byte; }

inline void run_all(void (*check)(bool, const std::string&)) {
  for (int P = 1; P <= 40; ++P) {
    const std::string at = " at P=" + std::to_string(P);
    std::vector<long> counts(P), displs(P);  // irregular, zeros included
    long total = 0;
    for (int q = 0; q < P; ++q)
      counts[q] = (q * 7) % 5, displs[q] = total + 1, total += counts[q] + 1;
    std::string error;
    {  // barrier: completes
      std::vector<RankState> ranks(P);
      for (int r = 0; r < P; ++r)
        ranks[r].s = shancoll::pattern::dissemination_barrier_schedule(P, r);
      check(run(ranks, error), "dissemination barrier" + at + ": " + error);
    }
    for (int root : {0, P - 1, P / 2}) {  // bcast: the root's bytes everywhere
      std::vector<RankState> ranks(P);
      for (int r = 0; r < P; ++r) {
        ranks[r].s = shancoll::pattern::binomial_bcast_schedule(P, r, root, 3);
        ranks[r].buf[1] = {label(r, 0), label(r, 1), label(r, 2)};
      }
      bool ok = run(ranks, error);
      for (int r = 0; r < P; ++r)
        ok = ok && ranks[r].buf[1] == Bytes{label(root, 0), label(root, 1), label(root, 2)};
      check(ok, "binomial bcast" + at + " root " + std::to_string(root) + ": " + error);
    }
    for (bool in_place : {false, true}) {  // allgatherv: block q from rank q at displs[q]
      std::vector<RankState> ranks(P);
      for (int r = 0; r < P; ++r) {
        ranks[r].s = shancoll::pattern::ring_allgatherv_schedule(P, r, counts.data(), displs.data(),
                                                                 in_place);
        ranks[r].buf[1].assign(total, -1);
        for (long i = 0; i < counts[r]; ++i) {
          ranks[r].buf[0].push_back(label(r, i));
          if (in_place) ranks[r].buf[1][displs[r] + i] = label(r, i);
        }
      }
      bool ok = run(ranks, error);
      for (int r = 0; r < P; ++r)
        for (int q = 0; q < P; ++q)
          for (long i = 0; i < counts[q]; ++i)
            ok = ok && ranks[r].buf[1][displs[q] + i] == label(q, i);
      check(ok, "ring allgatherv" + at + (in_place ? " in place: " : ": ") + error);
    }
    for (bool in_place : {false, true}) {  // alltoallv: (r + q) % 3 bytes between r and q
      std::vector<std::vector<long>> c(P, std::vector<long>(P)), d(P, std::vector<long>(P));
      std::vector<RankState> ranks(P);
      for (int r = 0; r < P; ++r) {
        long at_byte = 0;
        for (int q = 0; q < P; ++q) c[r][q] = (r + q) % 3, d[r][q] = at_byte, at_byte += c[r][q];
        ranks[r].s = shancoll::pattern::pairwise_alltoallv_schedule(
            P, r, c[r].data(), d[r].data(), c[r].data(), d[r].data(), in_place);
        for (long i = 0; i < at_byte; ++i) ranks[r].buf[0].push_back(label(r, i));
        ranks[r].buf[1] = in_place ? ranks[r].buf[0] : Bytes(at_byte, -1);
      }
      bool ok = run(ranks, error);
      for (int r = 0; r < P; ++r)
        for (int q = 0; q < P; ++q)
          for (long i = 0; i < c[r][q]; ++i)
            ok = ok && ranks[r].buf[1][d[r][q] + i] == label(q, d[q][r] + i);
      check(ok, "pairwise alltoallv" + at + (in_place ? " in place: " : ": ") + error);
    }
  }
}

}  // namespace block_schedule_checks
