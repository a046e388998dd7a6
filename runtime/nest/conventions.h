// The conventions of text-generation cards that the runtime relies on, in
// one place (nest/llama-3.1-8b-instruct follows them; a package that does
// not simply gets none of these checks):
//   - the root generic `MaxSeq` is the context: the KV caches hold positions
//     0 .. MaxSeq-1, and nothing in the card itself refuses a position past
//     it (the cache write would land on a clamped row);
//   - the root generic `Vocab` is the number of token ids: the embedding
//     gather clamps ids outside 0 .. Vocab-1 without a word;
//   - an entry's integer tensor argument named `tokens`, `token` or
//     `step_tokens` holds ids, one named `positions` or `step_positions`
//     positions (the batched and paged entries);
//   - the entries `prefill` and `decode` take (tokens [Batch, S], pos) and
//     write positions pos .. pos+S-1.
//   - the Llama family's generics `Layers`, `H`, `Heads`, `KvHeads`, `Inner`
//     are the GGUF keys `block_count`, `embedding_length`,
//     `attention.head_count`, `attention.head_count_kv`, `feed_forward_length`
//     of its architecture (ggufShapeKeys), and `Vocab` its token count;
// Model::call checks every call against these; linnet generate and chat
// check a whole generation up front, so they can name the fix.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "nest/tensor.h"

namespace linnet::nest {

inline constexpr const char* kContextGeneric = "MaxSeq";
inline constexpr const char* kVocabGeneric = "Vocab";

// A dimension generic and the GGUF metadata key (after `<architecture>.`)
// that gives its value.
struct GgufShapeKey {
  const char* generic;
  const char* key;
};
const std::vector<GgufShapeKey>& ggufShapeKeys();

struct TextLimits {
  std::optional<int64_t> maxSeq, vocab;
};

// From a model's root dimension generics (as bound).
TextLimits textLimits(const std::map<std::string, int64_t>& dims);

// Vocab and MaxSeq must be at least 1 where given (Error otherwise).
void checkLimits(const TextLimits& limits);

// Before `entry` runs with `args` (parameter names `names`): token ids within
// the vocabulary, and for prefill/decode, positions within the context.
void checkCall(const TextLimits& limits, const std::string& entry, const std::vector<std::string>& names,
               const std::vector<Tensor>& args);

// Before a generation of `maxNew` tokens from a prompt of `promptLen` through
// prefill then decode: it needs promptLen + maxNew - 1 positions. `what`
// names the prompt in the message ("the prompt", "the conversation").
void checkGeneration(const TextLimits& limits, int64_t promptLen, int64_t maxNew, const std::string& what);

// Token ids of a prompt, before anything runs.
void checkTokenIds(const TextLimits& limits, const std::vector<int64_t>& ids, const std::string& what);

// A tokenizer of `tokenizerVocab` ids against the model's Vocab: ids past
// it would be clamped.
void checkTokenizer(const TextLimits& limits, int64_t tokenizerVocab, const std::string& tokenizer);

}  // namespace linnet::nest
