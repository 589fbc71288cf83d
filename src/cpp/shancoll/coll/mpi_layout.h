// Counts and displacements in bytes as the MPI library's v-collectives take
// them: MPI_Count and MPI_Aint from MPI-4 on, int before (ArgumentError
// naming the buffer past 2^31-1). Kept per thread (a call needs them only
// while it runs; no communicator set-up for the `mpi` algorithms), so they
// allocate nothing on a repeated call.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "shancoll/error.h"

namespace shancoll {

struct MpiLayout {
#if MPI_VERSION >= 4
  std::vector<MPI_Count> counts;
  std::vector<MPI_Aint> displs;
#else
  std::vector<int> counts, displs;
#endif

  // `n` counts and displacements of the call, in bytes; `what` names the buffer.
  void assign(const std::int64_t* c, const std::int64_t* d, std::size_t n, const char* what) {
    (void)what;  // named only below MPI-4
    counts.resize(n);
    displs.resize(n);
    for (std::size_t r = 0; r < n; ++r) {
#if MPI_VERSION < 4
      if (c[r] > INT_MAX || d[r] > INT_MAX)
        throw ArgumentError(std::string(what) +
                            ": more than 2^31-1 bytes need an MPI-4 library for 'mpi'");
#endif
      counts[r] = static_cast<decltype(counts)::value_type>(c[r]);
      displs[r] = static_cast<decltype(displs)::value_type>(d[r]);
    }
  }
};

// A call's two sides (alltoallv: send and receive; the rooted ones use one).
struct MpiLayouts {
  MpiLayout send, recv;
};

inline MpiLayouts& mpi_layouts() {
  thread_local MpiLayouts layouts;
  return layouts;
}

}  // namespace shancoll
