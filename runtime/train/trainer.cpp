#include "train/trainer.h"

#include <fmt/format.h>

#include <cstring>
#include <set>

namespace linnet::train {

namespace {

template <typename T>
nest::Tensor vectorTensor(DType dtype, const std::vector<T>& v) {
  return nest::Tensor::fromBytes(dtype, {static_cast<int64_t>(v.size())}, std::as_bytes(std::span<const T>(v)));
}

std::vector<size_t> sizesOf(const std::vector<std::vector<float>>& values) {
  std::vector<size_t> out;
  for (const auto& v : values) out.push_back(v.size());
  return out;
}

std::vector<std::vector<float>> floatParams(nest::Model& model, std::vector<std::string>& paths,
                                            std::vector<std::vector<int64_t>>& shapes) {
  std::vector<std::vector<float>> values;
  for (const nest::ParamInfo& p : model.params()) {
    if (!isFloat(p.dtype)) continue;
    if (p.dtype != DType::F32)
      throw nest::Error(fmt::format("param `{}` is {}: full fine-tuning trains f32 params (pass --set T=f32)", p.path,
                                    name(p.dtype)));
    paths.push_back(p.path);
    shapes.push_back(p.shape);
    values.push_back(floatValues(model.param(p.path)));
  }
  return values;
}

}  // namespace

std::vector<float> floatValues(const nest::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.size()));
  std::memcpy(out.data(), t.data(), out.size() * sizeof(float));
  return out;
}

nest::Tensor f32Tensor(const std::vector<float>& values, std::vector<int64_t> shape) {
  return nest::Tensor::fromBytes(DType::F32, std::move(shape), std::as_bytes(std::span<const float>(values)));
}

std::vector<nest::Tensor> lossInputs(const PackedBatch& batch) {
  return {vectorTensor(DType::I32, batch.tokens), vectorTensor(DType::I32, batch.positions),
          vectorTensor(DType::I32, batch.segments), vectorTensor(DType::I64, batch.targets),
          vectorTensor(DType::F32, batch.weights)};
}

FullTrainer::FullTrainer(nest::Model& model, TrainSettings settings)
    : model_(model),
      settings_(settings),
      values_(floatParams(model, paths_, shapes_)),
      adamw_(settings.adamw, sizesOf(values_)) {}

double learningRate(const TrainSettings& settings, int64_t step) {
  if (settings.warmup > 0 && step < settings.warmup)
    return settings.lr * static_cast<double>(step + 1) / static_cast<double>(settings.warmup);
  return settings.lr;
}

std::vector<std::vector<float>> meanGradients(nest::Model& model, const PackedBatch& batch,
                                              const std::vector<std::string>& paths, StepReport& report) {
  if (batch.learnedTokens == 0) throw nest::Error("a training batch with no learned token");
  const std::set<std::string> chosen(paths.begin(), paths.end());
  nest::Gradient g = model.gradient("loss_packed", lossInputs(batch), {},
                                    [&](const std::string& path) { return chosen.count(path) > 0; });
  // The loss is a sum over the learned tokens; the step is on their mean.
  const float scale = 1.0f / static_cast<float>(batch.learnedTokens);
  std::vector<std::vector<float>> grads;
  for (size_t k = 0; k < paths.size(); ++k) {
    if (g.params.at(k) != paths[k]) throw nest::Error("internal: the gradient's params are not the trained ones");
    grads.push_back(floatValues(g.grads[k]));
    for (float& v : grads.back()) v *= scale;
  }
  report.loss = g.value.asDouble(0) / static_cast<double>(batch.learnedTokens);
  report.tokens = static_cast<int64_t>(batch.tokens.size());
  return grads;
}

StepReport FullTrainer::step(const PackedBatch& batch) {
  StepReport report;
  std::vector<std::vector<float>> grads = meanGradients(model_, batch, paths_, report);
  report.lr = learningRate(settings_, adamw_.steps());
  std::vector<std::span<float>> spans(grads.begin(), grads.end());
  report.gradNorm = settings_.maxGradNorm > 0 ? clipGradNorm(spans, settings_.maxGradNorm) : 0.0;
  std::vector<ParamGrad> pg;
  for (size_t k = 0; k < paths_.size(); ++k) pg.push_back({values_[k], grads[k]});
  adamw_.step(report.lr, pg);
  for (size_t k = 0; k < paths_.size(); ++k) model_.setParam(paths_[k], f32Tensor(values_[k], shapes_[k]));
  return report;
}

double meanLoss(nest::Model& model, const std::vector<PackedBatch>& batches) {
  double total = 0;
  int64_t tokens = 0;
  for (const PackedBatch& b : batches) {
    if (b.learnedTokens == 0) continue;
    total += model.call("loss_packed", lossInputs(b)).at(0).asDouble(0);
    tokens += b.learnedTokens;
  }
  if (tokens == 0) throw nest::Error("no learned token to evaluate");
  return total / static_cast<double>(tokens);
}

nest::Tensor FullTrainer::value(size_t k) const { return f32Tensor(values_.at(k), shapes_.at(k)); }

void FullTrainer::restoreValue(size_t k, std::vector<float> values) {
  if (values.size() != values_.at(k).size())
    throw nest::Error(fmt::format("param `{}`: {} values saved, the model has {}", paths_[k], values.size(),
                                  values_[k].size()));
  values_[k] = std::move(values);
}

void FullTrainer::restoreDone() {
  for (size_t k = 0; k < paths_.size(); ++k) model_.setParam(paths_[k], f32Tensor(values_[k], shapes_[k]));
}

}  // namespace linnet::train
