// `linnet finetune PACKAGE (--weights W | --random-weights) [--set K=V]...
// --data TRAIN.jsonl [--valid VALID.jsonl] (--full | --lora [--lora-rank R]
// [--lora-alpha A] [--lora-targets q,k,v,o,gate,up,down]) [--steps N]
// [--batch-tokens N] [--lr X] [--warmup N] [--weight-decay X]
// [--max-grad-norm X] [--seed S] [--report-every N] [--tokenizer PATH]
// [--save-every N] [--state STATE.safetensors] [--resume STATE.safetensors]
// -o OUT`: fine-tuning on the reference backend; --full writes the params
// (OUT.safetensors), --lora a peft adapter folder (OUT/) (docs/train.md,
// "linnet finetune"). linnet.cpp declares the flags; this file runs the
// loop and writes what it trained.
#pragma once

#include <cstdint>
#include <string>

#include "nest/nest.h"

namespace linnet::tools {

struct FinetuneArgs {
  std::string package, data, valid, output, tokenizer;
  std::string state, resume;  // --state: where the run's state goes; --resume: one to take up
  nest::LoadOptions load;
  bool full = false, lora = false;
  int64_t loraRank = 8;
  double loraAlpha = 16;
  std::string loraTargets = "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj";
  int64_t steps = 100, batchTokens = 512, warmup = 0, reportEvery = 10, seed = 0, saveEvery = 0;
  double lr = 1e-5, weightDecay = 0.01, maxGradNorm = 1.0;
};

int runFinetune(FinetuneArgs& args);

}  // namespace linnet::tools
