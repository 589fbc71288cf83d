// What allreduce's entry (allreduce.cc) hands to rooted.cc.
#pragma once

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <string>

#include "bufspec.h"
#include "options.h"

namespace shancoll::bindings {

// Allreduce with release_gather's **options (`options`) over the call's own
// (`call_options`: ports, consistent, ranks_per_node, timeout): the options
// imply release_gather when `algorithm` is "auto".
void allreduce_with_options(MPI_Comm comm, const ReductionBuffers& buffers, MPI_Op op,
                            const std::string& algorithm, const pybind11::dict& options,
                            PythonOptions& call_options);

}  // namespace shancoll::bindings
