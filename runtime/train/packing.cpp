#include "train/packing.h"

#include <fmt/format.h>

#include <algorithm>

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

void pad(PackedBatch& b, int64_t batchTokens) {
  const int64_t n = static_cast<int64_t>(b.tokens.size());
  const int64_t to = std::min(batchTokens, (n + kPadMultiple - 1) / kPadMultiple * kPadMultiple);
  const int32_t segment = static_cast<int32_t>(b.examples.size());
  for (b.padding = 0; n + b.padding < to; ++b.padding) {
    b.tokens.push_back(0);
    b.positions.push_back(0);
    b.segments.push_back(segment);
    b.targets.push_back(0);
    b.weights.push_back(0.0f);
  }
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
  for (PackedBatch& b : out) pad(b, batchTokens);
  return out;
}

}  // namespace linnet::train
