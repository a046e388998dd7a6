#include "tools/finetune_command.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "nest/text.h"
#include "tools/arguments.h"
#include "tools/checkpoint_output.h"
#include "tools/finetune_state.h"
#include "train/data_order.h"
#include "train/examples.h"
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
  if (a.lora) throw Usage("finetune: LoRA is not built yet; pass --full to train every param");
  if (!a.full) throw Usage("finetune: pass --full (every param is trained; LoRA is not built yet)");
  if (a.data.empty()) throw Usage("finetune needs --data TRAIN.jsonl");
  requireOutputFile(a.output);
  if (!a.state.empty()) requireOutputFile(a.state);
}

}  // namespace

int runFinetune(FinetuneArgs& a) {
  validate(a);
  if (a.load.backend.empty()) a.load.backend = "reference";
  nest::TextModel text = nest::loadText(tokenizerSource(a.tokenizer, a.load.weights));
  nest::useCardChatTemplate(text, a.package);
  nest::Model model = nest::load(a.package, a.load);
  const int64_t context = std::min(a.batchTokens, model.dims().count("MaxSeq") ? model.dims().at("MaxSeq") : a.batchTokens);
  std::vector<std::string> notes;
  std::vector<train::Example> rows = train::readExamples(a.data, text, context, notes);
  std::vector<train::PackedBatch> valid;
  if (!a.valid.empty()) valid = packedInOrder(train::readExamples(a.valid, text, context, notes), a.batchTokens);
  for (const std::string& n : notes) fmt::print(stderr, "linnet: {}\n", n);

  train::TrainSettings settings;
  settings.lr = a.lr;
  settings.warmup = a.warmup;
  settings.maxGradNorm = a.maxGradNorm;
  settings.adamw.weightDecay = a.weightDecay;
  train::FullTrainer trainer(model, settings);
  Batches batches(rows, static_cast<uint64_t>(a.seed), a.batchTokens);
  const RunKey key{static_cast<uint64_t>(a.seed), a.batchTokens, rows.size()};
  int64_t done = 0;
  if (!a.resume.empty()) {
    done = resumeRunState(a.resume, trainer, key);
    if (done >= a.steps)
      throw Usage(fmt::format("--resume {} has taken {} steps already: --steps counts from the start, so give more",
                              a.resume, done));
    for (int64_t k = 0; k < done; ++k) batches.next();  // the order goes on where it stopped
  }
  fmt::print(stderr, "linnet: full fine-tuning of {} params ({} tensors) on {} rows, {} steps of at most {} tokens\n",
             a.package, trainer.paths().size(), rows.size(), a.steps, a.batchTokens);
  auto start = std::chrono::steady_clock::now();
  int64_t tokens = 0;
  for (int64_t step = done + 1; step <= a.steps; ++step) {
    train::StepReport r = trainer.step(batches.next());
    tokens += r.tokens;
    if (step % a.reportEvery != 0 && step != a.steps) continue;
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string line = fmt::format("step {}: train loss {:.6f}", step, r.loss);
    if (!valid.empty()) line += fmt::format(", valid loss {:.6f}", trainer.evaluate(valid));
    line += fmt::format(", lr {:.3g}, grad norm {:.4g}, {:.1f} tokens/s, peak memory {:.0f} MB", r.lr, r.gradNorm,
                        static_cast<double>(tokens) / seconds, peakMegabytes());
    fmt::print("{}\n", line);
  }
  auto name = checkpointNames(a.package);
  std::map<std::string, nest::Tensor> tensors;
  for (size_t k = 0; k < trainer.paths().size(); ++k) tensors.emplace(name(trainer.paths()[k]), trainer.value(k));
  writeSafetensors(a.output, tensors, {{"format", "pt"}});
  fmt::print(stderr, "linnet: wrote {} ({} tensors)\n", a.output, tensors.size());
  if (!a.state.empty()) {
    saveRunState(a.state, trainer, key);
    fmt::print(stderr, "linnet: wrote {} (the run's state at step {}: --resume takes it)\n", a.state, a.steps);
  }
  return 0;
}

}  // namespace linnet::tools
