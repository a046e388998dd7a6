#include "export/rope_scaling.h"

#include <fmt/format.h>

namespace linnet::exporter {

std::optional<Llama3RopeScaling> llama3RopeScaling(const ModelFacts& facts, std::vector<std::string>& missing) {
  const bool scaled = facts.imports("llama.rope.tables"), plain = facts.imports("std.nn.rope.rotary_tables");
  if (scaled == plain)
    throw nest::Error(fmt::format("{}: cannot tell the model's rope: its sources import {} (llama.rope.tables: "
                                  "llama3 scaling; std.nn.rope.rotary_tables: none)",
                                  facts.package, scaled ? "both tables" : "neither table"));
  if (!scaled) return std::nullopt;
  const std::size_t before = missing.size();
  auto constant = [&](const char* name) {
    auto v = facts.constant(name);
    if (!v) missing.push_back(fmt::format("the constant {}", name));
    return v.value_or(0);
  };
  Llama3RopeScaling s;
  s.factor = constant("llama.rope.FACTOR");
  s.lowFreqFactor = constant("llama.rope.LOW_FREQ_FACTOR");
  s.highFreqFactor = constant("llama.rope.HIGH_FREQ_FACTOR");
  s.originalContext = constant("llama.rope.ORIGINAL_MAX_POSITION_EMBEDDINGS");
  if (missing.size() != before) return std::nullopt;
  return s;
}

}  // namespace linnet::exporter
