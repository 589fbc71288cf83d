#include "shancoll/cost.h"

#include <cstdint>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#ifdef SHANCOLL_SMPI
#include <mpi.h>  // SMPI's mpi.h declares smpi_execute_flops
#endif

namespace shancoll {

std::size_t stream_copy_from = std::numeric_limits<std::size_t>::max();

void vector_copy(void* dst, const void* src, std::size_t bytes) {
  charge_copy(bytes);
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  std::size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {  // all four loads before the stores
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);  // under 64 bytes: no rep movsb
#else
  std::memcpy(dst, src, bytes);
#endif
}

void stream_copy(void* dst, const void* src, std::size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16;
  if (bytes < head + 64) {
    std::memcpy(d, s, bytes);
    charge_copy(bytes);
    return;
  }
  charge_copy(bytes);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  std::size_t i = 0;
  for (; i + 64 <= bytes; i += 64) {  // four 16-byte lines' worth per step
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  _mm_sfence();  // streaming stores are weakly ordered: before any flag
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(dst, src, bytes);
  charge_copy(bytes);
#endif
}

#ifdef SHANCOLL_SMPI
// One "flop" is one byte moved through memory (see cost.h); a 0-byte step
// costs nothing and must not enter the simulator at all.
void charge_copy(std::size_t bytes) {
  if (bytes > 0) smpi_execute_flops(static_cast<double>(bytes));
}

void charge_reduce(std::size_t bytes) {
  if (bytes > 0) smpi_execute_flops(1.5 * static_cast<double>(bytes));
}
#endif

}  // namespace shancoll
