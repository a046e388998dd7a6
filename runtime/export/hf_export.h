// `linnet export hf`: a nest package's parameters, bound from a checkpoint
// as linnet::nest::load binds them (or seeded random ones), written as a
// Hugging Face checkpoint folder that transformers' from_pretrained loads:
// safetensors shards under the checkpoint names the card's bindings.json
// gives (a tied head once), config.json through the card's [config] table,
// generation_config.json, and the tokenizer files. docs/export.md says what
// is written and how it was checked.
//
// Everything that can be refused is refused before the output is touched:
// an existing output without `force`, a family with no Hugging Face
// architecture, a parameter without a binding, binding problems, too little
// disk space. The folder is written beside the output (`.DIR.PID.part`) and
// renamed into place once complete and fsynced.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"
#include "nest/nest.h"

namespace linnet::exporter {

struct HfExportOptions {
  std::string package;
  nest::LoadOptions load;  // weights, generics (--set), randomWeights + seed, convertDTypes, stdlib
  std::string output;      // the folder
  // --dtype of every float tensor; unset: the model's dtype, f32 from a GGUF
  // source that stores quantized tensors.
  std::optional<DType> dtype;
  std::uint64_t shardBytes = 5'000'000'000;  // --shard-size (transformers' "5GB")
  std::string tokenizer;  // a tokenizer.json, a folder holding one, or a .gguf; empty: beside --weights
  bool force = false;
};

struct HfExportResult {
  std::string path;
  std::vector<std::string> files;  // in the folder, as written
  std::size_t tensors = 0, shards = 0;
  std::uint64_t tensorBytes = 0, bytes = 0;  // the tensors' data; every file
  DType dtype = DType::F32;
  double seconds = 0;
};

// The --dtype names: bf16 f16 f32.
const std::vector<std::string>& hfDtypeNames();
std::optional<DType> hfDtypeNamed(std::string_view name);

// Throws nest::Error naming what is wrong; `log` gets warnings and notes.
HfExportResult exportHf(const HfExportOptions& options, const std::function<void(const std::string&)>& log = {});

}  // namespace linnet::exporter
