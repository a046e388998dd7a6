#include "common/dtype.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace linnet {

namespace {

struct Info {
  const char* name;
  std::size_t size;
  bool isFloat, isInt, language;
};
// Indexed by the enum's value.
constexpr Info kInfo[] = {
    {"f32", 4, true, false, true},  {"bf16", 2, true, false, true}, {"f16", 2, true, false, true},
    {"i32", 4, false, true, true},  {"i64", 8, false, true, true},  {"bool", 1, false, false, true},
    {"f64", 8, true, false, false}, {"i8", 1, false, true, false},  {"u8", 1, false, true, false},
    {"i16", 2, false, true, false},
};
static_assert(std::size(kInfo) == std::size(kAllDTypes));

const Info& info(DType t) { return kInfo[static_cast<std::size_t>(t)]; }

}  // namespace

const char* name(DType t) { return info(t).name; }

std::optional<DType> dtypeNamed(std::string_view n) {
  for (DType t : kAllDTypes)
    if (n == info(t).name) return t;
  return std::nullopt;
}

bool isLanguageType(DType t) { return info(t).language; }

std::optional<DType> languageDTypeNamed(std::string_view n) {
  auto t = dtypeNamed(n);
  if (t && isLanguageType(*t)) return t;
  return std::nullopt;
}

std::size_t byteSize(DType t) { return info(t).size; }
bool isFloat(DType t) { return info(t).isFloat; }
bool isInt(DType t) { return info(t).isInt; }

}  // namespace linnet

namespace linnet {

namespace {

// The integer range of an integer or bool dtype.
bool intRange(DType t, int64_t& lo, int64_t& hi) {
  switch (t) {
    case DType::I32: lo = INT32_MIN, hi = INT32_MAX; return true;
    case DType::I64: lo = INT64_MIN, hi = INT64_MAX; return true;
    case DType::I16: lo = INT16_MIN, hi = INT16_MAX; return true;
    case DType::I8: lo = INT8_MIN, hi = INT8_MAX; return true;
    case DType::U8: lo = 0, hi = UINT8_MAX; return true;
    case DType::Bool: lo = 0, hi = 1; return true;
    default: return false;
  }
}

// The largest finite value of a float dtype.
double floatMax(DType t) {
  switch (t) {
    case DType::F16: return 65504.0;
    case DType::BF16: return 3.3895313892515355e38;
    case DType::F32: return 3.4028234663852886e38;
    default: return 1.7976931348623157e308;
  }
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // The shortest text that reads back the same.
  for (int p = 1; p <= 17; ++p) {
    char s[64];
    std::snprintf(s, sizeof s, "%.*g", p, v);
    if (std::strtod(s, nullptr) == v) return s;
  }
  return buf;
}

std::string range(DType t, int64_t lo, int64_t hi) {
  return std::string("outside the range of ") + name(t) + " (" + std::to_string(lo) + ".." + std::to_string(hi) + ")";
}

}  // namespace

std::string literalMisfit(DType to, int64_t value) {
  int64_t lo, hi;
  if (intRange(to, lo, hi)) {
    if (value < lo || value > hi) return std::to_string(value) + " is " + range(to, lo, hi);
    return {};
  }
  return literalMisfit(to, static_cast<double>(value));
}

std::string literalMisfit(DType to, double value) {
  int64_t lo, hi;
  if (intRange(to, lo, hi)) {
    if (!std::isfinite(value) || value != std::trunc(value))
      return number(value) + " is not an integer (" + name(to) + ")";
    // 2^63 itself is out of i64's range; every double below it is in.
    if (value < static_cast<double>(lo) || value >= 9223372036854775808.0 || static_cast<int64_t>(value) > hi)
      return number(value) + " is " + range(to, lo, hi);
    return {};
  }
  if (std::isfinite(value) && std::fabs(value) > floatMax(to))
    return number(value) + " is beyond the largest " + name(to) + " (" + number(floatMax(to)) + ")";
  return {};
}

}  // namespace linnet
