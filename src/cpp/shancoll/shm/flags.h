// Cache-line flags in node shared memory.
//
// Protocol everywhere: the writer fills the data, then release-stores the
// flag; the reader acquire-loads the flag, then reads the data. The release
// store orders all earlier writes (the data) before the flag becomes visible,
// and the acquire load orders the later reads after it, so a reader that sees
// the flag also sees the data. Flags hold an epoch (the call's sequence
// number) instead of a boolean, so they never need resetting between calls:
// a stale value from an earlier call is simply smaller than the current one.
#pragma once

#include <atomic>
#include <cstdint>

#include "shancoll/progress.h"

namespace shancoll {

constexpr std::size_t kCacheLine = 64;
// A line that carries its own data: the flag's 8 bytes first, then up to
// kInlineBytes of data, so that a reader's wait and read are one transfer.
constexpr std::size_t kFlagBytes = sizeof(std::uint64_t);
constexpr std::size_t kInlineBytes = kCacheLine - kFlagBytes;

// An inline line's flag may also carry the size of its data: the writer's
// counter above eleven bits of size (kInlineBytes, or a release/gather bcast
// line's with the lines it spills into), so that a reader whose own size
// differs sees it; a writer that refuses the call writes kRefusedSize. A wait
// for counter c waits for inline_flag(c, 0).
constexpr int kInlineSizeBits = 11;
constexpr std::size_t kRefusedSize = (std::size_t{1} << kInlineSizeBits) - 1;
static_assert(kInlineBytes < kRefusedSize);
constexpr std::uint64_t inline_flag(std::uint64_t counter, std::size_t bytes) {
  return counter << kInlineSizeBits | bytes;
}
constexpr std::size_t inline_size(std::uint64_t flag) { return flag & kRefusedSize; }

// x rounded up to whole lines: areas that start on a line share none.
constexpr std::size_t line_align(std::size_t x) {
  return (x + kCacheLine - 1) / kCacheLine * kCacheLine;
}

inline std::atomic<std::uint64_t>& flag_at(void* p) {
  static_assert(sizeof(std::atomic<std::uint64_t>) == sizeof(std::uint64_t));
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
  return *reinterpret_cast<std::atomic<std::uint64_t>*>(p);
}

inline void release_store(void* flag, std::uint64_t value) {
  flag_at(flag).store(value, std::memory_order_release);
}

inline std::uint64_t acquire_load(const void* flag) {
  return flag_at(const_cast<void*>(flag)).load(std::memory_order_acquire);
}

// Waits (wait_until: spin, then yield; TimeoutError naming `what`) until the
// flag holds at least `value`: flags only grow, so a later value also counts.
inline void wait_flag_reaches(const void* flag, std::uint64_t value, const char* what,
                              double timeout) {
  wait_until([&] { return acquire_load(flag) >= value; }, what, timeout);
}

// wait_flag_reaches, loading the `spill` lines after the flag's line on every
// look: data written there before the flag crosses with it, not after it
// (one line transfer's wait where reading them after the flag takes two).
// `what` as wait_until's (a string, or a callable that makes one).
template <class What>
void wait_flag_and_lines(const std::byte* flag, std::uint64_t value, int spill, const What& what,
                         double timeout) {
  wait_until(
      [&] {
        const bool up = acquire_load(flag) >= value;
        for (int i = 1; i <= spill; ++i)
          flag_at(const_cast<std::byte*>(flag) + i * kCacheLine).load(std::memory_order_relaxed);
        return up;
      },
      what, timeout);
}

// Claims a slot exactly once per epoch across all ranks of a node: the first
// caller that moves it to `epoch` wins. acq_rel so the winner also sees the
// data published before the notification it is acting on.
inline bool claim(void* slot, std::uint64_t epoch) {
  std::uint64_t seen = flag_at(slot).load(std::memory_order_relaxed);
  while (seen < epoch) {
    if (flag_at(slot).compare_exchange_weak(seen, epoch, std::memory_order_acq_rel)) return true;
  }
  return false;
}

// Publishes `epoch` unless the slot already holds a later one: a slot may be
// written by more than one path (READY comes by RMA or by a completed
// receive), and an older epoch must never overwrite a newer one.
inline void publish(void* slot, std::uint64_t epoch) { claim(slot, epoch); }

}  // namespace shancoll
