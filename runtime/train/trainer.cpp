#include "train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "train/parallel.h"

namespace linnet::train {

namespace {

template <typename T>
nest::Tensor vectorTensor(DType dtype, const std::vector<T>& v) {
  return nest::Tensor::fromBytes(dtype, {static_cast<int64_t>(v.size())}, std::as_bytes(std::span<const T>(v)));
}

std::vector<size_t> elementCounts(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<size_t> out;
  for (const auto& shape : shapes) {
    size_t count = 1;
    for (int64_t d : shape) count *= static_cast<size_t>(d);
    out.push_back(count);
  }
  return out;
}

// The float params, grouped by tie key (in the model's order of each
// group's first), and each group's shape; returns the shapes.
const std::vector<std::vector<int64_t>>& groupFloatParams(nest::Model& model, const TieKey& tie,
                                                          std::vector<std::vector<std::string>>& groups,
                                                          std::vector<std::vector<int64_t>>& shapes) {
  std::map<std::string, size_t> byKey;
  for (const nest::ParamInfo& p : model.params()) {
    if (!isFloat(p.dtype)) continue;
    if (p.dtype != DType::F32)
      throw nest::Error(fmt::format("param `{}` is {}: full fine-tuning trains f32 params (pass --set T=f32)", p.path,
                                    name(p.dtype)));
    std::string key = tie ? tie(p.path) : p.path;
    if (auto known = byKey.find(key); known != byKey.end()) {
      if (shapes[known->second] != p.shape)
        throw nest::Error(fmt::format("params `{}` and `{}` are bound to one tensor `{}` but differ in shape",
                                      groups[known->second][0], p.path, key));
      groups[known->second].push_back(p.path);
      continue;
    }
    byKey.emplace(key, groups.size());
    groups.push_back({p.path});
    shapes.push_back(p.shape);
  }
  return shapes;
}

std::vector<std::string> firstOf(const std::vector<std::vector<std::string>>& groups) {
  std::vector<std::string> out;
  for (const auto& g : groups) out.push_back(g.front());
  return out;
}

}  // namespace

std::vector<float> floatValues(const nest::Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.size()));
  std::memcpy(out.data(), t.data(), out.size() * sizeof(float));
  return out;
}

std::span<float> floats(nest::Tensor& t) { return {reinterpret_cast<float*>(t.data()), static_cast<size_t>(t.size())}; }

nest::Tensor f32Tensor(const std::vector<float>& values, std::vector<int64_t> shape) {
  return nest::Tensor::fromBytes(DType::F32, std::move(shape), std::as_bytes(std::span<const float>(values)));
}

std::vector<nest::Tensor> lossInputs(const PackedBatch& batch) {
  return {vectorTensor(DType::I32, batch.tokens), vectorTensor(DType::I32, batch.positions),
          vectorTensor(DType::I32, batch.segments), vectorTensor(DType::I64, batch.targets),
          vectorTensor(DType::F32, batch.weights)};
}

FullTrainer::FullTrainer(nest::Model& model, TrainSettings settings, TieKey tie)
    : model_(model),
      settings_(settings),
      adamw_(settings.adamw, elementCounts(groupFloatParams(model, tie, tied_, shapes_)), model.threads()) {
  paths_ = firstOf(tied_);
  for (size_t k = 0; k < tied_.size(); ++k) {
    std::span<std::byte> held = tied_[k].size() == 1 ? model_.hostParam(paths_[k]) : std::span<std::byte>();
    inPlace_.emplace_back(reinterpret_cast<float*>(held.data()), held.size() / sizeof(float));
    values_.push_back(held.empty() ? model_.param(paths_[k]) : nest::Tensor{});  // a copy only where needed
  }
}

std::span<float> FullTrainer::values(size_t k) { return inPlace_[k].empty() ? floats(values_[k]) : inPlace_[k]; }

double learningRate(const TrainSettings& settings, int64_t step) {
  if (settings.warmup > 0 && step < settings.warmup)
    return settings.lr * static_cast<double>(step + 1) / static_cast<double>(settings.warmup);
  return settings.lr;
}

std::vector<nest::Tensor> meanGradients(nest::Model& model, const PackedBatch& batch,
                                        const std::vector<std::vector<std::string>>& groups, StepReport& report,
                                        const nest::LowRank& lowRank, double factor) {
  if (batch.learnedTokens == 0) throw nest::Error("a training batch with no learned token");
  std::set<std::string> chosen;
  for (const auto& g : groups)
    for (const std::string& name : g) chosen.insert(lowRank.rank > 0 ? name.substr(0, name.rfind('.')) : name);
  nest::Gradient g = model.gradient(
      "loss_packed", lossInputs(batch), {}, [&](const std::string& path) { return chosen.count(path) > 0; },
      std::nullopt, lowRank);
  std::map<std::string, size_t> at;
  for (size_t k = 0; k < g.params.size(); ++k) at.emplace(g.params[k], k);
  // Each group's gradients, the first taking the sum of the others in place.
  std::vector<std::vector<nest::Tensor*>> members;
  for (const auto& group : groups) {
    members.emplace_back();
    for (const std::string& path : group) {
      auto k = at.find(path);
      if (k == at.end()) throw nest::Error(fmt::format("internal: the gradient has no param `{}`", path));
      members.back().push_back(&g.grads[k->second]);
    }
  }
  // The loss is a sum over the learned tokens; the step is on their mean.
  const float scale = factor == 1 ? 1.0f / static_cast<float>(batch.learnedTokens)
                                  : static_cast<float>(factor / static_cast<double>(batch.learnedTokens));
  std::vector<size_t> sizes;
  for (const auto& m : members) sizes.push_back(static_cast<size_t>(m.front()->size()));
  const std::vector<Piece> pieces = piecesOf(sizes);
  parallelFor(pieces.size(), model.threads(), [&](size_t k) {
    const Piece& p = pieces[k];
    float* sum = floats(*members[p.array].front()).data();
    for (size_t m = 1; m < members[p.array].size(); ++m) {
      const float* one = floats(*members[p.array][m]).data();
      for (size_t i = p.begin; i < p.end; ++i) sum[i] += one[i];
    }
    for (size_t i = p.begin; i < p.end; ++i) sum[i] *= scale;
  });
  std::vector<nest::Tensor> grads;
  for (const auto& m : members) grads.push_back(std::move(*m.front()));
  report.loss = g.value.asDouble(0) / static_cast<double>(batch.learnedTokens);
  report.tokens = static_cast<int64_t>(batch.tokens.size()) - batch.padding;
  return grads;
}

StepReport FullTrainer::step(const PackedBatch& batch) {
  StepReport report;
  std::vector<nest::Tensor> grads = meanGradients(model_, batch, tied_, report);
  report.lr = learningRate(settings_, adamw_.steps());
  std::vector<std::span<const float>> read;
  for (nest::Tensor& g : grads) read.push_back(floats(g));
  float factor = 1.0f;  // clipping folded into the step: grad * factor, as torch's grad.mul_ rounds it
  if (settings_.maxGradNorm > 0) {
    report.gradNorm = gradNorm(read, model_.threads());
    factor = clipFactor(static_cast<float>(report.gradNorm), settings_.maxGradNorm);
  }
  std::vector<ParamGrad> pg;
  for (size_t k = 0; k < paths_.size(); ++k) pg.push_back({values(k), read[k], factor});
  adamw_.step(report.lr, pg);
  giveValues();
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

nest::Tensor FullTrainer::value(size_t k) const {
  if (inPlace_.at(k).empty()) return values_.at(k);
  return nest::Tensor::fromBytes(DType::F32, shapes_[k], std::as_bytes(inPlace_[k]));
}

void FullTrainer::restoreValue(size_t k, std::vector<float> saved) {
  std::span<float> to = values(k);
  if (saved.size() != to.size())
    throw nest::Error(fmt::format("param `{}`: {} values saved, the model has {}", paths_[k], saved.size(),
                                  to.size()));
  std::copy(saved.begin(), saved.end(), to.begin());
}

void FullTrainer::restoreDone() { giveValues(); }

void FullTrainer::giveValues() {
  for (size_t k = 0; k < tied_.size(); ++k)
    if (inPlace_[k].empty())
      for (const std::string& path : tied_[k]) model_.setParam(path, values_[k]);
}

}  // namespace linnet::train
