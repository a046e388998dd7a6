// The safetensors side of a Hugging Face checkpoint folder, as transformers'
// save_pretrained lays it out: tensors split into shards of at most
// `maxShardBytes` in the order given (a tensor larger than that alone in its
// shard, as huggingface_hub's split_state_dict_into_shards does), named
// model-00001-of-0000N.safetensors with model.safetensors.index.json
// (metadata.total_size: the tensors' bytes; weight_map: tensor -> shard), or
// one model.safetensors when everything fits in one shard.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/dtype.h"

namespace linnet::exporter {

struct HfTensor {
  std::string name;  // the checkpoint name ("model.layers.0.self_attn.q_proj.weight")
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t bytes() const;
};

struct HfShard {
  std::string file;                  // "model.safetensors" or "model-00001-of-00003.safetensors"
  std::vector<std::size_t> tensors;  // indices into the tensors planned
  std::uint64_t dataBytes = 0;       // the tensors' bytes
};

std::vector<HfShard> planShards(const std::vector<HfTensor>& tensors, std::uint64_t maxShardBytes);

// A shard's header: the 8-byte little-endian length, then the JSON
// (__metadata__ {"format": "pt"} as torch writes it; each tensor's dtype,
// shape and data_offsets in the shard's order), padded with spaces to a
// multiple of 8 as the safetensors library does.
std::string safetensorsHeader(const std::vector<HfTensor>& tensors, const HfShard& shard);

// model.safetensors.index.json's content; only for several shards.
nlohmann::json shardIndex(const std::vector<HfTensor>& tensors, const std::vector<HfShard>& shards);

// "5GB", "500MB", "100KB", "2GiB", "123" (bytes) -> bytes, as
// huggingface_hub's parse_size_to_int reads max_shard_size (KB/MB/GB
// decimal, KiB/MiB/GiB binary); nullopt for anything else or below 1.
std::optional<std::uint64_t> parseByteSize(std::string_view text);

}  // namespace linnet::exporter
