#include "train/lora_trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/hash.h"
#include "train/parallel.h"

namespace linnet::train {

namespace {

// Eight lanes of f32 and of double (GCC's vector extension: one register
// with AVX-512, two with AVX2, four with SSE2).
typedef float Floats8 __attribute__((vector_size(32)));
typedef double Doubles8 __attribute__((vector_size(64)));

// w[j] = base[j] + f32(s * sum over t < r of b[t] * a[t * in + j]), j < in:
// each sum in double from 0 in order of t, a product rounded then a sum
// rounded (the file is compiled without contraction to fused multiply-adds,
// so every clone gives the same bits); eight sums a vector, held in
// registers over t. Cloned for the vector widths x86 has: the baseline's
// two doubles a vector, each sum through memory, made the merge 4% of a
// LoRA step.
__attribute__((target_clones("avx512f", "avx2", "default"))) void mergeRow(float* w, const float* base,
                                                                           const float* b, const float* a,
                                                                           int64_t r, int64_t in, double s) {
  constexpr int64_t kLanes = 8;
  int64_t j0 = 0;
  for (; j0 + kLanes <= in; j0 += kLanes) {
    Doubles8 sum = {};
    for (int64_t t = 0; t < r; ++t) {
      Floats8 at;
      std::memcpy(&at, a + t * in + j0, sizeof at);
      sum += static_cast<double>(b[t]) * __builtin_convertvector(at, Doubles8);
    }
    const Floats8 scaled = __builtin_convertvector(s * sum, Floats8);
    Floats8 from;
    std::memcpy(&from, base + j0, sizeof from);
    const Floats8 to = from + scaled;
    std::memcpy(w + j0, &to, sizeof to);
  }
  for (int64_t j = j0; j < in; ++j) {
    double sum = 0;
    for (int64_t t = 0; t < r; ++t) sum += static_cast<double>(b[t]) * static_cast<double>(a[t * in + j]);
    w[j] = base[j] + static_cast<float>(s * sum);
  }
}

// w = W0 + s B A (W0 and w [out, in], B [out, r], A [r, in]), rows on
// `threads` threads. Every step writes each target so.
void mergeInto(std::span<float> w, std::span<const float> base, std::span<const float> b,
               std::span<const float> a, int64_t out, int64_t r, int64_t in, double scale, int threads) {
  constexpr int64_t kRows = 16;
  parallelFor(static_cast<size_t>((out + kRows - 1) / kRows), threads, [&](size_t block) {
    const int64_t first = static_cast<int64_t>(block) * kRows;
    for (int64_t i = first; i < std::min(out, first + kRows); ++i) {
      const size_t at = static_cast<size_t>(i * in);
      mergeRow(w.data() + at, base.data() + at, b.data() + i * r, a.data(), r, in, scale);
    }
  });
}

std::vector<size_t> adapterSizes(const std::vector<std::vector<int64_t>>& shapes, int64_t rank) {
  std::vector<size_t> out;
  for (const auto& s : shapes) {
    out.push_back(static_cast<size_t>(rank * s[1]));  // A
    out.push_back(static_cast<size_t>(s[0] * rank));  // B
  }
  return out;
}

std::vector<std::vector<int64_t>> targetShapes(nest::Model& model, const std::vector<LoraTarget>& targets) {
  std::vector<std::vector<int64_t>> out;
  for (const LoraTarget& t : targets) {
    nest::Tensor w = model.param(t.path);
    if (w.dtype != DType::F32 || w.rank() != 2)
      throw nest::Error(fmt::format("LoRA target `{}` is {}: LoRA trains f32 matrices (pass --set T=f32)", t.path,
                                    w.describe()));
    out.push_back(w.shape);
  }
  return out;
}

}  // namespace

std::vector<float> loraInitialA(uint64_t seed, const std::string& module, int64_t rank, int64_t in) {
  const uint64_t key = splitmix64(splitmix64(seed) ^ fnv1a(module));
  const double bound = 1.0 / std::sqrt(static_cast<double>(in));
  std::vector<float> a(static_cast<size_t>(rank * in));
  for (size_t k = 0; k < a.size(); ++k) {
    double u = static_cast<double>(splitmix64(key + k) >> 11) * 0x1.0p-53;  // [0, 1)
    a[k] = static_cast<float>((2 * u - 1) * bound);
  }
  return a;
}

LoraTrainer::LoraTrainer(nest::Model& model, std::vector<LoraTarget> targets, LoraSettings lora,
                         TrainSettings settings)
    : model_(model),
      targets_(std::move(targets)),
      lora_(lora),
      settings_(settings),
      scale_(lora.alpha / static_cast<double>(lora.rank)),
      shapes_(targetShapes(model, targets_)),
      adamw_(settings.adamw, adapterSizes(shapes_, lora.rank), model.threads()) {
  if (targets_.empty()) throw nest::Error("LoRA: no target weight");
  for (size_t k = 0; k < targets_.size(); ++k) {
    base_.push_back(floatValues(model_.param(targets_[k].path)));
    // Only where the merge cannot go into the model's own memory.
    merged_.push_back(model_.hostParam(targets_[k].path).empty() ? f32Tensor(base_.back(), shapes_[k]) : nest::Tensor{});
    for (std::string& name : nest::lowRankNames(targets_[k].path)) names_.push_back(std::move(name));
    a_.push_back(loraInitialA(lora_.seed, targets_[k].module, lora_.rank, shapes_[k][1]));
    b_.emplace_back(static_cast<size_t>(shapes_[k][0] * lora_.rank), 0.0f);  // B starts at 0: W0 unchanged
  }
}

StepReport LoraTrainer::step(const PackedBatch& batch) {
  nest::LowRank lowRank{lora_.rank, {}};
  std::vector<std::vector<std::string>> names;  // A0, B0, A1, B1, ...
  for (size_t k = 0; k < names_.size(); ++k) {
    lowRank.factors.emplace(names_[k], value(k));
    names.push_back({names_[k]});
  }
  // The model holds W0 + s B A: d/dA = s B^T dW and d/dB = s dW A^T, the
  // low-rank gradient's B^T dW and dW A^T scaled by s.
  StepReport report;
  std::vector<nest::Tensor> grads = meanGradients(model_, batch, names, report, lowRank, scale_);
  const int threads = model_.threads();
  report.lr = learningRate(settings_, adamw_.steps());
  std::vector<std::span<float>> spans;
  for (nest::Tensor& g : grads) spans.push_back(floats(g));
  report.gradNorm = settings_.maxGradNorm > 0 ? clipGradNorm(spans, settings_.maxGradNorm, threads) : 0.0;
  std::vector<ParamGrad> pg;
  for (size_t k = 0; k < targets_.size(); ++k) {
    pg.push_back({a_[k], spans[2 * k]});
    pg.push_back({b_[k], spans[2 * k + 1]});
  }
  adamw_.step(report.lr, pg);
  for (size_t k = 0; k < targets_.size(); ++k) writeBack(k);
  return report;
}

// W0 + s B A into the model: in place where its params are in host
// memory (a copy through setParam was 2% of a step), else through a
// tensor kept for it.
void LoraTrainer::writeBack(size_t k) {
  std::span<std::byte> held = model_.hostParam(targets_[k].path);
  std::span<float> into = held.empty() ? floats(merged_[k])
                                       : std::span<float>(reinterpret_cast<float*>(held.data()), held.size() / 4);
  mergeInto(into, base_[k], b_[k], a_[k], shapes_[k][0], lora_.rank, shapes_[k][1], scale_, model_.threads());
  if (held.empty()) model_.setParam(targets_[k].path, merged_[k]);
}

void LoraTrainer::restoreValue(size_t k, std::vector<float> values) {
  std::vector<float>& to = k % 2 == 0 ? a_.at(k / 2) : b_.at(k / 2);
  if (values.size() != to.size())
    throw nest::Error(fmt::format("`{}`: {} values saved, LoRA r = {} has {}", names_.at(k), values.size(),
                                  lora_.rank, to.size()));
  to = std::move(values);
}

void LoraTrainer::restoreDone() {
  for (size_t k = 0; k < targets_.size(); ++k) writeBack(k);
}

nest::Tensor LoraTrainer::a(size_t k) const { return f32Tensor(a_.at(k), {lora_.rank, shapes_.at(k)[1]}); }
nest::Tensor LoraTrainer::b(size_t k) const { return f32Tensor(b_.at(k), {shapes_.at(k)[0], lora_.rank}); }

}  // namespace linnet::train
