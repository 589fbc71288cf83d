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

// None -> `none_value`; an integer (not a bool) that fits an int.
int int_arg(pybind11::handle value, const char* name, int none_value);
std::int64_t int64_arg(pybind11::handle value, const char* name);
// A string; "auto" -> "" (the core then reads the environment).
std::string name_arg(pybind11::handle value, const char* name);
// A str, as given ("auto" kept).
std::string str_arg(pybind11::handle value, const char* name);
// True or False.
bool bool_arg(pybind11::handle value, const char* name);
// Seconds: None -> 0 (the default), a non-negative int or float (not a bool).
double timeout_arg(pybind11::handle value);
// None -> -1 (environment or physical nodes), else an integer >= 0.
int ranks_per_node_arg(pybind11::handle value);
// A rank of `size` ranks.
int root_arg(pybind11::handle value, int size);

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

// release_gather's **options, checked by the Python layer's rules (empty: none).
pybind11::dict checked_options(pybind11::handle options);

void init_arguments();

}  // namespace shancoll::bindings
