// Examples packed end to end into the inputs of a card's `loss_packed` and
// `log_probs_packed` entries, each example a segment whose positions start
// at 0, and the batch padded to a multiple of kPadMultiple positions (at
// most the batch size): a compiled entry is built once per shape, so
// batches of every length would each build one (a SmolLM2 LoRA run spent
// most of its time so). Padding is token 0 at position 0 with weight 0, in
// a segment of its own: no real token attends to it and it adds nothing to
// the loss or the gradient.
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
  int64_t padding = 0;           // positions at the end that are padding
};

constexpr int64_t kPadMultiple = 64;

// The examples in `order`, packed greedily: a batch takes examples while
// they fit in `batchTokens` positions, then is padded. An example longer than batchTokens
// is an Error (readExamples' maxTokens cuts them first).
std::vector<PackedBatch> packExamples(const std::vector<Example>& examples, const std::vector<uint64_t>& order,
                                      int64_t batchTokens);

}  // namespace linnet::train
