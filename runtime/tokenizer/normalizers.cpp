// Normalizers (tokenizers' normalizers/): Sequence, NFC/NFD/NFKC/NFKD,
// Lowercase, Replace, Prepend, Strip, StripAccents, ByteLevel, Nmt.
#include "tokenizer/components.h"

#include <algorithm>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace linnet::tokenizer::detail {

namespace {

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> items) : items_(std::move(items)) {}
  void normalize(std::string& s, size_t inputBytes, size_t) const override {
    for (const auto& n : items_) n->apply(s, inputBytes);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> items_;
};

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(unicode::NormalForm form) : form_(form) {}
  void normalize(std::string& s, size_t, size_t) const override { s = unicode::normalize(s, form_); }

 private:
  unicode::NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  void normalize(std::string& s, size_t, size_t) const override { s = unicode::lowercase(s); }
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& s, size_t, size_t limit) const override { s = pattern_.replace(s, content_, limit); }

 private:
  Pattern pattern_;
  std::string content_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  void normalize(std::string& s, size_t, size_t) const override {
    if (!s.empty()) s = prefixed(prepend_, s);
  }

 private:
  std::string prepend_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s, size_t, size_t) const override {
    if (right_) s.resize(unicode::trailingWhitespaceStart(s));
    if (left_) s.erase(0, unicode::leadingWhitespaceEnd(s));
  }

 private:
  bool left_, right_;
};

class StripAccentsNormalizer : public Normalizer {
 public:
  void normalize(std::string& s, size_t, size_t) const override {
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
  void normalize(std::string& s, size_t, size_t) const override { s = byteLevelEncode(s); }
};

class NmtNormalizer : public Normalizer {
 public:
  void normalize(std::string& s, size_t, size_t) const override {
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

void Normalizer::apply(std::string& s, size_t inputBytes) const {
  const size_t limit = outputLimit(inputBytes);
  normalize(s, inputBytes, limit);
  if (s.size() > limit)
    throw Error(file, path,
                fmt::format("the {} normalizer grows the text beyond {} bytes ({} x the input's {} bytes + {}); "
                            "its output is refused",
                            type, limit, kGrowth, inputBytes, kSlack));
}

namespace {

std::unique_ptr<Normalizer> makeNormalizer(const JsonContext& ctx, const json& v, const std::string& path,
                                           const std::string& type) {
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

}  // namespace

std::unique_ptr<Normalizer> parseNormalizer(const JsonContext& ctx, const json& v, const std::string& path) {
  const std::string type = ctx.typeOf(v, path);
  std::unique_ptr<Normalizer> n = makeNormalizer(ctx, v, path, type);
  n->file = ctx.file;
  n->path = path;
  n->type = type;
  return n;
}

}  // namespace linnet::tokenizer::detail
