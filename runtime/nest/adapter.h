// A LoRA adapter in peft's layout (`adapter_config.json` and
// `adapter_model.safetensors`, keys `base_model.model.MODULE.lora_A.weight`
// [r, in] and `...lora_B.weight` [out, r]) merged into the params as they
// are bound: W += scale * B A, scale = lora_alpha / r (lora_alpha / sqrt(r)
// with use_rslora), for the param whose checkpoint name (bindings.json) is
// `MODULE.weight`. Every key must find its param, of a shape that fits;
// what peft can write but this does not apply (DoRA, biases, fan_in_fan_out,
// other adapter types) is refused by name. docs/train.md, "Adapters".
#pragma once

#include <string>
#include <vector>

#include "nest/nest.h"
#include "nest/params.h"

namespace linnet::nest {

// Merges the adapter in `folder` into `bytes` (one per param of `params`,
// as bindParams returns them); a merged param gets bytes of its own (and no
// stored form). Throws Error naming the folder and what is wrong.
void mergeAdapter(const std::string& folder, const std::string& package, const std::vector<ParamInfo>& params,
                  std::vector<ParamBytes>& bytes);

}  // namespace linnet::nest
