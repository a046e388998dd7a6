// The tokenizer a GGUF file carries in its metadata (llama.cpp's keys):
//   tokenizer.ggml.model        "llama" (SentencePiece BPE), "gpt2" (byte-level BPE), ...
//   tokenizer.ggml.pre          the pre-tokenizer for "gpt2": "llama-bpe", "qwen2", "smollm", ...
//   tokenizer.ggml.tokens       the vocabulary; a token's id is its index
//   tokenizer.ggml.scores       SentencePiece scores (merge priority)
//   tokenizer.ggml.token_type   1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
//   tokenizer.ggml.merges       BPE merges, "a b", highest priority first
//   tokenizer.ggml.{bos,eos,unknown,padding,seperator,eot,eom}_token_id
//   tokenizer.ggml.add_bos_token, add_eos_token, add_space_prefix
//   tokenizer.chat_template
// read into a plain struct, and written back out as an equivalent Hugging Face
// tokenizer.json and tokenizer_config.json (for the tokenizer library).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"

namespace linnet::gguf {

enum class TokenType : std::int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

struct TokenizerData {
  std::string model;                      // tokenizer.ggml.model
  std::string pre;                        // tokenizer.ggml.pre; "" when absent
  std::vector<std::string> tokens;        // id = index
  std::vector<float> scores;              // empty when absent, else one per token
  std::vector<std::int32_t> tokenTypes;   // empty when absent, else one per token (TokenType values)
  std::vector<std::string> merges;        // "a b"; empty when absent
  std::optional<std::int32_t> bosId, eosId, unknownId, paddingId, separatorId, eotId, eomId;
  std::optional<bool> addBos, addEos, addSpacePrefix;
  std::optional<std::string> chatTemplate;  // tokenizer.chat_template
  std::string source;                       // the file it was read from, for messages

  TokenType typeOf(std::int32_t id) const;  // Normal when token types are absent
};

// Throws Error naming the file and key when tokenizer.ggml.model or
// tokenizer.ggml.tokens is missing, a key has the wrong type, scores or
// token types are not one per token, or the bos/eos/unknown id is outside the
// vocabulary. (Other special ids outside the vocabulary are dropped: some
// converters write -1 for "none".)
TokenizerData readTokenizer(const File& file);

// An equivalent Hugging Face tokenizer.json:
//  * "llama": BPE with byte fallback; merges generated from the
//    vocabulary ordered by score, as transformers does for SentencePiece
//    models (llama.cpp merges by score too, and reads no merges for them),
//    written as ["a", "b"] pairs since tokens may hold spaces; normalizer Prepend("▁") (when
//    add_space_prefix, the default) + Replace(" ", "▁"); decoder
//    Replace/ByteFallback/Fuse/Strip.
//  * "gpt2": byte-level BPE with the file's merges and the split regex of
//    tokenizer.ggml.pre: absent/"gpt-2"/"gpt2" (GPT-2's), "llama-bpe",
//    "llama3", "llama-v3", "smaug-bpe", "falcon3", "pixtral" (Llama 3's, with
//    ignore_merges), "qwen2", "deepseek-r1-qwen" (Qwen2's, NFC), "smollm"
//    (digits one by one, then GPT-2's).
// Control and unknown tokens become special added tokens, user-defined ones
// non-special added tokens; the post-processor adds BOS/EOS as
// add_bos_token/add_eos_token say (defaults: llama BOS only, gpt2 none).
// Throws Error (naming `source`) for another model or pre-tokenizer, "gpt2"
// without merges, or tokens, merges or chat template that are not valid
// UTF-8 (JSON holds text only).
nlohmann::json huggingFaceTokenizerJson(const TokenizerData& t);
// tokenizer_config.json: bos/eos/unk/pad tokens, add_bos_token,
// add_eos_token, chat_template, tokenizer_class.
nlohmann::json huggingFaceTokenizerConfig(const TokenizerData& t);

// transformers' generate_merges: every split of every token into two vocab
// tokens, ordered by (score of the token, length of left, length of right)
// descending (lengths in code points), ties in vocabulary order. Tokens
// longer than 1024 bytes get no merges (bounding the quadratic cost).
// Exposed for tests.
using MergePair = std::pair<std::string, std::string>;
std::vector<MergePair> mergesFromScores(const std::vector<std::string>& tokens, const std::vector<float>& scores);

}  // namespace linnet::gguf
