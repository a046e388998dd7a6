// What the stages of a tokenizer.json share: JSON access with paths in errors,
// patterns and splitting, the byte-level table, and the small parsers of
// fields several stages have.
#include "tokenizer/components.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace linnet::tokenizer::detail {

// ---------------------------------------------------------------- JsonContext

void JsonContext::fail(const std::string& path, const std::string& message) const {
  throw Error(file, path, message);
}

const json* JsonContext::optionalMember(const json& obj, const char* key) const {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

const json& JsonContext::member(const json& obj, const std::string& path, const char* key) const {
  if (!obj.is_object()) fail(path, fmt::format("expected an object, found {}", obj.type_name()));
  auto it = obj.find(key);
  if (it == obj.end()) fail(path + "/" + key, "missing required field");
  return *it;
}

std::string JsonContext::string(const json& v, const std::string& path) const {
  if (!v.is_string()) fail(path, fmt::format("expected a string, found {}", v.type_name()));
  return v.get<std::string>();
}

bool JsonContext::boolean(const json& v, const std::string& path) const {
  if (!v.is_boolean()) fail(path, fmt::format("expected a boolean, found {}", v.type_name()));
  return v.get<bool>();
}

int64_t JsonContext::integer(const json& v, const std::string& path) const {
  if (!v.is_number_integer()) fail(path, fmt::format("expected an integer, found {}", v.type_name()));
  return v.get<int64_t>();
}

const json& JsonContext::object(const json& v, const std::string& path) const {
  if (!v.is_object()) fail(path, fmt::format("expected an object, found {}", v.type_name()));
  return v;
}

const json& JsonContext::array(const json& v, const std::string& path) const {
  if (!v.is_array()) fail(path, fmt::format("expected an array, found {}", v.type_name()));
  return v;
}

std::string JsonContext::character(const json& v, const std::string& path) const {
  std::string s = string(v, path);
  bool single = !s.empty() && unicode::isValidUtf8(s);
  if (single) {
    size_t i = 0;
    unicode::nextCodePoint(s, i);
    single = i == s.size();
  }
  if (!single) fail(path, fmt::format("expected a single character, found {:?}", s));
  return s;
}

std::string JsonContext::typeOf(const json& obj, const std::string& path) const {
  object(obj, path);
  return string(member(obj, path, "type"), path + "/type");
}

Regex JsonContext::regex(std::string_view pattern, RegexFlavor flavor, const std::string& path) const {
  try {
    return Regex(pattern, flavor);
  } catch (const RegexError& e) {
    fail(path, fmt::format("unsupported regex {:?}: {}", pattern, e.what()));
  }
}

// ---------------------------------------------------------------- fields several stages have

[[noreturn]] void unsupported(const JsonContext& ctx, const std::string& path, const std::string& kind,
                              const std::string& type, const char* supported) {
  ctx.fail(path, fmt::format("unsupported {} type {:?} (supported: {})", kind, type, supported));
}

bool boolOr(const JsonContext& ctx, const json& obj, const std::string& path, const char* key, bool dflt) {
  const json* v = ctx.optionalMember(obj, key);
  return v ? ctx.boolean(*v, path + "/" + key) : dflt;
}

Pattern parsePattern(const JsonContext& ctx, const json& v, const std::string& path) {
  ctx.object(v, path);
  if (const json* s = ctx.optionalMember(v, "String")) return Pattern::literal(ctx.string(*s, path + "/String"));
  if (const json* r = ctx.optionalMember(v, "Regex")) {
    const std::string src = ctx.string(*r, path + "/Regex");
    return Pattern::regex(ctx.regex(src, RegexFlavor::Oniguruma, path + "/Regex"));
  }
  ctx.fail(path, "expected {\"String\": ...} or {\"Regex\": ...}");
}

SplitBehavior parseBehavior(const JsonContext& ctx, const json& v, const std::string& path) {
  const std::string b = ctx.string(v, path);
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  ctx.fail(path, fmt::format("unknown split behavior {:?}", b));
}

std::string jsonPointerKey(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// ---------------------------------------------------------------- Pattern

Pattern Pattern::literal(std::string s) {
  Pattern p;
  p.literal_ = std::move(s);
  return p;
}

Pattern Pattern::regex(Regex r) {
  Pattern p;
  p.regex_ = std::move(r);
  p.isRegex_ = true;
  return p;
}

void Pattern::matchRanges(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  if (isRegex_) {
    regex_.findAll(text, out);
    return;
  }
  if (literal_.empty()) return;
  size_t pos = 0;
  while ((pos = text.find(literal_, pos)) != std::string_view::npos) {
    out.emplace_back(pos, pos + literal_.size());
    pos += literal_.size();
  }
}

void Pattern::findMatches(std::string_view text, std::vector<std::tuple<size_t, size_t, bool>>& out) const {
  out.clear();
  if (text.empty()) {
    out.emplace_back(0, 0, false);
    return;
  }
  thread_local std::vector<std::pair<size_t, size_t>> ranges;
  ranges.clear();
  matchRanges(text, ranges);
  size_t prev = 0;
  for (auto [s, e] : ranges) {
    if (prev != s) out.emplace_back(prev, s, false);
    out.emplace_back(s, e, true);
    prev = e;
  }
  if (prev != text.size()) out.emplace_back(prev, text.size(), false);
}

std::string Pattern::replace(std::string_view text, std::string_view content, size_t limit) const {
  std::vector<std::pair<size_t, size_t>> ranges;
  matchRanges(text, ranges);
  if (ranges.empty()) return std::string(text);
  std::string out;
  out.reserve(std::min(text.size() + ranges.size() * content.size(), limit + 1));
  size_t prev = 0;
  for (auto [s, e] : ranges) {
    out.append(text.substr(prev, s - prev));
    out.append(content);
    prev = e;
    if (out.size() > limit) return out;
  }
  out.append(text.substr(prev));
  return out;
}

void splitPieces(Pieces& pieces, const Pattern& pattern, SplitBehavior behavior, bool invert) {
  Pieces result;
  result.reserve(pieces.size() * 2);
  std::vector<std::tuple<size_t, size_t, bool>> matches;
  std::vector<std::pair<std::pair<size_t, size_t>, bool>> splits;  // (range, remove)
  for (Piece& piece : pieces) {
    pattern.findMatches(piece.text, matches);
    if (invert)
      for (auto& m : matches) std::get<2>(m) = !std::get<2>(m);
    splits.clear();
    switch (behavior) {
      case SplitBehavior::Isolated:
        for (auto& [s, e, m] : matches) splits.push_back({{s, e}, false});
        break;
      case SplitBehavior::Removed:
        for (auto& [s, e, m] : matches) splits.push_back({{s, e}, m});
        break;
      case SplitBehavior::Contiguous: {
        bool previousMatch = false;
        for (auto& [s, e, m] : matches) {
          if (m == previousMatch && !splits.empty()) splits.back().first.second = e;
          else splits.push_back({{s, e}, false});
          previousMatch = m;
        }
        break;
      }
      case SplitBehavior::MergedWithPrevious: {
        bool previousMatch = false;
        for (auto& [s, e, m] : matches) {
          if (m && !previousMatch && !splits.empty()) splits.back().first.second = e;
          else splits.push_back({{s, e}, false});
          previousMatch = m;
        }
        break;
      }
      case SplitBehavior::MergedWithNext: {
        bool previousMatch = false;
        for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
          auto& [s, e, m] = *it;
          if (m && !previousMatch && !splits.empty()) splits.back().first.first = s;
          else splits.push_back({{s, e}, false});
          previousMatch = m;
        }
        std::reverse(splits.begin(), splits.end());
        break;
      }
    }
    if (splits.size() == 1 && !splits[0].second && splits[0].first.first == 0 &&
        splits[0].first.second == piece.text.size()) {
      if (!piece.text.empty()) result.push_back(std::move(piece));
      continue;
    }
    for (auto& [range, remove] : splits) {
      if (remove || range.second == range.first) continue;
      result.push_back(Piece{piece.text.substr(range.first, range.second - range.first),
                             piece.atStart && range.first == 0});
    }
  }
  pieces = std::move(result);
}

// ---------------------------------------------------------------- byte table

namespace {

struct ByteTables {
  std::array<std::string, 256> toChar;
  std::array<int16_t, 512> toByte;
  ByteTables() {
    toByte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      toChar[static_cast<size_t>(b)] = unicode::toUtf8(cp);
      toByte[cp] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& byteTables() {
  static const ByteTables t;
  return t;
}

}  // namespace

const std::string& byteToChar(unsigned char b) { return byteTables().toChar[b]; }

int charToByte(char32_t cp) { return cp < 512 ? byteTables().toByte[cp] : -1; }

std::string byteLevelEncode(std::string_view s) {
  const ByteTables& t = byteTables();
  std::string out;
  out.reserve(s.size() * 2);
  for (char c : s) out += t.toChar[static_cast<unsigned char>(c)];
  return out;
}

}  // namespace linnet::tokenizer::detail
