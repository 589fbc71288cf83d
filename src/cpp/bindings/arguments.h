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

// Each reader of an optional argument is inline for None (what the plain
// call passes), the rest out of line.

// An integer (not a bool) that fits an int.
int integer_arg(pybind11::handle value, const char* name);
inline int int_arg(pybind11::handle value, const char* name, int none_value) {
  return value.is_none() ? none_value : integer_arg(value, name);
}
std::int64_t int64_arg(pybind11::handle value, const char* name);
// A string; "auto" -> "" (the core then reads the environment).
std::string name_arg(pybind11::handle value, const char* name);
// A str, as given ("auto" kept).
std::string str_arg(pybind11::handle value, const char* name);
// True or False.
[[noreturn]] void refuse_bool(pybind11::handle value, const char* name);
inline bool bool_arg(pybind11::handle value, const char* name) {
  if (value.ptr() != Py_True && value.ptr() != Py_False) refuse_bool(value, name);
  return value.ptr() == Py_True;
}
// Seconds: a non-negative int or float (not a bool); timeout_arg: None -> 0 (the default).
double seconds_arg(pybind11::handle value);
inline double timeout_arg(pybind11::handle value) {
  return value.is_none() ? 0 : seconds_arg(value);
}
// An integer >= 0; ranks_per_node_arg: None -> -1 (environment or physical nodes).
int node_size_arg(pybind11::handle value);
inline int ranks_per_node_arg(pybind11::handle value) {
  return value.is_none() ? -1 : node_size_arg(value);
}
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

// release_gather's **options as a dict (empty: none); the core's option table
// (shancoll/call_options.h) checks their names and values.
pybind11::dict checked_options(pybind11::handle options);

void init_arguments();

}  // namespace shancoll::bindings
