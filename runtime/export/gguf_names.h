// Linnet parameter paths -> llama.cpp tensor names, per model family (the
// table is export/gguf_names.def).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace linnet::exporter {

enum class TensorRole { Plain, Embedding, Output };

struct GgufName {
  std::string name;       // "blk.3.attn_q.weight"
  std::string permuteBy;  // the generic giving permute()'s head count ("Heads"), or ""
  TensorRole role = TensorRole::Plain;
};

// Families with a name table, sorted: "llama".
std::vector<std::string> ggufFamilies();
bool hasGgufFamily(std::string_view family);
// llama.cpp's architecture (general.architecture) of a family with a table.
std::string ggufArchitecture(std::string_view family);

// "layers.3.attention.q_proj.weight" -> {"blk.3.attn_q.weight", "Heads"};
// nullopt when the family's table has no name for the path.
std::optional<GgufName> ggufNameFor(std::string_view family, std::string_view linnetPath);

}  // namespace linnet::exporter
