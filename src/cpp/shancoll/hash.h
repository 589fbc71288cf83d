// FNV-1a: equal inputs, equal hash, in every process (no seed). For values
// the ranks of a call compare cheaply (checked mode, the single-copy
// rendezvous); not for anything adversarial.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace shancoll {

inline std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

inline std::uint64_t fnv1a(const std::vector<std::int64_t>& values) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::int64_t v : values) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
  return h;
}

}  // namespace shancoll
