// config.json and generation_config.json of a Hugging Face checkpoint
// folder, from an instantiated nest package.
//
// config.json's shape keys come from the card's own nest.toml [config]
// table, the one --generics-from-config reads (runtime/nest/model_config.h),
// written in reverse: each generic or constant under the first key it lists
// (a dotted key as a nested object), an element type generic as the torch
// dtype written, the table's `absent` keys left out. Then what transformers'
// architecture needs besides: architectures and model_type of the family,
// rope_theta, rms_norm_eps, rope_scaling (llama3) exactly when the program
// computes with the scaled tables, max_position_embeddings (MaxSeq),
// head_dim, hidden_act, attention_bias, mlp_bias, tie_word_embeddings,
// vocab_size, torch_dtype, and the tokenizer's bos/eos ids when known.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/dtype.h"
#include "export/model_facts.h"
#include "export/rope_scaling.h"
#include "nest/families.h"
#include "nest/model_config.h"

namespace linnet::exporter {

// "float32", "bfloat16", "float16" (transformers' torch_dtype names).
std::string torchDtypeName(DType dtype);

struct HfConfigFacts {
  DType dtype = DType::F32;  // of the tensors written
  bool tiedEmbeddings = false;
  bool attentionBias = false;
  std::optional<Llama3RopeScaling> ropeScaling;
  std::optional<std::int64_t> bosId, eosId;
};

// config.json: the family's fixed values (its descriptor's
// [gguf.config_defaults]: architectures, model_type, hidden_act, ...), then
// the card's [config] read backwards (each generic and constant under its
// first key) and its `expect` values, less its `absent` keys; the shape
// keys, head_dim, the context and the facts above. Throws nest::Error
// naming what is missing: a family whose descriptor gives no architectures,
// a card without [config], a generic or constant it maps that the model
// does not have.
nlohmann::ordered_json hfConfigJson(const ModelFacts& facts, const nest::CardConfig& card, const nest::Family& family,
                                    const HfConfigFacts& extra);

// bos/eos ids and the card's nest.toml [sampling] (temperature, top_p,
// top_k; do_sample when the card samples at all).
nlohmann::ordered_json hfGenerationConfig(const std::string& package, std::optional<std::int64_t> bosId,
                                          std::optional<std::int64_t> eosId);

}  // namespace linnet::exporter
