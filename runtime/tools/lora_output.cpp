#include "tools/lora_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/output_file.h"
#include "tools/arguments.h"
#include "tools/checkpoint_output.h"

namespace linnet::tools {

namespace fs = std::filesystem;

std::vector<std::string> loraModules(const std::string& list) {
  static const std::map<std::string, std::string> kShort = {{"q", "q_proj"},       {"k", "k_proj"},
                                                            {"v", "v_proj"},       {"o", "o_proj"},
                                                            {"gate", "gate_proj"}, {"up", "up_proj"},
                                                            {"down", "down_proj"}};
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= list.size()) {
    size_t comma = std::min(list.find(',', from), list.size());
    std::string name = list.substr(from, comma - from);
    if (name.empty()) throw Usage(fmt::format("--lora-targets `{}`: an empty name", list));
    auto it = kShort.find(name);
    out.push_back(it != kShort.end() ? it->second : name);
    from = comma + 1;
  }
  return out;
}

std::vector<train::LoraTarget> loraTargets(const nest::Model& model, const std::string& package,
                                           const std::vector<std::string>& modules) {
  auto name = checkpointNames(package);
  std::vector<train::LoraTarget> out;
  std::map<std::string, int> found;
  std::string example;
  for (const nest::ParamInfo& p : model.params()) {
    std::string n = name(p.path);
    const std::string suffix = ".weight";
    if (p.shape.size() != 2 || n.size() <= suffix.size() || n.compare(n.size() - suffix.size(), suffix.size(), suffix))
      continue;
    std::string module = n.substr(0, n.size() - suffix.size());
    std::string last = module.substr(module.rfind('.') + 1);
    if (example.empty()) example = module;
    if (std::find(modules.begin(), modules.end(), last) == modules.end()) continue;
    ++found[last];
    out.push_back({p.path, module});
  }
  for (const std::string& m : modules)
    if (!found.count(m))
      throw Usage(fmt::format("--lora-targets: no weight of a module `{}` (module names end weights' checkpoint "
                              "names, like `{}`)",
                              m, example));
  return out;
}

void requireOutputFolderParent(const std::string& output) {
  if (fs::exists(output) && !fs::is_directory(output)) {
    auto why = unwritableOutput(output);  // a device or FIFO says so
    throw Usage(why ? fmt::format("-o {}", *why)
                    : fmt::format("-o {}: exists and is not a folder; --lora writes an adapter folder", output));
  }
  fs::path parent = fs::absolute(output).parent_path();
  if (!fs::is_directory(parent))
    throw Usage(fmt::format("-o {}: the folder {} does not exist; make it first", output, parent.string()));
}

void writeAdapter(const std::string& output, const train::LoraTrainer& trainer,
                  const std::vector<std::string>& modules, const std::string& package) {
  fs::path temp = besideOutput(output);
  fs::create_directories(temp);
  std::map<std::string, nest::Tensor> tensors;
  for (size_t k = 0; k < trainer.targets().size(); ++k) {
    const std::string key = "base_model.model." + trainer.targets()[k].module;
    tensors.emplace(key + ".lora_A.weight", trainer.a(k));
    tensors.emplace(key + ".lora_B.weight", trainer.b(k));
  }
  writeSafetensors((temp / "adapter_model.safetensors").string(), tensors, {{"format", "pt"}});
  const train::LoraSettings& lora = trainer.settings();
  nlohmann::ordered_json config = {
      {"peft_type", "LORA"},     {"task_type", "CAUSAL_LM"},
      {"base_model_name_or_path", fs::path(package).filename().string()},
      {"r", lora.rank},          {"lora_alpha", lora.alpha},
      {"target_modules", modules}, {"lora_dropout", 0.0},
      {"bias", "none"},          {"fan_in_fan_out", false},
      {"use_rslora", false},     {"use_dora", false},
      {"init_lora_weights", true}, {"inference_mode", true},
      {"modules_to_save", nullptr}};
  std::ofstream json(temp / "adapter_config.json");
  json << config.dump(2) << "\n";
  json.close();
  if (!json) {
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    throw nest::Error(fmt::format("{}: cannot write the adapter here", output));
  }
  renameIntoPlace(temp, output);
}

}  // namespace linnet::tools
