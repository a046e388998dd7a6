// Reading safetensors checkpoints: one file, several shards, or a
// `*.safetensors.index.json` (Hugging Face's `weight_map`). Files are
// memory-mapped read-only; a tensor's bytes are a span into the mapping,
// little-endian, C order, and need not be aligned (copy them out with
// memcpy, or use convertElements).
//
// Everything is validated before any tensor is handed out: the 8-byte header
// length against the file size, the header JSON (well-formed, UTF-8, an
// object, no repeated key, `__metadata__` a string-to-string object), and per
// tensor: a known dtype, a shape of non-negative integers, data_offsets that
// lie inside the file's data section and span exactly shape x dtype bytes,
// and no two tensors' bytes overlapping. Across shards a tensor name may
// appear once only, and an index must agree with its shards. Gaps between
// tensors and trailing bytes are tolerated (they cannot mislead a reader).
// Every problem throws Error naming the file (and shard), the tensor, what
// is wrong and, where there is one, the fix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weights/dtype.h"

namespace linnet::weights {

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  std::span<const std::byte> data;  // shape x dtype bytes inside the mapped file
  std::size_t file = 0;             // index into Checkpoint::files()

  std::int64_t elementCount() const;
};

struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;  // sorted by name; data points into the parsed bytes
  std::map<std::string, std::string> metadata;
};

// Parses and validates a whole safetensors file held in memory. `label`
// names the file in messages (a path, or "shard 2 of 4 ..."). Throws Error.
SafetensorsHeader parseSafetensors(std::span<const std::byte> file, std::string_view label);

class Checkpoint {
 public:
  // A `.safetensors` file, or a `*.index.json` naming shards (paths in its
  // weight_map are relative to the index's folder). A directory is refused
  // with a message naming what to pass instead.
  static Checkpoint open(const std::filesystem::path& path);
  // Several shards without an index; a tensor name in two of them is an error.
  static Checkpoint openFiles(const std::vector<std::filesystem::path>& shards);

  Checkpoint() = default;  // empty: no files, no tensors

  // Sorted by name. Spans stay valid while any copy of this Checkpoint lives.
  const std::vector<TensorInfo>& tensors() const;
  const TensorInfo* find(std::string_view name) const;
  // Throws Error naming the checkpoint and, where one is close, a similar name.
  const TensorInfo& at(std::string_view name) const;
  std::size_t size() const { return tensors().size(); }

  // The shard files, in the order TensorInfo::file indexes them.
  const std::vector<std::filesystem::path>& files() const;
  // Each file's `__metadata__` (empty when absent), by file index.
  const std::map<std::string, std::string>& metadata(std::size_t file) const;
  // What was opened, for messages: "a/model.safetensors" or
  // "a/model.safetensors.index.json (2 shards)".
  std::string description() const;
  // Names the checkpoint in messages instead (e.g. the GGUF a temporary
  // safetensors file was converted from).
  void setDescription(std::string description) { description_ = std::move(description); }

  struct State;  // opaque; shared by copies

 private:
  std::shared_ptr<const State> state_;
  std::string description_;
};

}  // namespace linnet::weights
