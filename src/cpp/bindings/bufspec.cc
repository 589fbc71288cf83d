// The buffer-spec parser (see bufspec.h for the forms and the rules).
#include "bufspec.h"

#include <mpi.h>
#include <mpi4py/mpi4py.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL shancoll_bufspec_ARRAY_API
#include <numpy/arrayobject.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <unordered_set>
#include <utility>

#include "shancoll/error.h"

namespace py = pybind11;

namespace shancoll::bindings {

BufferView& BufferView::operator=(BufferView&& other) noexcept {
  if (this != &other) {
    release();
    held_ = std::exchange(other.held_, false);
    if (held_) view_ = other.view_;
  }
  return *this;
}

bool BufferView::acquire(py::handle obj, int flags) {
  release();
  held_ = PyObject_GetBuffer(obj.ptr(), &view_, flags) == 0;
  if (!held_) PyErr_Clear();
  return held_;
}

void BufferView::release() {
  if (held_) PyBuffer_Release(&view_);
  held_ = false;
}

namespace {

// Kept for the module's lifetime (released at interpreter exit).
PyTypeObject* ndarray_type = nullptr;
PyObject* in_place_object = nullptr;
PyObject* typecodes = nullptr;  // mpi4py's MPI._typedict: typecode -> Datatype

std::string repr_of(py::handle h, std::size_t limit = 200) {
  std::string s = py::repr(h);
  return s.size() > limit ? s.substr(0, limit) + "..." : s;
}

std::string type_name(py::handle h) { return Py_TYPE(h.ptr())->tp_name; }

// The parts of a spec; a null handle (or None) is an absent part.
struct Parts {
  py::handle buf, count, displ, datatype;
};

bool present(py::handle h) { return h && !h.is_none(); }

bool is_datatype(py::handle h) {
  return PyObject_TypeCheck(h.ptr(), &PyMPIDatatype_Type) || PyUnicode_Check(h.ptr());
}

// A (count, displ) pair where a tuple (or, in a simple spec, a list) stands.
void split_pair(py::handle pair, const char* name, Parts& p) {
  const Py_ssize_t n = PySequence_Size(pair.ptr());
  if (n != 2) {
    throw ArgumentError(std::string(name) + ": a (counts, displs) pair has 2 items, got " +
                        std::to_string(n) +
                        "; pass counts as a list (a tuple in this position means (counts, "
                        "displs), as in mpi4py)");
  }
  p.count = PySequence_Fast_GET_ITEM(pair.ptr(), 0);
  p.displ = PySequence_Fast_GET_ITEM(pair.ptr(), 1);
}

// mpi4py's unpacking: which item of a list/tuple spec is what. A vector
// spec's 3rd item is its datatype only when it is one (else displs), and
// only a tuple is a (counts, displs) pair there (a list is counts).
Parts unpack_sequence(py::handle spec, const char* name, bool vector) {
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(spec.ptr());
  PyObject** item = PySequence_Fast_ITEMS(spec.ptr());
  Parts p{n > 0 ? item[0] : nullptr, {}, {}, {}};
  auto is_pair = [vector](py::handle h) {
    return PyTuple_Check(h.ptr()) || (!vector && PyList_Check(h.ptr()));
  };
  auto count_or_pair = [&](py::handle h) {
    if (is_pair(h))
      split_pair(h, name, p);
    else
      p.count = h;
  };
  if (n == 2) {
    if (is_datatype(item[1]))
      p.datatype = item[1];
    else
      count_or_pair(item[1]);
  } else if (n == 3) {
    if (!vector || is_datatype(item[2]) || item[2] == Py_None) {
      count_or_pair(item[1]);
      p.datatype = item[2];
    } else {
      p.count = item[1];
      p.displ = item[2];
    }
  } else if (n == 4) {
    p = {item[0], item[1], item[2], item[3]};
  } else {
    throw ArgumentError(std::string(name) + ": a buffer spec has 2 to 4 items, got " +
                        std::to_string(n));
  }
  return p;
}

inline Parts unpack(py::handle spec, const char* name, bool vector) {
  if (!PyList_Check(spec.ptr()) && !PyTuple_Check(spec.ptr())) return {spec, {}, {}, {}};
  return unpack_sequence(spec, name, vector);
}

// ---------------------------------------------------------------------------
// buffers and their elements

// Why `obj` exported no buffer (error path).
[[noreturn]] void refuse_buffer(py::handle obj, const char* name, Access access) {
  const std::string who(name);
  if (is_in_place(obj))
    throw ArgumentError(who + ": a buffer is required here, got " + repr_of(obj));
  BufferView v;
  if (v.acquire(obj, PyBUF_RECORDS_RO)) {
    if (!PyBuffer_IsContiguous(&v.get(), 'A')) {
      std::string shape, strides;
      for (int i = 0; i < v.get().ndim; ++i) {
        shape += (i ? ", " : "") + std::to_string(v.get().shape[i]);
        strides += (i ? ", " : "") + std::to_string(v.get().strides[i]);
      }
      throw ArgumentError(who +
                          ": the array is not contiguous (use numpy.ascontiguousarray); "
                          "strides (" +
                          strides + ") for shape (" + shape + ")");
    }
    if (access == Access::write)
      throw ArgumentError(who + ": the array is read-only, the result cannot be written to it");
  }
  throw ArgumentError(who +
                      ": expected a NumPy array, a buffer-protocol object or an mpi4py buffer "
                      "spec, got " +
                      type_name(obj));
}

// `obj` exported into `v` (format: PyBUF_FORMAT or 0), or ArgumentError.
void export_buffer(BufferView& v, py::handle obj, const char* name, Access access, int format) {
  const int flags = PyBUF_ANY_CONTIGUOUS | format | (access == Access::write ? PyBUF_WRITABLE : 0);
  // MPI.IN_PLACE exports an empty buffer: refused where a buffer is needed.
  if (is_in_place(obj) || !v.acquire(obj, flags)) refuse_buffer(obj, name, access);
}

// NumPy's kind of a native scalar's struct format ("d", "Zf", "?", ...), or 0.
inline char scalar_kind(const char* f) {
  if (f[0] == 'Z') return (f[1] == 'f' || f[1] == 'd' || f[1] == 'g') && !f[2] ? 'c' : 0;
  if (!f[0] || f[1]) return 0;
  switch (f[0]) {
    case '?':
      return 'b';
    case 'b':
    case 'h':
    case 'i':
    case 'l':
    case 'q':
    case 'n':
      return 'i';
    case 'B':
    case 'H':
    case 'I':
    case 'L':
    case 'Q':
    case 'N':
      return 'u';
    case 'e':
    case 'f':
    case 'd':
    case 'g':
      return 'f';
    default:
      return 0;
  }
}

// The element of an exported buffer, from its format. A byte-order mark
// other than the native one ('>', '!') leaves the element opaque: it is
// moved as bytes, never reduced. (Little-endian hosts: '<' is native.)
// An element of no NumPy scalar kind: moved as bytes, compared by format.
Element opaque_element(const Py_buffer& b, const char* format, const char* f, const char* name) {
  if (std::strcmp(f, "O") == 0)
    throw ArgumentError(std::string(name) +
                        ": arrays of Python objects (dtype object) cannot be sent");
  if (b.itemsize <= 0)
    throw ArgumentError(std::string(name) + ": elements of size 0 cannot be sent");
  return {'V', b.itemsize, b.itemsize, intern_format(format), false};
}

inline Element buffer_element(const Py_buffer& b, const char* name) {
  static_assert(PY_LITTLE_ENDIAN, "bufspec: '<' is taken as the native byte order");
  const char* format = b.format ? b.format : "B";
  const bool native_mark = format[0] == '@' || format[0] == '=' || format[0] == '<';
  const char* f = format + (native_mark ? 1 : 0);
  const char kind = scalar_kind(f);
  if (kind && b.itemsize > 0) return {kind, b.itemsize, b.itemsize, "", false};
  return opaque_element(b, format, f, name);
}

// An exact ndarray's element from its dtype, when of a native numeric kind.
bool ndarray_element(py::handle array, std::int64_t itemsize, Element& e) {
  const PyArray_Descr* d = PyArray_DESCR(reinterpret_cast<PyArrayObject*>(array.ptr()));
  const char k = d->kind;
  const bool numeric = k == 'b' || k == 'i' || k == 'u' || k == 'f' || k == 'c';
  if (!numeric || d->byteorder == '>' || itemsize <= 0) return false;
  e = {d->kind, itemsize, itemsize, "", false};
  return true;
}

// The buffer of a message, into `v`, and its element. An exact ndarray is exported
// without its format string (NumPy builds one per export) and typed by its
// dtype; anything else by the format.
void export_typed(BufferView& v, py::handle obj, const char* name, Access access,
                  Element& element) {
  if (is_ndarray(obj)) {
    export_buffer(v, obj, name, access, 0);
    if (ndarray_element(obj, v.get().itemsize, element)) return;
  }
  export_buffer(v, obj, name, access, PyBUF_FORMAT);
  element = buffer_element(v.get(), name);
}

// The element of a datatype, from mpi4py's own map to NumPy (dtlib), and
// only when the datatype is contiguous.
Element datatype_to_element(py::handle datatype, MPI_Datatype handle, const char* name) {
  const std::string who = std::string(name) + ": the MPI datatype " + repr_of(datatype);
  py::object dtype;
  try {
    dtype = py::module_::import("mpi4py.util.dtlib").attr("to_numpy_dtype")(datatype);
  } catch (py::error_already_set& e) {
    throw ArgumentError(who + " has no NumPy equivalent (" + std::string(py::str(e.value())) + ")");
  }
  const py::object base = dtype.attr("base");
  Element e;
  e.kind = std::string(py::str(base.attr("kind")))[0];
  e.scalar = base.attr("itemsize").cast<std::int64_t>();
  e.size = dtype.attr("itemsize").cast<std::int64_t>();
  if (!std::strchr("biufc", e.kind)) {
    e.kind = 'V';
    e.format = intern_format(py::str(base.attr("str")));
  }
  MPI_Aint lb = 0, extent = 0;
  int size = 0;
  MPI_Type_get_extent(handle, &lb, &extent);
  MPI_Type_size(handle, &size);
  if (lb != 0 || extent != size || e.size != extent) {
    throw ArgumentError(who + " is not contiguous (lb " + std::to_string(lb) + ", extent " +
                        std::to_string(extent) + ", size " + std::to_string(size) +
                        "); shancoll moves contiguous elements only");
  }
  return e;
}

bool is_predefined(MPI_Datatype t) {
  int integers = 0, addresses = 0, datatypes = 0, combiner = 0;
  MPI_Type_get_envelope(t, &integers, &addresses, &datatypes, &combiner);
  return combiner == MPI_COMBINER_NAMED;
}

// The element `datatype` describes: the buffer's element type, or MPI.BYTE.
Element described(const Element& buffer, py::handle datatype, const char* name) {
  const Element d = datatype_element(datatype, name);
  if (d.byte || (d.kind != 'V' && d.kind == buffer.kind && d.scalar == buffer.scalar)) return d;
  throw ArgumentError(std::string(name) + ": the MPI datatype " + repr_of(datatype) +
                      " describes " + d.name() + ", but the array has dtype " + buffer.name());
}

// ---------------------------------------------------------------------------
// counts and displacements

// An integer (operator.index); ArgumentError naming `name` and `what`.
std::int64_t index_of(py::handle h, const char* name, const char* what = "") {
  PyObject* index = PyNumber_Index(h.ptr());
  long long v = -1;
  if (index) {
    v = PyLong_AsLongLong(index);
    Py_DECREF(index);
  }
  if (!index || (v == -1 && PyErr_Occurred())) {
    PyErr_Clear();
    throw ArgumentError(std::string(name) + what + ": expected an integer, got " + repr_of(h));
  }
  return v;
}

// mpi4py's is_integral: an index that is not a sequence (0-d arrays count).
bool is_integral(py::handle h) {
  PyObject* o = h.ptr();
  if (PyLong_Check(o)) return true;
  if (PyList_Check(o) || PyTuple_Check(o)) return false;
  if (is_ndarray(h)) {
    const char kind = std::string(py::str(h.attr("dtype").attr("kind")))[0];
    return h.attr("ndim").cast<int>() == 0 && (kind == 'i' || kind == 'u');
  }
  return PyIndex_Check(o) && !PyObject_HasAttrString(o, "__len__");
}

// One integer per rank from a sequence (a list, a tuple, a 1-d integer array, ...).
std::vector<std::int64_t> int_list(py::handle seq, int size, const char* what) {
  const py::object fast =
      py::reinterpret_steal<py::object>(PySequence_Fast(seq.ptr(), "not a sequence"));
  if (!fast) {
    PyErr_Clear();
    throw ArgumentError(std::string(what) +
                        ": expected a sequence of integers (one per rank), got " + repr_of(seq));
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.ptr());
  if (n != size) {
    throw ArgumentError(std::string(what) + ": expected " + std::to_string(size) +
                        " entries (one per rank of the communicator), got " + std::to_string(n));
  }
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  PyObject** item = PySequence_Fast_ITEMS(fast.ptr());
  for (Py_ssize_t i = 0; i < n; ++i) {
    long long v = -1;
    if (PyLong_CheckExact(item[i])) v = PyLong_AsLongLong(item[i]);  // the common case
    if (v == -1) {
      PyErr_Clear();
      if (!PyIndex_Check(item[i]))
        throw ArgumentError(std::string(what) +
                            ": expected a sequence of integers (one per rank), got " +
                            repr_of(seq));
      v = index_of(item[i], what);
    }
    out[static_cast<std::size_t>(i)] = v;
  }
  return out;
}

// The same value for every rank (counts) or rank i's i times it (a stride).
std::vector<std::int64_t> repeated(std::int64_t v, int size, bool stride) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) out[static_cast<std::size_t>(i)] = stride ? v * i : v;
  return out;
}

std::vector<std::int64_t> even_split(std::int64_t total, int size) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i)
    out[static_cast<std::size_t>(i)] = total / size + (i < total % size);
  return out;
}

std::vector<std::int64_t> prefix_sums(const std::vector<std::int64_t>& counts) {
  std::vector<std::int64_t> out(counts.size());
  std::int64_t at = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) out[i] = at, at += counts[i];
  return out;
}

void check_non_negative(const std::vector<std::int64_t>& v, const char* what, const char* noun) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i] < 0)
      throw ArgumentError(std::string(what) + ": negative " + noun + " " + std::to_string(v[i]) +
                          " for rank " + std::to_string(i));
}

// Elements to bytes, refusing what would not fit in 64 bits.
void scale(std::vector<std::int64_t>& v, std::int64_t element_size, const char* what) {
  if (element_size == 1) return;
  const std::int64_t limit = std::numeric_limits<std::int64_t>::max() / element_size;
  for (std::int64_t& x : v) {
    if (x > limit) throw ArgumentError(std::string(what) + ": " + std::to_string(x) + " too large");
    x *= element_size;
  }
}

// A simple spec's displacement, in elements, within the buffer's `elements`.
std::int64_t displacement_of(py::handle displ, const char* name, std::int64_t elements) {
  const std::int64_t offset = index_of(displ, name, " displacement");
  if (offset < 0)
    throw ArgumentError(std::string(name) + ": negative displacement " + std::to_string(offset));
  if (offset > elements)
    throw ArgumentError(std::string(name) + ": displacement " + std::to_string(offset) +
                        " is past the end of the buffer (" + std::to_string(elements) +
                        " elements)");
  return offset;
}

// A simple spec's count: `blocks` of it must fit the `avail` elements.
std::int64_t count_of(py::handle given, const char* name, std::int64_t avail, std::int64_t blocks) {
  const std::int64_t count = index_of(given, name, " count");
  if (count < 0)
    throw ArgumentError(std::string(name) + ": negative count " + std::to_string(count));
  if (count > avail / blocks) {
    const std::string need =
        blocks > 1 ? std::to_string(blocks) + " x " + std::to_string(count) : std::to_string(count);
    throw ArgumentError(std::string(name) + ": count " + need + " elements exceeds the buffer (" +
                        std::to_string(avail) + " elements)");
  }
  return count;
}

// The count of a spec without one: the `bytes` after the displacement, per block.
std::int64_t inferred_count(const char* name, std::int64_t bytes, std::int64_t esize,
                            std::int64_t blocks) {
  if (bytes % esize)
    throw ArgumentError(std::string(name) + ": cannot infer the count: " + std::to_string(bytes) +
                        " bytes is not a multiple of the element size " + std::to_string(esize));
  const std::int64_t count = bytes / esize;
  if (count % blocks)
    throw ArgumentError(std::string(name) +
                        ": cannot infer the count per rank: " + std::to_string(count) +
                        " elements is not a multiple of the " + std::to_string(blocks) + " ranks");
  return count / blocks;
}

[[noreturn]] void too_small(const char* name, std::int64_t extent, std::int64_t bytes,
                            std::int64_t esize) {
  throw ArgumentError(std::string(name) + ": too small: the counts and displacements need " +
                      std::to_string(extent / esize) + " elements (" + std::to_string(extent) +
                      " bytes), the buffer has " + std::to_string(bytes / esize) + " (" +
                      std::to_string(bytes) + " bytes)");
}

}  // namespace

// ---------------------------------------------------------------------------
// the public parts

const char* intern_format(const std::string& format) {
  static std::unordered_set<std::string> formats;  // node-based: the strings never move
  return formats.insert(format).first->c_str();
}

bool is_in_place(py::handle obj) { return obj.is_none() || obj.ptr() == in_place_object; }
bool is_ndarray(py::handle obj) { return Py_TYPE(obj.ptr()) == ndarray_type; }

bool array_state(py::handle obj, ArrayState& out) {
  if (!is_ndarray(obj)) return false;
  auto* a = reinterpret_cast<PyArrayObject*>(obj.ptr());
  // Numeric kinds only: a structured dtype's field names can change in place.
  const char kind = PyArray_DESCR(a)->kind;
  if (kind != 'b' && kind != 'i' && kind != 'u' && kind != 'f' && kind != 'c') return false;
  out.descr = reinterpret_cast<PyObject*>(PyArray_DESCR(a));
  out.flags = PyArray_FLAGS(a);
  out.bytes = PyArray_ITEMSIZE(a);  // times the dimensions (PyArray_NBYTES: a call into NumPy)
  for (int i = 0; i < PyArray_NDIM(a); ++i) out.bytes *= PyArray_DIMS(a)[i];
  out.data = static_cast<std::byte*>(PyArray_DATA(a));
  return true;
}

bool Element::same_type(const Element& other) const {
  return kind == other.kind && scalar == other.scalar && size == other.size &&
         (kind != 'V' || format == other.format);  // interned: equal pointers
}

std::string Element::name() const {
  if (byte) return "MPI.BYTE/uint8";
  std::string n;
  switch (kind) {
    case 'b':
      n = "bool";
      break;
    case 'i':
      n = "int" + std::to_string(8 * scalar);
      break;
    case 'u':
      n = "uint" + std::to_string(8 * scalar);
      break;
    case 'f':
      n = "float" + std::to_string(8 * scalar);
      break;
    case 'c':
      n = "complex" + std::to_string(8 * scalar);
      break;
    default:
      n = "'" + std::string(format) + "' (" + std::to_string(scalar) + " bytes)";
  }
  return size == scalar ? n : std::to_string(size / scalar) + " x " + n;
}

DType Element::reduction_type(const char* what) const {
  if (kind == 'V')
    throw ArgumentError(std::string(what) + ": elements of format '" + std::string(format) +
                        "' cannot be reduced");
  return dtype_from_numpy(kind, static_cast<int>(scalar), what);
}

Element datatype_element(py::handle datatype, const char* name) {
  py::handle dt = datatype;
  if (PyUnicode_Check(dt.ptr())) {
    dt = PyDict_GetItemWithError(typecodes, dt.ptr());
    if (!dt) {
      PyErr_Clear();
      throw ArgumentError(std::string(name) + ": cannot map typecode " + repr_of(datatype) +
                          " to an MPI datatype");
    }
  } else if (!PyObject_TypeCheck(dt.ptr(), &PyMPIDatatype_Type)) {
    throw ArgumentError(std::string(name) + ": expected an MPI datatype, got " + type_name(dt));
  }
  const MPI_Datatype handle = *PyMPIDatatype_Get(dt.ptr());
  if (handle == MPI_DATATYPE_NULL)
    throw ArgumentError(std::string(name) + ": the datatype is MPI.DATATYPE_NULL");
  if (handle == MPI_BYTE) {
    Element e;
    e.kind = 'u';
    e.byte = true;
    return e;
  }
  // Predefined datatypes never change meaning: their elements are kept by
  // handle (not derived ones: a freed handle may come back as another type).
  static std::vector<std::pair<MPI_Datatype, Element>> predefined;
  for (const auto& [h, e] : predefined)
    if (h == handle) return e;
  Element e = datatype_to_element(dt, handle, name);
  if (is_predefined(handle)) predefined.emplace_back(handle, e);
  return e;
}

Message parse_simple(py::handle spec, const char* name, Access access, std::int64_t blocks) {
  Message m;
  if (is_ndarray(spec)) {  // the plain call's form: the whole array, of its dtype
    export_typed(m.view, spec, name, access, m.element);
    m.count = inferred_count(name, m.view.bytes(), m.element.size, blocks);
    return m;
  }
  const Parts p = unpack(spec, name, false);
  export_typed(m.view, p.buf, name, access, m.element);
  if (present(p.datatype)) m.element = described(m.element, p.datatype, name);
  const std::int64_t esize = m.element.size, elements = m.view.bytes() / esize;
  const std::int64_t offset = present(p.displ) ? displacement_of(p.displ, name, elements) : 0;
  m.count = present(p.count) ? count_of(p.count, name, elements - offset, blocks)
                             : inferred_count(name, m.view.bytes() - offset * esize, esize, blocks);
  m.offset = offset * esize;
  return m;
}

void check_send_element(const Message& send, const Element& recv) {
  if (!send.element.same_type(recv))
    throw ArgumentError("sendbuf: element type " + send.element.name() +
                        " does not match the receive buffer's " + recv.name());
}

ReductionBuffers parse_reduction(py::handle send, py::handle recv) {
  ReductionBuffers b{parse_simple(recv, "recvbuf", Access::write),  // built in place
                     is_in_place(send) ? Message{} : parse_simple(send, "sendbuf", Access::read)};
  b.type = b.recv.element.reduction_type("recvbuf");
  b.count = b.recv.bytes() / b.recv.element.scalar;
  if (!b.send.view.held()) return b;
  check_send_element(b.send, b.recv.element);
  if (b.send.count != b.recv.count)
    throw ArgumentError("sendbuf: " + std::to_string(b.send.count) + " elements but recvbuf has " +
                        std::to_string(b.recv.count) + ": the lengths must match");
  return b;
}

VectorMessage parse_vector(py::handle spec, const char* name, int size, Access access) {
  const Parts p = unpack(spec, name, true);
  VectorMessage m;
  export_typed(m.view, p.buf, name, access, m.element);
  if (present(p.datatype)) m.element = described(m.element, p.datatype, name);
  const std::int64_t esize = m.element.size, bytes = m.view.bytes();
  if (!present(p.count) && bytes % esize)
    throw ArgumentError(std::string(name) + ": cannot infer counts: " + std::to_string(bytes) +
                        " bytes is not a multiple of the element size " + std::to_string(esize));
  m.layout = parse_layout(p.count, p.displ, esize, size, bytes / esize);
  if (m.layout.extent > bytes) too_small(name, m.layout.extent, bytes, esize);
  return m;
}

Layout parse_layout(py::handle counts, py::handle displs, std::int64_t element_size, int size,
                    std::int64_t total) {
  Layout l;
  if (!present(counts))
    l.counts = even_split(total, size);
  else if (is_integral(counts))
    l.counts = repeated(index_of(counts, "counts"), size, false);
  else
    l.counts = int_list(counts, size, "counts");
  check_non_negative(l.counts, "counts", "count");
  if (!present(displs))
    l.displs = prefix_sums(l.counts);
  else if (is_integral(displs))
    l.displs = repeated(index_of(displs, "displs"), size, true);
  else
    l.displs = int_list(displs, size, "displs");
  check_non_negative(l.displs, "displs", "displacement");
  scale(l.counts, element_size, "counts");
  scale(l.displs, element_size, "displs");
  for (std::size_t i = 0; i < l.counts.size(); ++i)
    if (l.counts[i] > 0) l.extent = std::max(l.extent, l.counts[i] + l.displs[i]);
  return l;
}

void init_bufspec() {
  if (ndarray_type) return;
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  if (_import_array() < 0) throw py::error_already_set();
  ndarray_type = reinterpret_cast<PyTypeObject*>(
      py::object(py::module_::import("numpy").attr("ndarray")).release().ptr());
  const py::module_ mpi = py::module_::import("mpi4py.MPI");
  in_place_object = py::object(mpi.attr("IN_PLACE")).release().ptr();
  typecodes = py::object(mpi.attr("_typedict")).release().ptr();
}

namespace {

py::dict element_dict(const Element& e) {
  py::dict d;
  d["kind"] = std::string(1, e.kind);
  d["scalar"] = e.scalar;
  d["size"] = e.size;
  d["name"] = e.name();
  d["byte"] = e.byte;
  return d;
}

}  // namespace

void bind_bufspec(py::module_& m) {
  init_bufspec();
  m.def(
      "_parse_message",
      [](py::handle spec, const char* name, int size, bool writable, std::int64_t blocks) {
        py::dict d;
        if (size > 0) {
          const VectorMessage v = parse_vector(spec, name, size);
          d["element"] = element_dict(v.element);
          d["counts"] = v.layout.counts;
          d["displs"] = v.layout.displs;
          d["extent"] = v.layout.extent;
          d["buffer_bytes"] = v.view.bytes();
        } else {
          const Message s =
              parse_simple(spec, name, writable ? Access::write : Access::read, blocks);
          d["element"] = element_dict(s.element);
          d["count"] = s.count;
          d["offset"] = s.offset;
          d["bytes"] = s.bytes();
          d["buffer_bytes"] = s.view.bytes();
        }
        return d;
      },
      py::arg("spec"), py::arg("name") = "buf", py::arg("size") = 0, py::arg("writable") = false,
      py::arg("blocks") = 1,
      "Tests only: the buffer-spec parser's reading of `spec` (size > 0: a v-collective's "
      "receive spec for `size` ranks, byte counts and displacements; else a simple message, "
      "count in elements, offset in bytes).");
}

}  // namespace shancoll::bindings
