// The non-buffer arguments of the Python collectives, taken as the user
// wrote them: one set of rules for every collective (bufspec.h has the
// buffers'). Each reader throws ArgumentError whose message starts with
// the argument's name; the entry (entry.h) adds the rank.
#pragma once

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

namespace shancoll::bindings {

// The MPI_Comm of a usable mpi4py communicator (intra or inter).
MPI_Comm comm_of(pybind11::handle comm);

// The rank an error message names: the caller's in `comm`, or in
// COMM_WORLD (" of COMM_WORLD") when `comm` is not usable.
std::string rank_of_caller(pybind11::handle comm);

// A str, as given ("auto" kept).
std::string str_arg(pybind11::handle value, const char* name);
// The options (timeout, ranks_per_node, ...) go through the core's option
// table instead: options.h.

// A rank of `size` ranks (inline for a plain int in range).
int rank_arg(pybind11::handle value, int size);
inline int root_arg(pybind11::handle value, int size) {
  if (PyLong_CheckExact(value.ptr())) {
    const long root = PyLong_AsLong(value.ptr());
    if (root >= 0 && root < size) return static_cast<int>(root);
  }
  return rank_arg(value, size);
}

// The op of a reduction: an MPI.Op, or a Python callable made into one
// (MPI.Op.Create, freed with this object unless handed on with take_created()).
class OpArg {
 public:
  OpArg(pybind11::handle op, pybind11::handle commute);
  OpArg(const OpArg&) = delete;
  OpArg& operator=(const OpArg&) = delete;
  ~OpArg();

  MPI_Op get() const { return op_; }
  // The MPI.Op created here (None if none), now the caller's to free.
  pybind11::object take_created();

 private:
  MPI_Op op_ = MPI_OP_NULL;
  pybind11::object created_;
};

void init_arguments();

}  // namespace shancoll::bindings
