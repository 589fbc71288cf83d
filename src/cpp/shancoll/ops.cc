#include "shancoll/ops.h"

#include <cstring>
#include <iterator>

#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/kernels/kernels.h"

namespace shancoll {
namespace {

struct TypeInfo {
  DType type;
  char kind;
  int size;
  MPI_Datatype mpi;
  const char* name;
};

// A plain array, constant-initialised: a reduction reads its element size
// here on every call, so no function-local static's guard, no vector.
const TypeInfo kTypeTable[] = {
    {DType::kBool, 'b', 1, MPI_C_BOOL, "bool"},
    {DType::kInt8, 'i', 1, MPI_INT8_T, "int8"},
    {DType::kUint8, 'u', 1, MPI_UINT8_T, "uint8"},
    {DType::kInt16, 'i', 2, MPI_INT16_T, "int16"},
    {DType::kUint16, 'u', 2, MPI_UINT16_T, "uint16"},
    {DType::kInt32, 'i', 4, MPI_INT32_T, "int32"},
    {DType::kUint32, 'u', 4, MPI_UINT32_T, "uint32"},
    {DType::kInt64, 'i', 8, MPI_INT64_T, "int64"},
    {DType::kUint64, 'u', 8, MPI_UINT64_T, "uint64"},
    {DType::kFloat32, 'f', 4, MPI_FLOAT, "float32"},
    {DType::kFloat64, 'f', 8, MPI_DOUBLE, "float64"},
    {DType::kLongDouble, 'f', sizeof(long double), MPI_LONG_DOUBLE, "longdouble"},
    {DType::kComplex64, 'c', 8, MPI_C_FLOAT_COMPLEX, "complex64"},
    {DType::kComplex128, 'c', 16, MPI_C_DOUBLE_COMPLEX, "complex128"},
    {DType::kComplexLongDouble, 'c', 2 * sizeof(long double), MPI_C_LONG_DOUBLE_COMPLEX,
     "clongdouble"},
};

const TypeInfo& info(DType t) { return kTypeTable[static_cast<std::size_t>(t)]; }

bool is_predefined_reduction(MPI_Op op) {
  for (MPI_Op p : {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND,
                   MPI_BOR, MPI_BXOR})
    if (op == p) return true;
  return false;
}

}  // namespace

int predefined_op_index(MPI_Op op) {
  const MPI_Op predefined[] = {MPI_OP_NULL, MPI_MAX,    MPI_MIN,    MPI_SUM,     MPI_PROD,
                               MPI_LAND,    MPI_BAND,   MPI_LOR,    MPI_BOR,     MPI_LXOR,
                               MPI_BXOR,    MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
  for (int i = 0; i < static_cast<int>(std::size(predefined)); ++i)
    if (predefined[i] == op) return i;
  return -1;
}

DType dtype_from_numpy(char kind, int itemsize, const char* what) {
  for (const TypeInfo& t : kTypeTable)
    if (t.kind == kind && t.size == itemsize) return t.type;
  throw ArgumentError(std::string(what) + ": no MPI reduction for NumPy kind '" +
                      std::string(1, kind) + "' of " + std::to_string(itemsize) +
                      " bytes (e.g. float16 has no MPI datatype)");
}

std::size_t dtype_size(DType t) { return static_cast<std::size_t>(info(t).size); }
MPI_Datatype dtype_mpi(DType t) { return info(t).mpi; }
const char* dtype_name(DType t) { return info(t).name; }
bool dtype_is_inexact(DType t) { return info(t).kind == 'f' || info(t).kind == 'c'; }

std::string op_name(MPI_Op op) {
  static const std::pair<MPI_Op, const char*> names[] = {
      {MPI_SUM, "MPI.SUM"},         {MPI_PROD, "MPI.PROD"},     {MPI_MIN, "MPI.MIN"},
      {MPI_MAX, "MPI.MAX"},         {MPI_LAND, "MPI.LAND"},     {MPI_LOR, "MPI.LOR"},
      {MPI_LXOR, "MPI.LXOR"},       {MPI_BAND, "MPI.BAND"},     {MPI_BOR, "MPI.BOR"},
      {MPI_BXOR, "MPI.BXOR"},       {MPI_MINLOC, "MPI.MINLOC"}, {MPI_MAXLOC, "MPI.MAXLOC"},
      {MPI_REPLACE, "MPI.REPLACE"}, {MPI_NO_OP, "MPI.NO_OP"}};
  for (const auto& [o, name] : names)
    if (o == op) return name;
  return "a user-defined op";
}

Reducer::Reducer(MPI_Op op, DType type) : Reducer(op, type, dtype_mpi(type)) {}

Reducer::Reducer(MPI_Op op, DType type, MPI_Datatype mpi_type)
    : op_(op), type_(type), mpi_type_(mpi_type == MPI_DATATYPE_NULL ? dtype_mpi(type) : mpi_type) {
  if (op == MPI_OP_NULL) throw ArgumentError("op: MPI.OP_NULL is not a reduction");
  if (op == MPI_MINLOC || op == MPI_MAXLOC || op == MPI_REPLACE || op == MPI_NO_OP)
    throw ArgumentError("op: " + op_name(op) + " is not supported by allreduce");
  kernel_ = find_kernel(op, type);
  if (!kernel_ && is_predefined_reduction(op)) {
    throw ArgumentError("op: " + op_name(op) + " is not defined for dtype " +
                        std::string(dtype_name(type)));
  }
  int commute = 1;
  check_mpi(MPI_Op_commutative(op, &commute), "MPI_Op_commutative");
  commutative_ = commute != 0;
}

void Reducer::reduce_local(const std::byte* in, std::byte* inout, std::int64_t count) const {
  const MPI_Datatype t = mpi_type_;
  while (count > 0) {  // MPI_Reduce_local takes an int count
    const int n = static_cast<int>(std::min<std::int64_t>(count, 1 << 30));
    check_mpi(MPI_Reduce_local(in, inout, n, t, op_), "MPI_Reduce_local");
    const std::size_t step = static_cast<std::size_t>(n) * elem_size();
    in += step, inout += step, count -= n;
  }
}

void Reducer::combine(std::byte* dst, const std::byte* a, const std::byte* b, std::int64_t count,
                      std::byte* tmp) const {
  if (count == 0) return;
  const std::size_t bytes = static_cast<std::size_t>(count) * elem_size();
  charge_reduce(bytes);  // the simulator's cost of this step (cost.h); nothing in real runs
  if (kernel_) return kernel_(dst, a, b, static_cast<std::size_t>(count));
  if (dst == b) return reduce_local(a, dst, count);                  // b = a o b
  if (dst == a && commutative_) return reduce_local(b, dst, count);  // b o a = a o b
  if (dst == a) {  // non-commutative, a = a o b: compute into tmp, then move
    std::memcpy(tmp, b, bytes);
    reduce_local(a, tmp, count);
    std::memcpy(dst, tmp, bytes);
    return;
  }
  std::memcpy(dst, b, bytes);
  reduce_local(a, dst, count);
}

}  // namespace shancoll
