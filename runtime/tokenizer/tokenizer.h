// Tokenizers from Hugging Face `tokenizer.json` (+ `tokenizer_config.json`):
// byte-level BPE (Llama 3, GPT-2, SmolLM, Qwen) and SentencePiece-style BPE
// with byte fallback (Llama 2, TinyLlama, Mistral). Encoding and decoding
// follow the Hugging Face `tokenizers` library exactly; see docs/tokenizer.md.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace linnet::tokenizer {

// Every failure: unreadable, malformed or unsupported files (the message names
// the file, the JSON path and what is wrong), invalid UTF-8 input to encode().
class Error : public std::runtime_error {
 public:
  Error(std::string file, std::string jsonPath, const std::string& message);
  explicit Error(const std::string& message) : Error("", "", message) {}
  const std::string& file() const { return file_; }
  // A JSON pointer such as "/pre_tokenizer/pretokenizers/0/type" ("" if none).
  const std::string& jsonPath() const { return jsonPath_; }

 private:
  std::string file_;
  std::string jsonPath_;
};

// An entry of tokenizer.json's "added_tokens".
struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool singleWord = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

namespace detail {
struct TokenizerImpl;
}

class StreamDecoder;

class Tokenizer {
 public:
  // Reads tokenizer.json and, if `configPath` is not empty, tokenizer_config.json.
  static Tokenizer load(const std::string& tokenizerJsonPath, const std::string& configPath = "");
  // The same from JSON text; `sourceName` stands for the file in error messages.
  static Tokenizer fromJson(std::string_view tokenizerJson, std::string_view configJson = "",
                            const std::string& sourceName = "<tokenizer.json>");
  // The same from JSON already in memory (a GGUF's vocabulary built as
  // tokenizer.json), without printing it and parsing it again.
  static Tokenizer fromJsonValue(const nlohmann::json& tokenizer, const nlohmann::json* config = nullptr,
                                 const std::string& sourceName = "<tokenizer.json>");

  // Token ids of `text` (UTF-8; throws Error if invalid). `addSpecialTokens`
  // applies the post-processor (e.g. BOS). With `parseSpecialTokens` false,
  // special tokens written in the text are encoded as plain text (tokenizers'
  // encode_special_tokens = True).
  std::vector<int32_t> encode(std::string_view text, bool addSpecialTokens = false,
                              bool parseSpecialTokens = true) const;

  // Text of `ids`; ids that are not in the vocabulary are skipped.
  std::string decode(std::span<const int32_t> ids, bool skipSpecialTokens = false) const;

  std::optional<int32_t> tokenToId(std::string_view token) const;
  // The token's string as stored in the vocabulary (e.g. "Ġworld"); "" for an
  // unknown id.
  std::string idToToken(int32_t id) const;
  // One past the largest id (model vocabulary and added tokens).
  size_t vocabSize() const;
  bool isSpecial(int32_t id) const;
  const std::vector<AddedToken>& addedTokens() const;

  // From tokenizer_config.json (bos_token, eos_token...), if given and present.
  std::optional<std::string> bosToken() const;
  std::optional<std::string> eosToken() const;
  std::optional<int32_t> bosTokenId() const;
  std::optional<int32_t> eosTokenId() const;
  std::optional<std::string> chatTemplate() const;

  StreamDecoder streamDecoder(bool skipSpecialTokens = false) const;

  // Name of the model and pipeline, e.g. "BPE (byte-level)".
  std::string describe() const;

 private:
  friend class StreamDecoder;
  explicit Tokenizer(std::shared_ptr<const detail::TokenizerImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const detail::TokenizerImpl> impl_;
};

// Incremental decoding for generation: push() returns the text that the new
// token completes — only whole UTF-8 characters; a partial UTF-8 sequence (or
// a byte-fallback group) waits until it is complete. The concatenation of all
// push() results and finish() equals decode() of all ids, except around
// invalid byte-fallback sequences: a byte can turn text already emitted as
// valid into U+FFFD replacements in decode(), and emitted text stays.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skipSpecialTokens = false);
  std::string push(int32_t id);
  // Text still held back (an incomplete sequence decodes to U+FFFD, as decode()
  // would give); resets the decoder for a new stream.
  std::string finish();
  void reset();

 private:
  std::shared_ptr<const detail::TokenizerImpl> impl_;
  bool skipSpecial_;
  std::vector<int32_t> ids_;   // the window: context, then tokens not yet emitted
  std::string prefix_;         // the window's text up to prefixIndex_
  size_t prefixIndex_ = 0;
  size_t lastStart_ = 0;       // where the last emitted chunk starts in ids_
  std::string lastText_;       // that chunk's text decoded alone
};

}  // namespace linnet::tokenizer
