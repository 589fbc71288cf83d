// A copy that writes around the cache (non-temporal stores), for results
// larger than the cache: a plain store first reads the destination line
// (read for ownership), so copying m bytes out of a cache-resident chunk
// costs 2m of memory traffic; a streaming store costs m. Only worth it when
// nobody reads the destination soon from cache anyway (the message exceeds
// the core's L2), so callers choose by size.
//
// x86-64 (SSE2) only; elsewhere a plain memcpy. Streaming stores are weakly
// ordered: stream_fence() before anything that must observe them from
// another core (here the destination is the caller's private buffer, read
// by this thread after the call, so one fence at the end suffices).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "shancoll/cost.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace shancoll {

inline void stream_copy(void* dst, const void* src, std::size_t bytes) {
#if defined(__SSE2__)
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16;
  if (bytes < head + 64) {
    local_copy(dst, src, bytes);
    return;
  }
  std::memcpy(d, s, head);  // up to the first 16-byte aligned destination
  std::size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);
  charge_copy(bytes);
#else
  local_copy(dst, src, bytes);
#endif
}

inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace shancoll
