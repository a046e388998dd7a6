// Examples packed end to end into the inputs of a card's `loss_packed` and
// `log_probs_packed` entries: no padding, each example a segment whose
// positions start at 0.
#pragma once

#include <cstdint>
#include <vector>

#include "train/examples.h"

namespace linnet::train {

struct PackedBatch {
  std::vector<int32_t> tokens, positions, segments;
  std::vector<int64_t> targets;  // position p's next token in its segment (0 at a segment's end)
  std::vector<float> weights;    // 1 where that next token is learned, else 0
  int64_t learnedTokens = 0;     // the weights' sum
  std::vector<size_t> examples;  // which examples, in order
};

// The examples in `order`, packed greedily: a batch takes examples while
// they fit in `batchTokens` positions. An example longer than batchTokens
// is an Error (readExamples' maxTokens cuts them first).
std::vector<PackedBatch> packExamples(const std::vector<Example>& examples, const std::vector<uint64_t>& order,
                                      int64_t batchTokens);

}  // namespace linnet::train
