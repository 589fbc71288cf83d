// The AVX-512 kernels (F, BW, VL, DQ; 512-bit vectors): this file is
// compiled with those flags where the compiler takes them
// (cmake/kernels.cmake); without them the set is absent, not mislabelled.
#include "shancoll/kernels/kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define SHANCOLL_KERNELS_AVX512 1
#include "shancoll/kernels/kernel_loops.h"
#endif

namespace shancoll {

bool built_avx512() {
#if defined(SHANCOLL_KERNELS_AVX512)
  return true;
#else
  return false;
#endif
}

KernelFn find_kernel_avx512([[maybe_unused]] MPI_Op op, [[maybe_unused]] DType t) {
#if defined(SHANCOLL_KERNELS_AVX512)
  return builtin_kernel(op, t);
#else
  return nullptr;
#endif
}

}  // namespace shancoll
