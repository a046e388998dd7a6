#include "train/adamw.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "train/parallel.h"

namespace linnet::train {

AdamW::AdamW(AdamWSettings settings, std::vector<size_t> sizes, int threads) : settings_(settings), threads_(threads) {
  for (size_t n : sizes) {
    m_.emplace_back(n, 0.0f);
    v_.emplace_back(n, 0.0f);
  }
}

namespace {

// torch.optim.adamw._single_tensor_adamw for elements [begin, end) of one
// param, f32 throughout; the Python scalars are doubles rounded to f32
// where they meet a tensor.
struct AdamWScalars {
  float decay, lerpWeight, beta2, oneMinusBeta2, stepSize, correction2Sqrt, eps;
};

AdamWScalars scalarsOf(const AdamWSettings& s, double lr, int64_t step) {
  const double biasCorrection1 = 1.0 - std::pow(s.beta1, static_cast<double>(step));
  const double biasCorrection2 = 1.0 - std::pow(s.beta2, static_cast<double>(step));
  return {static_cast<float>(1.0 - lr * s.weightDecay), static_cast<float>(1.0 - s.beta1),
          static_cast<float>(s.beta2),                  static_cast<float>(1.0 - s.beta2),
          static_cast<float>(-(lr / biasCorrection1)),  static_cast<float>(std::sqrt(biasCorrection2)),
          static_cast<float>(s.eps)};
}

void adamwUpdate(const ParamGrad& pg, float* m, float* v, const AdamWScalars& c, size_t begin, size_t end) {
  float* p = pg.value.data();
  const float* g = pg.grad.data();
  const float scale = pg.gradScale;
  for (size_t k = begin; k < end; ++k) {
    const float grad = g[k] * scale;                                // clip_grad_norm_'s grad.mul_
    p[k] = p[k] * c.decay;                                          // param.mul_(1 - lr * weight_decay)
    m[k] = m[k] + c.lerpWeight * (grad - m[k]);                     // exp_avg.lerp_(grad, 1 - beta1)
    v[k] = v[k] * c.beta2;                                          // exp_avg_sq.mul_(beta2)
    v[k] = v[k] + c.oneMinusBeta2 * grad * grad;                    //   .addcmul_(grad, grad, 1 - beta2)
    const float denom = std::sqrt(v[k]) / c.correction2Sqrt + c.eps;  // (exp_avg_sq.sqrt() / bc2_sqrt).add_(eps)
    p[k] = p[k] + c.stepSize * m[k] / denom;                        // param.addcdiv_(exp_avg, denom, -step_size)
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
  const AdamWScalars c = scalarsOf(settings_, lr, steps_);
  std::vector<size_t> sizes;
  for (const auto& m : m_) sizes.push_back(m.size());
  const std::vector<Piece> pieces = piecesOf(sizes);
  parallelFor(pieces.size(), threads_, [&](size_t k) {
    const Piece& at = pieces[k];
    adamwUpdate(params[at.array], m_[at.array].data(), v_[at.array].data(), c, at.begin, at.end);
  });
}

float gradNorm(std::span<const std::span<const float>> grads, int threads) {
  std::vector<size_t> sizes;
  for (std::span<const float> g : grads) sizes.push_back(g.size());
  const std::vector<Piece> pieces = piecesOf(sizes);
  std::vector<double> sums(pieces.size());
  parallelFor(pieces.size(), threads, [&](size_t k) {
    double sum = 0;
    for (size_t i = pieces[k].begin; i < pieces[k].end; ++i) {
      const double x = grads[pieces[k].array][i];
      sum += x * x;
    }
    sums[k] = sum;
  });
  // Each gradient's norm, then the norm of those (as torch stacks them).
  std::vector<double> perGrad(grads.size());
  for (size_t k = 0; k < pieces.size(); ++k) perGrad[pieces[k].array] += sums[k];
  double total = 0;
  for (double sum : perGrad) {
    const float norm = static_cast<float>(std::sqrt(sum));
    total += static_cast<double>(norm) * norm;
  }
  const float norm = static_cast<float>(std::sqrt(total));
  if (!std::isfinite(norm))
    throw std::runtime_error(fmt::format("the gradients' norm is {}: a step would make every param NaN; lower the "
                                         "learning rate, or look for an input that overflows",
                                         norm));
  return norm;
}

float clipFactor(float norm, double maxNorm) { return std::min(static_cast<float>(maxNorm) / (norm + 1e-6f), 1.0f); }

float clipGradNorm(std::span<const std::span<float>> grads, double maxNorm, int threads) {
  std::vector<std::span<const float>> read(grads.begin(), grads.end());
  const float norm = gradNorm(read, threads);
  const float factor = clipFactor(norm, maxNorm);
  for (std::span<float> g : grads)
    for (float& x : g) x *= factor;
  return norm;
}

}  // namespace linnet::train
