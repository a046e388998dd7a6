#include "nest/adapter.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "weights/bindings.h"
#include "weights/safetensors.h"

namespace linnet::nest {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct LoraConfig {
  int64_t rank = 0;
  double scale = 1;
};

LoraConfig readConfig(const fs::path& folder) {
  fs::path file = folder / "adapter_config.json";
  std::ifstream in(file);
  if (!in) throw Error(fmt::format("{}: no adapter_config.json: --adapter takes a folder peft or `linnet finetune "
                                   "--lora` wrote", folder.string()));
  json c;
  try {
    c = json::parse(in);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: not JSON: {}", file.string(), e.what()));
  }
  auto refuse = [&](const std::string& what) {
    throw Error(fmt::format("{}: {}; Linnet applies plain LoRA adapters", file.string(), what));
  };
  if (c.value("peft_type", "") != "LORA") refuse(fmt::format("peft_type is {}", c.value("peft_type", json()).dump()));
  if (c.value("use_dora", false)) refuse("use_dora is true (DoRA)");
  if (c.value("fan_in_fan_out", false)) refuse("fan_in_fan_out is true");
  if (c.value("bias", "none") != "none") refuse(fmt::format("bias is \"{}\"", c.value("bias", "")));
  if (c.value("lora_bias", false)) refuse("lora_bias is true");
  for (const char* k : {"rank_pattern", "alpha_pattern"})
    if (c.contains(k) && !c[k].is_null() && !c[k].empty()) refuse(fmt::format("`{}` gives modules ranks of their own", k));
  if (c.contains("modules_to_save") && !c["modules_to_save"].is_null())
    refuse("`modules_to_save` holds whole modules beside the adapter");
  if (!c.contains("r") || !c["r"].is_number_integer() || c["r"].get<int64_t>() < 1) refuse("`r` is not a positive integer");
  if (!c.contains("lora_alpha") || !c["lora_alpha"].is_number()) refuse("`lora_alpha` is not a number");
  LoraConfig out;
  out.rank = c["r"].get<int64_t>();
  double alpha = c["lora_alpha"].get<double>();
  out.scale = c.value("use_rslora", false) ? alpha / std::sqrt(static_cast<double>(out.rank))
                                           : alpha / static_cast<double>(out.rank);
  return out;
}

std::vector<double> values(const weights::TensorInfo& t) {
  std::vector<double> out(static_cast<size_t>(t.elementCount()));
  size_t size = byteSize(t.dtype);
  for (size_t k = 0; k < out.size(); ++k) out[k] = loadElement(t.dtype, t.data.data() + k * size);
  return out;
}

// W (out x in, in `bytes` of `dtype`) + scale * B (out x r) A (r x in), in a buffer of its own.
ParamBytes merged(const ParamInfo& p, const ParamBytes& w, const std::vector<double>& a, const std::vector<double>& b,
                  int64_t rank, double scale) {
  const int64_t out = p.shape[0], in = p.shape[1];
  auto owned = std::make_shared<Tensor>(Tensor::zeros(p.dtype, p.shape));
  const size_t size = byteSize(p.dtype);
  for (int64_t i = 0; i < out; ++i)
    for (int64_t j = 0; j < in; ++j) {
      double delta = 0;
      for (int64_t k = 0; k < rank; ++k) delta += b[i * rank + k] * a[k * in + j];
      size_t at = static_cast<size_t>(i * in + j) * size;
      storeElement(p.dtype, loadElement(p.dtype, w.bytes.data() + at) + scale * delta, owned->data() + at);
    }
  return ParamBytes{owned->bytes(), owned};
}

}  // namespace

void mergeAdapter(const std::string& folder, const std::string& package, const std::vector<ParamInfo>& params,
                  std::vector<ParamBytes>& bytes) {
  LoraConfig config = readConfig(folder);
  fs::path file = fs::path(folder) / "adapter_model.safetensors";
  if (!fs::exists(file)) throw Error(fmt::format("{}: no adapter_model.safetensors", folder));
  weights::Checkpoint adapter = weights::Checkpoint::open(file);
  weights::Bindings bindings = weights::Bindings::load(fs::path(package) / "bindings.json");
  std::map<std::string, size_t> byName;  // checkpoint name -> param
  for (size_t k = 0; k < params.size(); ++k) byName[bindings.find(params[k].path).value_or(params[k].path)] = k;
  const std::string prefix = "base_model.model.", suffixA = ".lora_A.weight", suffixB = ".lora_B.weight";
  for (const weights::TensorInfo& a : adapter.tensors()) {
    const std::string& key = a.name;
    if (key.size() > suffixB.size() && key.compare(key.size() - suffixB.size(), suffixB.size(), suffixB) == 0) continue;
    if (key.rfind(prefix, 0) != 0 || key.size() <= prefix.size() + suffixA.size() ||
        key.compare(key.size() - suffixA.size(), suffixA.size(), suffixA) != 0)
      throw Error(fmt::format("{}: `{}` is not a LoRA key (base_model.model.MODULE.lora_A.weight / lora_B.weight)",
                              file.string(), key));
    std::string module = key.substr(prefix.size(), key.size() - prefix.size() - suffixA.size());
    const weights::TensorInfo* b = adapter.find(prefix + module + suffixB);
    if (!b) throw Error(fmt::format("{}: `{}` has no lora_B beside it", file.string(), key));
    auto it = byName.find(module + ".weight");
    if (it == byName.end())
      throw Error(fmt::format("{}: `{}` adapts `{}.weight`, which {} has no param bound to: an adapter for another "
                              "model",
                              file.string(), key, module, package));
    const ParamInfo& p = params[it->second];
    std::vector<int64_t> wantA = {config.rank, p.shape.size() == 2 ? p.shape[1] : -1};
    std::vector<int64_t> wantB = {p.shape.empty() ? -1 : p.shape[0], config.rank};
    if (p.shape.size() != 2 || a.shape != wantA || b->shape != wantB)
      throw Error(fmt::format("{}: `{}` is [{}] and its lora_B [{}]; `{}` [{}] at r = {} needs [{}] and [{}]",
                              file.string(), key, fmt::join(a.shape, ", "), fmt::join(b->shape, ", "), p.path,
                              fmt::join(p.shape, ", "), config.rank, fmt::join(wantA, ", "), fmt::join(wantB, ", ")));
    bytes[it->second] = merged(p, bytes[it->second], values(a), values(*b), config.rank, config.scale);
  }
}

}  // namespace linnet::nest
