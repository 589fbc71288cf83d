// shancoll.AllreduceRequest: a split-phase allreduce as a Python object.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>

#include "bufspec.h"
#include "shancoll/coll/allreduce/allreduce_request.h"

namespace shancoll::bindings {

struct Buffers {
  BufferView send, recv;
};

// A split-phase request with the Python buffers it works on, and the MPI op
// made from a Python callable, freed once the request is done.
struct PyRequest {
  Buffers bufs;
  std::unique_ptr<AllreduceRequest> req;
  pybind11::object op_to_free;

  void release_op() {
    if (op_to_free && !op_to_free.is_none()) op_to_free.attr("Free")();
    op_to_free = pybind11::none();
  }
};

// The Python object of a started request (it owns `r`).
pybind11::object request_object(std::unique_ptr<PyRequest> r);

// Adds the type to the module as AllreduceRequest.
void bind_request_type(pybind11::module_& m);

}  // namespace shancoll::bindings
