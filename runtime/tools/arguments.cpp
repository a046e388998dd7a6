#include "tools/arguments.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

namespace linnet::tools {

std::pair<std::string, std::string> splitAssignment(const std::string& s, const char* flag) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) throw Usage(fmt::format("{} `{}`: expected NAME=VALUE", flag, s));
  return {s.substr(0, eq), s.substr(eq + 1)};
}

// strtoll in base 10 over the whole text; false when it is not an integer.
// Out of range is reported apart, since strtoll would saturate it.
static bool readInt(const std::string& s, int64_t& out, bool& outOfRange) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  outOfRange = errno == ERANGE;
  if (s.empty() || end == s.c_str() || *end != '\0') return false;
  out = v;
  return true;
}

static Usage outOfRange(const std::string& what, const std::string& s) {
  return Usage(fmt::format("{}: `{}` does not fit in 64 bits signed (the range is {} to {})", what, s,
                           std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
}

int64_t parseInt(const std::string& s, const std::string& what) {
  int64_t v = 0;
  bool range = false;
  if (!readInt(s, v, range)) throw Usage(fmt::format("{}: `{}` is not an integer", what, s));
  if (range) throw outOfRange(what, s);
  return v;
}

std::vector<int64_t> parseIntList(const std::string& list, const std::string& what, bool skipEmpty) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string one = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!one.empty() || !skipEmpty) out.push_back(parseInt(one, what));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::variant<int64_t, std::string> parseGenericValue(const std::string& value, const std::string& what) {
  int64_t v = 0;
  bool range = false;
  if (!readInt(value, v, range)) return value;
  if (range) throw outOfRange(what, value);
  return v;
}

double parseNumber(const std::string& s, const std::string& what, double least, double most, bool aboveLeast) {
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  bool ok = !s.empty() && *end == '\0' && std::isfinite(d) && (aboveLeast ? d > least : d >= least) && d <= most;
  if (!ok) {
    std::string expected = std::isinf(most) ? fmt::format("a number {} {}", aboveLeast ? ">" : ">=", least)
                                            : fmt::format("a number in {}{}, {}]", aboveLeast ? "(" : "[", least, most);
    throw Usage(fmt::format("{} `{}`: expected {}", what, s, expected));
  }
  return d;
}

Literal parseLiteral(const std::string& value) {
  if (value == "true" || value == "false") return {Literal::Bool, value == "true" ? 1 : 0, 0};
  int64_t n = 0;
  bool range = false;
  if (readInt(value, n, range)) {
    if (range) throw outOfRange("input value", value);
    return {Literal::Int, n, 0};
  }
  char* end = nullptr;
  double d = std::strtod(value.c_str(), &end);
  if (!value.empty() && *end == '\0') return {Literal::Float, 0, d};
  throw Usage(fmt::format("input value `{}` is neither @file.npy nor a number", value));
}

void refuseWeightsWithRandom(const std::string& weights, bool randomWeights, const std::string& command) {
  if (!randomWeights || weights.empty()) return;
  throw Usage(fmt::format("{}: --weights {} and --random-weights exclude each other (the checkpoint would be ignored); "
                          "drop one. For a folder's tokenizer and sampling with random parameters, pass --tokenizer "
                          "FOLDER --random-weights",
                          command, weights));
}

std::string tokenizerSource(const std::string& tokenizer, const std::string& weights) {
  if (!tokenizer.empty()) return tokenizer;
  if (weights.ends_with(".gguf")) return weights;
  std::error_code ec;
  if (!weights.empty() && std::filesystem::is_directory(weights, ec)) {
    std::filesystem::path file = std::filesystem::path(weights) / "tokenizer.json";
    if (std::filesystem::is_regular_file(file, ec)) return file.string();
    throw Usage(fmt::format("no tokenizer: the folder {} has no tokenizer.json; pass --tokenizer (a tokenizer.json, "
                            "or a .gguf file)",
                            weights));
  }
  throw Usage("no tokenizer: pass --tokenizer (a tokenizer.json, or a .gguf file), or --weights a folder that holds "
              "tokenizer.json or a .gguf file");
}

}  // namespace linnet::tools
