#include "tokenizer/bpe.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "tokenizer/unicode.h"

namespace linnet::tokenizer::detail {

uint64_t hashBytes(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ (n * 0xFF51AFD7ED558CCDULL);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = (h ^ w) * 0x94D049BB133111EBULL;
    h ^= h >> 29;
  }
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 32;
  return h;
}

// ---------------------------------------------------------------- StringMap

void StringMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  for (const Slot& s : old) {
    if (!s.used) continue;
    size_t i = s.hash & mask_;
    while (slots_[i].used) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

void StringMap::grow() { reserve(std::max<size_t>(16, (count_ + 1) * 2)); }

void StringMap::set(std::string_view key, int32_t value) {
  if ((count_ + 1) * 2 > slots_.size()) grow();
  const uint64_t h = hashBytes(key.data(), key.size());
  size_t i = h & mask_;
  while (slots_[i].used) {
    Slot& s = slots_[i];
    if (s.hash == h && s.keyLength == key.size() &&
        std::memcmp(arena_.data() + s.keyOffset, key.data(), key.size()) == 0) {
      s.value = value;
      return;
    }
    i = (i + 1) & mask_;
  }
  if (arena_.size() + key.size() > UINT32_MAX) throw std::runtime_error("vocabulary too large");
  Slot& s = slots_[i];
  s.used = true;
  s.hash = h;
  s.keyOffset = static_cast<uint32_t>(arena_.size());
  s.keyLength = static_cast<uint32_t>(key.size());
  s.value = value;
  arena_.append(key);
  ++count_;
}

const int32_t* StringMap::find(std::string_view key) const {
  if (count_ == 0) return nullptr;
  const uint64_t h = hashBytes(key.data(), key.size());
  size_t i = h & mask_;
  while (slots_[i].used) {
    const Slot& s = slots_[i];
    if (s.hash == h && s.keyLength == key.size() &&
        std::memcmp(arena_.data() + s.keyOffset, key.data(), key.size()) == 0)
      return &s.value;
    i = (i + 1) & mask_;
  }
  return nullptr;
}

// ---------------------------------------------------------------- word cache

namespace {

constexpr size_t kCacheMaxWordBytes = 256;  // as tokenizers' MAX_LENGTH
constexpr size_t kCacheMaxEntries = 1 << 15;
constexpr size_t kSmallWord = 24;  // up to this many symbols, merge with the simple loop

// Per-thread cache of merged words for one BPE model. Cleared when full.
class WordCache {
 public:
  bool lookup(std::string_view word, uint64_t h, std::vector<int32_t>& out) const {
    if (count_ == 0) return false;
    size_t i = h & mask_;
    while (slots_[i].used) {
      const Slot& s = slots_[i];
      if (s.hash == h && s.keyLength == word.size() &&
          std::memcmp(keys_.data() + s.keyOffset, word.data(), word.size()) == 0) {
        out.insert(out.end(), values_.begin() + s.valueOffset,
                   values_.begin() + s.valueOffset + s.valueLength);
        return true;
      }
      i = (i + 1) & mask_;
    }
    return false;
  }

  void insert(std::string_view word, uint64_t h, const int32_t* ids, size_t n) {
    if (count_ >= kCacheMaxEntries) clear();
    if ((count_ + 1) * 2 > slots_.size()) rehash(std::max<size_t>(1024, slots_.size() * 2));
    size_t i = h & mask_;
    while (slots_[i].used) i = (i + 1) & mask_;
    Slot& s = slots_[i];
    s.used = true;
    s.hash = h;
    s.keyOffset = static_cast<uint32_t>(keys_.size());
    s.keyLength = static_cast<uint32_t>(word.size());
    s.valueOffset = static_cast<uint32_t>(values_.size());
    s.valueLength = static_cast<uint32_t>(n);
    keys_.append(word);
    values_.insert(values_.end(), ids, ids + n);
    ++count_;
  }

  void clear() {
    slots_.clear();
    keys_.clear();
    values_.clear();
    count_ = 0;
    mask_ = 0;
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t keyOffset = 0, keyLength = 0, valueOffset = 0, valueLength = 0;
    bool used = false;
  };
  void rehash(size_t cap) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
    for (const Slot& s : old) {
      if (!s.used) continue;
      size_t i = s.hash & mask_;
      while (slots_[i].used) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  std::string keys_;
  std::vector<int32_t> values_;
  size_t count_ = 0;
  size_t mask_ = 0;
};

// A thread keeps caches for the last few models it used (round robin), so
// that caches of destroyed tokenizers do not pile up.
struct ThreadCaches {
  static constexpr int kSlots = 4;
  uint64_t owners[kSlots] = {0, 0, 0, 0};
  WordCache caches[kSlots];
  int next = 0;
  WordCache& get(uint64_t owner) {
    for (int i = 0; i < kSlots; ++i)
      if (owners[i] == owner) return caches[i];
    const int i = next;
    next = (next + 1) % kSlots;
    owners[i] = owner;
    caches[i].clear();
    return caches[i];
  }
};

std::atomic<uint64_t> gNextCacheOwner{1};

inline uint64_t pairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

inline uint64_t mixKey(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDULL;
  k ^= k >> 33;
  return k;
}

}  // namespace

// ---------------------------------------------------------------- BpeModel

BpeModel::BpeModel(std::vector<std::pair<std::string, int32_t>> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options)
    : options_(std::move(options)) {
  vocab_.reserve(vocab.size());
  for (auto& [token, id] : vocab) {
    if (id < 0) throw std::runtime_error(fmt::format("token {:?} has a negative id {}", token, id));
    vocab_.set(token, id);
    maxId_ = std::max(maxId_, id);
  }
  // The id table is dense up to the largest id, so an id far beyond the
  // number of entries would cost memory out of proportion to the file (one id
  // of 10^9 asks for 32 GB). Real vocabularies have at most small gaps.
  const int64_t idLimit = static_cast<int64_t>(kMaxIdGapFactor) * static_cast<int64_t>(vocab.size()) + kMaxIdSlack;
  if (maxId_ >= idLimit) {
    for (const auto& [token, id] : vocab) {
      if (id == maxId_)
        throw std::runtime_error(fmt::format(
            "token {:?} has id {}, beyond the limit {} for a vocabulary of {} entries (ids must be below {} x entries + {})",
            token, id, idLimit, vocab.size(), kMaxIdGapFactor, kMaxIdSlack));
    }
  }
  idToToken_.assign(static_cast<size_t>(maxId_ + 1), std::string());
  hasId_.assign(static_cast<size_t>(maxId_ + 1), false);
  for (auto& [token, id] : vocab) {
    if (!hasId_[static_cast<size_t>(id)]) {
      hasId_[static_cast<size_t>(id)] = true;
      idToToken_[static_cast<size_t>(id)] = std::move(token);
    }
  }

  useCharTable_ = !options_.continuingSubwordPrefix && !options_.endOfWordSuffix;
  if (useCharTable_) {
    charIds_.assign(0x10000, -1);
    for (size_t id = 0; id < idToToken_.size(); ++id) {
      if (!hasId_[id]) continue;
      const std::string& t = idToToken_[id];
      if (t.empty()) continue;
      size_t i = 0;
      const char32_t cp = unicode::nextCodePoint(t, i);
      if (i == t.size() && cp < 0x10000) {
        // The vocabulary map decides which id a duplicated string gets.
        if (const int32_t* v = vocab_.find(t)) charIds_[cp] = *v;
      }
    }
  }

  for (int b = 0; b < 256; ++b) {
    const int32_t* v = vocab_.find(fmt::format("<0x{:02X}>", b));
    byteIds_[b] = v ? *v : -1;
  }
  if (options_.unkToken) {
    if (const int32_t* v = vocab_.find(*options_.unkToken)) unkId_ = *v;
  }

  size_t cap = 16;
  while (cap < merges.size() * 2 + 16) cap <<= 1;
  merges_.assign(cap, MergeSlot{~0ULL, Merge{-1, -1}});
  mergeMask_ = cap - 1;
  const size_t prefixLen = options_.continuingSubwordPrefix ? options_.continuingSubwordPrefix->size() : 0;
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const int32_t* ia = vocab_.find(a);
    if (!ia) throw BpeMergeError(rank, fmt::format("merge {} ({:?} {:?}): {:?} is not in the vocabulary", rank, a, b, a));
    const int32_t* ib = vocab_.find(b);
    if (!ib) throw BpeMergeError(rank, fmt::format("merge {} ({:?} {:?}): {:?} is not in the vocabulary", rank, a, b, b));
    joined.assign(a);
    if (b.size() < prefixLen)
      throw BpeMergeError(rank, fmt::format("merge {} ({:?} {:?}): shorter than the subword prefix", rank, a, b));
    joined.append(b, prefixLen, std::string::npos);
    const int32_t* in = vocab_.find(joined);
    if (!in)
      throw BpeMergeError(
          rank, fmt::format("merge {} ({:?} {:?}): the merged token {:?} is not in the vocabulary", rank, a, b, joined));
    const uint64_t key = pairKey(*ia, *ib);
    size_t i = mixKey(key) & mergeMask_;
    while (merges_[i].key != ~0ULL && merges_[i].key != key) i = (i + 1) & mergeMask_;
    // A repeated pair keeps its last rank, as tokenizers' hash map does.
    merges_[i] = MergeSlot{key, Merge{static_cast<int32_t>(rank), *in}};
  }
  cacheOwner_ = gNextCacheOwner.fetch_add(1);
}

const BpeModel::Merge* BpeModel::findMerge(int32_t a, int32_t b) const {
  const uint64_t key = pairKey(a, b);
  size_t i = mixKey(key) & mergeMask_;
  while (true) {
    const MergeSlot& s = merges_[i];
    if (s.key == key) return &s.value;
    if (s.key == ~0ULL) return nullptr;
    i = (i + 1) & mergeMask_;
  }
}

std::optional<int32_t> BpeModel::tokenToId(std::string_view token) const {
  if (const int32_t* v = vocab_.find(token)) return *v;
  return std::nullopt;
}

const std::string* BpeModel::idToToken(int32_t id) const {
  if (id < 0 || id > maxId_ || !hasId_[static_cast<size_t>(id)]) return nullptr;
  return &idToToken_[static_cast<size_t>(id)];
}

// Splits `word` into its characters and looks each up (tokenizers' merge_word
// before merge_all): continuing-subword prefix, end-of-word suffix, byte
// fallback, and unknown-token fusing.
void BpeModel::initialSymbols(std::string_view word, std::vector<int32_t>& ids,
                              std::vector<uint32_t>& lens) const {
  ids.clear();
  lens.clear();
  bool haveUnk = false;
  uint32_t unkLen = 0;
  std::string scratch;
  const auto flushUnk = [&] {
    if (haveUnk) {
      ids.push_back(*unkId_);
      lens.push_back(unkLen);
      haveUnk = false;
    }
  };
  for (size_t i = 0; i < word.size();) {
    const size_t start = i;
    const char32_t cp = unicode::nextCodePoint(word, i);
    const uint32_t byteLen = static_cast<uint32_t>(i - start);
    int32_t id = -1;
    std::string_view s = word.substr(start, byteLen);
    if (useCharTable_) {
      if (cp < 0x10000) id = charIds_[cp];
      else if (const int32_t* v = vocab_.find(s)) id = *v;
    } else {
      scratch.clear();
      if (start != 0 && options_.continuingSubwordPrefix) scratch += *options_.continuingSubwordPrefix;
      scratch.append(s);
      if (i == word.size() && options_.endOfWordSuffix) scratch += *options_.endOfWordSuffix;
      s = scratch;
      if (const int32_t* v = vocab_.find(s)) id = *v;
    }
    if (id >= 0) {
      flushUnk();
      ids.push_back(id);
      lens.push_back(byteLen);
      continue;
    }
    if (options_.byteFallback) {
      bool all = true;
      for (char c : s)
        if (byteIds_[static_cast<unsigned char>(c)] < 0) all = false;
      if (all) {
        // tokenizers does not flush a pending unknown token here.
        for (char c : s) {
          ids.push_back(byteIds_[static_cast<unsigned char>(c)]);
          lens.push_back(1);
        }
        continue;
      }
    }
    if (options_.unkToken) {
      if (!unkId_)
        throw std::runtime_error(fmt::format("the unknown token {:?} is not in the vocabulary", *options_.unkToken));
      if (haveUnk && options_.fuseUnk) {
        unkLen += byteLen;
      } else {
        flushUnk();
        haveUnk = true;
        unkLen = byteLen;
      }
    }
    // Without an unknown token the character is dropped, as in tokenizers.
  }
  flushUnk();
}

// Repeatedly merges the adjacent pair with the lowest rank, leftmost first:
// the order tokenizers' priority queue produces.
void BpeModel::mergeSmall(std::vector<int32_t>& ids) const {
  size_t n = ids.size();
  if (n < 2) return;
  constexpr int32_t kNone = INT32_MAX;
  int32_t ranks[kSmallWord];
  int32_t newIds[kSmallWord];
  for (size_t i = 0; i + 1 < n; ++i) {
    const Merge* m = findMerge(ids[i], ids[i + 1]);
    ranks[i] = m ? m->rank : kNone;
    newIds[i] = m ? m->newId : -1;
  }
  while (n > 1) {
    size_t best = 0;
    int32_t bestRank = kNone;
    for (size_t i = 0; i + 1 < n; ++i)
      if (ranks[i] < bestRank) {
        bestRank = ranks[i];
        best = i;
      }
    if (bestRank == kNone) break;
    ids[best] = newIds[best];
    for (size_t i = best + 1; i + 1 < n; ++i) {
      ids[i] = ids[i + 1];
      ranks[i] = ranks[i + 1];
      newIds[i] = newIds[i + 1];
    }
    --n;
    if (best > 0) {
      const Merge* m = findMerge(ids[best - 1], ids[best]);
      ranks[best - 1] = m ? m->rank : kNone;
      newIds[best - 1] = m ? m->newId : -1;
    }
    if (best + 1 < n) {
      const Merge* m = findMerge(ids[best], ids[best + 1]);
      ranks[best] = m ? m->rank : kNone;
      newIds[best] = m ? m->newId : -1;
    }
  }
  ids.resize(n);
}

// tokenizers' Word::merge_all: a min-heap of (rank, position) over a linked
// list of symbols, with stale entries skipped. O(n log n) for long words.
void BpeModel::mergeHeap(std::vector<int32_t>& ids) const {
  const size_t n = ids.size();
  if (n < 2) return;
  struct Entry {
    int32_t rank;
    uint32_t pos;
    int32_t newId;
  };
  const auto later = [](const Entry& a, const Entry& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  std::vector<int32_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  std::vector<Entry> heap;
  heap.reserve(n);
  for (size_t i = 0; i + 1 < n; ++i)
    if (const Merge* m = findMerge(ids[i], ids[i + 1]))
      heap.push_back(Entry{m->rank, static_cast<uint32_t>(i), m->newId});
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const Entry top = heap.back();
    heap.pop_back();
    const size_t pos = top.pos;
    if (!alive[pos] || next[pos] < 0) continue;
    const auto right = static_cast<size_t>(next[pos]);
    const Merge* m = findMerge(ids[pos], ids[right]);
    if (m == nullptr || m->newId != top.newId) continue;  // stale entry
    ids[pos] = top.newId;
    alive[right] = false;
    next[pos] = next[right];
    if (next[right] >= 0) prev[static_cast<size_t>(next[right])] = static_cast<int32_t>(pos);
    if (prev[pos] >= 0) {
      const auto p = static_cast<size_t>(prev[pos]);
      if (const Merge* pm = findMerge(ids[p], ids[pos])) {
        heap.push_back(Entry{pm->rank, static_cast<uint32_t>(p), pm->newId});
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
    if (next[pos] >= 0) {
      if (const Merge* nm = findMerge(ids[pos], ids[static_cast<size_t>(next[pos])])) {
        heap.push_back(Entry{nm->rank, static_cast<uint32_t>(pos), nm->newId});
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
  }
  size_t w = 0;
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) ids[w++] = ids[i];
  ids.resize(w);
}

void BpeModel::tokenizeUncached(std::string_view word, std::vector<int32_t>& out, bool forceHeap) const {
  thread_local std::vector<int32_t> ids;
  thread_local std::vector<uint32_t> lens;
  initialSymbols(word, ids, lens);
  if (!forceHeap && ids.size() <= kSmallWord) mergeSmall(ids);
  else mergeHeap(ids);
  out.insert(out.end(), ids.begin(), ids.end());
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (options_.ignoreMerges) {
    if (const int32_t* v = vocab_.find(word)) {
      out.push_back(*v);
      return;
    }
  }
  if (word.size() >= kCacheMaxWordBytes) {
    tokenizeUncached(word, out, false);
    return;
  }
  thread_local ThreadCaches caches;
  WordCache& cache = caches.get(cacheOwner_);
  const uint64_t h = hashBytes(word.data(), word.size());
  if (cache.lookup(word, h, out)) return;
  const size_t before = out.size();
  tokenizeUncached(word, out, false);
  cache.insert(word, h, out.data() + before, out.size() - before);
}

}  // namespace linnet::tokenizer::detail
