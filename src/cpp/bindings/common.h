// What the binding files share: mpi4py objects -> MPI handles, Stats -> the
// dict behind shancoll.last_stats(). Options: options.h.
//
// mpi4py's C API lives in per-translation-unit pointers: every .cc that
// includes this header must call import_mpi4py() once (in its bind_*()).
#pragma once

#include <mpi.h>
#include <mpi4py/mpi4py.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "shancoll/error.h"
#include "shancoll/ops.h"
#include "shancoll/options.h"
#include "shancoll/progress.h"

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

// The element type the Python layer described as NumPy kind + itemsize
// (ArgumentError naming recvbuf for a type MPI cannot reduce).
inline DType dtype_of(const std::string& kind, int itemsize) {
  if (kind.size() != 1) throw ArgumentError("recvbuf: bad dtype kind '" + kind + "'");
  return dtype_from_numpy(kind[0], itemsize, "recvbuf");
}

inline int size_of(MPI_Comm comm) {
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return size;
}

inline int rank_of(MPI_Comm comm) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  return rank;
}

inline pybind11::dict stats_dict(const Stats& s, const char* algorithm) {
  pybind11::dict d;
  d["algorithm"] = algorithm;
  s.visit([&d](const char* name, const auto& value) { d[name] = value; });
  return d;
}

}  // namespace shancoll::bindings
