// The fast entries' argument checks (allreduce, iallreduce, bcast, reduce).
//
// A fast entry takes the call as the user wrote it, straight from Python,
// because the Python argument layer costs about 1-2 us per call, more than a
// small collective. Each check returns false for "not the plain case"
// (leaving no Python error set); the entry then declines and the Python layer
// takes the general path, which also words the errors.
#pragma once

#include <mpi.h>
#include <mpi4py/mpi4py.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "shancoll/error.h"
#include "shancoll/ops.h"

namespace shancoll::bindings {

// A Python buffer held (exported) as long as the call or request lives.
class View {
 public:
  View() = default;
  View(const View&) = delete;
  View& operator=(const View&) = delete;
  ~View() {
    if (held_) PyBuffer_Release(&view_);
  }
  // False (and no Python error pending) if `obj` cannot export a C-contiguous
  // buffer with these flags.
  bool acquire(pybind11::handle obj, int flags) {
    held_ = PyObject_GetBuffer(obj.ptr(), &view_, flags | PyBUF_C_CONTIGUOUS) == 0;
    if (!held_) PyErr_Clear();
    return held_;
  }
  bool held() const { return held_; }
  void* ptr() const { return held_ ? view_.buf : nullptr; }
  std::int64_t bytes() const { return held_ ? view_.len : 0; }
  const Py_buffer& get() const { return view_; }

 private:
  Py_buffer view_{};
  bool held_ = false;
};

// numpy.ndarray and MPI.IN_PLACE, looked up once (init_fast_args, at import).
inline PyTypeObject* ndarray_type = nullptr;
inline PyObject* in_place_object = nullptr;

inline void init_fast_args() {
  if (ndarray_type) return;
  namespace py = pybind11;
  // Kept for the module's lifetime (released at interpreter exit).
  ndarray_type = reinterpret_cast<PyTypeObject*>(
      py::object(py::module_::import("numpy").attr("ndarray")).release().ptr());
  in_place_object = py::object(py::module_::import("mpi4py.MPI").attr("IN_PLACE")).release().ptr();
}

inline bool is_ndarray(pybind11::handle h) { return Py_TYPE(h.ptr()) == ndarray_type; }
// mpi4py's rule: MPI.IN_PLACE or None.
inline bool is_in_place(pybind11::handle h) { return h.is_none() || h.ptr() == in_place_object; }

// NumPy's kind of a native-order buffer format ("<d", "i", "Zf", "?", ...).
inline bool numpy_kind(const char* format, char& kind) {
  if (!format) return false;
  if (*format == '@' || *format == '=' || *format == '<') ++format;  // little-endian host
  const bool complex = *format == 'Z';
  if (complex) ++format;
  if (!format[0] || format[1]) return false;
  const char c = format[0];
  if (complex) {
    kind = 'c';
    return c == 'f' || c == 'd' || c == 'g';
  }
  if (c == 'f' || c == 'd' || c == 'g')
    kind = 'f';
  else if (c == '?')
    kind = 'b';
  else if (std::strchr("bhilq", c))
    kind = 'i';
  else if (std::strchr("BHILQ", c))
    kind = 'u';
  else
    return false;
  return true;
}

// The element type of an exported ndarray buffer (acquired with PyBUF_FORMAT).
inline bool plain_dtype(const Py_buffer& b, DType& type) {
  char kind = 0;
  if (!numpy_kind(b.format, kind) || b.itemsize <= 0) return false;
  try {
    type = dtype_from_numpy(kind, static_cast<int>(b.itemsize), "recvbuf");
  } catch (const ArgumentError&) {
    return false;  // e.g. float16: the general path words it
  }
  return true;
}

// None -> none_value, an exact int that fits -> it; bool and others: false.
inline bool plain_int(pybind11::handle h, int& out, int none_value) {
  if (h.is_none()) {
    out = none_value;
    return true;
  }
  if (!PyLong_CheckExact(h.ptr())) return false;
  const long v = PyLong_AsLong(h.ptr());
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  out = static_cast<int>(v);
  return out == v;
}

// An exact str; "auto" becomes "" (the core then reads the environment).
inline bool plain_algorithm(pybind11::handle h, std::string& out) {
  if (!PyUnicode_CheckExact(h.ptr())) return false;
  Py_ssize_t n = 0;
  const char* name = PyUnicode_AsUTF8AndSize(h.ptr(), &n);
  if (!name) {
    PyErr_Clear();
    return false;
  }
  out.assign(name, static_cast<std::size_t>(n));
  if (out == "auto") out.clear();
  return true;
}

// None -> 0 (the default), an exact float -> it.
inline bool plain_timeout(pybind11::handle h, double& out) {
  if (h.is_none()) {
    out = 0;
    return true;
  }
  if (!PyFloat_CheckExact(h.ptr())) return false;
  out = PyFloat_AS_DOUBLE(h.ptr());
  return true;
}

// An mpi4py MPI.Op (callables take the general path).
inline bool plain_op(pybind11::handle op, MPI_Op& out) {
  if (!PyObject_TypeCheck(op.ptr(), &PyMPIOp_Type)) return false;
  out = *PyMPIOp_Get(op.ptr());
  return true;
}

inline bool plain_comm(pybind11::handle comm) {
  return PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type);
}

}  // namespace shancoll::bindings
