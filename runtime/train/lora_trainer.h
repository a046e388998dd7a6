// LoRA fine-tuning: each target weight W (out x in) of the model becomes
// W0 + s B A with A (r x in) and B (out x r) trained and W0 kept, s =
// alpha / r, as peft's LoRA computes it (no dropout). The model runs with
// W0 + s B A written into W; the compiled low-rank gradient
// (nest::LowRank, autodiff/low_rank.h) gives B^T dW and dW A^T without
// forming dW, so dA = s B^T dW and dB = s dW A^T (exact: the model sees
// W0 + s B A), then clipping and AdamW on A and B alone, as torch steps a
// peft model.
#pragma once

#include <string>
#include <vector>

#include "nest/nest.h"
#include "train/adamw.h"
#include "train/packing.h"
#include "train/trainer.h"

namespace linnet::train {

struct LoraTarget {
  std::string path;    // the model's param (`layers.0.attention.q_proj.weight`)
  std::string module;  // peft's module name (`model.layers.0.self_attn.q_proj`)
};

struct LoraSettings {
  int64_t rank = 8;
  double alpha = 16;
  uint64_t seed = 0;  // of A's initial values
};

// A's initial values for `module`: uniform in [-1/sqrt(in), 1/sqrt(in)]
// (peft's kaiming_uniform_(a = sqrt(5))), element k drawn from
// splitmix64(key + k), key = splitmix64(splitmix64(seed) ^ fnv1a(module)):
// the same on every machine, so that a peer can start from them.
std::vector<float> loraInitialA(uint64_t seed, const std::string& module, int64_t rank, int64_t in);

class LoraTrainer {
 public:
  LoraTrainer(nest::Model& model, std::vector<LoraTarget> targets, LoraSettings lora, TrainSettings settings);

  StepReport step(const PackedBatch& batch);

  const std::vector<LoraTarget>& targets() const { return targets_; }
  // Target k's A [r, in] and B [out, r].
  nest::Tensor a(size_t k) const;
  nest::Tensor b(size_t k) const;
  const LoraSettings& settings() const { return lora_; }

  // As FullTrainer's, for saving and resuming a run: the trained tensors
  // (`PATH.lora_A`, `PATH.lora_B` of each target, AdamW's order), their
  // values (flat), and restoring them (then restoreDone() writes W0 + s B A
  // into the model).
  const std::vector<std::string>& paths() const { return names_; }
  nest::Tensor value(size_t k) const { return k % 2 == 0 ? a(k / 2) : b(k / 2); }
  AdamW& optimizer() { return adamw_; }
  void restoreValue(size_t k, std::vector<float> values);
  void restoreDone();

 private:
  nest::Model& model_;
  std::vector<LoraTarget> targets_;
  LoraSettings lora_;
  TrainSettings settings_;
  double scale_;
  std::vector<std::vector<int64_t>> shapes_;  // each W's [out, in]
  std::vector<std::vector<float>> base_, a_, b_;
  // W0 + s B A, written into the model each step through setParam where
  // the model has no host view of the param (Model::hostParam); else empty.
  std::vector<nest::Tensor> merged_;
  std::vector<std::string> names_;
  AdamW adamw_;

  void writeBack(size_t k);
};

}  // namespace linnet::train
