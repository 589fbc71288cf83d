// AllreduceRequest as a plain CPython type rather than a pybind11 class:
// creating, waiting on and freeing a pybind11 instance (its instance
// registry, its argument dispatch) cost about a tenth of a 255-double
// iallreduce, against the 10% the whole split-phase overhead may take.
#include "request.h"

#include "shancoll/progress.h"

namespace py = pybind11;

namespace shancoll::bindings {
namespace {

struct RequestObject {
  PyObject_HEAD PyRequest* r;  // owned
};

PyTypeObject* request_type = nullptr;

PyRequest& of(PyObject* self) { return *reinterpret_cast<RequestObject*>(self)->r; }

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

void dealloc(PyObject* self) {
  delete reinterpret_cast<RequestObject*>(self)->r;
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // heap types are owned by their instances
}

PyObject* test(PyObject* self, PyObject*) {
  return guarded([&] {
    PyRequest& r = of(self);
    const bool done = r.req->test();
    if (done) r.release_op();
    return py::bool_(done).release().ptr();
  });
}

// wait(timeout=None)
PyObject* wait(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return guarded([&] {
    const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (nargs + keywords > 1 ||
        (keywords == 1 &&
         PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "timeout") != 0))
      throw py::type_error("wait() takes one optional argument, timeout");
    PyObject* timeout = nargs + keywords == 1 ? args[0] : Py_None;
    double seconds = 0;
    if (timeout != Py_None) {
      if (!PyFloat_Check(timeout) && !PyLong_CheckExact(timeout))
        throw ArgumentError("timeout: expected a positive number of seconds");
      seconds = PyFloat_AsDouble(timeout);
      if (!(seconds > 0)) throw ArgumentError("timeout: expected a positive number of seconds");
    }
    PyRequest& r = of(self);
    {
      py::gil_scoped_release release;
      r.req->wait(seconds > 0 ? seconds : default_timeout());
    }
    r.release_op();
    Py_RETURN_NONE;
  });
}

PyObject* get_done(PyObject* self, void*) { return PyBool_FromLong(of(self).req->done()); }
PyObject* get_test_calls(PyObject* self, void*) {
  return PyLong_FromLongLong(of(self).req->test_calls());
}
PyObject* get_algorithm(PyObject* self, void*) {
  return PyUnicode_FromString(of(self).req->algorithm());
}
PyObject* get_rounds(PyObject* self, void*) {
  return PyLong_FromLongLong(of(self).req->stats().rounds);
}
PyObject* get_op(PyObject* self, void*) {
  const py::object& op = of(self).op_to_free;
  return (op ? op : py::none()).inc_ref().ptr();
}
int set_op(PyObject* self, PyObject* value, void*) {
  of(self).op_to_free = py::reinterpret_borrow<py::object>(value ? value : Py_None);
  return 0;
}

PyObject* refuse_new(PyTypeObject*, PyObject*, PyObject*) {
  PyErr_SetString(PyExc_TypeError, "AllreduceRequest: returned by shancoll.iallreduce only");
  return nullptr;
}

PyMethodDef methods[] = {
    {"test", test, METH_NOARGS,
     "Advances the allreduce without blocking; True when it is complete. After 128 "
     "unsuccessful calls (4 where ranks outnumber cores) each call also yields the core "
     "(sched_yield), so a test() loop lets the ranks it waits for run."},
    {"wait", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(wait)),
     METH_FASTCALL | METH_KEYWORDS,
     "wait(timeout=None)\n--\n\nBlocks until complete. TimeoutError after `timeout` seconds "
     "(None: SHANCOLL_TIMEOUT, else 120 s); the request stays valid and can be waited on "
     "(or tested) again."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef getset[] = {
    {"done", get_done, nullptr, "True once the allreduce is complete.", nullptr},
    {"test_calls", get_test_calls, nullptr, "How many times test() was called on this request.",
     nullptr},
    {"algorithm", get_algorithm, nullptr, "The algorithm running the allreduce.", nullptr},
    {"rounds", get_rounds, nullptr, "Communication rounds of the algorithm (known when done).",
     nullptr},
    {"op_to_free", get_op, set_op,
     "The MPI.Op made for a Python callable, freed when the request completes.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(refuse_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(dealloc)},
    {Py_tp_methods, methods},
    {Py_tp_getset, getset},
    {Py_tp_doc,
     const_cast<char*>("A split-phase allreduce in progress (returned by iallreduce).\n\n"
                       "Progress happens only inside test() and wait() (no thread). recvbuf holds "
                       "the result once test() returned True or wait() returned; the buffers must "
                       "not be touched before.")},
    {0, nullptr}};

PyType_Spec spec = {"shancoll._core.AllreduceRequest", sizeof(RequestObject), 0, Py_TPFLAGS_DEFAULT,
                    slots};

}  // namespace

py::object request_object(std::unique_ptr<PyRequest> r) {
  PyObject* self = request_type->tp_alloc(request_type, 0);
  if (!self) throw py::error_already_set();
  reinterpret_cast<RequestObject*>(self)->r = r.release();
  return py::reinterpret_steal<py::object>(self);
}

void bind_request_type(py::module_& m) {
  PyObject* type = PyType_FromSpec(&spec);
  if (!type) throw py::error_already_set();
  request_type = reinterpret_cast<PyTypeObject*>(type);  // kept: the module holds it too
  m.attr("AllreduceRequest") = py::reinterpret_borrow<py::object>(type);
}

}  // namespace shancoll::bindings
