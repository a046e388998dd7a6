#include "train/adamw.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace linnet::train {

AdamW::AdamW(AdamWSettings settings, std::vector<size_t> sizes) : settings_(settings) {
  for (size_t n : sizes) {
    m_.emplace_back(n, 0.0f);
    v_.emplace_back(n, 0.0f);
  }
}

namespace {

// torch.optim.adamw._single_tensor_adamw for one param, f32 throughout; the
// Python scalars are doubles rounded to f32 where they meet a tensor.
void adamwUpdate(std::span<float> p, std::span<const float> g, std::vector<float>& m, std::vector<float>& v,
                 const AdamWSettings& s, double lr, int64_t step) {
  const float decay = static_cast<float>(1.0 - lr * s.weightDecay);
  const float lerpWeight = static_cast<float>(1.0 - s.beta1);
  const float beta2 = static_cast<float>(s.beta2);
  const float oneMinusBeta2 = static_cast<float>(1.0 - s.beta2);
  const double biasCorrection1 = 1.0 - std::pow(s.beta1, static_cast<double>(step));
  const double biasCorrection2 = 1.0 - std::pow(s.beta2, static_cast<double>(step));
  const float stepSize = static_cast<float>(-(lr / biasCorrection1));
  const float correction2Sqrt = static_cast<float>(std::sqrt(biasCorrection2));
  const float eps = static_cast<float>(s.eps);
  for (size_t k = 0; k < p.size(); ++k) {
    p[k] = p[k] * decay;                                   // param.mul_(1 - lr * weight_decay)
    m[k] = m[k] + lerpWeight * (g[k] - m[k]);              // exp_avg.lerp_(grad, 1 - beta1)
    v[k] = v[k] * beta2;                                   // exp_avg_sq.mul_(beta2)
    v[k] = v[k] + oneMinusBeta2 * g[k] * g[k];             //   .addcmul_(grad, grad, 1 - beta2)
    float denom = std::sqrt(v[k]) / correction2Sqrt + eps;  // (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)
    p[k] = p[k] + stepSize * m[k] / denom;                 // param.addcdiv_(exp_avg, denom, -step_size)
  }
}

}  // namespace

void AdamW::step(double lr, std::span<const ParamGrad> params) {
  if (params.size() != m_.size())
    throw std::invalid_argument(fmt::format("AdamW::step: {} params, but the optimizer was made for {}",
                                            params.size(), m_.size()));
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].value.size() != m_[i].size() || params[i].grad.size() != m_[i].size())
      throw std::invalid_argument(fmt::format("AdamW::step: param {} has {} values and {} gradients, but {} moments",
                                              i, params[i].value.size(), params[i].grad.size(), m_[i].size()));
  ++steps_;
  for (size_t i = 0; i < params.size(); ++i)
    adamwUpdate(params[i].value, params[i].grad, m_[i], v_[i], settings_, lr, steps_);
}

float clipGradNorm(std::span<const std::span<float>> grads, double maxNorm) {
  // Each gradient's norm, then the norm of those (as torch stacks them).
  double total = 0;
  for (std::span<float> g : grads) {
    double sum = 0;
    for (float x : g) sum += static_cast<double>(x) * x;
    float norm = static_cast<float>(std::sqrt(sum));
    total += static_cast<double>(norm) * norm;
  }
  const float norm = static_cast<float>(std::sqrt(total));
  if (!std::isfinite(norm))
    throw std::runtime_error(fmt::format("the gradients' norm is {}: a step would make every param NaN; lower the "
                                         "learning rate, or look for an input that overflows",
                                         norm));
  const float factor = std::min(static_cast<float>(maxNorm) / (norm + 1e-6f), 1.0f);
  for (std::span<float> g : grads)
    for (float& x : g) x *= factor;
  return norm;
}

}  // namespace linnet::train
