// Sizes and durations as the tools print and measure them.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace linnet {

// "1.50 GiB", "12.3 MiB" or "512 bytes".
inline std::string bytesText(std::uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.2f} GiB", n / double(1ull << 30));
  if (n >= (1ull << 20)) return fmt::format("{:.1f} MiB", n / double(1ull << 20));
  return fmt::format("{} bytes", n);
}

// Seconds since `t0` on the steady clock.
inline double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace linnet
