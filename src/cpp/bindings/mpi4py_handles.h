// mpi4py objects -> MPI handles, shared by the binding files.
//
// mpi4py's C API lives in per-translation-unit pointers: every .cc that
// includes this header must call import_mpi4py() once (in its bind_*()).
#pragma once

#include <mpi.h>
#include <mpi4py/mpi4py.h>
#include <pybind11/pybind11.h>

#include <string>

#include "shancoll/error.h"

namespace shancoll::bindings {

// The MPI_Comm of an mpi4py communicator (intra or inter: the collective
// decides what it accepts); ArgumentError naming `comm` otherwise.
inline MPI_Comm mpi_comm_of(pybind11::handle comm) {
  if (!PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type)) {
    throw ArgumentError("comm: expected an mpi4py communicator, got " +
                        std::string(pybind11::str(pybind11::type::of(comm))));
  }
  MPI_Comm* handle = PyMPIComm_Get(comm.ptr());
  if (!handle) throw pybind11::error_already_set();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) throw ArgumentError("comm: MPI is already finalized");
  return *handle;
}

inline MPI_Op mpi_op_of(pybind11::handle op) {
  if (!PyObject_TypeCheck(op.ptr(), &PyMPIOp_Type)) {
    throw ArgumentError("op: expected an mpi4py MPI.Op or a callable");
  }
  return *PyMPIOp_Get(op.ptr());
}

}  // namespace shancoll::bindings
