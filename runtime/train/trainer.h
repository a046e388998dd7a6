// Full fine-tuning of a model's params, one packed batch a step: the card's
// `loss_packed` and its derived gradient (nest::Model::gradient), the loss
// taken as the mean over the batch's learned tokens, gradients clipped by
// their joint norm, then AdamW; the learning rate rises linearly over the
// warm-up steps and then stays. What `linnet finetune --full` runs
// (docs/train.md, "linnet finetune").
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "nest/nest.h"
#include "train/adamw.h"
#include "train/packing.h"

namespace linnet::train {

struct TrainSettings {
  AdamWSettings adamw;
  double lr = 1e-5;
  int64_t warmup = 0;        // steps of linear warm-up (from lr / warmup)
  double maxGradNorm = 1.0;  // 0: no clipping
};

struct StepReport {
  double loss = 0;      // mean over the learned tokens, before the step
  double gradNorm = 0;  // before clipping
  double lr = 0;        // the step's learning rate
  int64_t tokens = 0;   // positions in the batch
};

// A param's checkpoint tensor name (bindings.json); params of one name are
// one tensor trained as one, as torch ties them (SmolLM2's output head is
// its input embedding). Null: every param its own.
using TieKey = std::function<std::string(const std::string&)>;

class FullTrainer {
 public:
  // Every float param of `model` is trained; they must be f32 (Error
  // otherwise, naming the param: the optimizer keeps no second copy).
  // Params of one `tie` key take the sum of their gradients and one step.
  FullTrainer(nest::Model& model, TrainSettings settings, TieKey tie = nullptr);

  StepReport step(const PackedBatch& batch);

  // The trained tensors, each named by its first param's path.
  const std::vector<std::string>& paths() const { return paths_; }
  // Param k's values now (as the model holds them).
  nest::Tensor value(size_t k) const;
  AdamW& optimizer() { return adamw_; }
  // A saved run taken up again: param k's values (its size, else Error),
  // then restoreDone() gives them to the model; the moments and step count
  // go through optimizer().
  void restoreValue(size_t k, std::vector<float> values);
  void restoreDone();

 private:
  void giveValues();  // every param of a tensor kept here its values
  std::span<float> values(size_t k);  // tensor k's, where the model reads them or here
  nest::Model& model_;
  TrainSettings settings_;
  std::vector<std::string> paths_;
  std::vector<std::vector<std::string>> tied_;  // every param of tensor k (paths_[k] first)
  std::vector<std::vector<int64_t>> shapes_;
  // Tensor k's values: the model's own memory where it lets them be
  // written in place (Model::hostParam) and the tensor is one param; else
  // a copy here (values_[k], f32 of shapes_[k]) given to the model by
  // setParam after each step.
  std::vector<std::span<float>> inPlace_;
  std::vector<nest::Tensor> values_;
  AdamW adamw_;
};

// An f32 tensor's values (a copy, or its own elements in place), and
// values as an f32 tensor of `shape`.
std::vector<float> floatValues(const nest::Tensor& t);
std::span<float> floats(nest::Tensor& t);
nest::Tensor f32Tensor(const std::vector<float>& values, std::vector<int64_t> shape);

// loss_packed's five inputs for `batch`.
std::vector<nest::Tensor> lossInputs(const PackedBatch& batch);

// The mean loss over the learned tokens of `batches`, params unchanged.
double meanLoss(nest::Model& model, const std::vector<PackedBatch>& batches);

// The learning rate of step `step` (from 0): a linear warm-up, then lr.
double learningRate(const TrainSettings& settings, int64_t step);

// loss_packed's gradient for `batch` with respect to the tensors `groups`
// lists (each its params' paths: one, or a tied set whose gradients add),
// each scaled to the mean over the batch's learned tokens (f32, of the
// param's shape, in the order of `groups`; computed on the model's
// threads); the mean loss goes to `report`. With a low rank, `groups`
// names the factors' gradients (`PATH.lora_A`, nest::LowRank) and each is
// scaled by `factor` too (LoRA's alpha / r).
std::vector<nest::Tensor> meanGradients(nest::Model& model, const PackedBatch& batch,
                                        const std::vector<std::vector<std::string>>& groups, StepReport& report,
                                        const nest::LowRank& lowRank = {}, double factor = 1);

}  // namespace linnet::train
