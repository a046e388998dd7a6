#include "tools/finetune_state.h"

#include <fmt/format.h>

#include <cstring>
#include <map>

#include "tools/checkpoint_output.h"
#include "weights/safetensors.h"

namespace linnet::tools {

namespace {

constexpr const char* kFormat = "linnet-finetune-state";

nest::Tensor floats(const std::vector<float>& v) {
  return nest::Tensor::fromBytes(DType::F32, {static_cast<int64_t>(v.size())}, std::as_bytes(std::span<const float>(v)));
}

std::vector<float> read(const weights::Checkpoint& file, const std::string& name, const std::string& path) {
  const weights::TensorInfo* t = file.find(name);
  if (!t || t->dtype != DType::F32)
    throw nest::Error(fmt::format("{}: no f32 tensor `{}`: not the state of this model's run", path, name));
  std::vector<float> out(static_cast<size_t>(t->elementCount()));
  std::memcpy(out.data(), t->data.data(), out.size() * sizeof(float));
  return out;
}

std::string describe(const RunKey& k) {
  return fmt::format("--seed {}, --batch-tokens {}, {} rows", k.seed, k.batchTokens, k.rows);
}

}  // namespace

template <typename Trainer>
void saveRunState(const std::string& path, Trainer& trainer, const RunKey& key) {
  std::map<std::string, nest::Tensor> tensors;
  for (size_t k = 0; k < trainer.paths().size(); ++k) {
    const std::string& p = trainer.paths()[k];
    tensors.emplace("param." + p, trainer.value(k));
    tensors.emplace("m." + p, floats(trainer.optimizer().firstMoment(k)));
    tensors.emplace("v." + p, floats(trainer.optimizer().secondMoment(k)));
  }
  for (auto& [name, t] : tensors) t.shape = {t.size()};  // flat: the model gives the shapes back
  writeSafetensors(path, tensors,
                   {{"format", kFormat}, {"steps", std::to_string(trainer.optimizer().steps())},
                    {"seed", std::to_string(key.seed)}, {"batch_tokens", std::to_string(key.batchTokens)},
                    {"rows", std::to_string(key.rows)}, {"kind", key.kind}});
}

template <typename Trainer>
int64_t resumeRunState(const std::string& path, Trainer& trainer, const RunKey& key) {
  weights::Checkpoint file = weights::Checkpoint::open(path);
  const auto& meta = file.metadata(0);
  auto field = [&](const char* name) -> std::string {
    auto it = meta.find(name);
    if (it == meta.end()) throw nest::Error(fmt::format("{}: not a fine-tuning state (no `{}`); --resume takes "
                                                        "the file an earlier run's --state wrote", path, name));
    return it->second;
  };
  if (field("format") != kFormat)
    throw nest::Error(fmt::format("{}: not a fine-tuning state; --resume takes the file --state wrote", path));
  auto kind = meta.find("kind");  // states written before LoRA resumed were --full's
  const std::string savedKind = kind == meta.end() ? "full" : kind->second;
  if (savedKind != key.kind)
    throw nest::Error(fmt::format("{}: the state of a {} run; this one is {}: resume with the same kind of run "
                                  "(--full, or --lora with the same rank, alpha and targets)",
                                  path, savedKind, key.kind));
  RunKey saved{std::stoull(field("seed")), std::stoll(field("batch_tokens")), std::stoull(field("rows"))};
  if (saved.seed != key.seed || saved.batchTokens != key.batchTokens || saved.rows != key.rows)
    throw nest::Error(fmt::format("{}: saved by a run with {}; this one has {}: resume with the same data, seed "
                                  "and batch size",
                                  path, describe(saved), describe(key)));
  for (size_t k = 0; k < trainer.paths().size(); ++k) {
    const std::string& p = trainer.paths()[k];
    trainer.restoreValue(k, read(file, "param." + p, path));
    trainer.optimizer().firstMoment(k) = read(file, "m." + p, path);
    trainer.optimizer().secondMoment(k) = read(file, "v." + p, path);
  }
  int64_t steps = std::stoll(field("steps"));
  trainer.optimizer().setSteps(steps);
  trainer.restoreDone();
  return steps;
}

template void saveRunState(const std::string&, train::FullTrainer&, const RunKey&);
template void saveRunState(const std::string&, train::LoraTrainer&, const RunKey&);
template int64_t resumeRunState(const std::string&, train::FullTrainer&, const RunKey&);
template int64_t resumeRunState(const std::string&, train::LoraTrainer&, const RunKey&);

}  // namespace linnet::tools
