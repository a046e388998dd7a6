// `linnet finetune --lora`'s targets and output: which weights the adapter
// trains (peft's module names through bindings.json) and the adapter folder
// in peft's layout (adapter_config.json, adapter_model.safetensors) that
// PeftModel.from_pretrained and `--adapter` read.
#pragma once

#include <string>
#include <vector>

#include "nest/nest.h"
#include "train/lora_trainer.h"

namespace linnet::tools {

// `q,k,v,o,gate,up,down` (or peft's own `q_proj`, ...) as module names.
std::vector<std::string> loraModules(const std::string& list);

// The model's weights whose checkpoint name is `PREFIX.M.weight` for a
// module M of `modules`; Usage naming a module that matches none.
std::vector<train::LoraTarget> loraTargets(const nest::Model& model, const std::string& package,
                                           const std::vector<std::string>& modules);

// Usage unless `output` can become the adapter folder: absent or a folder,
// in a folder that exists.
void requireOutputFolderParent(const std::string& output);

// The adapter folder, written beside `output` and renamed into place.
void writeAdapter(const std::string& output, const train::LoraTrainer& trainer,
                  const std::vector<std::string>& modules, const std::string& package);

}  // namespace linnet::tools
