#include "export/gguf_names.h"

#include <algorithm>
#include <cctype>

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

std::vector<std::string_view> split(std::string_view s) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    std::size_t dot = s.find('.', start);
    out.push_back(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return out;
    start = dot + 1;
  }
}

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// The indices `path` gives the pattern's `*`s, or nullopt when it does not match.
std::optional<std::vector<std::string_view>> match(std::string_view pattern, std::string_view path) {
  std::vector<std::string_view> p = split(pattern), q = split(path), indices;
  if (p.size() != q.size()) return std::nullopt;
  for (std::size_t k = 0; k < p.size(); ++k) {
    if (p[k] == "*") {
      if (!allDigits(q[k])) return std::nullopt;
      indices.push_back(q[k]);
    } else if (p[k] != q[k]) {
      return std::nullopt;
    }
  }
  return indices;
}

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
    auto indices = match(r.linnet, linnetPath);
    if (!indices) continue;
    std::string name;
    std::size_t next = 0;
    for (std::string_view part : split(r.gguf)) {
      if (!name.empty()) name += '.';
      name += part == "*" && next < indices->size() ? std::string((*indices)[next++]) : std::string(part);
    }
    return GgufName{name, std::string(r.permuteBy), r.role};
  }
  return std::nullopt;
}

}  // namespace linnet::exporter
