// Whether an instantiated llama-family model computes with Llama 3.1's
// scaled rope tables, and their constants. Read from the checked program's
// imports (a card's [replace] may put std.nn.rope.rotary_tables in place of
// llama.rope.tables), not from nest.toml's text. Both exports use it: GGUF
// writes the scaling as rope_freqs.weight, Hugging Face as rope_scaling.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "export/model_facts.h"

namespace linnet::exporter {

struct Llama3RopeScaling {
  double factor = 0, lowFreqFactor = 0, highFreqFactor = 0, originalContext = 0;
};

// nullopt for unscaled rope. Throws nest::Error when the program imports
// both tables or neither; a missing constant is appended to `missing`
// ("the constant llama.rope.FACTOR") and nullopt returned.
std::optional<Llama3RopeScaling> llama3RopeScaling(const ModelFacts& facts, std::vector<std::string>& missing);

}  // namespace linnet::exporter
