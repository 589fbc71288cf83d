// Builtin entry points that run the whole call in C++ (see entry.h).
#include "entry.h"

#include <structmember.h>

#include <memory>
#include <string>

#include "arguments.h"
#include "shancoll/error.h"

namespace py = pybind11;

namespace shancoll::bindings {
namespace {

constexpr std::size_t kMaxParams = 16;
// What one entry needs; owned by its Python object (EntryObject).
struct Entry {
  EntrySpec spec;
  std::vector<py::object> names;  // interned parameter names
  std::string name;
};

int param_index(const Entry& e, PyObject* keyword) {
  for (std::size_t i = 0; i < e.names.size(); ++i)  // call sites pass interned names
    if (e.names[i].ptr() == keyword) return static_cast<int>(i);
  for (std::size_t i = 0; i < e.names.size(); ++i)
    if (PyUnicode_Compare(e.names[i].ptr(), keyword) == 0) return static_cast<int>(i);
  PyErr_Clear();
  return -1;
}

[[noreturn]] void signature_error(const Entry& e, const std::string& what) {
  throw py::type_error(e.name + "() " + what);
}

// The **options dict of a call without other keywords: read, never written.
py::handle no_options() {
  static const py::handle empty = py::dict().release();
  return empty;
}

// The arguments in parameter order (into `out`, all null on entry), defaults
// filled in, and **options last when the signature has it. `extra` owns the
// options dict of this call.
void bind(const Entry& e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
          py::handle* out, py::object& extra) {
  const std::size_t n = e.spec.params.size();
  if (nargs > e.spec.positional)
    signature_error(e, "takes at most " + std::to_string(e.spec.positional) +
                           " positional arguments (" + std::to_string(nargs) + " given)");
  for (Py_ssize_t i = 0; i < nargs; ++i) out[i] = args[i];
  const Py_ssize_t keywords = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < keywords; ++k) {
    PyObject* keyword = PyTuple_GET_ITEM(kwnames, k);
    const int i = param_index(e, keyword);
    if (i >= 0 && out[i])
      signature_error(e,
                      "got multiple values for argument '" + std::string(py::str(keyword)) + "'");
    if (i >= 0) {
      out[i] = args[nargs + k];
    } else if (e.spec.keywords) {
      if (!extra) extra = py::dict();
      if (PyDict_SetItem(extra.ptr(), keyword, args[nargs + k]) < 0) throw py::error_already_set();
    } else {
      signature_error(e,
                      "got an unexpected keyword argument '" + std::string(py::str(keyword)) + "'");
    }
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (!out[i]) out[i] = e.spec.params[i].default_value;
    if (!out[i])
      signature_error(e, "missing required argument '" + std::string(e.spec.params[i].name) + "'");
  }
  if (e.spec.keywords) out[n] = extra ? py::handle(extra) : no_options();
}

// ArgumentError as Python's shancoll.ArgumentError, naming the caller's
// rank (unless the message does already).
void raise_argument_error(const std::string& message, py::handle comm) {
  static const py::handle type =
      py::object(py::module_::import("shancoll._core").attr("ArgumentError")).release();
  const std::string rank = comm ? rank_of_caller(comm) : "?";
  std::string text = message;
  if (text.find("rank " + rank) == std::string::npos) text += " (on rank " + rank + ")";
  PyErr_SetString(type.ptr(), text.c_str());
}

bool is_argument_error(py::error_already_set& err) {
  static const py::handle type =
      py::object(py::module_::import("shancoll._core").attr("ArgumentError")).release();
  return err.matches(type);
}

PyObject* call_entry(const Entry& e, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  py::handle bound[kMaxParams + 1];
  try {
    py::object extra;  // a dict only when there are options (no allocation for most calls)
    bind(e, args, nargs, kwnames, bound, extra);
    return e.spec.run(bound).release().ptr();
  } catch (const ArgumentError& err) {
    raise_argument_error(err.what(), bound[0]);
  } catch (py::error_already_set& err) {
    if (is_argument_error(err))
      raise_argument_error(py::str(err.value()), bound[0]);
    else
      err.restore();
  } catch (...) {
    py::detail::try_translate_exceptions();  // the module's registered exceptions
  }
  return nullptr;
}

// The entry as a Python object: called by vectorcall, as a builtin function
// is, and documented by the Python function it stands for: `__wrapped__`,
// which inspect.signature() and help() follow, and its name, module and
// docstring. A descriptor that binds to nothing, so that inspect counts it a
// routine (help() then shows its signature and docstring).
struct EntryObject {
  PyObject ob_base;  // PyObject_HEAD
  vectorcallfunc vectorcall;
  Entry* entry;
  PyObject* wrapped;
};

EntryObject* entry_of(PyObject* self) { return reinterpret_cast<EntryObject*>(self); }

PyObject* entry_vectorcall(PyObject* self, PyObject* const* args, std::size_t nargsf,
                           PyObject* kwnames) {
  return call_entry(*entry_of(self)->entry, args, PyVectorcall_NARGS(nargsf), kwnames);
}

void entry_dealloc(PyObject* self) {
  delete entry_of(self)->entry;
  Py_XDECREF(entry_of(self)->wrapped);
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);  // a heap type: each instance holds it
}

PyObject* entry_repr(PyObject* self) {
  return PyUnicode_FromFormat("<shancoll function %s>", entry_of(self)->entry->name.c_str());
}

PyObject* entry_get(PyObject* self, PyObject*, PyObject*) { return Py_NewRef(self); }

PyObject* wrapped_attribute(PyObject* self, void* name) {
  return PyObject_GetAttrString(entry_of(self)->wrapped, static_cast<const char*>(name));
}

PyGetSetDef entry_getset[] = {
    {"__wrapped__", [](PyObject* self, void*) { return Py_NewRef(entry_of(self)->wrapped); },
     nullptr, nullptr, nullptr},
    {"__name__", wrapped_attribute, nullptr, nullptr, const_cast<char*>("__name__")},
    {"__qualname__", wrapped_attribute, nullptr, nullptr, const_cast<char*>("__qualname__")},
    {"__module__", wrapped_attribute, nullptr, nullptr, const_cast<char*>("__module__")},
    {"__doc__", wrapped_attribute, nullptr, nullptr, const_cast<char*>("__doc__")},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef entry_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(EntryObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyTypeObject* entry_type() {
  static PyTypeObject* type = [] {
    PyType_Slot slots[] = {{Py_tp_dealloc, reinterpret_cast<void*>(entry_dealloc)},
                           {Py_tp_repr, reinterpret_cast<void*>(entry_repr)},
                           {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
                           {Py_tp_descr_get, reinterpret_cast<void*>(entry_get)},
                           {Py_tp_getset, entry_getset},
                           {Py_tp_members, entry_members},
                           {0, nullptr}};
    PyType_Spec spec{"shancoll._core.function", sizeof(EntryObject), 0,
                     Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_IMMUTABLETYPE,
                     slots};
    auto* t = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
    if (!t) throw py::error_already_set();
    return t;
  }();
  return type;
}

}  // namespace

py::object make_entry(py::function signature, EntrySpec spec) {
  if (spec.params.size() > kMaxParams) throw std::logic_error("make_entry: too many parameters");
  auto e = std::make_unique<Entry>();
  for (const EntryParam& p : spec.params) {
    PyObject* name = PyUnicode_InternFromString(p.name);
    if (!name) throw py::error_already_set();
    e->names.push_back(py::reinterpret_steal<py::object>(name));
  }
  e->spec = std::move(spec);
  e->name = py::str(signature.attr("__name__"));
  PyTypeObject* type = entry_type();
  auto* self = PyObject_New(EntryObject, type);  // holds a reference to its heap type
  if (!self) throw py::error_already_set();
  self->vectorcall = entry_vectorcall;
  self->entry = e.release();
  self->wrapped = signature.release().ptr();
  return py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(self));
}

}  // namespace shancoll::bindings
