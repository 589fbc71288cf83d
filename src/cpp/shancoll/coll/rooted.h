// Rooted collectives: bcast (the root's buffer to every rank) and reduce
// (every rank's contribution combined elementwise into the root's recvbuf).
// Every algorithm of a collective has the same signature; the registry is
// rooted_select.h. Also the blocking point-to-point helpers they share
// (every wait has the call's timeout: a missing peer is an error, not a hang).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "shancoll/comm.h"
#include "shancoll/ops.h"
#include "shancoll/options.h"

namespace shancoll {

struct BcastArgs {
  std::byte* buf = nullptr;  // the root's data; the result everywhere
  std::int64_t bytes = 0;
  int root = 0;
};

struct ReduceArgs {
  const std::byte* send = nullptr;  // nullptr: in place (root only), the input is in recv
  std::byte* recv = nullptr;        // the root's result; ignored elsewhere
  std::int64_t count = 0;           // elements
  const Reducer* reducer = nullptr;
  int root = 0;

  std::int64_t bytes() const { return count * static_cast<std::int64_t>(reducer->elem_size()); }
};

using BcastFn = void (*)(Comm&, const BcastArgs&, const Options&, Stats&);
using ReduceFn = void (*)(Comm&, const ReduceArgs&, const Options&, Stats&);

void bcast_release_gather(Comm&, const BcastArgs&, const Options&, Stats&);
void bcast_binomial(Comm&, const BcastArgs&, const Options&, Stats&);
void bcast_mpi(Comm&, const BcastArgs&, const Options&, Stats&);
void reduce_release_gather(Comm&, const ReduceArgs&, const Options&, Stats&);
void reduce_binomial(Comm&, const ReduceArgs&, const Options&, Stats&);
void reduce_mpi(Comm&, const ReduceArgs&, const Options&, Stats&);

// Tags on comm.mpi() (a private dup; allreduce schedules use 0x6000 and up).
constexpr int kBcastTag = 0x5b10;
constexpr int kReduceTag = 0x5b11;

// Blocking send / receive of bytes, polled with wait_until (timeout, pause hook).
void send_bytes_waiting(const std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                        double timeout);
void recv_bytes_waiting(std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                        double timeout);

}  // namespace shancoll
