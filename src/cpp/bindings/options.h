// Python keyword options -> the core's CallOptions, through the one option
// table (shancoll/call_options.h): the value's Python type is kept (bool,
// int, float, str, list of ints), and the table checks it against the
// option's kind, in the same words as for the C API and the environment.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shancoll/call_options.h"
#include "shancoll/error.h"

namespace shancoll::bindings {

inline OptionValue option_value(const std::string& key, pybind11::handle v) {
  namespace py = pybind11;
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) return py::cast<std::int64_t>(v);
  if (PyFloat_Check(v.ptr())) return py::cast<double>(v);
  if (PyUnicode_Check(v.ptr())) return py::cast<std::string>(v);
  const std::string type = py::str(py::type::of(v).attr("__name__"));
  if (type == "bool_") return py::cast<bool>(v);  // numpy.bool_
  if (PyIndex_Check(v.ptr()))
    return py::cast<std::int64_t>(py::reinterpret_steal<py::object>(PyNumber_Index(v.ptr())));
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v) || type == "ndarray") {
    std::vector<int> items;
    for (py::handle item : py::iter(v)) {
      if (PyBool_Check(item.ptr()) || !PyIndex_Check(item.ptr()))
        throw ArgumentError(key + ": expected a list of integers, got " + std::string(py::repr(v)));
      items.push_back(py::cast<int>(py::reinterpret_steal<py::object>(PyNumber_Index(item.ptr()))));
    }
    return items;
  }
  if (PyNumber_Check(v.ptr()) && py::hasattr(v, "__float__")) return py::cast<double>(v);
  throw ArgumentError(key + ": unsupported value " + std::string(py::repr(v)));
}

// A call's options as Python gave them: the collective's defaults with each
// given option set; get() is nullptr when none was (the door then takes the
// defaults, parsed once).
class PythonOptions {
 public:
  explicit PythonOptions(Collective c) : collective_(c) {}
  // Sets `key` unless `value` is None.
  void set(const std::string& key, pybind11::handle value) {
    if (value.is_none()) return;
    set(key, option_value(key, value));
  }
  void set(const std::string& key, const OptionValue& value) {
    if (!options_) options_.emplace(default_options(collective_));  // the plain call makes none
    options_->set(collective_, key, value);
  }
  void set_all(const pybind11::dict& options) {
    for (auto item : options) set(pybind11::cast<std::string>(item.first), item.second);
  }
  const CallOptions* get() {
    if (!options_) return nullptr;
    options_->complete();
    return &*options_;
  }

 private:
  Collective collective_;
  std::optional<CallOptions> options_;
};

}  // namespace shancoll::bindings
