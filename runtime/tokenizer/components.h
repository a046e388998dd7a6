// The pipeline stages of a tokenizer.json: normalizers, pre-tokenizers,
// decoders and post-processors, and their parsing (internal header). One
// file per kind of stage, as in Hugging Face's tokenizers crate:
// normalizers.cpp, pre_tokenizers.cpp, decoders.cpp, post_processors.cpp;
// components.cpp has what they share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/regex.h"
#include "tokenizer/tokenizer.h"

namespace linnet::tokenizer::detail {

using json = nlohmann::json;

// Where in which file a JSON value sits, for error messages.
struct JsonContext {
  std::string file;
  [[noreturn]] void fail(const std::string& path, const std::string& message) const;
  // Typed accessors that fail with the path instead of throwing nlohmann errors.
  const json& member(const json& obj, const std::string& path, const char* key) const;  // required
  const json* optionalMember(const json& obj, const char* key) const;                   // null if absent or null
  std::string string(const json& v, const std::string& path) const;
  bool boolean(const json& v, const std::string& path) const;
  int64_t integer(const json& v, const std::string& path) const;
  const json& object(const json& v, const std::string& path) const;
  const json& array(const json& v, const std::string& path) const;
  // A one-character string (tokenizers' `char` fields).
  std::string character(const json& v, const std::string& path) const;
  std::string typeOf(const json& obj, const std::string& path) const;  // obj["type"]
  Regex regex(std::string_view pattern, RegexFlavor flavor, const std::string& path) const;
};

// Escapes a key for a JSON pointer ("/" -> "~1", "~" -> "~0").
std::string jsonPointerKey(std::string_view key);

// One split of the text while it is pre-tokenized. `atStart`: whether it
// begins at offset 0 of the original input (Metaspace's prepend_scheme "first").
struct Piece {
  std::string text;
  bool atStart = false;
};
using Pieces = std::vector<Piece>;

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// A pattern for Split, Replace and friends: a literal or a regex.
class Pattern {
 public:
  Pattern() = default;
  static Pattern literal(std::string s);
  static Pattern regex(Regex r);
  // (start, end, isMatch) ranges covering all of `text` (tokenizers' find_matches).
  void findMatches(std::string_view text, std::vector<std::tuple<size_t, size_t, bool>>& out) const;
  // Replaces every match with `content`.
  // Stops (returning more than `limit` bytes) once the output exceeds `limit`.
  std::string replace(std::string_view text, std::string_view content, size_t limit = SIZE_MAX) const;

 private:
  void matchRanges(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  std::string literal_;
  Regex regex_;
  bool isRegex_ = false;
};

// Splits every piece by `pattern` with `behavior` (NormalizedString::split),
// dropping empty results.
void splitPieces(Pieces& pieces, const Pattern& pattern, SplitBehavior behavior, bool invert);

class Normalizer {
 public:
  // A normalizer's output may grow to kGrowth x the text given to the whole
  // normalizer + kSlack bytes (chained Replace normalizers could otherwise
  // grow it without bound).
  static constexpr size_t kGrowth = 16;
  static constexpr size_t kSlack = 4096;
  static size_t outputLimit(size_t inputBytes) { return kGrowth * inputBytes + kSlack; }

  virtual ~Normalizer() = default;
  // Normalizes `s`; `inputBytes` is the size of the text before the first
  // normalizer. Throws Error naming this normalizer if the output exceeds
  // outputLimit(inputBytes).
  void apply(std::string& s, size_t inputBytes) const;
  void apply(std::string& s) const { apply(s, s.size()); }
  // For errors: the tokenizer.json, the JSON path and the type.
  std::string file, path, type;

 protected:
  // May stop early once the output exceeds `limit` (apply then throws).
  virtual void normalize(std::string& s, size_t inputBytes, size_t limit) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void preTokenize(Pieces& pieces) const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Decodes `tokens`; `inputBytes` is their total size before the first
  // decoder. Throws Error naming this decoder if their total exceeds
  // Normalizer::outputLimit(inputBytes) (chained Replace decoders).
  void apply(std::vector<std::string>& tokens, size_t inputBytes) const;
  void apply(std::vector<std::string>& tokens) const;
  // For errors: the tokenizer.json, the JSON path and the type.
  std::string file, path, type;

 protected:
  // May stop early once the tokens' total exceeds `limit` (apply then throws).
  virtual void decodeChain(std::vector<std::string>& tokens, size_t inputBytes, size_t limit) const = 0;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids, bool addSpecialTokens) const = 0;
  // Whether process() adds anything when addSpecialTokens is true.
  virtual bool addsTokens() const = 0;
};

std::unique_ptr<Normalizer> parseNormalizer(const JsonContext& ctx, const json& v, const std::string& path);
std::unique_ptr<PreTokenizer> parsePreTokenizer(const JsonContext& ctx, const json& v, const std::string& path);
std::unique_ptr<Decoder> parseDecoder(const JsonContext& ctx, const json& v, const std::string& path);
std::unique_ptr<PostProcessor> parsePostProcessor(const JsonContext& ctx, const json& v, const std::string& path);

// A post-processor that wraps the sequence with fixed ids (TemplateProcessing
// for a single sequence; what transformers' LlamaTokenizerFast builds).
std::unique_ptr<PostProcessor> makeWrapProcessor(std::vector<int32_t> prefix, std::vector<int32_t> suffix);

// The byte <-> character table of byte-level BPE (GPT-2's bytes_to_unicode).
const std::string& byteToChar(unsigned char b);  // UTF-8 of the character
int charToByte(char32_t cp);                     // -1 if not in the table
std::string byteLevelEncode(std::string_view s);  // every byte as its character

// ---- what the stage parsers share (components.cpp)

// Fails at `path` naming the unsupported `kind` of stage, its `type` and the supported ones.
[[noreturn]] void unsupported(const JsonContext& ctx, const std::string& path, const std::string& kind,
                              const std::string& type, const char* supported);
// obj[key] as a bool, or `dflt` when absent or null.
bool boolOr(const JsonContext& ctx, const json& obj, const std::string& path, const char* key, bool dflt);
// {"String": literal} or {"Regex": pattern}.
Pattern parsePattern(const JsonContext& ctx, const json& v, const std::string& path);
// "Removed", "Isolated", "MergedWithPrevious", "MergedWithNext" or "Contiguous".
SplitBehavior parseBehavior(const JsonContext& ctx, const json& v, const std::string& path);

inline bool startsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

inline std::string prefixed(std::string_view prefix, std::string_view s) {
  std::string out;
  out.reserve(prefix.size() + s.size());
  out.append(prefix);
  out.append(s);
  return out;
}

}  // namespace linnet::tokenizer::detail
