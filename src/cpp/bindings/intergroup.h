// What allgatherv.cc's entries hand to intergroup.cc: the call on an
// inter-communicator.
#pragma once

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <string>

#include "shancoll/call_options.h"

namespace shancoll::bindings {

// Allgather (regular) or allgatherv on the inter-communicator `comm`: the
// receive spec describes the remote group, the send block's size is free,
// IN_PLACE is refused; `options` null: the defaults (the core's door,
// shancoll/coll/intergroup/intergroup.h, checks the rest).
void inter_allgatherv(MPI_Comm comm, pybind11::handle send, pybind11::handle recv, bool regular,
                      const std::string& algorithm, const CallOptions* options);

}  // namespace shancoll::bindings
