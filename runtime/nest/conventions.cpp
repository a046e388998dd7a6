#include "nest/conventions.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "nest/nest.h"

namespace linnet::nest {

const std::vector<GgufShapeKey>& ggufShapeKeys() {
  static const std::vector<GgufShapeKey> keys = {{"Layers", "block_count"},
                                                 {"H", "embedding_length"},
                                                 {"Heads", "attention.head_count"},
                                                 {"KvHeads", "attention.head_count_kv"},
                                                 {"Inner", "feed_forward_length"}};
  return keys;
}

TextLimits textLimits(const std::map<std::string, int64_t>& dims) {
  TextLimits l;
  if (auto it = dims.find(kContextGeneric); it != dims.end()) l.maxSeq = it->second;
  if (auto it = dims.find(kVocabGeneric); it != dims.end()) l.vocab = it->second;
  return l;
}

void checkLimits(const TextLimits& l) {
  if (l.vocab && *l.vocab < 1)
    throw Error(fmt::format("{} = {}: a model needs at least one token id; --set {}=N with N >= 1", kVocabGeneric,
                            *l.vocab, kVocabGeneric));
  if (l.maxSeq && *l.maxSeq < 1)
    throw Error(fmt::format("{} = {}: the context must hold at least one position; --set {}=N with N >= 1",
                            kContextGeneric, *l.maxSeq, kContextGeneric));
}

namespace {

// The values `at(0) .. at(n - 1)` outside 0 .. limit-1: the first four as
// "64 (at 0), 1000 (at 1)" and " and 3 more"; empty when there are none.
struct Outside {
  int64_t count = 0;
  std::string listed;
};
template <class At>
Outside outside(int64_t n, int64_t limit, At at) {
  Outside o;
  std::vector<std::string> bad;
  for (int64_t k = 0; k < n; ++k)
    if (int64_t v = at(k); v < 0 || v >= limit) {
      if (++o.count <= 4) bad.push_back(fmt::format("{} (at {})", v, k));
    }
  o.listed = fmt::format("{}{}", fmt::join(bad, ", "), o.count > 4 ? fmt::format(" and {} more", o.count - 4) : "");
  return o;
}

// A tensor of positions (the batched entries' `positions`): each in 0..MaxSeq-1.
void checkPositions(int64_t maxSeq, const std::string& entry, const std::string& name, const Tensor& t) {
  Outside o = outside(t.size(), maxSeq, [&](int64_t i) { return t.asInt(i); });
  if (o.count == 0) return;
  throw Error(fmt::format("entry `{}`, argument `{}`: position{} {} outside the context: {} = {} holds positions "
                          "0..{}",
                          entry, name, o.count == 1 ? "" : "s", o.listed, kContextGeneric, maxSeq, maxSeq - 1));
}

}  // namespace

void checkTokenIds(const TextLimits& l, const std::vector<int64_t>& ids, const std::string& what) {
  if (!l.vocab) return;
  Outside o = outside(static_cast<int64_t>(ids.size()), *l.vocab, [&](int64_t k) { return ids[k]; });
  if (o.count == 0) return;
  throw Error(fmt::format("{}: token id{} {} outside the vocabulary: {} = {} takes ids 0..{}", what,
                          o.count == 1 ? "" : "s", o.listed, kVocabGeneric, *l.vocab, *l.vocab - 1));
}

void checkCall(const TextLimits& l, const std::string& entry, const std::vector<std::string>& names,
               const std::vector<Tensor>& args) {
  const Tensor* tokens = nullptr;
  const Tensor* pos = nullptr;
  for (size_t k = 0; k < names.size() && k < args.size(); ++k) {
    bool ids = (names[k] == "tokens" || names[k] == "token" || names[k] == "step_tokens") &&
               isInt(args[k].dtype) && args[k].rank() >= 1;
    bool positions = (names[k] == "positions" || names[k] == "step_positions") && isInt(args[k].dtype) &&
                     args[k].rank() >= 1;
    if (positions && l.maxSeq) checkPositions(*l.maxSeq, entry, names[k], args[k]);
    if (ids) {
      std::vector<int64_t> v(static_cast<size_t>(args[k].size()));
      for (int64_t i = 0; i < args[k].size(); ++i) v[i] = args[k].asInt(i);
      checkTokenIds(l, v, fmt::format("entry `{}`, argument `{}`", entry, names[k]));
      tokens = &args[k];
    }
    if (names[k] == "pos" && args[k].rank() == 0) pos = &args[k];
  }
  if (!l.maxSeq || !pos || !tokens || (entry != "prefill" && entry != "decode")) return;
  int64_t S = tokens->shape.back();
  // A float literal is checked for integrality where it is converted; here its value as given.
  double p = pos->isFloat() ? pos->asDouble(0) : static_cast<double>(pos->asInt(0));
  int64_t maxSeq = *l.maxSeq;
  if (!(p >= 0))
    throw Error(fmt::format("entry `{}`: pos {} is negative: positions run 0..{} ({} = {})", entry,
                            pos->isFloat() ? fmt::format("{}", p) : std::to_string(pos->asInt(0)), maxSeq - 1,
                            kContextGeneric, maxSeq));
  int64_t at = pos->isFloat() ? static_cast<int64_t>(std::min(p, 9.2e18)) : pos->asInt(0);
  if (at <= maxSeq - S) return;
  std::string where = S == 1 ? fmt::format("pos {} is past the context", at)
                             : fmt::format("{} tokens at pos {} run past the context", S, at);
  // Positions are i32 in the card: a context beyond that is no fix.
  std::string fix = at <= INT32_MAX - S ? fmt::format(", or load with --set {}={} or more", kContextGeneric, at + S) : "";
  throw Error(fmt::format("entry `{}`: {}: {} = {} holds positions 0..{}; start over (a shorter prompt, fewer "
                          "tokens: --max-new){}",
                          entry, where, kContextGeneric, maxSeq, maxSeq - 1, fix));
}

void checkGeneration(const TextLimits& l, int64_t promptLen, int64_t maxNew, const std::string& what) {
  if (!l.maxSeq) return;
  int64_t maxSeq = *l.maxSeq;
  if (promptLen > maxSeq)
    throw Error(fmt::format("{} is {} tokens, longer than the context: {} = {}; shorten it or load with --set {}={}",
                            what, promptLen, kContextGeneric, maxSeq, kContextGeneric, promptLen + maxNew - 1));
  int64_t needed = promptLen + maxNew - 1;  // the last token produced is not fed back
  if (needed > maxSeq)
    throw Error(fmt::format("{} of {} tokens and --max-new {} need {} positions, but {} = {}: pass --max-new {} or "
                            "less, a shorter prompt, or --set {}={}",
                            what, promptLen, maxNew, needed, kContextGeneric, maxSeq, maxSeq - promptLen + 1,
                            kContextGeneric, needed));
}

void checkTokenizer(const TextLimits& l, int64_t tokenizerVocab, const std::string& tokenizer) {
  if (!l.vocab || tokenizerVocab <= *l.vocab) return;
  throw Error(fmt::format("{} has {} tokens, but the model's {} = {}: ids from {} on would be clamped; pass the "
                          "model's own tokenizer, or --set {}={} if the checkpoint has that many",
                          tokenizer, tokenizerVocab, kVocabGeneric, *l.vocab, *l.vocab, kVocabGeneric, tokenizerVocab));
}

}  // namespace linnet::nest
