#include "train/packing.h"

#include <fmt/format.h>

namespace linnet::train {

namespace {

void append(PackedBatch& b, const Example& e, size_t index) {
  const int32_t segment = static_cast<int32_t>(b.examples.size());
  for (size_t i = 0; i < e.ids.size(); ++i) {
    bool next = i + 1 < e.ids.size();
    b.tokens.push_back(e.ids[i]);
    b.positions.push_back(static_cast<int32_t>(i));
    b.segments.push_back(segment);
    b.targets.push_back(next ? e.ids[i + 1] : 0);
    float w = next && e.learned[i + 1] ? 1.0f : 0.0f;
    b.weights.push_back(w);
    b.learnedTokens += w != 0;
  }
  b.examples.push_back(index);
}

}  // namespace

std::vector<PackedBatch> packExamples(const std::vector<Example>& examples, const std::vector<uint64_t>& order,
                                      int64_t batchTokens) {
  std::vector<PackedBatch> out;
  for (uint64_t k : order) {
    const Example& e = examples.at(k);
    int64_t n = static_cast<int64_t>(e.ids.size());
    if (n > batchTokens)
      throw nest::Error(fmt::format("line {}: {} tokens do not fit in a batch of {}", e.line, n, batchTokens));
    if (out.empty() || static_cast<int64_t>(out.back().tokens.size()) + n > batchTokens) out.emplace_back();
    append(out.back(), e, k);
  }
  return out;
}

}  // namespace linnet::train
