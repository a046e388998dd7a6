#include "common/storage.h"

namespace linnet {

namespace {

constexpr StorageInfo kStorage[] = {
#define STORAGE(Id, Name, BlockElements, BlockBytes) {Storage::Id, Name, BlockElements, BlockBytes},
#include "common/storage_formats.def"
};

constexpr std::string_view kNames =
#define STORAGE(Id, Name, BlockElements, BlockBytes) Name ", "
#include "common/storage_formats.def"
    ;

}  // namespace

const StorageInfo& storageInfo(Storage s) { return kStorage[static_cast<int>(s)]; }

std::optional<Storage> storageNamed(std::string_view name) {
  for (const StorageInfo& s : kStorage)
    if (s.name == name) return s.id;
  return std::nullopt;
}

std::string_view storageNames() { return kNames.substr(0, kNames.size() - 2); }

std::optional<std::int64_t> storageRowBytes(Storage s, std::int64_t k) {
  const StorageInfo& info = storageInfo(s);
  if (k < 0 || k % info.blockElements != 0) return std::nullopt;
  return k / info.blockElements * info.blockBytes;
}

}  // namespace linnet
