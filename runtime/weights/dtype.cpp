#include "weights/dtype.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

namespace linnet::weights {

namespace {
// Indexed by linnet::DType's value.
constexpr std::string_view kSafetensorsNames[] = {"F32", "BF16", "F16", "I32", "I64",
                                                  "BOOL", "F64", "I8", "U8", "I16"};
static_assert(std::size(kSafetensorsNames) == std::size(kAllDTypes));
}  // namespace

std::string_view safetensorsName(DType t) { return kSafetensorsNames[static_cast<std::size_t>(t)]; }

std::optional<DType> parseSafetensorsDType(std::string_view s) {
  for (DType t : kAllDTypes)
    if (safetensorsName(t) == s) return t;
  return std::nullopt;
}

std::string supportedSafetensorsDTypes() {
  std::string out;
  for (DType t : kAllDTypes) {
    if (!out.empty()) out += ", ";
    out += safetensorsName(t);
  }
  return out;
}

std::string shapeString(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

std::optional<std::int64_t> elementCount(const Shape& s) {
  std::int64_t n = 1;
  for (std::int64_t d : s) {
    if (d < 0) return std::nullopt;
    if (d != 0 && n > std::numeric_limits<std::int64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

}  // namespace linnet::weights
