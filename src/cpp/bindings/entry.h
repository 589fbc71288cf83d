// The Python entry points of the hot collectives (allreduce, iallreduce,
// bcast, reduce) as builtin functions, without a Python frame or pybind11's
// dispatcher in front of the call.
//
// Why: a small collective takes about 1 us; a Python wrapper function costs
// about 0.1 us and pybind11's argument dispatch about as much again, so they
// would decide the small-message race against mpi4py's own Allreduce. An entry
// binds the call's arguments by name (vectorcall: no tuple, no dict), hands
// them to the collective's plain-call runner (fast_args.h) and, when that
// declines (any other form of the call: buffer specs, callables, options) or
// refuses it with an ArgumentError, forwards the call unchanged to the Python
// implementation, which parses the general forms and words the errors.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

namespace shancoll::bindings {

// The plain call with its bound arguments (one handle per parameter, the
// default where the caller gave none). Returns the result, or a null object
// when the call is not the plain case (nothing done). C++ exceptions
// propagate: ArgumentError forwards the call to the Python implementation,
// anything else becomes its Python exception.
using PlainRunner = pybind11::object (*)(const pybind11::handle* args);

struct EntryParam {
  const char* name;
  pybind11::object default_value;  // bound when the caller omits it
};

struct EntrySpec {
  std::vector<EntryParam> params;  // in the Python signature's order
  int positional;                  // how many of them may be passed by position
  PlainRunner run;
};

// The builtin function for `python_impl` (its name and docstring): collective
// calls go to `spec.run` first. The spec lives as long as the module.
pybind11::object make_entry(pybind11::function python_impl, EntrySpec spec);

}  // namespace shancoll::bindings
