// The optimizer of `linnet finetune`: AdamW with decoupled weight decay and
// bias correction, and gradient-norm clipping, computed as torch computes
// them (torch.optim.AdamW's single-tensor path, clip_grad_norm_): the same
// operations in the same order, in f32, so a run can be compared with
// torch's step by step (tests/runtime/train_adamw.cpp against
// tests/data/train/adamw.json, written by tests/train/make_adamw_fixture.py).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace linnet::train {

struct AdamWSettings {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.01;
};

// One trained tensor as the optimizer sees it: its values (updated in
// place) and its gradient, of the same length, each element multiplied by
// gradScale first (clipping's factor, applied as torch's grad.mul_ is).
struct ParamGrad {
  std::span<float> value;
  std::span<const float> grad;
  float gradScale = 1.0f;
};

class AdamW {
 public:
  // `sizes`: the element count of each param, in the order step() takes them;
  // steps run on `threads` threads (0: every core), each element updated
  // alike on any number.
  AdamW(AdamWSettings settings, std::vector<size_t> sizes, int threads = 1);
  // One step at learning rate `lr` over every param (the sizes given at
  // construction, in that order; Error otherwise).
  void step(double lr, std::span<const ParamGrad> params);
  int64_t steps() const { return steps_; }
  const AdamWSettings& settings() const { return settings_; }
  // The moments of param `i` (exp_avg, exp_avg_sq), for saving and resuming.
  std::vector<float>& firstMoment(size_t i) { return m_.at(i); }
  std::vector<float>& secondMoment(size_t i) { return v_.at(i); }
  // Resumes at `steps` taken (the moments set through the accessors above).
  void setSteps(int64_t steps) { steps_ = steps; }

 private:
  AdamWSettings settings_;
  int threads_;
  std::vector<std::vector<float>> m_, v_;
  int64_t steps_ = 0;
};

// The gradients' joint L2 norm as clip_grad_norm_ takes it (each one's
// norm, then the norm of those), summed in double in fixed pieces (the same
// bits on any number of `threads`); a non-finite norm is an Error naming
// it (a step would fill the params with NaN, as torch's does).
float gradNorm(std::span<const std::span<const float>> grads, int threads = 1);

// What clipping multiplies every gradient by for a joint norm `norm`:
// maxNorm / (norm + 1e-6), capped at 1 (torch.nn.utils.clip_grad_norm_).
float clipFactor(float norm, double maxNorm);

// Scales the gradients in place so that their joint L2 norm is at most
// `maxNorm` (gradNorm, then clipFactor applied to every gradient). Returns
// the norm before clipping.
float clipGradNorm(std::span<const std::span<float>> grads, double maxNorm, int threads = 1);

}  // namespace linnet::train
