#include "shancoll/coll/check.h"

#include <algorithm>
#include <string>

#include "shancoll/error.h"
#include "shancoll/hash.h"
#include "shancoll/ops.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

enum Field {
  kCollective,
  kAlgorithm,
  kRoot,
  kOp,
  kDtype,
  kCount,
  kCounts,
  kSendBytes,
  kRefused,
  kFields
};
const char* const kFieldNames[kFields] = {"collective", "algorithm",    "root",
                                          "op",         "element type", "count",
                                          "recvcounts", "send count",   "refusal"};

// The refusal of the lowest refusing rank, from it to every rank
// (collective; only when some rank refused).
[[noreturn]] void refuse_everywhere(Comm& comm, const CallShape& mine, int refuser,
                                    double timeout) {
  constexpr int kLength = 480;
  CollectiveBuffer<char> text(kLength);
  if (comm.rank() == refuser)
    mine.refusal.copy(text.data(), std::min<std::size_t>(mine.refusal.size(), kLength - 1));
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(PMPI_Ibcast(text.data(), kLength, MPI_CHAR, refuser, comm.mpi(), &req),
            "MPI_Ibcast (checked mode)");
  text.wait(req, "the refusing rank's reason (checked mode)", timeout);
  throw ArgumentError("check: rank " + std::to_string(refuser) + " refused " +
                      std::string(mine.collective) + ": " + text.data());
}

// A hash as a non-negative field (-1 means "not part of this collective").
template <class T>
std::int64_t hash_of(const T& value) {
  return static_cast<std::int64_t>(fnv1a(value) >> 1);
}

// A predefined op by its place in this list (its handle may differ between
// processes); every user-defined op is one more (they cannot be compared).
std::int64_t op_id(MPI_Op op) {
  const int i = predefined_op_index(op);
  return i >= 0 ? i : 15;  // 15 predefined ops, 0..14
}

// Fields compared by hash: their values mean nothing to the reader.
bool hashed(int f) { return f == kCollective || f == kAlgorithm || f == kOp || f == kCounts; }

// "ranks [1, 3] differ from rank 0 (rank 0: 4, rank 1: 8, rank 3: 2)" for
// field f (values only for the fields that are not hashes).
std::string difference(const std::vector<std::int64_t>& all, int size, int f) {
  const auto at = [&](int r) { return all[static_cast<std::size_t>(r) * kFields + f]; };
  std::string ranks, shown = hashed(f) ? "" : "rank 0: " + std::to_string(at(0));
  for (int r = 1; r < size; ++r) {
    if (at(r) == at(0)) continue;
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    if (!hashed(f)) shown += ", rank " + std::to_string(r) + ": " + std::to_string(at(r));
  }
  return "ranks [" + ranks + "] differ from rank 0" + (shown.empty() ? "" : " (" + shown + ")");
}

// What this rank passed, for the fields shown by hash.
std::string own(const CallShape& mine, int f) {
  if (f == kAlgorithm) return "; this rank asked for '" + std::string(mine.algorithm) + "'";
  return "";
}

}  // namespace

bool& door_compared() {
  thread_local bool compared = false;
  return compared;
}

void check_agreement(Comm& comm, const CallShape& mine, double timeout) {
  std::int64_t fields[kFields] = {hash_of(mine.collective),
                                  hash_of(mine.algorithm),
                                  mine.root,
                                  mine.op == MPI_OP_NULL ? -1 : op_id(mine.op),
                                  mine.dtype,
                                  mine.count,
                                  mine.counts ? hash_of(*mine.counts) : -1,
                                  mine.send_bytes,
                                  mine.refusal.empty() ? 0 : 1};
  const int size = comm.size();
  // Mine, then every rank's: the collective's memory (CollectiveBuffer).
  CollectiveBuffer<std::int64_t> buffer(static_cast<std::size_t>(size + 1) * kFields);
  std::copy(fields, fields + kFields, buffer.data());
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(PMPI_Iallgather(buffer.data(), kFields, MPI_INT64_T, buffer.data() + kFields, kFields,
                            MPI_INT64_T, comm.mpi(), &req),
            "MPI_Iallgather (checked mode)");
  buffer.wait(req,
              "the other ranks' call descriptions (checked mode, or a request's comparison of "
              "refusals at _init or at a communicator's first call)",
              timeout);
  const std::vector<std::int64_t> all(buffer.data() + kFields,
                                      buffer.data() + static_cast<std::size_t>(size + 1) * kFields);
  int refusing = 0;
  for (int r = 0; r < size; ++r)
    refusing += all[static_cast<std::size_t>(r) * kFields + kRefused] != 0;
  // Every rank refuses: each its own arguments, as it would alone (a front
  // end may then hand the call to the MPI library on every rank alike).
  if (refusing == size) throw ArgumentError(std::string(mine.refusal));
  for (int r = 0; r < size; ++r)
    if (all[static_cast<std::size_t>(r) * kFields + kRefused])
      refuse_everywhere(comm, mine, r, timeout);
  for (int f = 0; f < kFields; ++f) {
    if (f == kSendBytes || f == kRefused) continue;
    for (int r = 1; r < size; ++r)
      if (all[static_cast<std::size_t>(r) * kFields + f] != all[f])
        throw ArgumentError(std::string("check: the ranks disagree on the ") + kFieldNames[f] +
                            " of " + std::string(mine.collective) + ": " +
                            difference(all, size, f) + own(mine, f));
  }
  if (!mine.counts) return;
  for (int r = 0; r < size; ++r) {
    const std::int64_t sent = all[static_cast<std::size_t>(r) * kFields + kSendBytes];
    if (sent >= 0 && sent != (*mine.counts)[static_cast<std::size_t>(r)])
      throw ArgumentError("check: rank " + std::to_string(r) + " sends " + std::to_string(sent) +
                          " bytes, but recvcounts[" + std::to_string(r) + "] is " +
                          std::to_string((*mine.counts)[static_cast<std::size_t>(r)]) + " bytes");
  }
}

}  // namespace shancoll
