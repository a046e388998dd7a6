// Decoders (tokenizers' decoders/): Sequence, ByteLevel, Metaspace, Replace,
// ByteFallback, Fuse, Strip, BPEDecoder, WordPiece.
#include "tokenizer/components.h"

#include <algorithm>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace linnet::tokenizer::detail {

namespace {

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> items) : items_(std::move(items)) {}
  void decodeChain(std::vector<std::string>& tokens, size_t inputBytes, size_t) const override {
    for (const auto& d : items_) d->apply(tokens, inputBytes);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> items_;
};

// All tokens' characters mapped back to bytes (a token with a character
// outside the table keeps its UTF-8 bytes), then lossy UTF-8 of the whole.
class ByteLevelDecoder : public Decoder {
 public:
  void decodeChain(std::vector<std::string>& tokens, size_t, size_t) const override {
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
  void decodeChain(std::vector<std::string>& tokens, size_t, size_t) const override {
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
  void decodeChain(std::vector<std::string>& tokens, size_t, size_t limit) const override {
    size_t total = 0;
    for (const std::string& t : tokens) total += t.size();
    for (std::string& t : tokens) {
      total -= t.size();
      t = pattern_.replace(t, content_, limit - std::min(total, limit));
      total += t.size();
      if (total > limit) return;
    }
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
  void decodeChain(std::vector<std::string>& tokens, size_t, size_t) const override {
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
  void decodeChain(std::vector<std::string>& tokens, size_t, size_t) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  void decodeChain(std::vector<std::string>& tokens, size_t, size_t) const override {
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
  void decodeChain(std::vector<std::string>& tokens, size_t, size_t) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = suffix_.replace(tokens[i], i + 1 == tokens.size() ? "" : " ");
  }

 private:
  Pattern suffix_;
};

class WordPieceDecoder : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decodeChain(std::vector<std::string>& tokens, size_t, size_t) const override {
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

namespace {
size_t totalBytes(const std::vector<std::string>& tokens) {
  size_t n = 0;
  for (const std::string& t : tokens) n += t.size();
  return n;
}
}  // namespace

void Decoder::apply(std::vector<std::string>& tokens) const { apply(tokens, totalBytes(tokens)); }

void Decoder::apply(std::vector<std::string>& tokens, size_t inputBytes) const {
  const size_t limit = Normalizer::outputLimit(inputBytes);
  decodeChain(tokens, inputBytes, limit);
  if (totalBytes(tokens) > limit)
    throw Error(file, path,
                fmt::format("the {} decoder grows the text beyond {} bytes ({} x the tokens' {} bytes + {}); "
                            "its output is refused",
                            type, limit, Normalizer::kGrowth, inputBytes, Normalizer::kSlack));
}

namespace {

std::unique_ptr<Decoder> makeDecoder(const JsonContext& ctx, const json& v, const std::string& path,
                                     const std::string& type) {
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

}  // namespace

std::unique_ptr<Decoder> parseDecoder(const JsonContext& ctx, const json& v, const std::string& path) {
  const std::string type = ctx.typeOf(v, path);
  std::unique_ptr<Decoder> d = makeDecoder(ctx, v, path, type);
  d->file = ctx.file;
  d->path = path;
  d->type = type;
  return d;
}

}  // namespace linnet::tokenizer::detail
