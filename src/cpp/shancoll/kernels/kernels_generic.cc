// The generic kernels: the build's baseline instruction set, every type.
#include <complex>

#include "shancoll/kernels/kernel_loops.h"
#include "shancoll/kernels/kernels.h"

namespace shancoll {

KernelFn find_kernel_generic(MPI_Op op, DType t) {
  switch (t) {
    case DType::kLongDouble:
      return typed_kernel<long double>(op);
    case DType::kComplex64:
      return typed_kernel<std::complex<float>>(op);
    case DType::kComplex128:
      return typed_kernel<std::complex<double>>(op);
    case DType::kComplexLongDouble:
      return typed_kernel<std::complex<long double>>(op);
    default:
      return builtin_kernel(op, t);
  }
}

}  // namespace shancoll
