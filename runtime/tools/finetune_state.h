// A fine-tuning run's state, saved so that it can be taken up again
// (`linnet finetune --state FILE` then `--resume FILE`): every trained
// tensor (a param of --full, a LoRA factor `PATH.lora_A` of --lora),
// AdamW's two moments for each (f32, `param.NAME`, `m.NAME`, `v.NAME`)
// and, in the file's metadata, the steps taken, the kind of run and what
// the rows' order depends on (seed, batch tokens, row count), one
// safetensors file.
// A resumed run replays the order to the step it stopped at, so 10 steps,
// a resume and 10 more are the 20 steps of one run.
#pragma once

#include <cstdint>
#include <string>

#include "train/lora_trainer.h"
#include "train/trainer.h"

namespace linnet::tools {

struct RunKey {
  uint64_t seed = 0;
  int64_t batchTokens = 0;
  uint64_t rows = 0;
  std::string kind = "full";  // or `lora r 8 alpha 16 q_proj,v_proj`
};

// Writes the state (beside `path`, renamed into place). `Trainer` is
// train::FullTrainer or train::LoraTrainer.
template <typename Trainer>
void saveRunState(const std::string& path, Trainer& trainer, const RunKey& key);

// Restores `trainer` from `path`; returns the steps taken. Error naming the
// file: not a state file, a tensor missing or misshapen, or a key that
// differs from `key` (another kind of run, seed, batch size or data set).
template <typename Trainer>
int64_t resumeRunState(const std::string& path, Trainer& trainer, const RunKey& key);

}  // namespace linnet::tools
