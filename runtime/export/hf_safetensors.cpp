#include "export/hf_safetensors.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

#include "weights/dtype.h"

namespace linnet::exporter {

std::uint64_t HfTensor::bytes() const {
  std::uint64_t n = byteSize(dtype);
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

std::vector<HfShard> planShards(const std::vector<HfTensor>& tensors, std::uint64_t maxShardBytes) {
  std::vector<HfShard> shards;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const std::uint64_t size = tensors[k].bytes();
    if (shards.empty() || (!shards.back().tensors.empty() && shards.back().dataBytes + size > maxShardBytes))
      shards.emplace_back();
    shards.back().tensors.push_back(k);
    shards.back().dataBytes += size;
  }
  if (shards.empty()) shards.emplace_back();
  for (std::size_t s = 0; s < shards.size(); ++s)
    shards[s].file = shards.size() == 1 ? std::string("model.safetensors")
                                        : fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1, shards.size());
  return shards;
}

std::string safetensorsHeader(const std::vector<HfTensor>& tensors, const HfShard& shard) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::uint64_t offset = 0;
  for (std::size_t k : shard.tensors) {
    const HfTensor& t = tensors[k];
    header[t.name] = {{"dtype", std::string(weights::safetensorsName(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes()}}};
    offset += t.bytes();
  }
  std::string json = header.dump();
  while (json.size() % 8) json += ' ';
  std::string out(8, '\0');
  const std::uint64_t n = json.size();
  for (int b = 0; b < 8; ++b) out[b] = static_cast<char>((n >> (8 * b)) & 0xff);
  return out + json;
}

nlohmann::json shardIndex(const std::vector<HfTensor>& tensors, const std::vector<HfShard>& shards) {
  nlohmann::json map = nlohmann::json::object();
  std::uint64_t total = 0;
  for (const HfShard& s : shards)
    for (std::size_t k : s.tensors) {
      map[tensors[k].name] = s.file;
      total += tensors[k].bytes();
    }
  return {{"metadata", {{"total_size", total}}}, {"weight_map", map}};
}

std::optional<std::uint64_t> parseByteSize(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
    ++digits;
  if (digits == 0) return std::nullopt;
  double number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, number);
  if (ec != std::errc() || end != text.data() + digits) return std::nullopt;
  std::string unit(text.substr(digits));
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},          {"B", 1},        {"KB", 1e3},      {"MB", 1e6},      {"GB", 1e9},     {"TB", 1e12},
      {"KIB", 1024.0}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1099511627776.0}};
  for (const auto& [name, scale] : kUnits)
    if (unit == name) {
      double bytes = std::floor(number * scale);
      if (!(bytes >= 1) || bytes > 1.8e19) return std::nullopt;
      return static_cast<std::uint64_t>(bytes);
    }
  return std::nullopt;
}

}  // namespace linnet::exporter
