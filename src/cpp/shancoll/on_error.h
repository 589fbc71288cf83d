// What a collective does when it fails during communication (a timeout, an
// MPI error; not a bad argument, which is refused before any communication
// and leaves the communicator usable):
//
//   raise  (default) the error goes back to the caller: an exception in
//          Python, an error code from the C API, the communicator's error
//          handler in the PMPI library (fatal unless the program changed it);
//   abort  one line on stderr (rank, collective, algorithm, the error), then
//          PMPI_Abort(MPI_COMM_WORLD, 1): the job ends instead of leaving the
//          other ranks waiting in their collective or in MPI_Finalize.
//
// Set by SHANCOLL_ON_ERROR (read once, see environment.h) or by
// set_on_error(), which wins. Comm::run is the one place that acts on it.
// Threads: the choice and the abort hook are atomics, set from any thread.
#pragma once

#include <string>

namespace shancoll {

enum class OnError { raise, abort };

// The active choice. Never throws: an invalid SHANCOLL_ON_ERROR counts as
// raise here; check_on_error() refuses it at the first call on a communicator.
OnError on_error();
const char* on_error_name(OnError mode);

// "raise" or "abort"; "" drops the explicit choice (back to
// SHANCOLL_ON_ERROR). ArgumentError naming on_error for anything else.
void set_on_error(const std::string& mode);

// ArgumentError naming SHANCOLL_ON_ERROR when it holds anything but "raise",
// "abort" or nothing, unless set_on_error() chose explicitly.
void check_on_error();

// A collective failed during communication (`what`: the error's message).
// Under abort: prints one line to stderr, runs the abort hook and aborts the
// job; never returns. Under raise: returns (the caller rethrows).
void on_failure(const char* collective, const char* algorithm, const char* what);

// Runs just before the abort, e.g. to flush an interpreter's own buffered
// streams (the Python module flushes sys.stdout and sys.stderr). Must not throw.
void set_abort_hook(void (*hook)());

}  // namespace shancoll
