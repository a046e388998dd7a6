#include "tools/finetune_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <malloc.h>
#include <sys/resource.h>

#include <climits>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include "nest/text.h"
#include "tools/arguments.h"
#include "tools/checkpoint_output.h"
#include "tools/finetune_state.h"
#include "tools/lora_output.h"
#include "train/data_order.h"
#include "train/examples.h"
#include "train/lora_trainer.h"
#include "train/trainer.h"

namespace linnet::tools {

namespace {

double peakMegabytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Every row of `examples`, in order, packed (a validation set's batches).
std::vector<train::PackedBatch> packedInOrder(const std::vector<train::Example>& examples, int64_t batchTokens) {
  std::vector<uint64_t> order(examples.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  return train::packExamples(examples, order, batchTokens);
}

// The training batches in the order the steps take them: epoch after epoch
// of the seed's order, as many as `steps`.
class Batches {
 public:
  Batches(const std::vector<train::Example>& examples, uint64_t seed, int64_t batchTokens)
      : examples_(examples), seed_(seed), batchTokens_(batchTokens) {}
  const train::PackedBatch& next() {
    if (at_ == current_.size()) {
      current_ = train::packExamples(examples_, train::epochOrder(examples_.size(), seed_, epoch_++), batchTokens_);
      at_ = 0;
    }
    return current_[at_++];
  }

 private:
  const std::vector<train::Example>& examples_;
  uint64_t seed_;
  int64_t batchTokens_;
  uint64_t epoch_ = 0;
  std::vector<train::PackedBatch> current_;
  size_t at_ = 0;
};

void validate(const FinetuneArgs& a) {
  if (a.full == a.lora) throw Usage("finetune: pass --full (every param) or --lora (adapters), one of them");
  if (a.data.empty()) throw Usage("finetune needs --data TRAIN.jsonl");
  if (a.lora) requireOutputFolderParent(a.output);
  else requireOutputFile(a.output);
  if (!a.state.empty()) requireOutputFile(a.state);
}

// What both kinds of run share: the model, the rows, the settings.
struct Setup {
  nest::Model model;
  std::vector<train::Example> rows;
  std::vector<train::PackedBatch> valid;
  train::TrainSettings settings;
};

Setup prepare(FinetuneArgs& a) {
  a.load.dequantize = true;  // the optimizer reads and writes plain elements
  nest::TextModel text = nest::loadText(tokenizerSource(a.tokenizer, a.load.weights));
  nest::useCardChatTemplate(text, a.package);
  Setup s{nest::load(a.package, a.load), {}, {}, {}};
  const auto& dims = s.model.dims();
  const int64_t context = std::min(a.batchTokens, dims.count("MaxSeq") ? dims.at("MaxSeq") : a.batchTokens);
  std::vector<std::string> notes;
  s.rows = train::readExamples(a.data, text, context, notes);
  if (!a.valid.empty()) s.valid = packedInOrder(train::readExamples(a.valid, text, context, notes), a.batchTokens);
  for (const std::string& n : notes) fmt::print(stderr, "linnet: {}\n", n);
  s.settings.lr = a.lr;
  s.settings.warmup = a.warmup;
  s.settings.maxGradNorm = a.maxGradNorm;
  s.settings.adamw.weightDecay = a.weightDecay;
  return s;
}

// Steps done+1 .. a.steps, a progress line every --report-every steps and
// at the last; `save` every --save-every steps and at the last.
template <typename Trainer>
void train(const FinetuneArgs& a, Setup& s, Trainer& trainer, Batches& batches, int64_t done,
           const std::function<void(int64_t)>& save) {
  double seconds = 0;  // in steps: tokens/s leaves out saving and validation
  int64_t tokens = 0;
  for (int64_t step = done + 1; step <= a.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    train::StepReport r = trainer.step(batches.next());
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    tokens += r.tokens;
    if ((a.saveEvery > 0 && step % a.saveEvery == 0) || step == a.steps) save(step);
    if (step % a.reportEvery != 0 && step != a.steps) continue;
    std::string line = fmt::format("step {}: train loss {:.6f}", step, r.loss);
    if (!s.valid.empty()) line += fmt::format(", valid loss {:.6f}", train::meanLoss(s.model, s.valid));
    line += fmt::format(", lr {:.3g}, grad norm {:.4g}, {:.1f} tokens/s, peak memory {:.0f} MB", r.lr, r.gradNorm,
                        static_cast<double>(tokens) / seconds, peakMegabytes());
    fmt::print("{}\n", line);
  }
}

// With --resume: the trainer restored and the order moved on to where the
// run stopped; the steps taken (0 without).
template <typename Trainer>
int64_t resume(const FinetuneArgs& a, Trainer& trainer, const RunKey& key, Batches& batches) {
  if (a.resume.empty()) return 0;
  const int64_t done = resumeRunState(a.resume, trainer, key);
  if (done >= a.steps)
    throw Usage(fmt::format("--resume {} has taken {} steps already: --steps counts from the start, so give more",
                            a.resume, done));
  for (int64_t k = 0; k < done; ++k) batches.next();
  return done;
}

int runFull(FinetuneArgs& a, Setup& s) {
  train::FullTrainer trainer(s.model, s.settings, checkpointNames(a.package));
  Batches batches(s.rows, static_cast<uint64_t>(a.seed), a.batchTokens);
  const RunKey key{static_cast<uint64_t>(a.seed), a.batchTokens, s.rows.size()};
  const int64_t done = resume(a, trainer, key, batches);
  fmt::print(stderr, "linnet: full fine-tuning of {} ({} tensors) on {} rows, {} steps of at most {} tokens\n",
             a.package, trainer.paths().size(), s.rows.size(), a.steps, a.batchTokens);
  auto name = checkpointNames(a.package);
  train(a, s, trainer, batches, done, [&](int64_t step) {
    std::map<std::string, nest::Tensor> tensors;
    for (size_t k = 0; k < trainer.paths().size(); ++k) tensors.emplace(name(trainer.paths()[k]), trainer.value(k));
    writeSafetensors(a.output, tensors, {{"format", "pt"}, {"step", std::to_string(step)}});
    if (!a.state.empty()) saveRunState(a.state, trainer, key);
    fmt::print(stderr, "linnet: wrote {}{} at step {}\n", a.output, a.state.empty() ? "" : " and " + a.state, step);
  });
  return 0;
}

int runLora(FinetuneArgs& a, Setup& s) {
  std::vector<std::string> modules = loraModules(a.loraTargets);
  std::vector<train::LoraTarget> targets = loraTargets(s.model, a.package, modules);
  train::LoraSettings lora{a.loraRank, a.loraAlpha, static_cast<uint64_t>(a.seed)};
  train::LoraTrainer trainer(s.model, targets, lora, s.settings);
  Batches batches(s.rows, static_cast<uint64_t>(a.seed), a.batchTokens);
  const RunKey key{static_cast<uint64_t>(a.seed), a.batchTokens, s.rows.size(),
                   fmt::format("lora r {} alpha {} {}", a.loraRank, a.loraAlpha, fmt::join(modules, ","))};
  const int64_t done = resume(a, trainer, key, batches);
  fmt::print(stderr, "linnet: LoRA fine-tuning of {} (r = {}, alpha = {}, {} weights) on {} rows, {} steps of at "
                     "most {} tokens\n",
             a.package, a.loraRank, a.loraAlpha, targets.size(), s.rows.size(), a.steps, a.batchTokens);
  train(a, s, trainer, batches, done, [&](int64_t step) {
    writeAdapter(a.output, trainer, modules, a.package);
    if (!a.state.empty()) saveRunState(a.state, trainer, key);
    fmt::print(stderr, "linnet: wrote {} (adapter_model.safetensors, adapter_config.json){} at step {}\n",
               a.output, a.state.empty() ? "" : " and " + a.state, step);
  });
  return 0;
}

// Every step allocates and frees the same gradients, copies and optimizer
// arrays, megabytes each. glibc would hand each freed block back to the
// kernel (a block of its own mapping, or the trimmed top of the heap) and
// get it back on the next step as fresh pages, zeroed one fault at a time
// (8% of a SmolLM2 step): keep blocks under 32 MiB in the heap, untrimmed.
void keepFreedMemory() {
#ifdef M_MMAP_THRESHOLD
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

}  // namespace

int runFinetune(FinetuneArgs& a) {
  validate(a);
  keepFreedMemory();
  Setup s = prepare(a);
  return a.lora ? runLora(a, s) : runFull(a, s);
}

}  // namespace linnet::tools
