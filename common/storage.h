// How a float param is held in a device's memory (storage_formats.def):
// plain f32, f16 or bf16 elements, or ggml's quantized blocks. The compiler
// reads a param in any of these through the weight-product kernels; the
// runtime keeps a checkpoint's tensor in its own format when it can, instead
// of dequantizing it at load.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace linnet {

enum class Storage : std::uint8_t {
#define STORAGE(Id, Name, BlockElements, BlockBytes) Id,
#include "common/storage_formats.def"
};

struct StorageInfo {
  Storage id;
  std::string_view name;       // "q4_1"
  std::int64_t blockElements;  // 32
  std::int64_t blockBytes;     // 20
};

const StorageInfo& storageInfo(Storage s);
inline std::string_view name(Storage s) { return storageInfo(s).name; }
std::optional<Storage> storageNamed(std::string_view name);
// "f32, f16, bf16, q8_0, ...", for messages.
std::string_view storageNames();

// Bytes of one row of `k` elements; nullopt when k is not a whole number of
// blocks (the format cannot hold such a row).
std::optional<std::int64_t> storageRowBytes(Storage s, std::int64_t k);

}  // namespace linnet
