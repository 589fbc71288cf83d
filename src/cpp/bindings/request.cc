// Request as a plain CPython type rather than a pybind11 class: creating,
// waiting on and freeing a pybind11 instance (its instance registry, its
// argument dispatch) cost about a tenth of a 255-double iallreduce, against
// the 10% the whole split-phase overhead may take.
#include "request.h"

#include <string>
#include <utility>
#include <vector>

#include "arguments.h"
#include "shancoll/coll/request/requests.h"
#include "shancoll/progress.h"
#include "shancoll/transport/p2p.h"

namespace py = pybind11;

namespace shancoll::bindings {
namespace {

struct RequestObject {
  PyObject_HEAD PyRequest* r;  // owned; null once freed
};

PyTypeObject* request_type = nullptr;

PyRequest& of(PyObject* self) {
  PyRequest* r = reinterpret_cast<RequestObject*>(self)->r;
  if (!r) throw ArgumentError("request: already freed");
  return *r;
}

// A method body with C++ exceptions turned into the module's Python ones.
template <class F>
PyObject* guarded(F&& body) {
  try {
    return body();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();
  }
  return nullptr;
}

// What a request dropped while still in flight leaves behind: the MPI
// library completes a freed collective request on its own (MpiEngine), and a
// cancelled receive may still land (ScheduleEngine), so its buffers and its
// Python op stay alive for the rest of the process instead of going back to
// NumPy's allocator, whose reuse of them corrupted the heap.
void keep_for_the_library(PyRequest& r) {
  static auto* kept = new std::vector<std::pair<std::vector<BufferView>, py::object>>;
  kept->emplace_back(std::move(r.views), std::move(r.op_to_free));
}

void dealloc(PyObject* self) {
  PyRequest* r = reinterpret_cast<RequestObject*>(self)->r;
  if (r) {
    if (r->req && !r->req->done())
      keep_for_the_library(*r);
    else
      r->release_op();
    delete r;
  }
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // heap types are owned by their instances
}

// A nonblocking request's op is freed once it is done; a persistent one may run again.
void completed(PyRequest& r) {
  if (!r.req->persistent()) r.release_op();
}

PyObject* test(PyObject* self, PyObject*) {
  return guarded([&] {
    PyRequest& r = of(self);
    const bool done = r.req->test();
    if (done) completed(r);
    return py::bool_(done).release().ptr();
  });
}

void start_one(PyRequest& r) {
  py::gil_scoped_release release;
  r.req->start();
}

PyObject* start(PyObject* self, PyObject*) {
  return guarded([&] {
    start_one(of(self));
    Py_RETURN_NONE;
  });
}

// The seconds of wait(timeout=...): None is the call's timeout.
double timeout_of(PyObject* timeout, const Request& req) {
  if (timeout == Py_None) return req.timeout();
  if (!PyFloat_Check(timeout) && !PyLong_CheckExact(timeout))
    throw ArgumentError("timeout: expected a positive number of seconds");
  const double seconds = PyFloat_AsDouble(timeout);
  if (!(seconds > 0)) throw ArgumentError("timeout: expected a positive number of seconds");
  return seconds;
}

// wait(timeout=None)
PyObject* wait(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + keywords > 1 ||
        (keywords == 1 &&
         PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "timeout") != 0))
      throw py::type_error("wait() takes one optional argument, timeout");
    PyRequest& r = of(self);
    const double seconds = timeout_of(nargs + keywords == 1 ? args[0] : Py_None, *r.req);
    {
      py::gil_scoped_release release;
      r.req->wait(seconds);
    }
    completed(r);
    Py_RETURN_NONE;
  });
}

// MPI: freeing a request of a collective in flight is erroneous; refused.
PyObject* free_request(PyObject* self, PyObject*) {
  return guarded([&] {
    PyRequest& r = of(self);
    if (!r.req->done())
      throw ArgumentError(std::string("request: the ") + r.req->collective() +
                          " is still active; wait for it before free()");
    r.release_op();
    delete &r;
    reinterpret_cast<RequestObject*>(self)->r = nullptr;
    Py_RETURN_NONE;
  });
}

PyObject* get_done(PyObject* self, void*) {
  return guarded([&] { return PyBool_FromLong(of(self).req->done()); });
}
PyObject* get_persistent(PyObject* self, void*) {
  return guarded([&] { return PyBool_FromLong(of(self).req->persistent()); });
}
PyObject* get_test_calls(PyObject* self, void*) {
  return guarded([&] { return PyLong_FromLongLong(of(self).req->test_calls()); });
}
PyObject* get_algorithm(PyObject* self, void*) {
  return guarded([&] { return PyUnicode_FromString(of(self).req->algorithm()); });
}
PyObject* get_collective(PyObject* self, void*) {
  return guarded([&] { return PyUnicode_FromString(of(self).req->collective()); });
}
PyObject* get_rounds(PyObject* self, void*) {
  return guarded([&] { return PyLong_FromLongLong(of(self).req->stats().rounds); });
}
PyObject* get_op(PyObject* self, void*) {
  return guarded([&] {
    const py::object& op = of(self).op_to_free;
    return (op ? op : py::none()).inc_ref().ptr();
  });
}
int set_op(PyObject* self, PyObject* value, void*) {
  PyObject* done = guarded([&] {
    of(self).op_to_free = py::reinterpret_borrow<py::object>(value ? value : Py_None);
    Py_RETURN_NONE;
  });
  if (!done) return -1;
  Py_DECREF(done);
  return 0;
}

PyObject* refuse_new(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError,
                  "Request: returned by shancoll's i<collective> and <collective>_init only");
  return nullptr;
}

PyMethodDef methods[] = {
    {"start", start, METH_NOARGS,
     "Starts a persistent request again (the buffers' current contents). ValueError "
     "(ArgumentError) if it is still active, or if it is a nonblocking request (started when "
     "made)."},
    {"test", test, METH_NOARGS,
     "Advances the collective without blocking; True when it is complete. After 128 "
     "unsuccessful calls (4 where ranks outnumber cores) each call also yields the core "
     "(sched_yield), so a test() loop lets the ranks it waits for run."},
    {"wait", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(wait)),
     METH_FASTCALL | METH_KEYWORDS,
     "wait(timeout=None)\n--\n\nBlocks until complete. TimeoutError after `timeout` seconds "
     "(None: the call's timeout, else SHANCOLL_TIMEOUT, else 120 s); the request stays valid "
     "and can be waited on (or tested) again."},
    {"free", free_request, METH_NOARGS,
     "Frees the request (not while active: ValueError). A persistent request is freed "
     "before its first start or after a completed run; any later use raises ValueError."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef getset[] = {
    {"done", get_done, nullptr,
     "True once the collective is complete (a persistent request not started: True).", nullptr},
    {"persistent", get_persistent, nullptr, "True for a <collective>_init request.", nullptr},
    {"test_calls", get_test_calls, nullptr, "How many times test() was called on this request.",
     nullptr},
    {"algorithm", get_algorithm, nullptr, "The algorithm running the collective.", nullptr},
    {"collective", get_collective, nullptr, "The collective (\"bcast\", ...).", nullptr},
    {"rounds", get_rounds, nullptr, "Communication rounds of the last completed run.", nullptr},
    {"op_to_free", get_op, set_op,
     "The MPI.Op made for a Python callable, freed when the request can no longer run.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(refuse_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
    {Py_tp_methods, methods},
    {Py_tp_getset, getset},
    {Py_tp_doc,
     const_cast<char*>(
         "A nonblocking (i<collective>) or persistent (<collective>_init) collective.\n\n"
         "Progress happens only inside test() and wait() and every other wait of shancoll (no "
         "thread). The receive buffers hold the result once test() returned True or wait() "
         "returned; the buffers must not be touched while the request is active.")},
    {0, nullptr}};

PyType_Spec spec = {"shancoll._core.Request", sizeof(RequestObject), 0, Py_TPFLAGS_DEFAULT, slots};

// startall(requests): starts every persistent request in order (MPI_Startall's
// order rule: the same order on every rank).
py::object startall(const py::iterable& requests) {
  std::vector<PyRequest*> all;
  for (py::handle h : requests) {
    if (Py_TYPE(h.ptr()) != request_type)
      throw ArgumentError("requests: expected shancoll requests, got " +
                          std::string(Py_TYPE(h.ptr())->tp_name));
    all.push_back(&of(h.ptr()));
  }
  for (PyRequest* r : all) start_one(*r);
  return py::none();
}

}  // namespace

py::object request_object(std::unique_ptr<PyRequest> r) {
  PyObject* self = request_type->tp_alloc(request_type, 0);
  if (!self) throw py::error_already_set();
  reinterpret_cast<RequestObject*>(self)->r = r.release();
  return py::reinterpret_steal<py::object>(self);
}

void refuse_request_everywhere(py::handle comm_arg, const ArgumentError& e, bool persistent) {
  MPI_Comm comm = MPI_COMM_NULL;
  int inter = 0;
  try {
    comm = comm_of(comm_arg);
    check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  } catch (const std::exception&) {
    return;  // no communicator to tell: every rank refuses it alike
  }
  if (inter) return;
  py::gil_scoped_release release;
  refuse_before_door(comm, "the request", e.what(), persistent);
}

void refuse_inter_request(Mode mode, const char* collective) {
  if (mode != Mode::blocking)
    throw ArgumentError(std::string("comm: the request forms of ") + collective +
                        " need an intra-communicator");
}

void bind_request_type(py::module_& m) {
  PyObject* type = PyType_FromSpec(&spec);
  if (!type) throw py::error_already_set();
  request_type = reinterpret_cast<PyTypeObject*>(type);  // kept: the module holds it too
  m.attr("Request") = py::reinterpret_borrow<py::object>(type);
  m.def("startall", &startall, py::arg("requests"),
        "Starts every persistent request of `requests`, in order.");
  m.def("_kept_for_freed_requests", &kept_for_freed_requests,
        "How many request engines' scratch buffers were kept for the rest of the process, "
        "their runs left in flight (tests).");
}

}  // namespace shancoll::bindings
