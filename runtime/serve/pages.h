// The KV pool's pages as the engine hands them out: a free list, reference
// counts, and a prefix cache of full pages keyed by a hash of every token up
// to the page's end (vLLM's hashed blocks). Page 0 is scratch: padding and
// idle rows write there and no request reads it, so it is never handed out.
//
// A page whose last holder lets go keeps its hash and waits, least recently
// used first, until a fresh allocation needs it: a later prompt with the
// same prefix takes it back instead of recomputing it.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

namespace linnet::serve {

class PagePool {
 public:
  // `pages` in the pool, page 0 included; `pageSize` positions each.
  PagePool(int64_t pages, int64_t pageSize);

  int64_t pageSize() const { return pageSize_; }
  int64_t usable() const { return static_cast<int64_t>(refs_.size()) - 1; }  // all but scratch
  // Pages an allocation can take now: free ones and cached ones nobody holds.
  int64_t available() const { return static_cast<int64_t>(free_.size() + lru_.size()); }
  int64_t held() const { return usable() - available(); }

  // A page for one holder, or nullopt when none is left. Takes a free page
  // first, else the least recently used cached one (forgetting its hash).
  // Of the free pages, the one after `previous` (the holder's last page)
  // when free, else the lowest: the CPU attention kernel reads each row's
  // keys from its first to its last slot, so compact pages cost less.
  std::optional<int32_t> allocate(int32_t previous = -1);
  // One holder lets go. At zero, a hashed page joins the cache's LRU tail,
  // any other the free list.
  void release(int32_t page);

  // The hash of a full page of tokens after the pages hashed `parent`.
  static uint64_t chain(uint64_t parent, std::span<const int64_t> tokens);
  // The cached page of that hash, now held once more; nullopt when absent.
  std::optional<int32_t> take(uint64_t hash);
  // Records that `page` (held) holds the full page `hash` names. A hash
  // already cached keeps its page.
  void publish(int32_t page, uint64_t hash);

 private:
  int64_t pageSize_;
  std::vector<int32_t> refs_;    // per page: holders
  std::vector<uint64_t> hashOf_; // per page: its hash, when hasHash_
  std::vector<bool> hasHash_;
  std::set<int32_t> free_;       // unhashed, unheld
  std::list<int32_t> lru_;       // hashed, unheld: least recently used first
  std::vector<std::list<int32_t>::iterator> lruAt_;
  std::vector<bool> inLru_;
  std::unordered_map<uint64_t, int32_t> byHash_;
};

}  // namespace linnet::serve
