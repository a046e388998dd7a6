#include "weights/dtype.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <limits>

namespace linnet::weights {

namespace {
struct Info {
  DType type;
  std::string_view st;
  std::string_view linnet;
  std::size_t size;
  bool isFloat;
};
constexpr Info kInfo[] = {
    {DType::F32, "F32", "f32", 4, true},   {DType::BF16, "BF16", "bf16", 2, true},
    {DType::F16, "F16", "f16", 2, true},   {DType::I32, "I32", "i32", 4, false},
    {DType::I64, "I64", "i64", 8, false},  {DType::Bool, "BOOL", "bool", 1, false},
    {DType::F64, "F64", "f64", 8, true},   {DType::I8, "I8", "i8", 1, false},
    {DType::U8, "U8", "u8", 1, false},     {DType::I16, "I16", "i16", 2, false},
};
const Info& info(DType t) { return kInfo[static_cast<std::size_t>(t)]; }
}  // namespace

std::string_view safetensorsName(DType t) { return info(t).st; }
std::string_view linnetName(DType t) { return info(t).linnet; }
std::size_t dtypeSize(DType t) { return info(t).size; }
bool isFloat(DType t) { return info(t).isFloat; }

std::optional<DType> parseSafetensorsDType(std::string_view s) {
  for (const Info& i : kInfo)
    if (i.st == s) return i.type;
  return std::nullopt;
}

std::optional<DType> parseLinnetDType(std::string_view s) {
  for (const Info& i : kInfo)
    if (i.linnet == s) return i.type;
  return std::nullopt;
}

std::string supportedSafetensorsDTypes() {
  std::string out;
  for (const Info& i : kInfo) {
    if (!out.empty()) out += ", ";
    out += i.st;
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
