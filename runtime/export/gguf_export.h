// `linnet export gguf`: a nest package's parameters, bound from a checkpoint
// as linnet::nest::load binds them (or seeded random ones), written as a GGUF
// v3 file that llama.cpp loads as the architecture of the card's family: its
// tensor names, permuted rows and shifted values from the family's
// descriptor (nest/families/NAME.toml [gguf], through bindings.json), its
// metadata from the generics and constants (gguf_hyperparameters.h), llama3
// rope scaling as rope_freqs.weight, and the tokenizer. docs/export.md says
// what is written and how it was checked.
//
// Everything that can be refused is refused before the output is touched:
// an existing output without `force`, a family with no descriptor, a
// parameter it has no name for, a generic the format cannot hold, a missing
// constant, an unknown rope,
// a tokenizer llama.cpp would read differently, binding problems, too little
// disk space. The file is written beside the output and renamed into place
// once complete.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/types.h"
#include "nest/nest.h"

namespace linnet::exporter {

struct GgufExportOptions {
  std::string package;
  // weights, generics (--set), randomWeights + seed, convertDTypes, stdlib.
  nest::LoadOptions load;
  std::string output;
  // --type: every tensor llama.cpp quantizes (2-D `.weight`s other than
  // norms) in this type, with llama-quantize's fallback where a row is not
  // whole blocks (Q4_K -> Q5_0, Q6_K -> Q8_0, else F16); everything else
  // F32. Unset: a GGUF source's tensors keep their stored type (bit-exact),
  // a safetensors source's take the model's dtype (norms and 1-D: F32).
  std::optional<gguf::GgmlType> type;
  // A tokenizer.json, a folder holding one, or a .gguf; empty: the
  // --weights file when it is a GGUF with a tokenizer, else none.
  std::string tokenizer;
  bool force = false;  // replace an existing output (atomically)
  int threads = 0;     // quantizing threads; 0: all cores
};

struct GgufExportResult {
  std::string path;
  std::uint64_t bytes = 0;
  std::size_t tensors = 0;
  std::map<std::string, std::size_t> types;  // ggml type name -> tensors
  std::size_t fallbacks = 0;                 // tensors not in the requested type
  double seconds = 0;
};

// The --type names: f32 f16 bf16 q8_0 q4_0 q4_k q6_k (lower case), and back.
const std::vector<std::string>& ggufTypeNames();
std::optional<gguf::GgmlType> ggufTypeNamed(std::string_view name);

// Throws nest::Error (gguf::Error for file problems) naming what is wrong;
// `log` gets warnings and notes, one line each, without a trailing newline.
GgufExportResult exportGguf(const GgufExportOptions& options,
                            const std::function<void(const std::string&)>& log = {});

// convert_hf_to_gguf.py's permute(w, heads) on whole rows of `rowBytes`
// bytes (w.reshape(heads, 2, rows / heads / 2, ...).swapaxes(1, 2)); rows a
// multiple of 2 * heads, else std::invalid_argument.
std::vector<std::byte> permuteRowBytes(std::span<const std::byte> rows, std::int64_t count, std::size_t rowBytes,
                                       std::int64_t heads);

// Llama 3.1's rope scaling as llama.cpp stores it (rope_freqs.weight): one
// factor per frequency of a head of `headDim`, computed in f32 as
// convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors does.
std::vector<float> llama3RopeFactors(double theta, std::int64_t headDim, double factor, double lowFreqFactor,
                                     double highFreqFactor, double originalContext);

}  // namespace linnet::exporter
