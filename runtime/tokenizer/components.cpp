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

namespace {

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

bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string prefixed(std::string_view prefix, std::string_view s) {
  std::string out;
  out.reserve(prefix.size() + s.size());
  out.append(prefix);
  out.append(s);
  return out;
}

}  // namespace

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

std::string Pattern::replace(std::string_view text, std::string_view content) const {
  std::vector<std::pair<size_t, size_t>> ranges;
  matchRanges(text, ranges);
  if (ranges.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size() + ranges.size() * content.size());
  size_t prev = 0;
  for (auto [s, e] : ranges) {
    out.append(text.substr(prev, s - prev));
    out.append(content);
    prev = e;
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

namespace {

std::string byteLevelEncode(std::string_view s) {
  const ByteTables& t = byteTables();
  std::string out;
  out.reserve(s.size() * 2);
  for (char c : s) out += t.toChar[static_cast<unsigned char>(c)];
  return out;
}

// ---------------------------------------------------------------- normalizers

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> items) : items_(std::move(items)) {}
  void normalize(std::string& s) const override {
    for (const auto& n : items_) n->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> items_;
};

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(unicode::NormalForm form) : form_(form) {}
  void normalize(std::string& s) const override { s = unicode::normalize(s, form_); }

 private:
  unicode::NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  void normalize(std::string& s) const override { s = unicode::lowercase(s); }
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& s) const override { s = pattern_.replace(s, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s = prefixed(prepend_, s);
  }

 private:
  std::string prepend_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s) const override {
    if (right_) {
      size_t end = s.size();
      while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        size_t i = start;
        if (!unicode::isWhitespace(unicode::nextCodePoint(s, i))) break;
        end = start;
      }
      s.resize(end);
    }
    if (left_) {
      size_t i = 0;
      while (i < s.size()) {
        size_t j = i;
        if (!unicode::isWhitespace(unicode::nextCodePoint(s, j))) break;
        i = j;
      }
      s.erase(0, i);
    }
  }

 private:
  bool left_, right_;
};

class StripAccentsNormalizer : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      const size_t start = i;
      if (!unicode::isStripAccentMark(unicode::nextCodePoint(s, i))) out.append(s, start, i - start);
    }
    s = std::move(out);
  }
};

class ByteLevelNormalizer : public Normalizer {
 public:
  void normalize(std::string& s) const override { s = byteLevelEncode(s); }
};

class NmtNormalizer : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      const char32_t c = unicode::nextCodePoint(s, i);
      if ((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F ||
          c == 0x9F)
        continue;
      const bool space = c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 ||
                         (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 || c == 0x2581 ||
                         c == 0xFEFF || c == 0xFFFD;
      unicode::appendUtf8(out, space ? U' ' : c);
    }
    s = std::move(out);
  }
};

}  // namespace

std::unique_ptr<Normalizer> parseNormalizer(const JsonContext& ctx, const json& v, const std::string& path) {
  const std::string type = ctx.typeOf(v, path);
  if (type == "Sequence") {
    const json& list = ctx.array(ctx.member(v, path, "normalizers"), path + "/normalizers");
    std::vector<std::unique_ptr<Normalizer>> items;
    for (size_t i = 0; i < list.size(); ++i)
      items.push_back(parseNormalizer(ctx, list[i], fmt::format("{}/normalizers/{}", path, i)));
    return std::make_unique<SequenceNormalizer>(std::move(items));
  }
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(unicode::NormalForm::NFKD);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "Replace")
    return std::make_unique<ReplaceNormalizer>(parsePattern(ctx, ctx.member(v, path, "pattern"), path + "/pattern"),
                                               ctx.string(ctx.member(v, path, "content"), path + "/content"));
  if (type == "Prepend")
    return std::make_unique<PrependNormalizer>(ctx.string(ctx.member(v, path, "prepend"), path + "/prepend"));
  if (type == "Strip")
    return std::make_unique<StripNormalizer>(boolOr(ctx, v, path, "strip_left", true),
                                             boolOr(ctx, v, path, "strip_right", true));
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Nmt") return std::make_unique<NmtNormalizer>();
  unsupported(ctx, path + "/type", "normalizer", type,
              "Sequence, NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend, Strip, StripAccents, ByteLevel, Nmt");
}

// ---------------------------------------------------------------- pre-tokenizers

namespace {

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> items) : items_(std::move(items)) {}
  void preTokenize(Pieces& pieces) const override {
    for (const auto& p : items_) p->preTokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> items_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void preTokenize(Pieces& pieces) const override { splitPieces(pieces, pattern_, behavior_, invert_); }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

constexpr const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool addPrefixSpace, bool useRegex) : addPrefixSpace_(addPrefixSpace), useRegex_(useRegex) {
    if (useRegex_) pattern_ = Pattern::regex(Regex(kGpt2Pattern, RegexFlavor::Oniguruma));
  }
  void preTokenize(Pieces& pieces) const override {
    if (addPrefixSpace_)
      for (Piece& p : pieces)
        if (!p.text.empty() && p.text[0] != ' ') p.text = prefixed(" ", p.text);
    if (useRegex_) splitPieces(pieces, pattern_, SplitBehavior::Isolated, false);
    for (Piece& p : pieces) p.text = byteLevelEncode(p.text);
  }

 private:
  bool addPrefixSpace_, useRegex_;
  Pattern pattern_;
};

enum class PrependScheme { Always, First, Never };

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split),
        spaces_(Pattern::literal(" ")), splitter_(Pattern::literal(replacement_)) {}
  void preTokenize(Pieces& pieces) const override {
    for (Piece& p : pieces) {
      p.text = spaces_.replace(p.text, replacement_);
      const bool starts = startsWith(p.text, replacement_);
      if ((scheme_ == PrependScheme::Always && !starts) || (scheme_ == PrependScheme::First && !starts && p.atStart))
        p.text = prefixed(replacement_, p.text);
    }
    if (split_) splitPieces(pieces, splitter_, SplitBehavior::MergedWithNext, false);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
  Pattern spaces_, splitter_;
};

// Splits with a single-character class pattern (tokenizers' `Fn(char) -> bool`
// patterns: every matching character is one match).
class CharClassPreTokenizer : public PreTokenizer {
 public:
  CharClassPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert = false)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void preTokenize(Pieces& pieces) const override { splitPieces(pieces, pattern_, behavior_, invert_); }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

std::unique_ptr<PreTokenizer> whitespacePreTokenizer() {
  return std::make_unique<CharClassPreTokenizer>(
      Pattern::regex(Regex("\\w+|[^\\w\\s]+", RegexFlavor::RustRegex)), SplitBehavior::Removed, true);
}

std::unique_ptr<PreTokenizer> whitespaceSplitPreTokenizer() {
  return std::make_unique<CharClassPreTokenizer>(Pattern::regex(Regex("\\s", RegexFlavor::RustRegex)),
                                                 SplitBehavior::Removed);
}

// char::is_ascii_punctuation() || char::is_punctuation()
constexpr const char* kPunctuation = "[\\p{P}!-/:-@\\[-`{-~]";

}  // namespace

std::unique_ptr<PreTokenizer> parsePreTokenizer(const JsonContext& ctx, const json& v, const std::string& path) {
  const std::string type = ctx.typeOf(v, path);
  if (type == "Sequence") {
    const json& list = ctx.array(ctx.member(v, path, "pretokenizers"), path + "/pretokenizers");
    std::vector<std::unique_ptr<PreTokenizer>> items;
    for (size_t i = 0; i < list.size(); ++i)
      items.push_back(parsePreTokenizer(ctx, list[i], fmt::format("{}/pretokenizers/{}", path, i)));
    return std::make_unique<SequencePreTokenizer>(std::move(items));
  }
  if (type == "Split") {
    Pattern pattern = parsePattern(ctx, ctx.member(v, path, "pattern"), path + "/pattern");
    const SplitBehavior behavior = parseBehavior(ctx, ctx.member(v, path, "behavior"), path + "/behavior");
    const bool invert = boolOr(ctx, v, path, "invert", false);
    return std::make_unique<SplitPreTokenizer>(std::move(pattern), behavior, invert);
  }
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPreTokenizer>(boolOr(ctx, v, path, "add_prefix_space", true),
                                                   boolOr(ctx, v, path, "use_regex", true));
  if (type == "Metaspace") {
    const std::string replacement = ctx.character(ctx.member(v, path, "replacement"), path + "/replacement");
    PrependScheme scheme = PrependScheme::Always;
    const json* ps = ctx.optionalMember(v, "prepend_scheme");
    if (ps) {
      const std::string s = ctx.string(*ps, path + "/prepend_scheme");
      if (s == "always") scheme = PrependScheme::Always;
      else if (s == "first") scheme = PrependScheme::First;
      else if (s == "never") scheme = PrependScheme::Never;
      else ctx.fail(path + "/prepend_scheme", fmt::format("unknown prepend_scheme {:?}", s));
    }
    if (const json* aps = ctx.optionalMember(v, "add_prefix_space"); aps && !ctx.boolean(*aps, path + "/add_prefix_space")) {
      if (ps && scheme != PrependScheme::Never)
        ctx.fail(path + "/add_prefix_space", "add_prefix_space does not match declared prepend_scheme");
      scheme = PrependScheme::Never;
    }
    return std::make_unique<MetaspacePreTokenizer>(replacement, scheme, boolOr(ctx, v, path, "split", true));
  }
  if (type == "Digits") {
    const bool individual = boolOr(ctx, v, path, "individual_digits", false);
    return std::make_unique<CharClassPreTokenizer>(Pattern::regex(Regex("\\p{N}", RegexFlavor::RustRegex)),
                                                   individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
  }
  if (type == "Whitespace") return whitespacePreTokenizer();
  if (type == "WhitespaceSplit") return whitespaceSplitPreTokenizer();
  if (type == "Punctuation") {
    SplitBehavior behavior = SplitBehavior::Isolated;
    if (const json* b = ctx.optionalMember(v, "behavior")) behavior = parseBehavior(ctx, *b, path + "/behavior");
    return std::make_unique<CharClassPreTokenizer>(Pattern::regex(Regex(kPunctuation, RegexFlavor::RustRegex)),
                                                   behavior);
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> items;
    items.push_back(whitespaceSplitPreTokenizer());
    items.push_back(std::make_unique<CharClassPreTokenizer>(
        Pattern::regex(Regex(kPunctuation, RegexFlavor::RustRegex)), SplitBehavior::Isolated));
    return std::make_unique<SequencePreTokenizer>(std::move(items));
  }
  if (type == "CharDelimiterSplit")
    return std::make_unique<CharClassPreTokenizer>(
        Pattern::literal(ctx.character(ctx.member(v, path, "delimiter"), path + "/delimiter")),
        SplitBehavior::Removed);
  unsupported(ctx, path + "/type", "pre-tokenizer", type,
              "Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation, "
              "BertPreTokenizer, CharDelimiterSplit");
}

// ---------------------------------------------------------------- decoders

namespace {

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> items) : items_(std::move(items)) {}
  void decodeChain(std::vector<std::string>& tokens) const override {
    for (const auto& d : items_) d->decodeChain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> items_;
};

// All tokens' characters mapped back to bytes (a token with a character
// outside the table keeps its UTF-8 bytes), then lossy UTF-8 of the whole.
class ByteLevelDecoder : public Decoder {
 public:
  void decodeChain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      const size_t mark = bytes.size();
      bool ok = true;
      for (size_t i = 0; i < t.size();) {
        const int b = charToByte(unicode::nextCodePoint(t, i));
        if (b < 0) {
          ok = false;
          break;
        }
        bytes.push_back(static_cast<char>(b));
      }
      if (!ok) {
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, unicode::utf8Lossy(bytes));
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool stripFirst) : replacement_(std::move(replacement)), stripFirst_(stripFirst) {}
  void decodeChain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t k = 0; k < t.size();) {
        if (t.compare(k, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && stripFirst_)) out += ' ';
          k += replacement_.size();
        } else {
          out += t[k++];
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool stripFirst_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decodeChain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) t = pattern_.replace(t, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

int byteFallbackValue(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int v = 0;
  for (int k = 3; k < 5; ++k) {
    const char c = t[static_cast<size_t>(k)];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    v = v * 16 + d;
  }
  return v;
}

class ByteFallbackDecoder : public Decoder {
 public:
  void decodeChain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string pending;
    const auto flush = [&] {
      if (pending.empty()) return;
      if (unicode::isValidUtf8(pending)) {
        out.push_back(pending);
      } else {
        for (size_t k = 0; k < pending.size(); ++k) out.push_back(unicode::toUtf8(unicode::kReplacementChar));
      }
      pending.clear();
    };
    for (std::string& t : tokens) {
      const int b = byteFallbackValue(t);
      if (b >= 0) {
        pending.push_back(static_cast<char>(b));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder : public Decoder {
 public:
  void decodeChain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  void decodeChain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      size_t begin = 0;
      for (size_t k = 0; k < start_ && t.compare(begin, content_.size(), content_) == 0; ++k) begin += content_.size();
      size_t end = t.size();
      for (size_t k = 0; k < stop_ && end >= begin + content_.size() &&
                         t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++k)
        end -= content_.size();
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class BpeSuffixDecoder : public Decoder {
 public:
  explicit BpeSuffixDecoder(std::string suffix) : suffix_(Pattern::literal(std::move(suffix))) {}
  void decodeChain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = suffix_.replace(tokens[i], i + 1 == tokens.size() ? "" : " ");
  }

 private:
  Pattern suffix_;
};

class WordPieceDecoder : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decodeChain(std::vector<std::string>& tokens) const override {
    static const std::pair<const char*, const char*> kCleanup[] = {
        {" .", "."},   {" ?", "?"},   {" !", "!"},   {" ,", ","},         {" ' ", "'"},  {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (startsWith(t, prefix_)) t.erase(0, prefix_.size());
        else t = prefixed(" ", t);
      }
      if (cleanup_)
        for (auto [from, to] : kCleanup) t = Pattern::literal(from).replace(t, to);
    }
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

}  // namespace

std::unique_ptr<Decoder> parseDecoder(const JsonContext& ctx, const json& v, const std::string& path) {
  const std::string type = ctx.typeOf(v, path);
  if (type == "Sequence") {
    const json& list = ctx.array(ctx.member(v, path, "decoders"), path + "/decoders");
    std::vector<std::unique_ptr<Decoder>> items;
    for (size_t i = 0; i < list.size(); ++i)
      items.push_back(parseDecoder(ctx, list[i], fmt::format("{}/decoders/{}", path, i)));
    return std::make_unique<SequenceDecoder>(std::move(items));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    const std::string replacement = ctx.character(ctx.member(v, path, "replacement"), path + "/replacement");
    bool stripFirst = true;
    const json* ps = ctx.optionalMember(v, "prepend_scheme");
    if (ps) stripFirst = ctx.string(*ps, path + "/prepend_scheme") != "never";
    if (const json* aps = ctx.optionalMember(v, "add_prefix_space"); aps && !ctx.boolean(*aps, path + "/add_prefix_space"))
      stripFirst = false;
    return std::make_unique<MetaspaceDecoder>(replacement, stripFirst);
  }
  if (type == "Replace")
    return std::make_unique<ReplaceDecoder>(parsePattern(ctx, ctx.member(v, path, "pattern"), path + "/pattern"),
                                            ctx.string(ctx.member(v, path, "content"), path + "/content"));
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    const int64_t start = ctx.integer(ctx.member(v, path, "start"), path + "/start");
    const int64_t stop = ctx.integer(ctx.member(v, path, "stop"), path + "/stop");
    if (start < 0 || stop < 0) ctx.fail(path, "start and stop must not be negative");
    return std::make_unique<StripDecoder>(ctx.character(ctx.member(v, path, "content"), path + "/content"),
                                          static_cast<size_t>(start), static_cast<size_t>(stop));
  }
  if (type == "BPEDecoder") {
    std::string suffix = "</w>";
    if (const json* s = ctx.optionalMember(v, "suffix")) suffix = ctx.string(*s, path + "/suffix");
    return std::make_unique<BpeSuffixDecoder>(suffix);
  }
  if (type == "WordPiece") {
    std::string prefix = "##";
    if (const json* s = ctx.optionalMember(v, "prefix")) prefix = ctx.string(*s, path + "/prefix");
    return std::make_unique<WordPieceDecoder>(prefix, boolOr(ctx, v, path, "cleanup", true));
  }
  unsupported(ctx, path + "/type", "decoder", type,
              "Sequence, ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip, BPEDecoder, WordPiece");
}

// ---------------------------------------------------------------- post-processors

namespace {

class NoOpProcessor : public PostProcessor {
 public:
  void process(std::vector<int32_t>&, bool) const override {}
  bool addsTokens() const override { return false; }
};

class WrapProcessor : public PostProcessor {
 public:
  WrapProcessor(std::vector<int32_t> prefix, std::vector<int32_t> suffix)
      : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  void process(std::vector<int32_t>& ids, bool addSpecialTokens) const override {
    if (!addSpecialTokens) return;
    ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  }
  bool addsTokens() const override { return !prefix_.empty() || !suffix_.empty(); }

 private:
  std::vector<int32_t> prefix_, suffix_;
};

// TemplateProcessing's "single" template: special tokens around (and possibly
// inside, though only $A exists for a single sequence) the sequence.
class TemplateProcessor : public PostProcessor {
 public:
  struct Item {
    bool isSequence;
    std::vector<int32_t> ids;
  };
  explicit TemplateProcessor(std::vector<Item> items) : items_(std::move(items)) {}
  void process(std::vector<int32_t>& ids, bool addSpecialTokens) const override {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 8);
    for (const Item& item : items_) {
      if (item.isSequence) out.insert(out.end(), ids.begin(), ids.end());
      else if (addSpecialTokens) out.insert(out.end(), item.ids.begin(), item.ids.end());
    }
    ids = std::move(out);
  }
  bool addsTokens() const override {
    for (const Item& item : items_)
      if (!item.isSequence && !item.ids.empty()) return true;
    return false;
  }

 private:
  std::vector<Item> items_;
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> items) : items_(std::move(items)) {}
  void process(std::vector<int32_t>& ids, bool addSpecialTokens) const override {
    for (const auto& p : items_) p->process(ids, addSpecialTokens);
  }
  bool addsTokens() const override {
    for (const auto& p : items_)
      if (p->addsTokens()) return true;
    return false;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> items_;
};

std::pair<std::string, int32_t> parseTokenPair(const JsonContext& ctx, const json& v, const std::string& path) {
  ctx.array(v, path);
  if (v.size() != 2) ctx.fail(path, "expected [token, id]");
  const int64_t id = ctx.integer(v[1], path + "/1");
  if (id < 0 || id > INT32_MAX) ctx.fail(path + "/1", "id out of range");
  return {ctx.string(v[0], path + "/0"), static_cast<int32_t>(id)};
}

}  // namespace

std::unique_ptr<PostProcessor> makeWrapProcessor(std::vector<int32_t> prefix, std::vector<int32_t> suffix) {
  return std::make_unique<WrapProcessor>(std::move(prefix), std::move(suffix));
}

std::unique_ptr<PostProcessor> parsePostProcessor(const JsonContext& ctx, const json& v, const std::string& path) {
  const std::string type = ctx.typeOf(v, path);
  if (type == "ByteLevel") return std::make_unique<NoOpProcessor>();
  if (type == "Sequence") {
    const json& list = ctx.array(ctx.member(v, path, "processors"), path + "/processors");
    std::vector<std::unique_ptr<PostProcessor>> items;
    for (size_t i = 0; i < list.size(); ++i)
      items.push_back(parsePostProcessor(ctx, list[i], fmt::format("{}/processors/{}", path, i)));
    return std::make_unique<SequenceProcessor>(std::move(items));
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    auto cls = parseTokenPair(ctx, ctx.member(v, path, "cls"), path + "/cls");
    auto sep = parseTokenPair(ctx, ctx.member(v, path, "sep"), path + "/sep");
    return std::make_unique<WrapProcessor>(std::vector<int32_t>{cls.second}, std::vector<int32_t>{sep.second});
  }
  if (type == "TemplateProcessing") {
    const json& specials = ctx.object(ctx.member(v, path, "special_tokens"), path + "/special_tokens");
    const json& single = ctx.array(ctx.member(v, path, "single"), path + "/single");
    std::vector<TemplateProcessor::Item> items;
    for (size_t i = 0; i < single.size(); ++i) {
      const std::string ip = fmt::format("{}/single/{}", path, i);
      const json& piece = ctx.object(single[i], ip);
      if (const json* seq = ctx.optionalMember(piece, "Sequence")) {
        const std::string id = ctx.string(ctx.member(*seq, ip + "/Sequence", "id"), ip + "/Sequence/id");
        if (id != "A") ctx.fail(ip + "/Sequence/id", fmt::format("sequence {:?} in a single-sequence template", id));
        items.push_back({true, {}});
      } else if (const json* sp = ctx.optionalMember(piece, "SpecialToken")) {
        const std::string id = ctx.string(ctx.member(*sp, ip + "/SpecialToken", "id"), ip + "/SpecialToken/id");
        auto it = specials.find(id);
        if (it == specials.end())
          ctx.fail(ip + "/SpecialToken/id", fmt::format("special token {:?} is missing from special_tokens", id));
        const std::string sp2 = path + "/special_tokens/" + jsonPointerKey(id);
        const json& idsJson = ctx.array(ctx.member(*it, sp2, "ids"), sp2 + "/ids");
        std::vector<int32_t> ids;
        for (size_t k = 0; k < idsJson.size(); ++k) {
          const int64_t x = ctx.integer(idsJson[k], fmt::format("{}/ids/{}", sp2, k));
          if (x < 0 || x > INT32_MAX) ctx.fail(fmt::format("{}/ids/{}", sp2, k), "id out of range");
          ids.push_back(static_cast<int32_t>(x));
        }
        items.push_back({false, std::move(ids)});
      } else {
        ctx.fail(ip, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
      }
    }
    return std::make_unique<TemplateProcessor>(std::move(items));
  }
  unsupported(ctx, path + "/type", "post-processor", type,
              "ByteLevel, TemplateProcessing, Sequence, RobertaProcessing, BertProcessing");
}

}  // namespace linnet::tokenizer::detail
