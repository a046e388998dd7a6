#include "export/param_values.h"

#include <fmt/format.h>

#include <stdexcept>

namespace linnet::exporter {

ParamValues::ParamValues(const ModelFacts& facts, const nest::LoadOptions& load)
    : facts_(facts), random_(load.randomWeights), rng_(load.seed) {
  if (!random_) bound_ = nest::bindParams(facts.package, facts.params, facts.dims, load);
}

std::span<const std::byte> ParamValues::elements(std::size_t k) {
  if (!random_) return bound_.at(k).bytes;
  if (k + 1 < next_ || (k + 1 == next_ && !current_))
    throw std::logic_error(fmt::format("ParamValues: random parameter {} asked for after {}", k, next_ - 1));
  if (k + 1 == next_) return current_->bytes();
  // As nest's randomParams: std 0.02, norm scales (1-D) near 1, integers zero.
  while (next_ <= k) {
    const nest::ParamInfo& p = facts_.params.at(next_++);
    current_ = nest::Tensor::zeros(p.dtype, p.shape);
    const bool norm = p.shape.size() == 1;
    if (current_->isFloat())
      for (std::int64_t e = 0; e < current_->size(); ++e) current_->set(e, norm ? 1.0 + normal_(rng_) : normal_(rng_));
  }
  return current_->bytes();
}

}  // namespace linnet::exporter
