// linnet: the runtime's command line.
//   linnet call PACKAGE (--weights PATH | --random-weights) [--set K=V]... [--convert]
//          (--entry NAME [--generic K=V]... [--input NAME=@file.npy | NAME=VALUE]... [--output @file.npy]...)...
//   linnet generate PACKAGE (--weights PATH | --random-weights) [--set K=V]... --prompt-ids 1,2,3 --max-new N
//   linnet chat PACKAGE --weights PATH [--prompt TEXT] [sampling] [--verbose]
//   linnet bench decode|prefill PACKAGE (--weights PATH | --random-weights) [--set K=V]... [--steps N] ...
// Several --entry groups run in one process, in order, so state (KV caches)
// carries from one to the next, as IREE's iree-run-module does with .npy files.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "base/utf8.h"
#include "nest/conventions.h"
#include "nest/nest.h"
#include "tools/arguments.h"
#include "tools/bench.h"
#include "tools/checkpoint_output.h"
#include "tools/grad_command.h"
#include "weights/npy.h"
#ifdef LINNET_HAVE_TEXT
#include <iostream>
#include <random>

#include "tools/finetune_command.h"

#include "nest/text.h"
#include "nest/text_stream.h"
#endif
#ifdef LINNET_HAVE_SERVE
#include "tools/serve_command.h"
#endif
#ifdef LINNET_HAVE_EXPORT
#include "tools/export_command.h"
#endif

namespace {

using Scalar = linnet::DType;
using linnet::nest::Tensor;

using linnet::tools::parseInt;
using linnet::tools::splitAssignment;
using linnet::tools::Usage;

struct Group {
  std::string entry;
  std::map<std::string, int64_t> generics;
  std::vector<std::pair<std::string, std::string>> inputs;  // name -> "@file" or value
  std::vector<std::string> outputs;
};

struct Args {
  std::string command, package;  // command: the subcommand given
  linnet::nest::LoadOptions load;
  std::vector<Group> groups;
  std::vector<int64_t> promptIds;
  int64_t maxNew = 16;  // generate's default; chat's is kChatMaxNew, within the context
  bool maxNewGiven = false;
  std::string prompt, system, tokenizer;
  std::vector<std::string> words;  // tokenize / detokenize operands
  bool jsonLines = false;          // tokenize: texts from stdin, one JSON string a line
  double temperature = 0, topP = 1, minP = 0, repetitionPenalty = 1;
  int64_t topK = 0, seed = 0;
  std::vector<std::string> stops;  // stop strings
  bool hasPrompt = false;
  bool verbose = false;  // chat: say what runs and how it samples
  std::vector<std::string> wrt;        // grad: --wrt patterns
  std::string cotangent, gradOutput;   // grad: --cotangent @FILE.npy, -o FILE
  // Whether a flag was given (chat: the recommended sampling fills the rest).
  std::function<bool(const char*)> given = [](const char*) { return false; };
};

// chat's cap on a reply's tokens without --max-new: a real answer's length;
// less when the context has less room.
constexpr int64_t kChatMaxNew = 512;

// ---------------------------------------------------------------------------
// The command line, parsed with CLI11 as linnetc's is. A flag given twice
// keeps its last value; numbers are read in base 10 here (CLI11's own
// conversion would take 010 for octal), with errors that name the flag.

const char* kSynopsis = R"(
  linnet call PACKAGE (--weights PATH | --random-weights | --compile-only) [--generics-from-config] [--set K=V]...
      [--convert] (--entry NAME [--generic K=V]... [--input NAME=@file.npy | NAME=VALUE]... [--output @file.npy]...)...
  linnet grad PACKAGE (--weights PATH | --random-weights) [--set K=V]... --entry NAME [--generic K=V]...
      [--input NAME=@file.npy | NAME=VALUE]... [--cotangent @file.npy] [--wrt PATTERN]... -o FILE.safetensors
  linnet finetune PACKAGE (--weights PATH | --random-weights) [--set K=V]... --data TRAIN.jsonl [--valid FILE]
      (--full | --lora [--lora-rank R] [--lora-alpha A] [--lora-targets q,k,v,o,gate,up,down]) [--steps N]
      [--batch-tokens N] [--lr X] [--warmup N] [--seed S] [--tokenizer PATH] [--save-every N] [--state FILE]
      [--resume FILE] -o OUT
  linnet generate PACKAGE (--weights PATH | --random-weights) [--generics-from-config] [--set K=V]...
      (--prompt-ids 1,2,3 | --prompt TEXT [--tokenizer PATH]) [--max-new N] [sampling]
  linnet chat PACKAGE --weights PATH [--tokenizer PATH] [--generics-from-config] [--set K=V]...
      [--system TEXT] [--prompt TEXT] [--max-new N] [sampling] [--verbose]
  linnet tokenize --tokenizer PATH (TEXT | --jsonl)  (ids as a JSON array; --jsonl: a JSON string a line on stdin)
  linnet detokenize --tokenizer PATH 1,2,3
  linnet export gguf PACKAGE (--weights PATH | --random-weights) [--set K=V]... [--type TYPE] -o FILE.gguf
  linnet export hf PACKAGE (--weights PATH | --random-weights) [--set K=V]... [--dtype bf16|f16|f32]
      [--shard-size 5GB] [--tokenizer PATH] [--force] -o DIR
  linnet bench decode|prefill PACKAGE (--weights PATH | --random-weights) [--set K=V]...
      [--backend NAME] [--steps N] [--prompt-len S] [--warmup N] [--json] [--compile-only]
  linnet --version | --help
)";

const char* kTextNotes = R"(
sampling: --temperature T (0: greedy) --top-k K --top-p P --min-p P
  --repetition-penalty R --seed S. generate is greedy unless told; chat
  samples as the model recommends: generation_config.json in a --weights
  folder, else the card's nest.toml [sampling] (SmolLM2: temperature 0.2,
  top-p 0.9), else greedy, each flag given replacing its setting; chat
  --verbose prints the sampling in use. A reply ends at the end-of-turn
  token, at --max-new tokens (chat: 512 by default, fewer when the context
  MaxSeq has less room), or at --stop TEXT (repeatable).
--tokenizer takes a tokenizer.json (tokenizer_config.json beside it supplies
the chat template) or a .gguf file; by default the --weights file when it is
GGUF, or the tokenizer.json of a --weights folder. `chat` without --prompt is
interactive: /reset starts over, /quit ends.
)";

const char* kPackageNotes = R"(
PACKAGE is a nest package (nest.toml, linnet.toml, bindings.json, src/).
--weights takes a .safetensors file, a *.safetensors.index.json, a .gguf
file, or a Hugging Face model folder (model.safetensors or its index, with
config.json, tokenizer.json, tokenizer_config.json, generation_config.json
beside it as they come): the folder's config.json (a .gguf's metadata) is
checked against the card's generics and constants through nest.toml's
[config] ([gguf]) table, and --generics-from-config takes the generics from
it instead of nest.toml (docs/nest.md). --convert converts checkpoint floats
to the model's dtype. --backend chooses where entries run: compiled code
(cpu, the default where the build has it; each entry shape is compiled on
first use, then cached in ~/.cache/linnet) or reference (exact, slow).
)";

const char* kBenchNotes = R"(
bench decode: a prompt of --prompt-len tokens (default 8) through `prefill`
(or `decode` token by token), --warmup untimed steps (default 1), then
--steps timed `decode` calls (default 32; fewer if MaxSeq is reached).
Reports tokens/s, the bytes one step reads (every parameter once as held,
and the keys and values up to the position in the llama cards' caches),
this machine's memory read bandwidth measured in the same run (a sum over
a 1 GiB buffer, on the backend's threads and on all cores), and the
fraction of that bandwidth bound reached.
bench prefill: --steps calls (default 3) of `prefill` on --prompt-len
tokens (default 64, at most MaxSeq); reports tokens/s and the FLOP/s
they imply (2 x 2-D weight values x tokens) against our own cache-blocked
512x512x512 f32 GEMM on one thread (our kernel's rate, not a vendor peak).
bench rows | paged: --steps timed `decode_rows` calls (Batch rows) or
`decode_paged` calls (--rows requests, each its share of a pool loaded with
Batch = 1 and MaxSeq positions, in pages of PageSize: pass --set PageSize),
all rows at positions --prompt-len (default 128) and on; bench/decode/paged.sh
runs both.
bench's --seed seeds --random-weights; --json prints one JSON object instead
of the table. See bench/decode/README.md.
)";

// A flag of one value: given twice, the last wins.
CLI::Option* once(CLI::Option* o) { return o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast); }

// A repeatable flag: one value each time, all kept in order.
CLI::Option* repeatable(CLI::Option* o) { return o->allow_extra_args(false); }

// A value that must be one of `choices`: "`gpu`: expected reference or cpu".
CLI::Validator oneOf(std::vector<std::string> choices) {
  std::string expected = choices.size() == 2 ? fmt::format("{} or {}", choices[0], choices[1])
                                             : fmt::format("one of {}", fmt::join(choices, ", "));
  return CLI::Validator(
      [choices, expected](std::string& v) -> std::string {
        if (std::find(choices.begin(), choices.end(), v) != choices.end()) return {};
        return fmt::format("`{}`: expected {}", v, expected);
      },
      fmt::format("{{{}}}", fmt::join(choices, "|")));
}

// An integer flag, at least `least` when given.
CLI::Option* addInt(CLI::App* cmd, const std::string& name, std::function<void(int64_t)> set, const std::string& help,
                    std::optional<int64_t> least = std::nullopt) {
  return once(cmd->add_option_function<std::string>(
                     name,
                     [name, set, least](const std::string& v) {
                       int64_t n = parseInt(v, name);
                       if (least && n < *least) throw Usage(fmt::format("{} `{}`: must be at least {}", name, v, *least));
                       set(n);
                     },
                     help))
      ->type_name("INT");
}

CLI::Option* addInt(CLI::App* cmd, const std::string& name, int64_t& into, const std::string& help,
                    std::optional<int64_t> least = std::nullopt) {
  return addInt(cmd, name, [&into](int64_t n) { into = n; }, help, least);
}

// A finite number flag in [least, most] (nan, inf and junk refused); with
// `aboveLeast`, strictly above `least`.
CLI::Option* addNumber(CLI::App* cmd, const std::string& name, double& into, const std::string& help,
                       double least, std::optional<double> most = std::nullopt, bool aboveLeast = false) {
  double upTo = most ? *most : std::numeric_limits<double>::infinity();
  return once(cmd->add_option_function<std::string>(
                     name,
                     [name, &into, least, upTo, aboveLeast](const std::string& v) {
                       into = linnet::tools::parseNumber(v, name, least, upTo, aboveLeast);
                     },
                     help))
      ->type_name("NUMBER");
}

CLI::Option* addNonNegative(CLI::App* cmd, const std::string& name, double& into, const std::string& help) {
  return addNumber(cmd, name, into, help, 0);
}

// --backend: where entries run. Kept on its own: how a backend is chosen
// changes here alone.
void addBackendOption(CLI::App* cmd, linnet::nest::LoadOptions& load) {
  // nest::load checks the name against its registry of backends.
  once(cmd->add_option("--backend", load.backend,
                       fmt::format("Where entries run: cpu (compiled code) or reference (exact, slow); this build "
                                   "has {}; default: {}",
                                   linnet::nest::backendNames(), linnet::nest::defaultBackend())))
      ->type_name("NAME");
  addInt(cmd, "--threads",
         [&load](int64_t n) {
           if (n > 1024) throw Usage(fmt::format("--threads `{}`: at most 1024", n));
           load.threads = static_cast<int>(n);
         },
         "Threads compiled code runs on (default: all cores; the reference backend uses one)", 1);
}

// --random-weights with --weights runs random parameters and takes only the
// tokenizer, config and sampling from the weights: said on stderr, since the
// checkpoint's own tensors are not what runs.
// The model: its package's checkpoint, generics and backend.
void addLoadOptions(CLI::App* cmd, linnet::nest::LoadOptions& load) {
  once(cmd->add_option("--weights", load.weights,
                       "A .safetensors file, a *.safetensors.index.json, a .gguf file, or a Hugging Face model folder"))
      ->type_name("PATH");
  cmd->add_flag("--generics-from-config", load.genericsFromConfig,
                "Take the generics nest.toml's [config] maps from the folder's config.json (or [gguf]'s from the "
                ".gguf) instead of nest.toml; a --set that disagrees is an error");
  cmd->add_flag("--random-weights", load.randomWeights,
                "Seeded random parameters instead of a checkpoint (with --weights, that folder or file gives only "
                "its tokenizer, config and sampling)");
  cmd->add_flag("--convert", load.convertDTypes, "Convert checkpoint floats to the model's dtype");
  once(cmd->add_option("--adapter", load.adapter,
                       "A LoRA adapter folder (peft's layout) merged into the weights as they are bound"))
      ->type_name("DIR");
  once(cmd->add_option("--numerics", load.numerics,
                       "exact (the language's; the default) or fast (compiled weight products on quantized weights "
                       "quantize activations to 8 bits, as llama.cpp does)"))
      ->check(CLI::IsMember({"exact", "fast"}))
      ->type_name("MODE");
  cmd->add_flag("--dequantize", load.dequantize,
                "Dequantize a GGUF's quantized weights at load (compiled code otherwise reads them as stored)");
  once(cmd->add_option("--stdlib", load.stdlib,
                       "Standard library folder (default: LINNET_STDLIB, then the installed one, then the build's)"))
      ->type_name("DIR");
  repeatable(cmd->add_option_function<std::vector<std::string>>(
                    "--set",
                    [&load](const std::vector<std::string>& sets) {
                      for (const auto& s : sets) {
                        // Not a structured binding: clang 14 cannot capture one in the lambda below.
                        std::pair<std::string, std::string> kv = splitAssignment(s, "--set");
                        const std::string& name = kv.first;
                        // The last --set of a name wins, as with linnetc.
                        std::visit([&](auto v) { load.generics.insert_or_assign(name, v); },
                                   linnet::tools::parseGenericValue(kv.second, "--set " + s));
                      }
                    },
                    "Override a generic of nest.toml's [generics] (repeatable)"))
      ->type_name("K=V");
  addBackendOption(cmd, load);
}

// --tape: what a compiled gradient keeps of its forward pass (docs/train.md).
void addTapeOption(CLI::App* cmd, linnet::nest::LoadOptions& load) {
  once(cmd->add_option("--tape", load.tape,
                       "What a compiled gradient keeps: saved (each layer's values; the default on cpu, fastest), "
                       "recompute (each layer's input, the layer recomputed: least memory; the default on cuda) or "
                       "unrolled (every layer copied)"))
      ->check(CLI::IsMember({"saved", "recompute", "unrolled"}))
      ->type_name("POLICY");
}

void addPackage(CLI::App* cmd, std::string& package) {
  cmd->add_option("PACKAGE", package, "A nest package (nest.toml, linnet.toml, bindings.json, src/)")
      ->required()
      ->type_name("DIR");
}

// call's groups: each --entry starts one, and the --generic, --input and
// --output after it belong to it, so these are handled as they are read.
void addEntryGroups(CLI::App* cmd, Args& a) {
  auto group = [&a](const std::string& flag) -> Group& {
    if (a.groups.empty()) throw Usage(fmt::format("{} must follow an --entry", flag));
    return a.groups.back();
  };
  cmd->add_option_function<std::string>(
         "--entry", [&a](const std::string& name) { a.groups.push_back({name, {}, {}, {}}); },
         "Run this entry (repeatable: in order, in one process, so state carries over)")
      ->trigger_on_parse()
      ->type_name("NAME");
  cmd->add_option_function<std::string>(
         "--generic",
         [group](const std::string& v) {
           auto [k, n] = splitAssignment(v, "--generic");
           group("--generic").generics[k] = parseInt(n, "--generic " + k);
         },
         "An entry generic of the last --entry")
      ->trigger_on_parse()
      ->type_name("K=N");
  cmd->add_option_function<std::string>(
         "--input",
         [group](const std::string& v) { group("--input").inputs.push_back(splitAssignment(v, "--input")); },
         "An argument of the last --entry: a number, true/false, or @file.npy")
      ->trigger_on_parse()
      ->type_name("NAME=VALUE");
  cmd->add_option_function<std::string>(
         "--output",
         [group](const std::string& v) {
           Group& g = group("--output");
           if (v.empty() || v[0] != '@') throw Usage("--output takes @file.npy");
           g.outputs.push_back(v.substr(1));
         },
         "Write the last --entry's next result to a .npy file")
      ->trigger_on_parse()
      ->type_name("@FILE");
}

void addTokenizerOption(CLI::App* cmd, std::string& tokenizer) {
  once(cmd->add_option("--tokenizer", tokenizer,
                       "A tokenizer.json or a .gguf file (default: the --weights file when it is GGUF, or a --weights "
                       "folder's tokenizer.json)"))
      ->type_name("PATH");
}

void addPromptOptions(CLI::App* cmd, Args& a, const char* maxNewHelp) {
  once(cmd->add_option("--prompt", a.prompt, "The prompt as text (needs a tokenizer)"))->type_name("TEXT");
  addInt(cmd, "--max-new", a.maxNew, maxNewHelp, 1);
  addTokenizerOption(cmd, a.tokenizer);
}

void addSamplingOptions(CLI::App* cmd, Args& a) {
  addNonNegative(cmd, "--temperature", a.temperature,
                 "0: greedy (generate's default; chat's is the model's recommended sampling)");
  addInt(cmd, "--top-k", a.topK, "Sample from the K most likely tokens (0: all)", 0);
  addNumber(cmd, "--top-p", a.topP, "Sample from the most likely tokens of total probability P", 0, 1.0,
            /*aboveLeast=*/true);
  addNumber(cmd, "--min-p", a.minP, "Drop tokens less likely than P times the most likely one", 0, 1.0);
  addNumber(cmd, "--repetition-penalty", a.repetitionPenalty, "Penalty on tokens already in the context", 0,
            std::nullopt, /*aboveLeast=*/true);
  addInt(cmd, "--seed", a.seed, "Seed of the sampler");
}

struct Commands {
  CLI::App* call = nullptr;
  CLI::App* grad = nullptr;
  CLI::App* generate = nullptr;
  CLI::App* bench = nullptr;
  CLI::App* chat = nullptr;
  CLI::App* tokenize = nullptr;
  CLI::App* detokenize = nullptr;
  CLI::App* serve = nullptr;
  CLI::App* finetune = nullptr;
};

#ifdef LINNET_HAVE_SERVE
// `linnet serve` (docs/serve.md).
CLI::App* defineServe(CLI::App& app, linnet::tools::ServeArgs& s) {
  CLI::App* cmd = app.add_subcommand("serve", "An OpenAI-compatible HTTP server over the package's paged entries");
  cmd->footer(std::string(kPackageNotes) +
              "\nserve: the model is loaded with Batch = 1 and a pool of MaxSeq positions (default: --rows x "
              "--context plus a page); see docs/serve.md.\n");
  addPackage(cmd, s.package);
  addLoadOptions(cmd, s.load);
  addTokenizerOption(cmd, s.tokenizer);
  once(cmd->add_option("--host", s.server.host, "Address to listen on (default 127.0.0.1)"))->type_name("ADDR");
  addInt(cmd, "--port", [&s](int64_t p) {
    if (p > 65535) throw Usage(fmt::format("--port `{}`: at most 65535", p));
    s.server.port = static_cast<int>(p);
  }, "Port (default 8080; 0: any free port)", 0);
  addInt(cmd, "--rows", s.engine.rows, "Requests generating at once (default 4)", 1);
  addInt(cmd, "--max-queue", s.engine.maxQueue, "Requests waiting for a row before 503s (default 2 x rows)", 0);
  addInt(cmd, "--context", s.engine.context, "Positions per request, prompt and output (default 2048)", 1);
  addInt(cmd, "--prefill-chunk", s.prefillChunk,
         "Prompt tokens one step computes at most (default 256); shorter packs are padded to a 16th or a quarter of it",
         1);
  addInt(cmd, "--http-threads", s.httpThreads, "HTTP workers (default rows + max queue + 8)", 1);
  once(cmd->add_option("--api-key", s.server.apiKey, "Require `Authorization: Bearer KEY` (all but /health)"))
      ->type_name("KEY");
  once(cmd->add_option("--cors", s.server.cors, "Allow this origin (CORS); off by default"))->type_name("ORIGIN");
  once(cmd->add_option("--model-name", s.modelName, "The model's id in the API (default: nest.toml's name)"))
      ->type_name("NAME");
  addNonNegative(cmd, "--queue-timeout", s.engine.queueTimeout, "Seconds a request may wait for a row (default 60)");
  addNonNegative(cmd, "--request-timeout", s.engine.requestTimeout, "Seconds a request may run (default 600)");
  return cmd;
}
#endif

#ifdef LINNET_HAVE_TEXT
// `linnet finetune` (tools/finetune_command.h, docs/train.md).
CLI::App* defineFinetune(CLI::App& app, linnet::tools::FinetuneArgs& f) {
  CLI::App* cmd = app.add_subcommand("finetune", "Train the package's params (or LoRA adapters) on JSON Lines rows");
  cmd->footer(std::string(kPackageNotes) +
              "\nfinetune: rows are {\"messages\": [...]} (assistant turns learned), {\"prompt\", \"completion\"} "
              "or {\"text\"}; gradients are compiled (`linnetc build --gradient`) or run on the reference backend; "
              "params are trained as plain elements (a quantized checkpoint is dequantized); docs/train.md.\n");
  addPackage(cmd, f.package);
  addLoadOptions(cmd, f.load);
  addTapeOption(cmd, f.load);
  addTokenizerOption(cmd, f.tokenizer);
  once(cmd->add_option("--data", f.data, "Training rows, one JSON object a line"))->type_name("FILE.jsonl");
  once(cmd->add_option("--valid", f.valid, "Validation rows: their mean loss at each report"))->type_name("FILE.jsonl");
  cmd->add_flag("--full", f.full, "Train every param; -o gets them as a .safetensors file");
  cmd->add_flag("--lora", f.lora, "Train LoRA adapters; -o gets a peft adapter folder");
  addInt(cmd, "--lora-rank", f.loraRank, "LoRA's rank r (default 8)", 1);
  addNumber(cmd, "--lora-alpha", f.loraAlpha, "LoRA's alpha: the update is scaled by alpha / r (default 16)", 0,
            std::nullopt, true);
  once(cmd->add_option("--lora-targets", f.loraTargets,
                       "Modules LoRA adapts (default q,k,v,o,gate,up,down; peft's names work too)"))
      ->type_name("LIST");
  addInt(cmd, "--steps", f.steps, "Optimizer steps (default 100)", 1);
  addInt(cmd, "--batch-tokens", f.batchTokens, "Tokens a step packs at most; longer rows are cut (default 512)", 1);
  addNumber(cmd, "--lr", f.lr, "Learning rate after the warm-up (default 1e-5)", 0, std::nullopt, true);
  addInt(cmd, "--warmup", f.warmup, "Steps of linear warm-up (default 0)", 0);
  addNumber(cmd, "--weight-decay", f.weightDecay, "AdamW's decoupled weight decay (default 0.01)", 0);
  addNumber(cmd, "--max-grad-norm", f.maxGradNorm, "Clip the gradients' joint norm to this (default 1; 0: no clipping)",
            0);
  addInt(cmd, "--seed", f.seed, "Seed of the rows' order (default 0)", 0);
  addInt(cmd, "--report-every", f.reportEvery, "Steps between progress lines (default 10)", 1);
  addInt(cmd, "--save-every", f.saveEvery,
         "Also write -o (and --state) every N steps, each write whole, so a stopped run keeps its last (default: "
         "at the end only)",
         1);
  once(cmd->add_option("--state", f.state, "Also write the run's state (params, AdamW moments, step) here"))
      ->type_name("FILE.safetensors");
  once(cmd->add_option("--resume", f.resume, "Take up the run whose --state wrote this file"))
      ->type_name("FILE.safetensors");
  once(cmd->add_option("-o", f.output,
                       "--full: the trained params, a .safetensors file under the checkpoint's names; --lora: the "
                       "adapter folder"))
      ->required()
      ->type_name("FILE");
  return cmd;
}
#endif

Commands defineCommands(CLI::App& app, Args& a, linnet::bench::Options& bench) {
  Commands c;
  c.call = app.add_subcommand("call", "Run entries with arguments from the command line or .npy files");
  c.call->footer(kPackageNotes);
  addPackage(c.call, a.package);
  addLoadOptions(c.call, a.load);
  c.call->add_flag("--compile-only", a.load.compileOnly,
                   "Only build (or find) each entry's artifact in the cache: no weights, nothing run, no outputs");
  addEntryGroups(c.call, a);

  c.grad = app.add_subcommand("grad", "An entry's value and its gradient for every param (a safetensors file)");
  c.grad->footer(std::string(kPackageNotes) +
                 "\ngrad: one --entry; its value must be one float, or --cotangent gives a weight per element; "
                 "a quantized checkpoint is dequantized; docs/train.md.\n");
  addPackage(c.grad, a.package);
  addLoadOptions(c.grad, a.load);
  addEntryGroups(c.grad, a);
  addTapeOption(c.grad, a.load);
  repeatable(c.grad->add_option("--wrt", a.wrt,
                                "Only params whose path or checkpoint name matches (* and ?; repeatable)"))
      ->type_name("PATTERN");
  once(c.grad->add_option("--cotangent", a.cotangent, "The entry's value's cotangent, when it is not one float"))
      ->type_name("@FILE.npy");
  once(c.grad->add_option("-o", a.gradOutput, "Where the gradients go: a .safetensors file, f32, checkpoint names"))
      ->required()
      ->type_name("FILE");

  c.generate = app.add_subcommand("generate", "Prefill a prompt, then decode tokens");
  c.generate->footer(std::string(kTextNotes) + kPackageNotes);
  addPackage(c.generate, a.package);
  addLoadOptions(c.generate, a.load);
  repeatable(c.generate->add_option_function<std::vector<std::string>>(
                 "--prompt-ids",
                 [&a](const std::vector<std::string>& lists) {
                   for (const std::string& ids : lists)
                     for (int64_t id : linnet::tools::parseIntList(ids, "--prompt-ids", /*skipEmpty=*/false))
                       a.promptIds.push_back(id);
                 },
                 "The prompt as token ids"))
      ->type_name("1,2,3");
  addPromptOptions(c.generate, a, "Tokens to produce at most (default 16)");
  addSamplingOptions(c.generate, a);

  c.bench = app.add_subcommand("bench", "Decode or prefill speed against this machine's bandwidth or our GEMM");
  c.bench->footer(std::string(kPackageNotes) + kBenchNotes);
  c.bench->add_option("MODE", bench.mode, "What to time")
      ->required()
      ->check(oneOf({"decode", "prefill", "rows", "paged"}));
  addPackage(c.bench, bench.package);
  addLoadOptions(c.bench, bench.load);
  c.bench->add_flag("--compile-only", bench.load.compileOnly,
                    "Only build (or find) the artifacts the timed calls need: no weights, nothing run or timed");
  addInt(c.bench, "--steps", bench.steps, "Timed calls (default: decode 32, prefill 3)", 1);
  addInt(c.bench, "--prompt-len", bench.promptLen, "Prompt tokens (default: decode 8, prefill 64)", 0);
  addInt(c.bench, "--warmup", bench.warmup, "Untimed calls first (default 1)", 0);
  c.bench->add_flag("--json", bench.json, "One JSON object instead of the table");
  addInt(c.bench, "--rows", bench.rows, "paged: requests decoded together (default 4)", 1);
  addInt(c.bench, "--seed", [&bench](int64_t s) { bench.load.seed = static_cast<uint64_t>(s); },
         "Seed of --random-weights");

#ifdef LINNET_HAVE_TEXT
  c.chat = app.add_subcommand("chat", "A conversation through the package's chat template");
  c.chat->footer(std::string(kTextNotes) + kPackageNotes);
  addPackage(c.chat, a.package);
  addLoadOptions(c.chat, a.load);
  once(c.chat->add_option("--system", a.system, "A system message first"))->type_name("TEXT");
  addPromptOptions(c.chat, a, "Tokens a reply has at most (default 512, fewer when MaxSeq has less room)");
  addSamplingOptions(c.chat, a);
  c.chat->add_flag("--verbose", a.verbose, "Say on stderr what runs where, and how it samples");
  repeatable(c.chat->add_option("--stop", a.stops, "Stop the reply at this text (repeatable)"))->type_name("TEXT");

  c.tokenize = app.add_subcommand("tokenize", "Print a text's token ids as a JSON array");
  c.tokenize->add_option("TEXT", a.words, "The text (several words are joined with spaces)");
  c.tokenize->add_flag("--jsonl", a.jsonLines,
                       "Read the texts from standard input, one JSON string a line, and print one array a line")
      ->excludes(c.tokenize->get_option("TEXT"));
  c.detokenize = app.add_subcommand("detokenize", "Print the text of token ids");
  c.detokenize->add_option("IDS", a.words, "Token ids, separated by commas");
  for (CLI::App* cmd : {c.tokenize, c.detokenize}) {
    addTokenizerOption(cmd, a.tokenizer);
    once(cmd->add_option("--weights", a.load.weights,
                         "A .gguf file, or a model folder with tokenizer.json, whose tokenizer to use"))
        ->type_name("PATH");
  }
#endif
  return c;
}

Scalar scalarOf(linnet::DType d) {
  if (!linnet::isLanguageType(d)) throw Usage(fmt::format("unsupported .npy element type {}", linnet::name(d)));
  return d;
}

Tensor input(const std::string& name, const std::string& value) {
  if (!value.empty() && value[0] == '@') {
    auto array = linnet::weights::readNpy(value.substr(1), {.languageTypesOnly = true});
    return Tensor::fromBytes(scalarOf(array.dtype), array.shape, array.data);
  }
  linnet::tools::Literal literal;
  try {
    literal = linnet::tools::parseLiteral(value);
  } catch (const Usage& e) {
    throw Usage(fmt::format("--input {}: {}", name, e.what()));  // which parameter
  }
  switch (literal.kind) {
    case linnet::tools::Literal::Bool: return Tensor::scalarI(Scalar::Bool, literal.integer != 0);
    case linnet::tools::Literal::Int: return Tensor::scalarI(Scalar::I64, literal.integer, /*weak=*/true);
    case linnet::tools::Literal::Float: break;
  }
  return Tensor::scalarF(Scalar::F32, literal.number, /*weak=*/true);
}

// A group's --input values in the order of its entry's parameters.
std::vector<Tensor> entryArguments(const linnet::nest::Model& model, const Group& g) {
  std::vector<std::string> names = model.parameterNames(g.entry);
  std::vector<std::optional<Tensor>> args(names.size());
  for (const auto& [name, value] : g.inputs) {
    auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end())
      throw Usage(fmt::format("entry `{}` has no parameter `{}` (it takes {})", g.entry, name,
                              fmt::join(names, ", ")));
    args[it - names.begin()] = input(name, value);
  }
  std::vector<Tensor> given;
  for (size_t k = 0; k < names.size(); ++k) {
    if (!args[k]) throw Usage(fmt::format("entry `{}`: no --input for `{}`", g.entry, names[k]));
    given.push_back(*args[k]);
  }
  return given;
}

int runCall(Args& a) {
  if (a.groups.empty()) throw Usage("call needs at least one --entry");
  auto model = linnet::nest::load(a.package, a.load);
  for (const Group& g : a.groups) {
    std::vector<Tensor> given = entryArguments(model, g);
    std::vector<Tensor> results = model.call(g.entry, given, g.generics);
    if (a.load.compileOnly) {
      fmt::print("{}: compiled\n", g.entry);
      continue;
    }
    if (g.outputs.size() > results.size())
      throw Usage(fmt::format("entry `{}` returns {} values, but {} --output were given", g.entry,
                              results.size(), g.outputs.size()));
    for (size_t k = 0; k < results.size(); ++k) {
      if (k < g.outputs.size()) {
        linnet::weights::writeNpy(g.outputs[k], results[k].dtype, results[k].shape, results[k].bytes());
      } else {
        fmt::print("{}: result {}: {}\n", g.entry, k, results[k].describe());
      }
    }
  }
  return 0;
}

// `linnet grad` (tools/grad_command.h). Params are differentiated as plain
// elements: a quantized checkpoint is dequantized at load.
int runGrad(Args& a) {
  if (a.groups.size() != 1) throw Usage("grad takes one --entry");
  const Group& g = a.groups.front();
  if (!g.outputs.empty()) throw Usage("grad writes its gradients with -o FILE, not --output");
  linnet::tools::requireOutputFile(a.gradOutput);
  a.load.dequantize = true;
  auto model = linnet::nest::load(a.package, a.load);
  std::vector<Tensor> given = entryArguments(model, g);
  std::optional<Tensor> cotangent;
  if (!a.cotangent.empty()) cotangent = input("--cotangent", a.cotangent);
  auto wrt = linnet::tools::chooseParams(model, a.package, a.wrt);
  linnet::nest::Gradient gradient = model.gradient(g.entry, given, g.generics, wrt, cotangent);
  linnet::tools::writeGradient(gradient, g.entry, a.package, a.gradOutput);
  return 0;
}

#ifdef LINNET_HAVE_TEXT
std::string tokenizerPath(const Args& a) { return linnet::tools::tokenizerSource(a.tokenizer, a.load.weights); }

linnet::nest::TextModel text(const Args& a) {
  linnet::nest::TextModel t = linnet::nest::loadText(tokenizerPath(a));
  linnet::nest::useCardChatTemplate(t, a.package);
  return t;
}

// The flags given over `base` (generate: greedy; chat: the model's recommended sampling).
linnet::nest::Sampling sampling(const Args& a, linnet::nest::Sampling base = {}) {
  linnet::nest::Sampling s = base;
  if (a.given("--temperature")) s.temperature = a.temperature;
  if (a.given("--top-k")) s.topK = static_cast<int>(a.topK);
  if (a.given("--top-p")) s.topP = a.topP;
  if (a.given("--min-p")) s.minP = a.minP;
  if (a.given("--repetition-penalty")) s.repetitionPenalty = a.repetitionPenalty;
  s.seed = static_cast<uint64_t>(a.seed);
  return s;
}

// A conversation with the model: the rendered chat is fed through `prefill`
// (only what the caches do not hold yet), then tokens are sampled and
// streamed through `decode` until an end-of-turn token, a --stop text, or
// the reply's cap (--max-new, else kChatMaxNew within the context).
class Chat {
 public:
  Chat(linnet::nest::Model& model, linnet::nest::TextModel& text, const Args& a, linnet::nest::Sampling sampling)
      : model_(model), text_(text), args_(a), sampling_(sampling), rng_(a.seed),
        limits_(linnet::nest::textLimits(model.dims())) {
    if (!a.system.empty()) system_ = {{"role", "system"}, {"content", a.system}};
    linnet::nest::checkTokenizer(limits_, static_cast<int64_t>(text.tokenizer.vocabSize()),
                                 fmt::format("the tokenizer {}", tokenizerPath(a)));
  }
  void reset() {
    messages_ = nlohmann::ordered_json::array();
    cached_.clear();
    model_.resetState();
  }
  std::string answer(const std::string& user) {
    if (messages_.empty() && !system_.is_null()) messages_.push_back(system_);
    messages_.push_back({{"role", "user"}, {"content", user}});
    std::vector<int64_t> wide = fitHistory();
    // Reuse the caches when the new rendering extends what they hold.
    if (cached_.size() > wide.size() || !std::equal(cached_.begin(), cached_.end(), wide.begin())) reset();
    std::vector<int64_t> fresh(wide.begin() + cached_.size(), wide.end());
    Tensor tokens = Tensor::fromInts(Scalar::I32, {1, static_cast<int64_t>(fresh.size())}, fresh);
    Tensor logits = model_.call("prefill", {tokens, Tensor::scalarI(Scalar::I32, static_cast<int64_t>(cached_.size()))})[0];
    cached_ = wide;
    linnet::nest::TextStream stream(text_.tokenizer, args_.stops);
    int64_t cap = replyCap(static_cast<int64_t>(wide.size()));
    bool ended = false;  // by the model or a --stop text, not the cap
    for (int64_t k = 0; k < cap; ++k) {
      int32_t next = linnet::nest::sampleToken(logits, sampling_, rng_, cached_);
      if (std::find(text_.stopIds.begin(), text_.stopIds.end(), next) != text_.stopIds.end()) {
        ended = true;
        break;
      }
      std::string piece = stream.push(next);
      auto show = [&piece] {
        fputs(piece.c_str(), stdout);
        fflush(stdout);
      };
      if (stream.stopped()) {
        show();
        ended = true;
        break;
      }
      if (k + 1 == cap) {  // the last token is not fed back: it needs no position
        show();
        break;
      }
      // The first piece waits for the first `decode`, which may compile it:
      // its progress line then stays off the reply.
      if (k > 0) show();
      Tensor token = Tensor::fromInts(Scalar::I32, {1, 1}, {next});
      logits = model_.call("decode", {token, Tensor::scalarI(Scalar::I32, static_cast<int64_t>(cached_.size()))})[0];
      cached_.push_back(next);
      if (k == 0) show();
    }
    fputs((stream.finish() + "\n").c_str(), stdout);
    fflush(stdout);
    // A cap the user did not choose is worth a word.
    if (!ended && !args_.maxNewGiven)
      fmt::print(stderr, "linnet: the reply was cut at {} tokens ({})\n", cap,
                 cap == kChatMaxNew ? std::string("the default cap; raise it with --max-new")
                                    : fmt::format("the end of the context, {} = {}", linnet::nest::kContextGeneric,
                                                  limits_.maxSeq.value_or(0)));
    std::string reply = stream.text();
    messages_.push_back({{"role", "assistant"}, {"content", reply}});
    return reply;
  }

  // The most tokens a reply to a conversation of `length` tokens may have:
  // --max-new (fitHistory made room for it), else kChatMaxNew or the room
  // left in the context, whichever is less.
  int64_t replyCap(int64_t length) const {
    if (args_.maxNewGiven) return args_.maxNew;
    if (!limits_.maxSeq) return kChatMaxNew;
    return std::max<int64_t>(1, std::min(kChatMaxNew, *limits_.maxSeq - length + 1));
  }

  // The conversation's token ids, kept within the context: while the
  // rendering and the reply's room (--max-new tokens; without it, the
  // default cap or a quarter of MaxSeq, whichever is less) do not fit in
  // MaxSeq, the oldest turns (after the system message) are dropped, with a
  // note on stderr; when the newest message alone does not fit, it is
  // refused (and forgotten).
  std::vector<int64_t> fitHistory() {
    size_t first = !messages_.empty() && messages_[0].value("role", "") == "system" ? 1 : 0;
    size_t dropped = 0;
    int64_t room =
        args_.maxNewGiven ? args_.maxNew : std::min(kChatMaxNew, std::max<int64_t>(1, limits_.maxSeq.value_or(0) / 4));
    while (true) {
      std::string rendered = linnet::nest::renderChat(text_, messages_);
      std::vector<int32_t> ids = text_.tokenizer.encode(rendered, /*addSpecialTokens=*/false);
      std::vector<int64_t> wide(ids.begin(), ids.end());
      if (wide.empty()) {
        messages_.erase(messages_.end() - 1);
        throw linnet::nest::Error(
            "the chat template rendered the conversation as no tokens, and a reply needs at least one to follow; "
            "check the template (tokenizer_config.json's chat_template, or the card's chat_template.jinja)");
      }
      int64_t needed = static_cast<int64_t>(wide.size()) + room - 1;
      bool alone = messages_.size() <= first + 1;
      // Without --max-new, a newest message that fits takes what room is left.
      bool fits = !limits_.maxSeq || needed <= *limits_.maxSeq ||
                  (alone && !args_.maxNewGiven && static_cast<int64_t>(wide.size()) <= *limits_.maxSeq);
      if (fits) {
        if (dropped)
          fmt::print(stderr, "linnet: dropped the {} oldest message{} to keep the conversation within {} = {}\n",
                     dropped, dropped == 1 ? "" : "s", linnet::nest::kContextGeneric, *limits_.maxSeq);
        linnet::nest::checkTokenIds(limits_, wide, "the conversation");
        return wide;
      }
      if (alone) {
        messages_.erase(messages_.end() - 1);
        std::string what = first ? "the system message and the newest message" : "the newest message";
        linnet::nest::checkGeneration(limits_, static_cast<int64_t>(wide.size()),
                                      args_.maxNewGiven ? args_.maxNew : kChatMaxNew, what);
        throw linnet::nest::Error(fmt::format("{} does not fit in {} = {}", what, linnet::nest::kContextGeneric,
                                              *limits_.maxSeq));
      }
      // A whole turn: the user's message and the reply to it.
      messages_.erase(messages_.begin() + first);
      ++dropped;
      if (messages_.size() > first + 1 && messages_[first].value("role", "") == "assistant") {
        messages_.erase(messages_.begin() + first);
        ++dropped;
      }
    }
  }

 private:
  linnet::nest::Model& model_;
  linnet::nest::TextModel& text_;
  const Args& args_;
  linnet::nest::Sampling sampling_;
  std::mt19937_64 rng_;
  nlohmann::ordered_json system_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
  std::vector<int64_t> cached_;  // the tokens the caches hold, in order
  linnet::nest::TextLimits limits_;
};

int runChat(Args& a) {
  auto tokenizer = text(a);
  // The model's recommended sampling, under the flags given.
  // The folder of the checkpoint, else of the tokenizer, gives generation_config.json.
  linnet::nest::RecommendedSampling recommended =
      linnet::nest::recommendedSampling(a.package, a.load.weights.empty() ? a.tokenizer : a.load.weights);
  linnet::nest::Sampling chosen = sampling(a, recommended.sampling);
  linnet::nest::validate(chosen);
  auto model = linnet::nest::load(a.package, a.load);
  if (a.verbose) {
    bool flags = false;
    for (const char* f : {"--temperature", "--top-k", "--top-p", "--min-p", "--repetition-penalty"})
      flags = flags || a.given(f);
    std::string from = recommended.source.empty() ? "the default: the card has no [sampling]" : recommended.source;
    fmt::print(stderr, "linnet: {} on {} ({} thread{}); sampling: {} ({}{}); replies of at most {} tokens{}\n",
               model.name(), model.backend(), model.threads(), model.threads() == 1 ? "" : "s",
               linnet::nest::describe(chosen), flags ? "flags over " : "", from, a.maxNewGiven ? a.maxNew : kChatMaxNew,
               a.maxNewGiven ? "" : " (within MaxSeq)");
  }
  Chat chat(model, tokenizer, a, chosen);
  if (a.hasPrompt) {
    chat.answer(a.prompt);
    return 0;
  }
  fprintf(stderr, "%s: type a message; /reset starts over, /quit ends\n", model.name().c_str());
  std::string line;
  while (true) {
    fputs("> ", stderr);
    if (!std::getline(std::cin, line) || line == "/quit") break;
    if (line == "/reset") {
      chat.reset();
      continue;
    }
    if (line.empty()) continue;
    // A line a terminal mangled (a Latin-1 paste) is refused, and the chat goes on.
    if (size_t valid = linnet::utf8::validPrefix(line); valid != line.size()) {
      fmt::print(stderr, "linnet: that message is not valid UTF-8 (byte {} of {}); type it again\n", valid + 1,
                 line.size());
      continue;
    }
    try {
      chat.answer(line);
    } catch (const linnet::nest::Error& e) {
      fmt::print(stderr, "linnet: {}\n", e.what());
    }
  }
  return 0;
}

// One JSON string a line in, one array of ids a line out: many texts
// through one loaded tokenizer.
int tokenizeLines(const linnet::nest::TextModel& t) {
  std::string line;
  for (size_t number = 1; std::getline(std::cin, line); ++number) {
    nlohmann::json text;
    try {
      text = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw Usage(fmt::format("tokenize --jsonl: standard input line {}: not JSON ({})", number, e.what()));
    }
    if (!text.is_string())
      throw Usage(fmt::format("tokenize --jsonl: standard input line {}: a JSON string, such as \"a b\", is "
                              "expected",
                              number));
    fmt::print("[{}]\n", fmt::join(t.tokenizer.encode(text.get<std::string>(), false), ", "));
  }
  return 0;
}

int runTokenize(Args& a) {
  auto t = text(a);
  if (a.command == "tokenize" && a.jsonLines) return tokenizeLines(t);
  if (a.command == "tokenize") {
    std::string joined = fmt::format("{}", fmt::join(a.words, " "));
    fmt::print("[{}]\n", fmt::join(t.tokenizer.encode(joined, false), ", "));
    return 0;
  }
  std::vector<int32_t> ids;
  for (const auto& w : a.words)
    for (int64_t id : linnet::tools::parseIntList(w, "detokenize", /*skipEmpty=*/true)) {
      // A token id is 32 bits: a larger one must not wrap onto a real token.
      if (id < INT32_MIN || id > INT32_MAX)
        throw Usage(fmt::format("detokenize: token id {} is outside the 32-bit range of token ids", id));
      ids.push_back(static_cast<int32_t>(id));
    }
  fmt::print("{}\n", t.tokenizer.decode(ids));
  return 0;
}
#endif

int runGenerate(Args& a) {
#ifdef LINNET_HAVE_TEXT
  std::optional<linnet::nest::TextModel> tokenizer;
  if (a.hasPrompt) {
    tokenizer = text(a);
    for (int32_t id : tokenizer->tokenizer.encode(a.prompt, /*addSpecialTokens=*/true)) a.promptIds.push_back(id);
  }
  std::mt19937_64 rng(a.seed);
#endif
  if (a.promptIds.empty())
    throw Usage(a.hasPrompt ? "generate: --prompt encodes to no tokens (this tokenizer adds none of its own); "
                              "give text, or --prompt-ids"
                            : "generate needs --prompt-ids (or --prompt)");
  auto model = linnet::nest::load(a.package, a.load);
  // The whole generation against the model's Vocab and MaxSeq before anything runs.
  linnet::nest::TextLimits limits = linnet::nest::textLimits(model.dims());
#ifdef LINNET_HAVE_TEXT
  if (tokenizer)
    linnet::nest::checkTokenizer(limits, static_cast<int64_t>(tokenizer->tokenizer.vocabSize()),
                                 fmt::format("the tokenizer {}", tokenizerPath(a)));
#endif
  linnet::nest::checkTokenIds(limits, a.promptIds, "the prompt");
  int64_t S = static_cast<int64_t>(a.promptIds.size());
  linnet::nest::checkGeneration(limits, S, a.maxNew, "the prompt");
  Tensor tokens = Tensor::fromInts(Scalar::I32, {1, S}, a.promptIds);
  std::vector<int64_t> produced;
  Tensor logits = model.call("prefill", {tokens, Tensor::scalarI(Scalar::I32, 0)})[0];
#ifdef LINNET_HAVE_TEXT
  std::vector<int64_t> context = a.promptIds;
  auto choose = [&](const Tensor& l) -> int64_t {
    int64_t id = linnet::nest::sampleToken(l, sampling(a), rng, context);
    context.push_back(id);
    return id;
  };
#else
  auto choose = [](const Tensor& logits) {
    std::vector<double> v = logits.toFloats();
    return static_cast<int64_t>(std::max_element(v.begin(), v.end()) - v.begin());
  };
#endif
  produced.push_back(choose(logits));
  for (int64_t k = 1; k < a.maxNew; ++k) {
    Tensor token = Tensor::fromInts(Scalar::I32, {1, 1}, {produced.back()});
    logits = model.call("decode", {token, Tensor::scalarI(Scalar::I32, S + k - 1)})[0];
    produced.push_back(choose(logits));
  }
#ifdef LINNET_HAVE_TEXT
  if (tokenizer) {
    std::vector<int32_t> ids(produced.begin(), produced.end());
    fmt::print("{}\n", tokenizer->tokenizer.decode(ids));
    return 0;
  }
#endif
  fmt::print("[{}]\n", fmt::join(produced, ", "));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  linnet::bench::Options bench;
  CLI::App app{"linnet: run a Linnet package's entries"};
  app.set_version_flag("--version", std::string("linnet ") + LINNET_VERSION);
  app.require_subcommand(1);
  Commands commands = defineCommands(app, a, bench);
#ifdef LINNET_HAVE_SERVE
  linnet::tools::ServeArgs serveArgs;
  serveArgs.engine.maxQueue = -1;
  commands.serve = defineServe(app, serveArgs);
#endif
#ifdef LINNET_HAVE_TEXT
  linnet::tools::FinetuneArgs finetuneArgs;
  commands.finetune = defineFinetune(app, finetuneArgs);
#endif
#ifdef LINNET_HAVE_EXPORT
  linnet::tools::ExportArgs exportArgs;
  CLI::App* exportCommand = linnet::tools::defineExport(app, exportArgs);
#endif
  app.footer(std::string(kSynopsis) + kTextNotes + kPackageNotes + kBenchNotes);  // after: subcommands copy it
  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
      std::vector<CLI::App*> given = app.get_subcommands();
      std::string help = given.empty() ? "linnet --help" : "linnet " + given[0]->get_name() + " --help";
      if (argc < 2) throw Usage(fmt::format("no command; see {}", help));
      if (given.empty())
        throw Usage(fmt::format("unknown {} `{}`; see {}", argv[1][0] == '-' ? "option" : "command", argv[1], help));
      if (!given.empty() && dynamic_cast<const CLI::ExtrasError*>(&e)) {
        std::vector<std::string> extra = given[0]->remaining();
        throw Usage(fmt::format("{}: unexpected argument{} `{}`; see {}", given[0]->get_name(),
                                extra.size() == 1 ? "" : "s", fmt::join(extra, " "), help));
      }
      throw Usage(fmt::format("{}; see {}", e.what(), help));
    }
    a.command = app.get_subcommands()[0]->get_name();
    linnet::tools::refuseWeightsWithRandom(a.load.weights, a.load.randomWeights, a.command);
    linnet::tools::refuseWeightsWithRandom(bench.load.weights, bench.load.randomWeights, a.command);
#ifdef LINNET_HAVE_SERVE
    linnet::tools::refuseWeightsWithRandom(serveArgs.load.weights, serveArgs.load.randomWeights, a.command);
#endif
#ifdef LINNET_HAVE_TEXT
    linnet::tools::refuseWeightsWithRandom(finetuneArgs.load.weights, finetuneArgs.load.randomWeights, a.command);
#endif
    CLI::App* given = app.get_subcommands()[0];
    a.given = [given](const char* flag) {
      const CLI::Option* o = given->get_option_no_throw(flag);
      return o && o->count() > 0;
    };
    a.maxNewGiven = a.given("--max-new");
    if (commands.call->parsed()) return runCall(a);
    if (commands.grad->parsed()) return runGrad(a);
    if (commands.generate->parsed()) {
      a.hasPrompt = commands.generate->count("--prompt") > 0;
      return runGenerate(a);
    }
    if (commands.bench->parsed()) {
      linnet::bench::run(bench);
      return 0;
    }
#ifdef LINNET_HAVE_TEXT
    if (commands.chat->parsed()) {
      a.hasPrompt = commands.chat->count("--prompt") > 0;
      return runChat(a);
    }
    if (commands.tokenize->parsed() || commands.detokenize->parsed()) return runTokenize(a);
    if (commands.finetune->parsed()) return linnet::tools::runFinetune(finetuneArgs);
#endif
#ifdef LINNET_HAVE_SERVE
    if (commands.serve->parsed()) {
      if (serveArgs.engine.maxQueue < 0) serveArgs.engine.maxQueue = 2 * serveArgs.engine.rows;
      return linnet::tools::runServe(serveArgs);
    }
#endif
#ifdef LINNET_HAVE_EXPORT
    if (exportCommand->parsed()) return linnet::tools::runExport(exportArgs);
#endif
    throw Usage(fmt::format("unknown command `{}`; see linnet --help", a.command));
  } catch (const Usage& e) {
    fmt::print(stderr, "linnet: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
}
