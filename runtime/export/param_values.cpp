#include "export/param_values.h"

namespace linnet::exporter {

ParamValues::ParamValues(const ModelFacts& facts, const nest::LoadOptions& load)
    : facts_(facts), random_(nest::drawsRandomApart(load)), seed_(load.seed) {
  if (!random_) bound_ = nest::bindParams(facts.package, facts.params, facts.dims, load);
}

std::span<const std::byte> ParamValues::elements(std::size_t k) {
  if (!random_) return bound_.at(k).bytes;
  current_ = nest::randomParam(facts_.params.at(k), seed_);
  return current_->bytes();
}

}  // namespace linnet::exporter
