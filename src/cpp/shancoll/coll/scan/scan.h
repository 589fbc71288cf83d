// Scan and exscan: rank r ends with the reduction, in rank order, of the
// contributions of ranks 0..r (scan) or 0..r-1 (exscan; rank 0's receive
// buffer is left as it was: MPI leaves it undefined).
//
// One set of algorithms serves both (ScanArgs::exclusive); each has the same
// signature. The registries are scan_select.cc, the doors every front end
// calls scan.cc.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shancoll/call_options.h"
#include "shancoll/coll/registry.h"
#include "shancoll/comm.h"
#include "shancoll/ops.h"
#include "shancoll/options.h"

namespace shancoll {

struct ScanArgs {
  const std::byte* send = nullptr;  // nullptr: in place, the input is in recv
  std::byte* recv = nullptr;
  std::int64_t count = 0;  // elements
  const Reducer* reducer = nullptr;
  bool exclusive = false;  // exscan

  std::int64_t bytes() const { return count * static_cast<std::int64_t>(reducer->elem_size()); }
  const std::byte* input() const { return send ? send : recv; }
};

using ScanFn = void (*)(Comm&, const ScanArgs&, const Options&, Stats&);
struct Express;  // coll/door.h
using ScanExpressFn = Express (*)(Comm&, const ScanArgs&, const Options&);

void scan_shan(Comm&, const ScanArgs&, const Options&, Stats&);
void scan_recursive_doubling(Comm&, const ScanArgs&, const Options&, Stats&);
void scan_mpi(Comm&, const ScanArgs&, const Options&, Stats&);
Express scan_shan_express(Comm&, const ScanArgs&, const Options&);

// ---------------------------------------------------------------------------
// The registries and "auto"

struct ScanAlgorithm {
  const char* name;
  ScanFn fn;
  const char* summary;
  ScanExpressFn express = nullptr;  // its replay of a repeated call, if any (door.h)
};

const Registry<ScanAlgorithm>& scan_registry();
const Registry<ScanAlgorithm>& exscan_registry();

// "auto": the active rule table (rules.h; the bytes are one rank's message)
// for `ranks` ranks on `nodes` nodes of `hosts` hosts, else the built-in
// rule: the MPI library's own call (not measured on an idle machine yet). A
// rule naming shan is taken only where the nodes are contiguous ranges. Pure.
std::string choose_scan(std::int64_t bytes, bool exclusive, int ranks, int nodes, int hosts,
                        bool contiguous = true);

// ---------------------------------------------------------------------------
// The doors: scan and exscan from every front end (Python, the C API, the
// PMPI library, the bench). Resolve the options and the algorithm
// (SHANCOLL_SCAN_ALGORITHM, SHANCOLL_EXSCAN_ALGORITHM), check before any
// communication, run, and record what ran in the Comm.

struct ScanCall {
  MPI_Comm comm = MPI_COMM_NULL;  // an intra-communicator
  const void* send = nullptr;     // nullptr: in place (the input is in recv)
  void* recv = nullptr;
  std::int64_t count = 0;  // elements
  DType type{};
  MPI_Datatype datatype = MPI_DATATYPE_NULL;  // the caller's (user ops); NULL: type's own
  MPI_Op op = MPI_SUM;
  std::string_view algorithm;            // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
};

Comm& scan(const ScanCall& call);
Comm& exscan(const ScanCall& call);

// The doors' repeat paths alone (as bcast_repeat, coll/rooted.h).
bool scan_repeat(Comm& comm, const ScanCall& call);
bool exscan_repeat(Comm& comm, const ScanCall& call);

// Tags on comm.mpi() (a private dup): kScanTag + round.
constexpr int kScanTag = 0x5e00;

}  // namespace shancoll
