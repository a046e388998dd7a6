// The BPE model of a tokenizer.json (internal header).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace linnet::tokenizer::detail {

uint64_t hashBytes(const void* data, size_t n);

// Open-addressing map from strings to int32 values; keys live in one arena.
class StringMap {
 public:
  void reserve(size_t n);
  // Inserts or overwrites.
  void set(std::string_view key, int32_t value);
  const int32_t* find(std::string_view key) const;
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t keyOffset = 0;
    uint32_t keyLength = 0;
    int32_t value = 0;
    bool used = false;
  };
  void grow();
  std::vector<Slot> slots_;
  std::string arena_;
  size_t count_ = 0;
  size_t mask_ = 0;
};

// A merge whose tokens (or whose result) are not in the vocabulary.
struct BpeMergeError : std::runtime_error {
  BpeMergeError(size_t r, const std::string& message) : std::runtime_error(message), rank(r) {}
  size_t rank;
};

struct BpeOptions {
  std::optional<std::string> unkToken;
  std::optional<std::string> continuingSubwordPrefix;
  std::optional<std::string> endOfWordSuffix;
  bool fuseUnk = false;
  bool byteFallback = false;
  bool ignoreMerges = false;
};

class BpeModel {
 public:
  // Ids must be below kMaxIdGapFactor * entries + kMaxIdSlack (the id table
  // is dense by the largest id).
  static constexpr int64_t kMaxIdGapFactor = 2;
  static constexpr int64_t kMaxIdSlack = 65536;
  // `vocab`: (token, id) pairs; `merges`: (left, right) token pairs by rank.
  // Throws std::runtime_error naming the offending entry (the caller adds the
  // file and JSON path).
  BpeModel(std::vector<std::pair<std::string, int32_t>> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options);

  // Appends the ids of `word` (one pre-token, non-empty) to `out`.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> tokenToId(std::string_view token) const;
  // nullptr for ids that are not in the vocabulary.
  const std::string* idToToken(int32_t id) const;
  // Number of entries of the vocabulary, and one past its largest id.
  size_t vocabSize() const { return vocab_.size(); }
  int32_t maxId() const { return maxId_; }
  const BpeOptions& options() const { return options_; }

  // For tests: merge without the word cache, with the heap-based loop
  // (`forceHeap`) or the one chosen by length.
  void tokenizeUncached(std::string_view word, std::vector<int32_t>& out, bool forceHeap) const;

 private:
  struct Merge {
    int32_t rank;
    int32_t newId;
  };
  struct MergeSlot {
    uint64_t key;
    Merge value;
  };
  const Merge* findMerge(int32_t a, int32_t b) const;
  void initialSymbols(std::string_view word, std::vector<int32_t>& ids, std::vector<uint32_t>& lens) const;
  void mergeSmall(std::vector<int32_t>& ids) const;
  void mergeHeap(std::vector<int32_t>& ids) const;

  BpeOptions options_;
  StringMap vocab_;
  std::vector<std::string> idToToken_;  // indexed by id; empty + !hasId_ for gaps
  std::vector<bool> hasId_;
  std::vector<int32_t> charIds_;  // id of single-character tokens for code points < 0x10000, or -1
  bool useCharTable_ = false;
  std::vector<MergeSlot> merges_;
  uint64_t mergeMask_ = 0;
  int32_t byteIds_[256];  // <0xNN> tokens, or -1
  std::optional<int32_t> unkId_;
  int32_t maxId_ = -1;
  uint64_t cacheOwner_ = 0;
};

}  // namespace linnet::tokenizer::detail
