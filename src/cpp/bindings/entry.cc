// Builtin entry points that run the whole call in C++ (see entry.h).
#include "entry.h"

#include <memory>
#include <string>

#include "arguments.h"
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

PyObject* call_entry(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  const Entry& e = *static_cast<const Entry*>(PyCapsule_GetPointer(self, kCapsuleName));
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
  const py::object doc = signature.attr("__doc__");
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
  const py::object module = signature.attr("__module__");
  PyObject* fn = PyCFunction_NewEx(def, owner.ptr(), module.ptr());
  if (!fn) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(fn);
}

}  // namespace shancoll::bindings
