#include "nest/tensor_storage.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace linnet::nest {

namespace {

// Below this, malloc keeps freed blocks itself.
constexpr std::size_t kSmallest = std::size_t{1} << 20;

std::size_t keptLimit() {
  const char* env = std::getenv("LINNET_TENSOR_CACHE_MB");
  if (env == nullptr || *env == '\0') return std::size_t{1024} << 20;
  char* end = nullptr;
  unsigned long long mb = std::strtoull(env, &end, 10);
  return *end == '\0' ? static_cast<std::size_t>(mb) << 20 : std::size_t{1024} << 20;
}

struct Kept {
  std::mutex mutex;
  std::map<std::size_t, std::vector<void*>> bySize;
  std::size_t bytes = 0;
  const std::size_t limit = keptLimit();
};

// Never destroyed: a tensor held by a static object may be freed after
// every function-local static is gone (its blocks stay reachable).
Kept& kept() {
  static Kept* k = new Kept;
  return *k;
}

}  // namespace

void* takeStorage(std::size_t bytes) {
  if (bytes >= kSmallest) {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mutex);
    auto it = k.bySize.find(bytes);
    if (it != k.bySize.end() && !it->second.empty()) {
      void* block = it->second.back();
      it->second.pop_back();
      k.bytes -= bytes;
      return block;
    }
  }
  void* block = std::aligned_alloc(64, bytes);
  if (block == nullptr) throw std::bad_alloc();
  return block;
}

void giveStorage(void* block, std::size_t bytes) noexcept {
  if (block == nullptr) return;
  if (bytes >= kSmallest) {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mutex);
    if (k.bytes + bytes <= k.limit) {
      try {
        k.bySize[bytes].push_back(block);
        k.bytes += bytes;
        return;
      } catch (const std::bad_alloc&) {
      }
    }
  }
  std::free(block);
}

}  // namespace linnet::nest
