// Each parameter's elements as an export writes them: bound from the
// checkpoint through bindings.json (nest::bindParams, every check `linnet
// call` makes), or seeded random values drawn one parameter at a time, the
// very values `linnet call --random-weights` binds (nest::randomParam), so
// that an 8B model's random parameters never have to be held all at once.
#pragma once

#include <cstddef>
#include <optional>
#include <cstdint>
#include <span>
#include <vector>

#include "export/model_facts.h"
#include "nest/params.h"
#include "nest/tensor.h"

namespace linnet::exporter {

class ParamValues {
 public:
  // Binds (throws nest::Error listing every binding problem) unless
  // load.randomWeights without an adapter, whose values are drawn one
  // param at a time as elements() asks.
  ParamValues(const ModelFacts& facts, const nest::LoadOptions& load);

  // facts.params[k]'s elements: its dtype, the model's (Hugging Face)
  // layout, C order; valid until the next call.
  std::span<const std::byte> elements(std::size_t k);

 private:
  const ModelFacts& facts_;
  bool random_;
  std::vector<nest::ParamBytes> bound_;
  std::uint64_t seed_;
  std::optional<nest::Tensor> current_;
};

}  // namespace linnet::exporter
