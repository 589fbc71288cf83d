// The non-buffer arguments (see arguments.h).
#include "arguments.h"

#include <mpi4py/mpi4py.h>

#include "shancoll/error.h"

namespace py = pybind11;

namespace shancoll::bindings {
namespace {

std::string repr_of(py::handle h) { return py::repr(h); }

bool mpi_usable() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// An integer-like (operator.index), not a bool; false for anything else.
bool integer_of(py::handle value, long long& out) {
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) return false;
  out = PyLong_AsLongLong(value.ptr());  // calls __index__
  if (out == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  return true;
}

}  // namespace

MPI_Comm comm_of(py::handle comm) {
  if (!PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type))
    throw ArgumentError("comm: expected an mpi4py communicator, got " +
                        std::string(Py_TYPE(comm.ptr())->tp_name));
  int finalized = 0;  // (mpi4py initializes MPI when it is imported)
  MPI_Finalized(&finalized);
  if (finalized) throw ArgumentError("comm: MPI is already finalized");
  const MPI_Comm c = *PyMPIComm_Get(comm.ptr());
  if (c == MPI_COMM_NULL) throw ArgumentError("comm: the communicator is MPI.COMM_NULL (freed?)");
  return c;
}

std::string rank_of_caller(py::handle comm) {
  if (!mpi_usable()) return "?";
  int rank = 0;
  if (PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type) &&
      *PyMPIComm_Get(comm.ptr()) != MPI_COMM_NULL) {
    MPI_Comm_rank(*PyMPIComm_Get(comm.ptr()), &rank);
    return std::to_string(rank);
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return std::to_string(rank) + " of COMM_WORLD";
}

std::string str_arg(py::handle value, const char* name) {
  Py_ssize_t n = 0;
  const char* s = PyUnicode_Check(value.ptr()) ? PyUnicode_AsUTF8AndSize(value.ptr(), &n) : nullptr;
  if (!s) {
    PyErr_Clear();
    throw ArgumentError(std::string(name) + ": expected a string, got " + repr_of(value));
  }
  return std::string(s, static_cast<std::size_t>(n));
}

int rank_arg(py::handle value, int size) {
  PyErr_Clear();  // root_arg's PyLong_AsLong may have overflowed
  long long root = 0;
  if (!integer_of(value, root))
    throw ArgumentError("root: expected a rank (an integer), got " + repr_of(value));
  if (root < 0 || root >= size)
    throw ArgumentError("root: must be a rank of the communicator (0.." + std::to_string(size - 1) +
                        "), got " + std::to_string(root));
  return static_cast<int>(root);
}

OpArg::OpArg(py::handle op, py::handle commute) {
  if (PyObject_TypeCheck(op.ptr(), &PyMPIOp_Type)) {
    op_ = *PyMPIOp_Get(op.ptr());
    if (op_ == MPI_OP_NULL) throw ArgumentError("op: MPI.OP_NULL is not a reduction");
    return;
  }
  if (!PyCallable_Check(op.ptr()))
    throw ArgumentError("op: expected an MPI.Op or a callable, got " +
                        std::string(Py_TYPE(op.ptr())->tp_name));
  // MPI.Op.Create around the callable: Python's business (src/shancoll/_ops.py).
  const bool commutes = PyObject_IsTrue(commute.ptr()) == 1;
  created_ = py::module_::import("shancoll._ops").attr("op_from_callable")(op, commutes);
  op_ = *PyMPIOp_Get(created_.ptr());
}

OpArg::~OpArg() {
  if (!created_) return;
  PyObject *type, *value, *trace;  // freeing must not lose an exception in flight
  PyErr_Fetch(&type, &value, &trace);
  PyObject* result = PyObject_CallMethod(created_.ptr(), "Free", nullptr);
  if (result)
    Py_DECREF(result);
  else
    PyErr_Clear();
  PyErr_Restore(type, value, trace);
}

py::object OpArg::take_created() {
  py::object out = created_ ? std::move(created_) : py::none();
  created_ = py::object();
  return out;
}

void init_arguments() {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
}

}  // namespace shancoll::bindings
