// The AVX2 kernels: this file is compiled with -mavx2 where the compiler
// takes it (cmake/kernels.cmake); without it the set is absent, not mislabelled.
#include "shancoll/kernels/kernels.h"

#if defined(__AVX2__)
#include "shancoll/kernels/kernel_loops.h"
#endif

namespace shancoll {

bool built_avx2() {
#if defined(__AVX2__)
  return true;
#else
  return false;
#endif
}

KernelFn find_kernel_avx2([[maybe_unused]] MPI_Op op, [[maybe_unused]] DType t) {
#if defined(__AVX2__)
  return builtin_kernel(op, t);
#else
  return nullptr;
#endif
}

}  // namespace shancoll
