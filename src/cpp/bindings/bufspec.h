// The one parser of mpi4py-style buffer specs behind every Python collective.
//
// A collective's buffer arguments are what mpi4py's Comm methods take (its
// msgbuffer.pxi is the model): a buffer-protocol object (a NumPy array, bytes,
// array.array, ...), or a list/tuple spec adding counts, displacements and an
// MPI datatype. parse_simple() and parse_vector() turn one argument into the
// exported buffer (held as long as the Message lives: a blocking call's, or a
// request's), its element type and byte counts, or throw ArgumentError whose
// message starts with the argument's name.
//
// The forms (counts and displacements in elements of the datatype;
// displacements default to the exclusive prefix sum of the counts):
//
//   simple (send buffers; receive buffers of bcast, allreduce, allgather, ...):
//     buf, [buf, datatype], [buf, count], [buf, (count, displ)],
//     [buf, count, datatype], [buf, (count, displ), datatype],
//     [buf, count, displ, datatype]
//   vector (receive buffers of the v-collectives):
//     buf (split evenly over the ranks, the first size % P one more),
//     [buf, datatype], [buf, counts], [buf, (counts, displs)],
//     [buf, counts, datatype], [buf, (counts, displs), datatype],
//     [buf, counts, displs] (shancoll: a 3rd item that is no datatype),
//     [buf, counts, displs, datatype]
//
// Stricter than mpi4py, which leaves these to MPI or to chance: buffers must
// be contiguous (C or Fortran order), an explicit datatype must describe the
// buffer's element type (MPI.BYTE fits any buffer and makes counts bytes; a
// contiguous derived type of it counts as one element), counts and
// displacements are checked against the buffer, and Python objects are
// refused.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shancoll/ops.h"

namespace shancoll::bindings {

// A Python buffer, exported (PyObject_GetBuffer) for as long as this lives.
// The one way the bindings look into a Python buffer.
class BufferView {
 public:
  BufferView() = default;
  BufferView(BufferView&& other) noexcept : held_(other.held_) {
    if (held_) view_ = other.view_;
    other.held_ = false;
  }
  BufferView& operator=(BufferView&& other) noexcept;
  BufferView(const BufferView&) = delete;
  BufferView& operator=(const BufferView&) = delete;
  ~BufferView() { release(); }

  // False, and no Python error pending, when `obj` cannot export a buffer
  // with these flags (PyBUF_*).
  bool acquire(pybind11::handle obj, int flags);
  void release();

  bool held() const { return held_; }
  std::byte* data() const { return held_ ? static_cast<std::byte*>(view_.buf) : nullptr; }
  std::int64_t bytes() const { return held_ ? view_.len : 0; }
  const Py_buffer& get() const { return view_; }

 private:
  Py_buffer view_;  // filled by PyObject_GetBuffer; read only while held_
  bool held_ = false;
};

// What one element is. Counts and displacements count elements of `size`
// bytes; reductions combine scalars of `kind` and `scalar` bytes.
struct Element {
  char kind = 'V';          // NumPy kind 'b', 'i', 'u', 'f', 'c'; 'V': bytes only (see format)
  std::int64_t scalar = 1;  // bytes of one scalar of `kind`
  std::int64_t size = 1;    // bytes of one element: `scalar` times a contiguous type's count
  const char* format = "";  // kind 'V': the buffer's format, interned (intern_format)
  bool byte = false;        // MPI.BYTE: counts are bytes

  bool same_type(const Element& other) const;
  std::string name() const;  // NumPy's name ("float64"), for messages
  // The element type of a reduction; ArgumentError naming `what` where MPI has none.
  DType reduction_type(const char* what) const;
};

enum class Access { read, write };

// A simple message: `count` elements at byte `offset` of the exported buffer.
struct Message {
  BufferView view;
  Element element;
  std::int64_t count = 0;
  std::int64_t offset = 0;  // bytes

  std::int64_t bytes() const { return count * element.size; }
  std::byte* data() const { return view.data() + offset; }
};

// Byte counts and displacements of P blocks; extent: bytes of the buffer they span.
struct Layout {
  std::vector<std::int64_t> counts, displs;
  std::int64_t extent = 0;
};

// A v-collective's receive message: the whole buffer and its layout.
struct VectorMessage {
  BufferView view;
  Element element;
  Layout layout;
};

// The buffers of allreduce and of reduce at the root: recvbuf a writable
// simple message; sendbuf one of the same element type and count, or
// IN_PLACE (then `send` holds no buffer and points nowhere).
struct ReductionBuffers {
  Message recv, send;  // recvbuf first: its errors come first
  DType type{};
  std::int64_t count = 0;  // scalars of `type`
};

// MPI.IN_PLACE or None (mpi4py's rule).
bool is_in_place(pybind11::handle obj);
bool is_ndarray(pybind11::handle obj);

// An exact ndarray as the parser reads it: the dtype (its element), the
// flags (contiguity, writability) and the size in bytes decide its
// message (same state, same message, errors included); the address is where
// it is now. Read from the array's fields: a few loads, no export.
struct ArrayState {
  PyObject* descr = nullptr;  // borrowed
  int flags = 0;
  std::int64_t bytes = 0;
  std::byte* data = nullptr;

  bool same_message(const ArrayState& o) const {
    return descr == o.descr && flags == o.flags && bytes == o.bytes;
  }
};
// False when `obj` is no exact ndarray of a numeric dtype.
bool array_state(pybind11::handle obj, ArrayState& out);

// A simple message. `blocks` > 1 (a block collective's receive buffer): an
// inferred count is per block, and the buffer must divide evenly.
Message parse_simple(pybind11::handle spec, const char* name, Access access,
                     std::int64_t blocks = 1);

ReductionBuffers parse_reduction(pybind11::handle send, pybind11::handle recv);

// A send message for a receive buffer of `recv` elements: ArgumentError
// naming sendbuf when the element types differ.
void check_send_element(const Message& send, const Element& recv);

// A v-collective's message for `size` ranks (writable unless Access::read:
// alltoallv's send buffer, a scatterv's send message).
VectorMessage parse_vector(pybind11::handle spec, const char* name, int size,
                           Access access = Access::write);

// The layout of `counts` and `displs` (None: prefix sums; an integer: the
// same count / a stride; else one integer per rank) in elements of
// `element_size` bytes. counts None: `total` elements split evenly.
Layout parse_layout(pybind11::handle counts, pybind11::handle displs, std::int64_t element_size,
                    int size, std::int64_t total = 0);

// The element a `datatype` argument (an MPI.Datatype or an mpi4py typecode)
// stands for; ArgumentError naming `name`.
Element datatype_element(pybind11::handle datatype, const char* name);

// One pointer per distinct format string, kept for the module's lifetime
// (Element stays trivially copyable; equal formats, equal pointers).
const char* intern_format(const std::string& format);

// numpy.ndarray and MPI.IN_PLACE, looked up once at import.
void init_bufspec();

// _core._parse_message: the parser's result as a dict, for the tests.
void bind_bufspec(pybind11::module_& m);

}  // namespace shancoll::bindings
