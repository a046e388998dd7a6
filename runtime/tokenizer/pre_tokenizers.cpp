// Pre-tokenizers (tokenizers' pre_tokenizers/): Sequence, Split, ByteLevel,
// Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation,
// BertPreTokenizer, CharDelimiterSplit.
#include "tokenizer/components.h"

#include <algorithm>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace linnet::tokenizer::detail {

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

// Splits at a pattern's matches: a `Split` pre-tokenizer, and the built-in
// ones whose pattern is a character class (tokenizers' `Fn(char) -> bool`
// patterns: every matching character is one match).
class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert = false)
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

std::unique_ptr<PreTokenizer> whitespacePreTokenizer() {
  return std::make_unique<SplitPreTokenizer>(
      Pattern::regex(Regex("\\w+|[^\\w\\s]+", RegexFlavor::RustRegex)), SplitBehavior::Removed, true);
}

std::unique_ptr<PreTokenizer> whitespaceSplitPreTokenizer() {
  return std::make_unique<SplitPreTokenizer>(Pattern::regex(Regex("\\s", RegexFlavor::RustRegex)),
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
    return std::make_unique<SplitPreTokenizer>(Pattern::regex(Regex("\\p{N}", RegexFlavor::RustRegex)),
                                                   individual ? SplitBehavior::Isolated : SplitBehavior::Contiguous);
  }
  if (type == "Whitespace") return whitespacePreTokenizer();
  if (type == "WhitespaceSplit") return whitespaceSplitPreTokenizer();
  if (type == "Punctuation") {
    SplitBehavior behavior = SplitBehavior::Isolated;
    if (const json* b = ctx.optionalMember(v, "behavior")) behavior = parseBehavior(ctx, *b, path + "/behavior");
    return std::make_unique<SplitPreTokenizer>(Pattern::regex(Regex(kPunctuation, RegexFlavor::RustRegex)),
                                                   behavior);
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> items;
    items.push_back(whitespaceSplitPreTokenizer());
    items.push_back(std::make_unique<SplitPreTokenizer>(
        Pattern::regex(Regex(kPunctuation, RegexFlavor::RustRegex)), SplitBehavior::Isolated));
    return std::make_unique<SequencePreTokenizer>(std::move(items));
  }
  if (type == "CharDelimiterSplit")
    return std::make_unique<SplitPreTokenizer>(
        Pattern::literal(ctx.character(ctx.member(v, path, "delimiter"), path + "/delimiter")),
        SplitBehavior::Removed);
  unsupported(ctx, path + "/type", "pre-tokenizer", type,
              "Sequence, Split, ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation, "
              "BertPreTokenizer, CharDelimiterSplit");
}

}  // namespace linnet::tokenizer::detail
