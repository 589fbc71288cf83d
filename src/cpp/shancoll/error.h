// Errors raised by the core. The bindings translate them: ArgumentError ->
// ValueError, TimeoutError -> TimeoutError, MpiError -> RuntimeError.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

namespace shancoll {

struct ArgumentError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct TimeoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct MpiError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws MpiError naming the failed call when rc is not MPI_SUCCESS.
void check_mpi(int rc, const char* what);

}  // namespace shancoll
