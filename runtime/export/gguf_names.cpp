#include "export/gguf_names.h"

#include <algorithm>
#include <cctype>

#include "weights/bindings.h"

namespace linnet::exporter {

namespace {

struct Rule {
  std::string_view family, linnet, gguf, permuteBy;
  TensorRole role;
};

constexpr Rule kRules[] = {
#define GGUF_NAME(family, linnet, gguf, permute, role) {#family, linnet, gguf, permute, TensorRole::role},
#include "export/gguf_names.def"
#undef GGUF_NAME
};

}  // namespace

std::vector<std::string> ggufFamilies() {
  std::vector<std::string> out;
  for (const Rule& r : kRules)
    if (std::find(out.begin(), out.end(), r.family) == out.end()) out.emplace_back(r.family);
  std::sort(out.begin(), out.end());
  return out;
}

bool hasGgufFamily(std::string_view family) {
  return std::any_of(std::begin(kRules), std::end(kRules), [&](const Rule& r) { return r.family == family; });
}

std::string ggufArchitecture(std::string_view family) { return std::string(family); }

std::optional<GgufName> ggufNameFor(std::string_view family, std::string_view linnetPath) {
  for (const Rule& r : kRules) {
    if (r.family != family) continue;
    // The same `*` patterns as bindings.json's.
    auto indices = weights::matchPattern(r.linnet, linnetPath);
    if (!indices) continue;
    return GgufName{weights::fillPattern(r.gguf, *indices), std::string(r.permuteBy), r.role};
  }
  return std::nullopt;
}

}  // namespace linnet::exporter
