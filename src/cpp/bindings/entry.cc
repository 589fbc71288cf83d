// Builtin entry points that try the plain call in C++ (see entry.h).
#include "entry.h"

#include <memory>
#include <string>

#include "shancoll/error.h"

namespace py = pybind11;

namespace shancoll::bindings {
namespace {

constexpr std::size_t kMaxParams = 16;
constexpr const char* kCapsuleName = "shancoll.entry";

// What one builtin function needs; owned by the capsule the function holds
// as its `self`, so it lives exactly as long as the function.
struct Entry {
  EntrySpec spec;
  std::vector<py::object> names;  // interned parameter names
  py::function python_impl;
  std::string name, doc;
  PyMethodDef def{};
};

int param_index(const Entry& e, PyObject* keyword) {
  for (std::size_t i = 0; i < e.names.size(); ++i)  // call sites pass interned names
    if (e.names[i].ptr() == keyword) return static_cast<int>(i);
  for (std::size_t i = 0; i < e.names.size(); ++i)
    if (PyUnicode_Compare(e.names[i].ptr(), keyword) == 0) return static_cast<int>(i);
  PyErr_Clear();
  return -1;
}

// The arguments in parameter order, defaults filled in; false for anything
// the Python signature alone can sort out (unknown or repeated keywords,
// **options, missing arguments, too many positionals).
bool bind(const Entry& e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
          py::handle* out) {
  const std::size_t n = e.spec.params.size();
  if (nargs > e.spec.positional) return false;
  for (std::size_t i = 0; i < n; ++i) out[i] = py::handle();
  for (Py_ssize_t i = 0; i < nargs; ++i) out[i] = args[i];
  const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    const int i = param_index(e, PyTuple_GET_ITEM(kwnames, k));
    if (i < 0 || out[i]) return false;
    out[i] = args[nargs + k];
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!out[i]) out[i] = e.spec.params[i].default_value;
    if (!out[i]) return false;
  }
  return true;
}

PyObject* forward(const Entry& e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return PyObject_Vectorcall(e.python_impl.ptr(), args, static_cast<std::size_t>(nargs), kwnames);
}

PyObject* call_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Entry& e = *static_cast<const Entry*>(PyCapsule_GetPointer(self, kCapsuleName));
  py::handle bound[kMaxParams];
  if (!bind(e, args, nargs, kwnames, bound)) return forward(e, args, nargs, kwnames);
  try {
    py::object result = e.spec.run(bound);
    if (result) return result.release().ptr();
  } catch (const ArgumentError&) {
    // the general path refuses it again, worded with the argument and rank
  } catch (py::error_already_set& err) {
    err.restore();
    return nullptr;
  } catch (...) {
    py::detail::try_translate_exceptions();  // the module's registered exceptions
    return nullptr;
  }
  return forward(e, args, nargs, kwnames);
}

}  // namespace

py::object make_entry(py::function python_impl, EntrySpec spec) {
  if (spec.params.size() > kMaxParams) throw std::logic_error("make_entry: too many parameters");
  auto e = std::make_unique<Entry>();
  for (const EntryParam& p : spec.params) {
    PyObject* name = PyUnicode_InternFromString(p.name);
    if (!name) throw py::error_already_set();
    e->names.push_back(py::reinterpret_steal<py::object>(name));
  }
  e->spec = std::move(spec);
  e->python_impl = python_impl;
  e->name = py::str(python_impl.attr("__name__"));
  const py::object doc = python_impl.attr("__doc__");
  e->doc = doc.is_none() ? "" : std::string(py::str(doc));
  e->def = {e->name.c_str(),
            reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(call_entry)),
            METH_FASTCALL | METH_KEYWORDS, e->doc.c_str()};
  PyMethodDef* def = &e->def;
  auto free_entry = [](PyObject* capsule) {
    delete static_cast<Entry*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  };
  PyObject* capsule = PyCapsule_New(e.get(), kCapsuleName, free_entry);
  if (!capsule) throw py::error_already_set();
  e.release();
  const py::object owner = py::reinterpret_steal<py::object>(capsule);
  const py::object module = python_impl.attr("__module__");
  PyObject* fn = PyCFunction_NewEx(def, owner.ptr(), module.ptr());
  if (!fn) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
}

}  // namespace shancoll::bindings
