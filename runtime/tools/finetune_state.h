// A fine-tuning run's state, saved so that it can be taken up again
// (`linnet finetune --state FILE` then `--resume FILE`): every trained
// param, AdamW's two moments for each (f32, `param.PATH`, `m.PATH`,
// `v.PATH`) and, in the file's metadata, the steps taken and what the rows'
// order depends on (seed, batch tokens, row count), one safetensors file.
// A resumed run replays the order to the step it stopped at, so 10 steps,
// a resume and 10 more are the 20 steps of one run.
#pragma once

#include <cstdint>
#include <string>

#include "train/trainer.h"

namespace linnet::tools {

struct RunKey {
  uint64_t seed = 0;
  int64_t batchTokens = 0;
  uint64_t rows = 0;
};

// Writes the state (beside `path`, renamed into place).
void saveRunState(const std::string& path, train::FullTrainer& trainer, const RunKey& key);

// Restores `trainer` from `path`; returns the steps taken. Error naming the
// file: not a state file, a param missing or misshapen, or a key that
// differs from `key` (another seed, batch size or data set).
int64_t resumeRunState(const std::string& path, train::FullTrainer& trainer, const RunKey& key);

}  // namespace linnet::tools
