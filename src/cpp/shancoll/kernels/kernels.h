// The typed reduction kernels (dst = a o b elementwise), built once per
// instruction set and chosen at run time: the loops are the same, but a
// 256- or 512-bit vector combines two or four times the elements per
// instruction of the x86-64 baseline's SSE2, which every build targets.
// Measured here (2 ranks, 2-vCPU Xeon with AVX-512; median of 11 blocks per
// set, benchmarks/reduction_kernels.py): allreduce, auto, float64 sum,
// 2 KiB-4 MiB 1.03-1.09x faster with avx512 than generic, reduce 16 KiB
// 1.30x, elsewhere 1.00-1.08x; the loop alone, dst = a + dst in cache,
// 128 KiB 3.27 / 2.71 / 2.69 us (generic / avx2 / avx512), 16 KiB 0.32 /
// 0.27 / 0.11 us.
//
// Each set's loops are elementwise and a single IEEE operation per element
// (a + b, a * b, min, max, logic): vector width changes no bit of a result,
// so ranks on different CPUs still agree. Complex and long double stay on
// the generic loops (a complex product could be contracted into fused
// multiply-adds, and their std:: helpers are not built per set).
//
// SHANCOLL_KERNELS=generic|avx2|avx512 forces a set (read once, like every
// SHANCOLL_* variable); unset, the widest this CPU runs.
#pragma once

#include <string>
#include <vector>

#include "shancoll/ops.h"

namespace shancoll {

enum class KernelSet { kGeneric, kAvx2, kAvx512 };

const char* kernel_set_name(KernelSet set);
// The sets this build holds and this CPU runs, narrowest first.
const std::vector<KernelSet>& runnable_kernel_sets();
// SHANCOLL_KERNELS, else the last runnable set; ArgumentError for a name
// that is unknown or that this CPU cannot run.
KernelSet active_kernel_set();

// The kernel of a predefined op on a type, from the active set (the
// generic one where the set has none); nullptr when MPI does not define the
// op on the type, or for ops that are not predefined.
KernelFn find_kernel(MPI_Op op, DType type);

// One per set (kernels_<set>.cc); nullptr where the set has no kernel, or
// (built_*) when the compiler could not target the set.
KernelFn find_kernel_generic(MPI_Op op, DType type);
KernelFn find_kernel_avx2(MPI_Op op, DType type);
KernelFn find_kernel_avx512(MPI_Op op, DType type);
bool built_avx2();
bool built_avx512();

}  // namespace shancoll
