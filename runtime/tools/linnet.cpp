// linnet: the runtime's command line.
//   linnet call PACKAGE (--weights PATH | --random-weights) [--set K=V]... [--convert]
//          (--entry NAME [--generic K=V]... [--input NAME=@file.npy | NAME=VALUE]... [--output @file.npy]...)...
//   linnet generate PACKAGE (--weights PATH | --random-weights) [--set K=V]... --prompt-ids 1,2,3 --max-new N
//   linnet bench decode|prefill PACKAGE (--weights PATH | --random-weights) [--set K=V]... [--steps N] ...
// Several --entry groups run in one process, in order, so state (KV caches)
// carries from one to the next, as IREE's iree-run-module does with .npy files.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "nest/nest.h"
#include "tools/bench.h"
#include "weights/npy.h"
#ifdef LINNET_HAVE_TEXT
#include <iostream>
#include <random>

#include "nest/text.h"
#endif

namespace {

using Scalar = linnet::DType;
using linnet::nest::Tensor;

struct Usage : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* kHelp = R"(linnet: run a Linnet package's entries

  linnet call PACKAGE (--weights PATH | --random-weights) [--set K=V]... [--convert]
      (--entry NAME [--generic K=V]... [--input NAME=@file.npy | NAME=VALUE]... [--output @file.npy]...)...
  linnet generate PACKAGE (--weights PATH | --random-weights) [--set K=V]...
      (--prompt-ids 1,2,3 | --prompt TEXT [--tokenizer PATH]) [--max-new N] [sampling]
  linnet chat PACKAGE --weights PATH [--tokenizer PATH] [--set K=V]... [--system TEXT]
      [--prompt TEXT] [--max-new N] [sampling]
  linnet tokenize --tokenizer PATH TEXT        (ids as a JSON array)
  linnet detokenize --tokenizer PATH 1,2,3
  linnet bench decode|prefill PACKAGE (--weights PATH | --random-weights) [--set K=V]...
      [--backend reference|cpu] [--steps N] [--prompt-len S] [--warmup N] [--json]
  linnet --version | --help

sampling: --temperature T (0: greedy, the default) --top-k K --top-p P --min-p P
  --repetition-penalty R --seed S; chat stops at --stop TEXT (repeatable) too.
--tokenizer takes a tokenizer.json (tokenizer_config.json beside it supplies
the chat template) or a .gguf file; by default the --weights file when it is
GGUF. `chat` without --prompt is interactive: /reset starts over, /quit ends.

PACKAGE is a nest package (nest.toml, linnet.toml, bindings.json, src/).
--weights takes a .safetensors file or a *.safetensors.index.json; --convert
converts checkpoint floats to the model's dtype. --backend reference (the
default: exact, slow) or cpu (compiled code) chooses where entries run.

bench decode: a prompt of --prompt-len tokens (default 8) through `prefill`
(or `decode` token by token), --warmup untimed steps (default 1), then
--steps timed `decode` calls (default 32; fewer if MaxSeq is reached).
Reports tokens/s, the weight bytes one step reads (every parameter once),
this machine's memory read bandwidth measured in the same run (a sum over
a 1 GiB buffer, on the backend's threads and on all cores), and the
fraction of that bandwidth bound reached.
bench prefill: --steps calls (default 3) of `prefill` on --prompt-len
tokens (default 64, at most MaxSeq); reports tokens/s and the FLOP/s
they imply (2 x 2-D weight values x tokens) against our own cache-blocked
512x512x512 f32 GEMM on one thread (our kernel's rate, not a vendor peak).
bench's --seed seeds --random-weights; --json prints one JSON object instead
of the table. See bench/decode/README.md.
)";

struct Group {
  std::string entry;
  std::map<std::string, int64_t> generics;
  std::vector<std::pair<std::string, std::string>> inputs;  // name -> "@file" or value
  std::vector<std::string> outputs;
};

struct Args {
  std::string command, package;
  linnet::nest::LoadOptions load;
  std::vector<Group> groups;
  std::vector<int64_t> promptIds;
  int64_t maxNew = 16;
  std::string prompt, system, tokenizer;
  std::vector<std::string> words;  // tokenize / detokenize operands
  double temperature = 0, topP = 1, minP = 0, repetitionPenalty = 1;
  int64_t topK = 0, seed = 0;
  std::vector<std::string> stops;  // stop strings
  bool hasPrompt = false;
  std::string benchMode;  // bench: decode or prefill
  int64_t steps = -1, promptLen = -1, warmup = 1;
  bool json = false;
};

std::pair<std::string, std::string> splitAssignment(const std::string& s, const char* flag) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Usage(fmt::format("{} `{}`: expected NAME=VALUE", flag, s));
  return {s.substr(0, eq), s.substr(eq + 1)};
}

int64_t parseInt(const std::string& s, const std::string& what) {
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') throw Usage(fmt::format("{}: `{}` is not an integer", what, s));
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  std::vector<std::string> v(argv + 1, argv + argc);
  if (v.empty()) throw Usage("no command; see linnet --help");
  a.command = v[0];
  size_t i = 1;
  auto next = [&](const std::string& flag) -> std::string {
    if (i + 1 >= v.size()) throw Usage(fmt::format("{} needs a value", flag));
    return v[++i];
  };
  for (; i < v.size(); ++i) {
    const std::string& s = v[i];
    if (s == "--weights") a.load.weights = next(s);
    else if (s == "--random-weights") a.load.randomWeights = true;
    else if (s == "--convert") a.load.convertDTypes = true;
    else if (s == "--stdlib") a.load.stdlib = next(s);
    else if (s == "--backend") a.load.backend = next(s);  // checked by nest::load against its registry
    else if (s == "--steps" || s == "--prompt-len" || s == "--warmup") {
      int64_t n = parseInt(next(s), s);
      int64_t least = s == "--steps" ? 1 : 0;
      if (n < least) throw Usage(fmt::format("{} must be at least {}", s, least));
      (s == "--steps" ? a.steps : s == "--prompt-len" ? a.promptLen : a.warmup) = n;
    } else if (s == "--json") a.json = true;
    else if (s == "--set") {
      auto [k, val] = splitAssignment(next(s), "--set");
      char* end = nullptr;
      long long n = std::strtoll(val.c_str(), &end, 10);
      // The last --set of a name wins, as with linnetc.
      if (!val.empty() && *end == '\0') a.load.generics.insert_or_assign(k, static_cast<int64_t>(n));
      else a.load.generics.insert_or_assign(k, val);
    } else if (s == "--entry") {
      a.groups.push_back({next(s), {}, {}, {}});
    } else if (s == "--generic" || s == "--input" || s == "--output") {
      if (a.groups.empty()) throw Usage(fmt::format("{} must follow an --entry", s));
      std::string val = next(s);
      if (s == "--generic") {
        auto [k, n] = splitAssignment(val, "--generic");
        a.groups.back().generics[k] = parseInt(n, "--generic " + k);
      } else if (s == "--input") {
        a.groups.back().inputs.push_back(splitAssignment(val, "--input"));
      } else {
        if (val.empty() || val[0] != '@') throw Usage("--output takes @file.npy");
        a.groups.back().outputs.push_back(val.substr(1));
      }
    } else if (s == "--prompt-ids") {
      std::string ids = next(s);
      size_t start = 0;
      while (start <= ids.size()) {
        size_t comma = ids.find(',', start);
        std::string one = ids.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        a.promptIds.push_back(parseInt(one, "--prompt-ids"));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (s == "--max-new") {
      a.maxNew = parseInt(next(s), "--max-new");
    } else if (s == "--prompt") {
      a.prompt = next(s);
      a.hasPrompt = true;
    } else if (s == "--system") {
      a.system = next(s);
    } else if (s == "--tokenizer") {
      a.tokenizer = next(s);
    } else if (s == "--temperature" || s == "--top-p" || s == "--min-p" || s == "--repetition-penalty") {
      std::string val = next(s);
      char* end = nullptr;
      double d = std::strtod(val.c_str(), &end);
      if (val.empty() || *end != '\0' || d < 0) throw Usage(fmt::format("{} `{}`: expected a number >= 0", s, val));
      (s == "--temperature" ? a.temperature : s == "--top-p" ? a.topP : s == "--min-p" ? a.minP
                                                                       : a.repetitionPenalty) = d;
    } else if (s == "--stop") {
      a.stops.push_back(next(s));
    } else if (s == "--top-k") {
      a.topK = parseInt(next(s), "--top-k");
    } else if (s == "--seed") {
      a.seed = parseInt(next(s), "--seed");
    } else if (!s.empty() && s[0] == '-') {
      throw Usage(fmt::format("unknown option `{}`; see linnet --help", s));
    } else if (a.command == "tokenize" || a.command == "detokenize") {
      a.words.push_back(s);
    } else if (a.command == "bench" && a.benchMode.empty()) {
      if (s != "decode" && s != "prefill")
        throw Usage(fmt::format("bench `{}`: expected decode or prefill", s));
      a.benchMode = s;
    } else if (a.package.empty()) {
      a.package = s;
    } else {
      throw Usage(fmt::format("unexpected argument `{}`", s));
    }
  }
  if (a.command == "bench" && a.benchMode.empty()) throw Usage("bench needs decode or prefill");
  if (a.package.empty() && a.command != "tokenize" && a.command != "detokenize")
    throw Usage("no PACKAGE given");
  return a;
}

Scalar scalarOf(linnet::DType d) {
  if (!linnet::isLanguageType(d)) throw Usage(fmt::format("unsupported .npy element type {}", linnet::name(d)));
  return d;
}

Tensor input(const std::string& value) {
  if (!value.empty() && value[0] == '@') {
    auto array = linnet::weights::readNpy(value.substr(1));
    return Tensor::fromBytes(scalarOf(array.dtype), array.shape, array.data);
  }
  if (value == "true" || value == "false") return Tensor::scalarI(Scalar::Bool, value == "true");
  char* end = nullptr;
  long long n = std::strtoll(value.c_str(), &end, 10);
  if (!value.empty() && *end == '\0') return Tensor::scalarI(Scalar::I64, n, /*weak=*/true);
  double d = std::strtod(value.c_str(), &end);
  if (!value.empty() && *end == '\0') return Tensor::scalarF(Scalar::F32, d, /*weak=*/true);
  throw Usage(fmt::format("input value `{}` is neither @file.npy nor a number", value));
}

int runCall(Args& a) {
  if (a.groups.empty()) throw Usage("call needs at least one --entry");
  auto model = linnet::nest::load(a.package, a.load);
  for (const Group& g : a.groups) {
    std::vector<std::string> names = model.parameterNames(g.entry);
    std::vector<std::optional<Tensor>> args(names.size());
    for (const auto& [name, value] : g.inputs) {
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end())
        throw Usage(fmt::format("entry `{}` has no parameter `{}` (it takes {})", g.entry, name,
                                fmt::join(names, ", ")));
      args[it - names.begin()] = input(value);
    }
    std::vector<Tensor> given;
    for (size_t k = 0; k < names.size(); ++k) {
      if (!args[k]) throw Usage(fmt::format("entry `{}`: no --input for `{}`", g.entry, names[k]));
      given.push_back(*args[k]);
    }
    std::vector<Tensor> results = model.call(g.entry, given, g.generics);
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

#ifdef LINNET_HAVE_TEXT
linnet::nest::TextModel text(const Args& a) {
  std::string path = !a.tokenizer.empty() ? a.tokenizer : a.load.weights;
  if (path.empty() || (a.tokenizer.empty() && !path.ends_with(".gguf")))
    throw Usage("no tokenizer: pass --tokenizer (a tokenizer.json, or a .gguf file)");
  return linnet::nest::loadText(path);
}

linnet::nest::Sampling sampling(const Args& a) {
  return {a.temperature, static_cast<int>(a.topK), a.topP, a.minP, a.repetitionPenalty,
          static_cast<uint64_t>(a.seed)};
}

// A conversation with the model: the rendered chat is fed through `prefill`
// (only what the caches do not hold yet), then tokens are sampled and
// streamed through `decode` until an end-of-turn token or --max-new.
class Chat {
 public:
  Chat(linnet::nest::Model& model, linnet::nest::TextModel& text, const Args& a)
      : model_(model), text_(text), args_(a), rng_(a.seed) {
    if (!a.system.empty()) system_ = {{"role", "system"}, {"content", a.system}};
  }
  void reset() {
    messages_ = nlohmann::ordered_json::array();
    cached_.clear();
    model_.resetState();
  }
  std::string answer(const std::string& user) {
    if (messages_.empty() && !system_.is_null()) messages_.push_back(system_);
    messages_.push_back({{"role", "user"}, {"content", user}});
    std::string rendered = linnet::nest::renderChat(text_, messages_);
    std::vector<int32_t> ids = text_.tokenizer.encode(rendered, /*addSpecialTokens=*/false);
    std::vector<int64_t> wide(ids.begin(), ids.end());
    // Reuse the caches when the new rendering extends what they hold.
    if (cached_.size() > wide.size() || !std::equal(cached_.begin(), cached_.end(), wide.begin())) reset();
    std::vector<int64_t> fresh(wide.begin() + cached_.size(), wide.end());
    Tensor tokens = Tensor::fromInts(Scalar::I32, {1, static_cast<int64_t>(fresh.size())}, fresh);
    Tensor logits = model_.call("prefill", {tokens, Tensor::scalarI(Scalar::I32, static_cast<int64_t>(cached_.size()))})[0];
    cached_ = wide;
    linnet::tokenizer::StreamDecoder stream(text_.tokenizer);
    std::string reply;
    size_t shown = 0;  // bytes of `reply` printed: text that may start a stop string waits
    for (int64_t k = 0; k < args_.maxNew; ++k) {
      int32_t next = linnet::nest::sampleToken(logits, sampling(args_), rng_, cached_);
      if (std::find(text_.stopIds.begin(), text_.stopIds.end(), next) != text_.stopIds.end()) break;
      reply += stream.push(next);
      if (cutAtStop(reply)) break;
      size_t safe = reply.size() - heldBack(reply);
      fputs(reply.substr(shown, safe - shown).c_str(), stdout);
      fflush(stdout);
      shown = safe;
      Tensor token = Tensor::fromInts(Scalar::I32, {1, 1}, {next});
      logits = model_.call("decode", {token, Tensor::scalarI(Scalar::I32, static_cast<int64_t>(cached_.size()))})[0];
      cached_.push_back(next);
    }
    reply += stream.finish();
    cutAtStop(reply);
    fputs((reply.substr(std::min(shown, reply.size())) + "\n").c_str(), stdout);
    fflush(stdout);
    messages_.push_back({{"role", "assistant"}, {"content", reply}});
    return reply;
  }

  // Truncates `reply` at the first stop string; whether there was one.
  bool cutAtStop(std::string& reply) const {
    size_t cut = std::string::npos;
    for (const auto& s : args_.stops) cut = std::min(cut, reply.find(s));
    if (cut == std::string::npos) return false;
    reply.resize(cut);
    return true;
  }
  // How many trailing bytes could still grow into a stop string.
  size_t heldBack(const std::string& reply) const {
    size_t hold = 0;
    for (const auto& s : args_.stops)
      for (size_t n = std::min(s.size() - 1, reply.size()); n > hold; --n)
        if (reply.compare(reply.size() - n, n, s, 0, n) == 0) {
          hold = n;
          break;
        }
    return hold;
  }

 private:
  linnet::nest::Model& model_;
  linnet::nest::TextModel& text_;
  const Args& args_;
  std::mt19937_64 rng_;
  nlohmann::ordered_json system_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
  std::vector<int64_t> cached_;  // the tokens the caches hold, in order
};

int runChat(Args& a) {
  auto tokenizer = text(a);
  auto model = linnet::nest::load(a.package, a.load);
  Chat chat(model, tokenizer, a);
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
    chat.answer(line);
  }
  return 0;
}

int runTokenize(Args& a) {
  auto t = text(a);
  if (a.command == "tokenize") {
    std::string joined = fmt::format("{}", fmt::join(a.words, " "));
    fmt::print("[{}]\n", fmt::join(t.tokenizer.encode(joined, false), ", "));
    return 0;
  }
  std::vector<int32_t> ids;
  for (const auto& w : a.words) {
    size_t start = 0;
    while (start <= w.size()) {
      size_t comma = w.find(',', start);
      std::string one = w.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!one.empty()) ids.push_back(static_cast<int32_t>(parseInt(one, "detokenize")));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  fmt::print("{}\n", t.tokenizer.decode(ids));
  return 0;
}
#endif

int runBench(Args& a) {
  linnet::bench::Options o;
  o.mode = a.benchMode;
  o.package = a.package;
  o.load = a.load;
  o.load.seed = static_cast<uint64_t>(a.seed);
  o.steps = a.steps;
  o.promptLen = a.promptLen;
  o.warmup = a.warmup;
  o.json = a.json;
  linnet::bench::run(o);
  return 0;
}

int runGenerate(Args& a) {
#ifdef LINNET_HAVE_TEXT
  std::optional<linnet::nest::TextModel> tokenizer;
  if (a.hasPrompt) {
    tokenizer = text(a);
    for (int32_t id : tokenizer->tokenizer.encode(a.prompt, /*addSpecialTokens=*/true)) a.promptIds.push_back(id);
  }
  std::mt19937_64 rng(a.seed);
#endif
  if (a.promptIds.empty()) throw Usage("generate needs --prompt-ids (or --prompt)");
  if (a.maxNew < 1) throw Usage("--max-new must be at least 1");
  auto model = linnet::nest::load(a.package, a.load);
  int64_t S = static_cast<int64_t>(a.promptIds.size());
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
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    fputs(kHelp, stdout);
    return 0;
  }
  if (argc >= 2 && std::strcmp(argv[1], "--version") == 0) {
    fmt::print("linnet {}\n", LINNET_VERSION);
    return 0;
  }
  try {
    Args a = parse(argc, argv);
    if (a.command == "call") return runCall(a);
    if (a.command == "generate") return runGenerate(a);
    if (a.command == "bench") return runBench(a);
#ifdef LINNET_HAVE_TEXT
    if (a.command == "chat") return runChat(a);
    if (a.command == "tokenize" || a.command == "detokenize") return runTokenize(a);
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
