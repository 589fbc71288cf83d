// Reductions: element types, operations, and the combine step of every
// allreduce algorithm.
//
// The predefined MPI ops on the NumPy numeric types run as typed C++ loops
// (the compiler vectorises them, once per instruction set: kernels/kernels.h;
// no MPI call, no datatype lookup per call).
// Every other MPI_Op (user-defined ones from MPI_Op_create / mpi4py's
// MPI.Op.Create included, and predefined ones on types without a kernel)
// goes through MPI_Reduce_local. Ops MPI does not define on a type (e.g.
// MPI_BAND on float64, MPI_MAX on complex) are refused with ArgumentError.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace shancoll {

enum class DType {
  kBool,
  kInt8,
  kUint8,
  kInt16,
  kUint16,
  kInt32,
  kUint32,
  kInt64,
  kUint64,
  kFloat32,
  kFloat64,
  kLongDouble,
  kComplex64,
  kComplex128,
  kComplexLongDouble,
};

// The element type of NumPy kind ('b', 'i', 'u', 'f', 'c') and itemsize;
// throws ArgumentError (naming `what`) for types MPI cannot reduce (float16).
DType dtype_from_numpy(char kind, int itemsize, const char* what);
std::size_t dtype_size(DType t);
MPI_Datatype dtype_mpi(DType t);
const char* dtype_name(DType t);
// Floating point (real or complex): the result depends on the combine order.
bool dtype_is_inexact(DType t);

// dst = a o b elementwise (dst may alias a or b; a's contributions come first).
using KernelFn = void (*)(void* dst, const void* a, const void* b, std::size_t count);

// One reduction operation on one element type, ready to combine buffers.
class Reducer {
 public:
  // Throws ArgumentError naming `op` when the op is not defined on the type.
  Reducer(MPI_Op op, DType type);
  // The same, with the MPI datatype handle that MPI_Reduce_local passes to a
  // user op: a C program's user op may look at it (MPI_INT, not MPI_INT32_T);
  // MPI_DATATYPE_NULL (a call from Python, which has no handle of its own):
  // the type's own handle, as the constructor above.
  Reducer(MPI_Op op, DType type, MPI_Datatype mpi_type);

  bool commutative() const { return commutative_; }
  bool typed() const { return kernel_ != nullptr; }  // a fast kernel, no MPI call
  DType type() const { return type_; }
  MPI_Op op() const { return op_; }
  MPI_Datatype mpi_type() const { return mpi_type_; }  // the handle MPI calls get
  std::size_t elem_size() const { return dtype_size(type_); }

  // dst = a o b over `count` elements; `tmp` (count elements) is needed only
  // for a non-commutative MPI op with dst == a (MPI_Reduce_local computes
  // inout = in o inout, so a's value must move out of the way first).
  void combine(std::byte* dst, const std::byte* a, const std::byte* b, std::int64_t count,
               std::byte* tmp) const;

 private:
  void reduce_local(const std::byte* in, std::byte* inout, std::int64_t count) const;

  MPI_Op op_;
  DType type_;
  MPI_Datatype mpi_type_;
  KernelFn kernel_ = nullptr;
  bool commutative_ = true;
};

// Name of a predefined op ("MPI_SUM", ...) or "a user-defined op", for messages.
std::string op_name(MPI_Op op);

// The place of a predefined op (MPI_OP_NULL included) in one fixed list, the
// same on every process whatever the handles' values; -1 for a user op.
int predefined_op_index(MPI_Op op);

}  // namespace shancoll
