// The Python entry points of the collectives as builtin functions, without a
// Python frame or pybind11's dispatcher in front of the call.
//
// Why: a small collective takes about 1 us; a Python wrapper function costs
// about 0.1 us and pybind11's argument dispatch about as much again, so they
// would decide the small-message race against mpi4py's own collectives. An
// entry binds the call's arguments by name (vectorcall: no tuple, no dict)
// and hands them to the collective's runner, which takes every form of the
// call (buffer specs through bufspec.h, the other arguments through
// arguments.h). Its ArgumentErrors leave with the caller's rank added.
//
// A blocking collective's entry also keeps its last call prepared (see
// EntrySpec::prepare): a call with the same arguments (the same objects,
// arrays of the same dtype, flags and size) runs it again with the arrays'
// current addresses, without taking the arguments again, on the way to the
// door's repeat path (coll/door.h, RepeatPlan): the Python counterpart of
// the PMPI library's routes (capi/pmpi_route.h).
#pragma once

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace shancoll::bindings {

// One call with its bound arguments (one handle per parameter, the default
// where the caller gave none; the first is the communicator). Returns the
// result; C++ exceptions become the module's Python ones.
using Runner = pybind11::object (*)(const pybind11::handle* args);

struct EntryParam {
  const char* name;
  pybind11::object default_value;  // bound when the caller omits it; null: required
};

// A call as its collective's intake left it (the door's call, with the
// algorithm and options it points to), to run again.
class PreparedCall {
 public:
  virtual ~PreparedCall() = default;
  // Runs the call on `comm` with `buffers`: the addresses of the arrays
  // given for EntrySpec::buffers, in that order (null where None was given).
  virtual void run(MPI_Comm comm, std::byte* const* buffers) = 0;
};

// Takes a call's arguments as the entry's Runner does (the same checks, the
// same errors) and returns it prepared, not run; null, having taken
// nothing, for a call it does not prepare (the Runner then runs it).
using Prepare = std::unique_ptr<PreparedCall> (*)(const pybind11::handle* args);

struct EntrySpec {
  std::vector<EntryParam> params;  // in the Python signature's order
  int positional;                  // how many of them may be passed by position
  Runner run;
  // The signature ends in **options: other keywords are bound, as a dict
  // (empty if none), after the last parameter.
  bool keywords = false;
  // A call whose arrays are exact ndarrays (or None) and whose other
  // arguments are None, bools, ints, floats, strs, mpi4py Comms or mpi4py
  // Ops of predefined ops is prepared, run and kept (until a communicator's
  // shancoll state is freed: entry.cc, KeptCall); `buffers`: the indices of the array
  // parameters, in the order PreparedCall::run takes their addresses.
  Prepare prepare = nullptr;
  std::vector<int> buffers;
};

// The compiled function standing for `signature`, the Python function that
// documents it (never called): called by vectorcall like a builtin, it shows
// that function's name, docstring, module and (through __wrapped__, which
// inspect.signature and help() follow) its signature.
pybind11::object make_entry(pybind11::function signature, EntrySpec spec);

// Drops every entry's kept call (with the GIL). Stale kept calls (a
// communicator's shancoll state freed since: shancoll::states_freed) are
// dropped on their entry's next call; this drops them all, at interpreter
// exit (atexit, before mpi4py's MPI_Finalize), while MPI and Python work.
void drop_kept_calls();
// _core._drop_kept_calls, registered with atexit.
void bind_entries(pybind11::module_& m);

}  // namespace shancoll::bindings
