// The loops of the typed kernels (kernels.h), included by each
// kernels_<set>.cc, which is compiled for its instruction set. Everything
// here sits in an unnamed namespace: each set's copy stays internal to its
// file, so the linker can never hand one set's code (say AVX-512) to
// another's caller. For the same reason nothing here may call a function
// with external linkage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "shancoll/ops.h"

namespace shancoll {
namespace {

// Integer + and * wrap modulo 2^bits, as in MPI; computed unsigned because
// signed overflow is undefined in C++.
template <class T, bool = std::is_integral_v<T>>
struct Arith {
  using type = T;
};
template <class T>
struct Arith<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using Wide = typename Arith<T>::type;

struct Sum {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
  }
};
struct Prod {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
  }
};
struct Min {  // MPICH's rule: b when a > b, else a
  template <class T>
  T operator()(T a, T b) const {
    return a > b ? b : a;
  }
};
struct Max {
  template <class T>
  T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};
struct Land {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>((a != T(0)) && (b != T(0)));
  }
};
struct Lor {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>((a != T(0)) || (b != T(0)));
  }
};
struct Lxor {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>((a != T(0)) != (b != T(0)));
  }
};
struct Band {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct Bor {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct Bxor {
  template <class T>
  T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};

template <class T, class F>
void kernel(void* dst, const void* a, const void* b, std::size_t count) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < count; ++i) d[i] = F{}(x[i], y[i]);
}

// The kernel of a predefined op on C++ type T, or nullptr when MPI does not
// define the op on the type.
template <class T>
KernelFn typed_kernel(MPI_Op op) {
  constexpr bool is_bool = std::is_same_v<T, bool>;
  constexpr bool is_int = std::is_integral_v<T> && !is_bool;
  constexpr bool is_real = std::is_arithmetic_v<T> && !is_bool;
  if constexpr (!is_bool) {
    if (op == MPI_SUM) return kernel<T, Sum>;
    if (op == MPI_PROD) return kernel<T, Prod>;
  }
  if constexpr (is_real) {
    if (op == MPI_MIN) return kernel<T, Min>;
    if (op == MPI_MAX) return kernel<T, Max>;
  }
  if constexpr (is_int || is_bool) {
    if (op == MPI_LAND) return kernel<T, Land>;
    if (op == MPI_LOR) return kernel<T, Lor>;
    if (op == MPI_LXOR) return kernel<T, Lxor>;
  }
  if constexpr (is_int) {
    if (op == MPI_BAND) return kernel<T, Band>;
    if (op == MPI_BOR) return kernel<T, Bor>;
    if (op == MPI_BXOR) return kernel<T, Bxor>;
  }
  return nullptr;
}

// The kernels on the builtin types (no complex, no long double).
KernelFn builtin_kernel(MPI_Op op, DType t) {
  switch (t) {
    case DType::kBool:
      return typed_kernel<bool>(op);
    case DType::kInt8:
      return typed_kernel<std::int8_t>(op);
    case DType::kUint8:
      return typed_kernel<std::uint8_t>(op);
    case DType::kInt16:
      return typed_kernel<std::int16_t>(op);
    case DType::kUint16:
      return typed_kernel<std::uint16_t>(op);
    case DType::kInt32:
      return typed_kernel<std::int32_t>(op);
    case DType::kUint32:
      return typed_kernel<std::uint32_t>(op);
    case DType::kInt64:
      return typed_kernel<std::int64_t>(op);
    case DType::kUint64:
      return typed_kernel<std::uint64_t>(op);
    case DType::kFloat32:
      return typed_kernel<float>(op);
    case DType::kFloat64:
      return typed_kernel<double>(op);
    default:
      return nullptr;
  }
}

}  // namespace
}  // namespace shancoll
