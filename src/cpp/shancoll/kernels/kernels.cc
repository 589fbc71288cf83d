#include "shancoll/kernels/kernels.h"

#include "shancoll/environment.h"
#include "shancoll/error.h"

namespace shancoll {
namespace {

constexpr KernelSet kAllSets[] = {KernelSet::kGeneric, KernelSet::kAvx2, KernelSet::kAvx512};

bool cpu_runs(KernelSet set) {
#if defined(__x86_64__) || defined(__i386__)
  switch (set) {
    case KernelSet::kGeneric:
      return true;
    case KernelSet::kAvx2:
      return __builtin_cpu_supports("avx2");
    case KernelSet::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
  return false;
#else
  return set == KernelSet::kGeneric;
#endif
}

bool built(KernelSet set) {
  switch (set) {
    case KernelSet::kGeneric:
      return true;
    case KernelSet::kAvx2:
      return built_avx2();
    case KernelSet::kAvx512:
      return built_avx512();
  }
  return false;
}

std::string runnable_names() {
  std::string names;
  for (KernelSet s : runnable_kernel_sets())
    names += (names.empty() ? "" : ", ") + std::string(kernel_set_name(s));
  return names;
}

}  // namespace

const char* kernel_set_name(KernelSet set) {
  switch (set) {
    case KernelSet::kGeneric:
      return "generic";
    case KernelSet::kAvx2:
      return "avx2";
    case KernelSet::kAvx512:
      return "avx512";
  }
  return "?";
}

const std::vector<KernelSet>& runnable_kernel_sets() {
  static const std::vector<KernelSet> sets = [] {
    std::vector<KernelSet> out;
    for (KernelSet s : kAllSets)
      if (built(s) && cpu_runs(s)) out.push_back(s);
    return out;
  }();
  return sets;
}

KernelSet active_kernel_set() {
  const std::string& wanted = environment().kernels;
  if (wanted.empty()) return runnable_kernel_sets().back();
  for (KernelSet s : runnable_kernel_sets())
    if (wanted == kernel_set_name(s)) return s;
  throw ArgumentError("SHANCOLL_KERNELS=" + wanted + ": not a kernel set this build and CPU run (" +
                      runnable_names() + ")");
}

KernelFn find_kernel(MPI_Op op, DType type) {
  KernelFn k = nullptr;
  switch (active_kernel_set()) {
    case KernelSet::kAvx512:
      k = find_kernel_avx512(op, type);
      break;
    case KernelSet::kAvx2:
      k = find_kernel_avx2(op, type);
      break;
    case KernelSet::kGeneric:
      break;
  }
  return k ? k : find_kernel_generic(op, type);
}

}  // namespace shancoll
