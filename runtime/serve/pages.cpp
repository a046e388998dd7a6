#include "serve/pages.h"

#include <stdexcept>
#include <string>

#include "common/hash.h"

namespace linnet::serve {

PagePool::PagePool(int64_t pages, int64_t pageSize)
    : pageSize_(pageSize), refs_(pages, 0), hashOf_(pages, 0), hasHash_(pages, false), lruAt_(pages),
      inLru_(pages, false) {
  if (pages < 2 || pageSize < 1)
    throw std::invalid_argument("a page pool needs at least 2 pages (page 0 is scratch) of at least 1 position");
  for (int64_t p = 1; p < pages; ++p) free_.insert(static_cast<int32_t>(p));
  refs_[0] = 1;  // scratch: held forever
}

std::optional<int32_t> PagePool::allocate(int32_t previous) {
  int32_t page;
  if (!free_.empty()) {
    auto next = previous >= 0 ? free_.find(previous + 1) : free_.end();
    page = next != free_.end() ? *next : *free_.begin();
    free_.erase(page);
  } else if (!lru_.empty()) {
    page = lru_.front();
    lru_.pop_front();
    inLru_[page] = false;
    byHash_.erase(hashOf_[page]);
    hasHash_[page] = false;
  } else {
    return std::nullopt;
  }
  refs_[page] = 1;
  return page;
}

void PagePool::release(int32_t page) {
  if (page <= 0 || page >= static_cast<int32_t>(refs_.size()) || refs_[page] <= 0)
    throw std::logic_error("page pool: release of page " + std::to_string(page) + ", which nobody holds");
  if (--refs_[page] > 0) return;
  if (hasHash_[page]) {
    lruAt_[page] = lru_.insert(lru_.end(), page);
    inLru_[page] = true;
  } else {
    free_.insert(page);
  }
}

uint64_t PagePool::chain(uint64_t parent, std::span<const int64_t> tokens) {
  // FNV-1a over the parent hash and the ids, then a final mix (splitmix64):
  // collisions would share a wrong page, so 64 well-mixed bits.
  uint64_t h = fnv1a(parent, kFnvOffset);
  for (int64_t t : tokens) h = fnv1a(static_cast<uint64_t>(t), h);
  return splitmix64(h);
}

std::optional<int32_t> PagePool::take(uint64_t hash) {
  auto it = byHash_.find(hash);
  if (it == byHash_.end()) return std::nullopt;
  int32_t page = it->second;
  if (inLru_[page]) {
    lru_.erase(lruAt_[page]);
    inLru_[page] = false;
  }
  ++refs_[page];
  return page;
}

void PagePool::publish(int32_t page, uint64_t hash) {
  if (hasHash_[page] || byHash_.count(hash)) return;
  hasHash_[page] = true;
  hashOf_[page] = hash;
  byHash_[hash] = page;
}

}  // namespace linnet::serve
