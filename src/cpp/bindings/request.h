// shancoll.Request: a nonblocking or persistent collective as a Python
// object (the core's Request, coll/request/request.h, with the Python
// buffers it works on), and the one way every binding turns a parsed call
// into one.
#pragma once

#include <pybind11/pybind11.h>

#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "bufspec.h"
#include "entry.h"
#include "shancoll/coll/check.h"
#include "shancoll/coll/request/request.h"
#include "shancoll/error.h"

namespace shancoll::bindings {

// How a collective's entry runs its call: the blocking call (shancoll.bcast),
// its nonblocking form (ibcast) or its persistent form (bcast_init).
enum class Mode { blocking, nonblocking, persistent };

// A request with the Python buffers it works on (exported as long as it
// lives), and the MPI op made from a Python callable, freed once the
// request can no longer run (a nonblocking one done, a persistent one freed).
struct PyRequest {
  std::vector<BufferView> views;
  std::unique_ptr<Request> req;
  pybind11::object op_to_free;

  void release_op() {
    if (op_to_free && !op_to_free.is_none()) op_to_free.attr("Free")();
    op_to_free = pybind11::none();
  }
};

// The Python object of a request (it owns `r`).
pybind11::object request_object(std::unique_ptr<PyRequest> r);

// The request of a parsed call: make(persistent) runs without the GIL (a
// nonblocking request starts there); `views` (the call's exported buffers)
// move into the request, so the pointers the call holds stay valid.
template <class Make>
pybind11::object request_in_mode(Mode mode, Make&& make, std::initializer_list<BufferView*> views,
                                 pybind11::object op_to_free = pybind11::none()) {
  auto r = std::make_unique<PyRequest>();
  for (BufferView* v : views) r->views.push_back(std::move(*v));
  {
    pybind11::gil_scoped_release release;
    r->req = make(mode == Mode::persistent);
  }
  r->op_to_free = std::move(op_to_free);
  if (!r->req->persistent() && r->req->done()) r->release_op();
  return request_object(std::move(r));
}

// The entry runners of a collective whose intake takes the mode.
using ModeRunner = pybind11::object (*)(const pybind11::handle* args, Mode mode);
// A request door's refusal of its own arguments (ArgumentError) before the
// core's door: every rank's where the ranks compare the call (requests.h:
// refuse_before_door); `comm` the call's first argument.
void refuse_request_everywhere(pybind11::handle comm, const ArgumentError& e, bool persistent);

template <ModeRunner F, Mode M>
pybind11::object run_in_mode(const pybind11::handle* args) {
  if constexpr (M == Mode::blocking) {
    return F(args, M);
  } else {
    door_compared() = false;
    try {
      return F(args, M);
    } catch (const ArgumentError& e) {
      refuse_request_everywhere(args[0], e, M == Mode::persistent);
      throw;
    }
  }
}
template <ModeRunner F>
Runner runner(Mode mode) {
  switch (mode) {
    case Mode::nonblocking:
      return run_in_mode<F, Mode::nonblocking>;
    case Mode::persistent:
      return run_in_mode<F, Mode::persistent>;
    case Mode::blocking:
      break;
  }
  return run_in_mode<F, Mode::blocking>;
}

// ArgumentError naming comm: requests on inter-communicators are not offered.
void refuse_inter_request(Mode mode, const char* collective);

// Adds the type to the module as Request (shancoll.AllreduceRequest is its
// old name, kept in Python), and startall.
void bind_request_type(pybind11::module_& m);

}  // namespace shancoll::bindings
