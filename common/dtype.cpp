#include "common/dtype.h"

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
