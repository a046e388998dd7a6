// Hugging Face folders as they come (runtime/nest/model_config.h): finding
// the checkpoint in a folder, the cards' [config] / [gguf] tables, the
// checks of config.json against the card (one line per mismatch), taking
// the generics from it, and the recommended sampling (nest/text.h).
#include <catch2/catch.hpp>

#include <cmath>

#include "nest/families.h"
#include "nest/model_config.h"
#include "nest/text.h"
#include "temp_dir.h"

using Catch::Matchers::Contains;
using linnet::nest::CardConfig;
using linnet::nest::ConfigValues;
using linnet::nest::Error;
using linnet::nest::GenericValue;

namespace {

const std::string kLlama = std::string(LINNET_SOURCE_DIR) + "/nest/llama-3.1-8b-instruct";
const std::string kSmolLM2 = std::string(LINNET_SOURCE_DIR) + "/nest/smollm2-135m-instruct";
const std::string kGqa2 = std::string(LINNET_TEST_DATA) + "/llama/gqa2";

const char* kCard = R"(
[generics]
H = 64
Layers = 2
T = "bf16"
MaxSeq = 64
[config]
H = "hidden_size"
Layers = "num_hidden_layers"
T = ["torch_dtype", "dtype"]
Heads = "num_attention_heads"
"m.rope.THETA" = ["rope_theta", "rope_parameters.rope_theta"]
"m.rope.FACTOR" = "rope_scaling.factor"
absent = ["rope_scaling"]
[gguf]
Layers = "{arch}.block_count"
Vocab = "tokenizer.ggml.tokens"
)";

ConfigValues json(const std::string& text) { return {"m/config.json", nlohmann::json::parse(text), true, ""}; }

std::optional<double> constants(const std::string& name) {
  if (name == "m.rope.THETA") return 500000.0f;  // an f32 constant, as the card's source has it
  if (name == "m.rope.FACTOR") return 8.0;
  return std::nullopt;
}

linnet::nest::ConfigCheck check(const std::string& config, std::map<std::string, GenericValue> given = {},
                                bool fromConfig = false) {
  CardConfig card = linnet::nest::parseCardConfig(kCard, "m/nest.toml");
  return linnet::nest::checkConfig(card, *card.config, json(config), given, fromConfig, constants);
}

std::string str(const std::map<std::string, GenericValue>& g, const std::string& name) {
  auto it = g.find(name);
  return it == g.end() ? "(unset)" : it->second.str();
}

}  // namespace

TEST_CASE("a card's [config] and [gguf] tables, in the card's order", "[model_config]") {
  CardConfig card = linnet::nest::parseCardConfig(kCard, "m/nest.toml");
  REQUIRE(card.config);
  std::vector<std::string> names;
  for (const auto& m : card.config->mappings) names.push_back(m.name);
  CHECK(names == std::vector<std::string>{"H", "Layers", "T", "Heads", "m.rope.THETA", "m.rope.FACTOR"});
  CHECK(card.config->mappings[2].keys == std::vector<std::string>{"torch_dtype", "dtype"});
  CHECK(card.config->mappings[4].isConstant());
  CHECK(card.config->absent == std::vector<std::string>{"rope_scaling"});
  REQUIRE(card.gguf);
  CHECK(card.gguf->mappings.size() == 2);
  CHECK(card.generics.at("T").str() == "bf16");
  CHECK_THROWS_WITH(linnet::nest::parseCardConfig("[config]\nH = 3\n", "m/nest.toml"),
                    Contains("m/nest.toml: [config] H must be a key"));
  CHECK_THROWS_WITH(linnet::nest::parseCardConfig("[config]\nabsent = \"x\"\n", "m/nest.toml"),
                    Contains("[config] absent must be a list"));
  CHECK_FALSE(linnet::nest::parseCardConfig("[generics]\nH = 1\n", "m/nest.toml").config);
}

TEST_CASE("config values: dotted keys, null as missing, {arch}", "[model_config]") {
  ConfigValues v = json(R"({"a": {"b": 3, "n": null}, "x.y": 1, "s": "t"})");
  CHECK(*linnet::nest::findConfigValue(v, "a.b") == 3);
  CHECK(*linnet::nest::findConfigValue(v, "x.y") == 1);
  CHECK_FALSE(linnet::nest::findConfigValue(v, "a.n"));
  CHECK_FALSE(linnet::nest::findConfigValue(v, "a.b.c"));
  CHECK_FALSE(linnet::nest::findConfigValue(v, "s.t"));
  ConfigValues g{"m.gguf", nlohmann::json{{"llama.block_count", 2}}, false, "llama"};
  CHECK(*linnet::nest::findConfigValue(g, "{arch}.block_count") == 2);
  g.arch.clear();
  CHECK_FALSE(linnet::nest::findConfigValue(g, "{arch}.block_count"));
  // "a / b": a floor quotient of two whole numbers (head_dim where a config has none).
  ConfigValues q = json(R"({"hidden_size": 896, "num_attention_heads": 14, "zero": 0, "f": 1.5})");
  CHECK(*linnet::nest::findConfigValue(q, "hidden_size / num_attention_heads") == 64);
  CHECK_FALSE(linnet::nest::findConfigValue(q, "hidden_size / missing"));
  CHECK_FALSE(linnet::nest::findConfigValue(q, "hidden_size / zero"));
  CHECK_FALSE(linnet::nest::findConfigValue(q, "f / num_attention_heads"));
  CHECK(linnet::nest::elementTypeOfTorch("bfloat16") == "bf16");
  CHECK(linnet::nest::elementTypeOfTorch("torch.float32") == "f32");
  CHECK_FALSE(linnet::nest::elementTypeOfTorch("int8"));
}

TEST_CASE("a config that agrees with the card passes, and fills what the card leaves unset", "[model_config]") {
  auto r = check(R"({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "torch_dtype": "float32",
                     "rope_theta": 500000.0, "rope_scaling": null})");
  CHECK(r.problems.empty());
  CHECK(str(r.generics, "Heads") == "4");    // not in [generics]: the config's
  CHECK(str(r.generics, "H") == "(unset)");  // the card's, left to nest.toml
  CHECK(str(r.generics, "T") == "(unset)");  // an element type is the card's to choose
}

TEST_CASE("each mismatch is one line naming the key, both values and where the card's was set", "[model_config]") {
  auto r = check(R"({"hidden_size": 576, "num_hidden_layers": 2, "rope_theta": 100000})", {{"Layers", 3}});
  REQUIRE(r.problems.size() == 3);
  CHECK(r.problems[0] ==
        "m/config.json: hidden_size = 576, but the model's H = 64 (set by m/nest.toml [generics]); load with "
        "--generics-from-config to take it from config.json, or --set H=576");
  CHECK(r.problems[1] ==
        "m/config.json: num_hidden_layers = 2, but the model's Layers = 3 (set by --set Layers=3); drop that --set, "
        "or give --set Layers=2");
  CHECK_THAT(r.problems[2],
             Contains("rope_theta = 100000, but the model's m.rope.THETA = 500000 (the package's source)"));
  for (const auto& p : r.problems) CHECK(p.find('\n') == std::string::npos);
}

TEST_CASE("constants compare within a relative 1e-6; absent keys must be null or missing", "[model_config]") {
  CHECK(check(R"({"rope_theta": 500000.0001})").problems.empty());
  CHECK(check(R"({"rope_parameters": {"rope_theta": 500000}})").problems.empty());  // transformers 5's form
  CHECK(check(R"({"rope_theta": 500001})").problems.size() == 1);
  CHECK(check(R"({"rope_theta": "big"})").problems.at(0) ==
        "m/config.json: rope_theta = \"big\" is not a number, as the constant m.rope.THETA must be");
  auto scaled = check(R"({"rope_scaling": {"factor": 8.0, "rope_type": "llama3"}})");
  REQUIRE(scaled.problems.size() == 1);  // the factor agrees; the table's presence does not
  CHECK_THAT(scaled.problems[0], Contains("rope_scaling = {\"factor\":8.0,\"rope_type\":\"llama3\"}, but the card "
                                          "assumes it is null or missing (m/nest.toml [config] absent)"));
  // A constant the card maps that its source does not have.
  CardConfig card = linnet::nest::parseCardConfig(kCard, "m/nest.toml");
  auto none = [](const std::string&) -> std::optional<double> { return std::nullopt; };
  auto r = linnet::nest::checkConfig(card, *card.config, json(R"({"rope_theta": 1})"), {}, false, none);
  REQUIRE(r.problems.size() == 1);
  CHECK_THAT(r.problems[0], Contains("m/nest.toml: [config] maps `m.rope.THETA`, which is not a number constant"));
  // No source to read constants from (one that does not load): not checked here.
  CHECK(
      linnet::nest::checkConfig(card, *card.config, json(R"({"rope_theta": 1})"), {}, false, nullptr).problems.empty());
}

TEST_CASE("expect: a key whose value the source assumes is checked when present", "[model_config]") {
  CardConfig card = linnet::nest::parseCardConfig(
      "[config]\nH = \"hidden_size\"\nexpect = { hidden_act = \"silu\", use_sliding_window = false }\n", "m/nest.toml");
  auto run = [&](const std::string& config) {
    return linnet::nest::checkConfig(card, *card.config, json(config), {}, false, constants).problems;
  };
  CHECK(run(R"({"hidden_size": 8, "hidden_act": "silu", "use_sliding_window": false})").empty());
  CHECK(run(R"({"hidden_size": 8})").empty());  // absent: nothing to compare
  auto problems = run(R"({"hidden_act": "gelu", "use_sliding_window": true})");
  REQUIRE(problems.size() == 2);
  CHECK(problems[0] ==
        "m/config.json: hidden_act = \"gelu\", but the card assumes \"silu\" (m/nest.toml [config] expect): its source "
        "computes otherwise");
  CHECK_THROWS_WITH(linnet::nest::parseCardConfig("[config]\nexpect = { a = [1] }\n", "m/nest.toml"),
                    Contains("[config] expect.a must be a string, a number or a boolean"));
}

TEST_CASE("--generics-from-config takes the config's generics; a --set that disagrees is an error", "[model_config]") {
  const char* config = R"({"hidden_size": 576, "num_hidden_layers": 30, "torch_dtype": "bfloat16"})";
  auto r = check(config, {{"MaxSeq", 512}}, true);
  CHECK(r.problems.empty());
  CHECK(str(r.generics, "H") == "576");
  CHECK(str(r.generics, "Layers") == "30");
  CHECK(str(r.generics, "T") == "bf16");
  CHECK(str(r.generics, "MaxSeq") == "512");  // not in config.json: as given
  auto agreeing = check(config, {{"Layers", 30}}, true);
  CHECK(agreeing.problems.empty());
  auto clash = check(config, {{"Layers", 2}}, true);
  REQUIRE(clash.problems.size() == 1);
  CHECK_THAT(clash.problems[0], Contains("num_hidden_layers = 30, but the model's Layers = 2 (set by --set Layers=2)"));
  // An element type: the --set wins (how to compute, not the checkpoint's shape).
  auto typed = check(config, {{"T", "f32"}}, true);
  CHECK(typed.problems.empty());
  CHECK(str(typed.generics, "T") == "f32");
  CHECK_THAT(check(R"({"num_hidden_layers": 2.5})", {}, true).problems.at(0),
             Contains("num_hidden_layers = 2.5 is not a whole number, as the generic Layers must be"));
  CHECK_THAT(check(R"({"torch_dtype": "int8"})", {}, true).problems.at(0),
             Contains("torch_dtype = \"int8\" names no element type the generic T can take"));
}

TEST_CASE("GGUF metadata through [gguf]: {arch} keys, an array as its length", "[model_config]") {
  CardConfig card = linnet::nest::parseCardConfig(kCard, "m/nest.toml");
  ConfigValues g{"m.gguf", nlohmann::json{{"llama.block_count", 3}, {"tokenizer.ggml.tokens", 287}}, false, "llama"};
  auto r = linnet::nest::checkConfig(card, *card.gguf, g, {}, false, constants);
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0] == "m.gguf: llama.block_count = 3, but the model's Layers = 2 (set by m/nest.toml [generics]); "
                         "load with --generics-from-config to take it from the GGUF's metadata, or --set Layers=3");
  CHECK(str(r.generics, "Vocab") == "287");
  ConfigValues real = linnet::nest::readGgufMetadata(std::string(LINNET_TEST_DATA) + "/gguf/llama.gguf");
  CHECK(real.arch == "llama");
  CHECK(*linnet::nest::findConfigValue(real, "{arch}.block_count") == 2);
  CHECK(*linnet::nest::findConfigValue(real, "tokenizer.ggml.tokens") == 287);
  CHECK(*linnet::nest::findConfigValue(real, "{arch}.rope.freq_base") == 10000.0);
}

TEST_CASE("a folder's checkpoint: model.safetensors, else the index; none is one clear error", "[model_config]") {
  linnet::test::TempDir dir;
  CHECK_THROWS_WITH(linnet::nest::findWeights(dir.path().string()),
                    Contains(dir.path().string() + ": no checkpoint in this folder: it has neither model.safetensors "
                                                   "nor model.safetensors.index.json"));
  dir.write("model.safetensors.index.json", "{}");
  dir.write("tokenizer.json", "{}");
  auto w = linnet::nest::findWeights(dir.path().string());
  CHECK(w.checkpoint == (dir / "model.safetensors.index.json").string());
  CHECK(w.tokenizer == (dir / "tokenizer.json").string());
  CHECK(w.config.empty());
  dir.write("model.safetensors", "x");
  CHECK(linnet::nest::findWeights(dir.path().string()).checkpoint == (dir / "model.safetensors").string());
  // A file is taken as it is, alone.
  auto file = linnet::nest::findWeights((dir / "model.safetensors").string());
  CHECK(file.folder.empty());
  CHECK(file.checkpoint == (dir / "model.safetensors").string());
}

TEST_CASE("the cards' tables read the gqa2 fixture's config.json (transformers')", "[model_config]") {
  linnet::nest::LoadOptions o;
  o.weights = kGqa2;
  o.genericsFromConfig = true;
  o.generics = {{"MaxSeq", 64}};
  linnet::nest::LoadOptions p = linnet::nest::prepareLoad(kLlama, o);
  CHECK(p.weights == kGqa2 + "/model.safetensors");
  CHECK_FALSE(p.genericsFromConfig);
  std::map<std::string, std::string> got;
  for (const auto& [k, v] : p.generics) got[k] = v.str();
  CHECK(got == std::map<std::string, std::string>{{"H", "64"},
                                                  {"Heads", "4"},
                                                  {"Inner", "96"},
                                                  {"KvHeads", "2"},
                                                  {"Layers", "2"},
                                                  {"MaxSeq", "64"},
                                                  {"T", "f32"},
                                                  {"Vocab", "64"}});
  // Applied twice is applied once.
  CHECK(linnet::nest::prepareLoad(kLlama, p).generics.size() == p.generics.size());
  // Without the flag, the card's own generics (the 8B model's) disagree, one line each.
  o.genericsFromConfig = false;
  try {
    linnet::nest::prepareLoad(kLlama, o);
    FAIL("no error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK_THAT(m, Contains(kGqa2 + "/config.json: vocab_size = 64, but the model's Vocab = 128256 (set by " + kLlama +
                           "/nest.toml [generics]); load with --generics-from-config"));
    CHECK(std::count(m.begin(), m.end(), '\n') == 5);  // Vocab, H, Heads, KvHeads, Inner, Layers; rope agrees
  }
  // SmolLM2's card: its rotary base and no scaling, against Llama 3.1's config.
  o.genericsFromConfig = true;
  try {
    linnet::nest::prepareLoad(kSmolLM2, o);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Contains("rope_theta = 500000.0, but the model's llama.rope.THETA = 100000 (set by " +
                                  kSmolLM2 + "/nest.toml [constants])"));
    CHECK_THAT(e.what(), Contains("rope_scaling = {"));
  }
  // --generics-from-config with nothing to read.
  o.weights = kGqa2 + "/model.safetensors";
  CHECK_THROWS_WITH(linnet::nest::prepareLoad(kLlama, o),
                    Contains("has no config to take the generics from: a .safetensors file or index is read alone"));
}

TEST_CASE("recommended sampling: generation_config.json, else the card's [sampling], else greedy", "[model_config]") {
  auto smol = linnet::nest::recommendedSampling(kSmolLM2, "");
  CHECK(smol.sampling.temperature == 0.2);
  CHECK(smol.sampling.topP == 0.9);
  CHECK(smol.source == kSmolLM2 + "/nest.toml [sampling]");
  CHECK(linnet::nest::describe(smol.sampling) == "temperature 0.2, top-p 0.9, seed 0");
  linnet::test::TempDir dir;
  dir.write("generation_config.json", R"({"bos_token_id": 1, "eos_token_id": 2})");
  CHECK(linnet::nest::recommendedSampling(kSmolLM2, dir.path().string()).sampling.temperature == 0.2);  // says nothing
  dir.write("generation_config.json", R"({"do_sample": true, "temperature": 0.6, "top_p": 0.9})");
  auto meta = linnet::nest::recommendedSampling(kSmolLM2, dir.path().string());
  CHECK(meta.source == (dir / "generation_config.json").string());
  CHECK(meta.sampling.temperature == 0.6);
  CHECK(meta.sampling.topK == 50);  // transformers' default when sampling
  dir.write("generation_config.json", R"({"temperature": 0.6, "repetition_penalty": 1.1})");
  auto greedy = linnet::nest::recommendedSampling(kSmolLM2, dir.path().string());
  CHECK(greedy.sampling.temperature == 0);  // no do_sample: transformers decodes greedily
  CHECK(greedy.sampling.repetitionPenalty == 1.1);
  CHECK(linnet::nest::describe(greedy.sampling) == "greedy, repetition penalty 1.1");
  linnet::test::TempDir card;
  card.write("nest.toml", "[sampling]\ntemperature = 0.7\ntop_k = 40\n");
  auto fromCard = linnet::nest::recommendedSampling(card.path().string(), "");
  CHECK(fromCard.sampling.topK == 40);
  card.write("nest.toml", "[sampling]\ntemprature = 0.7\n");
  CHECK_THROWS_WITH(linnet::nest::recommendedSampling(card.path().string(), ""),
                    Contains("unknown setting `temprature`"));
  card.write("nest.toml", "[sampling]\ntop_p = 0\n");
  CHECK_THROWS_WITH(linnet::nest::recommendedSampling(card.path().string(), ""), Contains("top-p 0 must be in (0, 1]"));
  card.write("nest.toml", "[model]\nname = \"x\"\n");
  auto none = linnet::nest::recommendedSampling(card.path().string(), "");
  CHECK(none.source.empty());
  CHECK(none.sampling.temperature == 0);
}

TEST_CASE("a GGUF's rope scaling is refused by a card that has none ([config] absent, through the descriptor)",
          "[model_config]") {
  const std::string package = std::string(LINNET_SOURCE_DIR) + "/nest/smollm2-135m-instruct";
  CardConfig card = linnet::nest::readCardConfig(package);
  std::optional<linnet::nest::Family> family = linnet::nest::cardFamily(package, card);
  REQUIRE(family);
  linnet::nest::KeyTable table = linnet::nest::ggufTable(*card.config, *family);
  ConfigValues scaled{"m.gguf", nlohmann::json{{"llama.rope.scaling.type", "linear"}}, false, "llama"};
  auto r = linnet::nest::checkConfig(card, table, scaled, {}, false, constants);
  REQUIRE(r.problems.size() == 1);
  CHECK_THAT(r.problems[0], Contains("m.gguf: llama.rope.scaling.type = \"linear\", but the card assumes it is null "
                                     "or missing"));
  // "none" is how a GGUF says there is none.
  ConfigValues none{"m.gguf", nlohmann::json{{"llama.rope.scaling.type", "none"}}, false, "llama"};
  CHECK(linnet::nest::checkConfig(card, table, none, {}, false, constants).problems.empty());
}

TEST_CASE("every zoo card accepts its model's published config.json, and takes its generics from it", "[model_config]") {
  // tests/data/nest/configs: the configs as the Hub publishes them (tests/nest/make_param_counts.py).
  for (const char* card : {"llama-3.1-8b-instruct", "llama-3.2-1b-instruct", "smollm2-135m-instruct",
                           "smollm2-1.7b-instruct", "tinyllama-1.1b-chat", "mistral-7b-instruct-v0.3", "qwen3-0.6b",
                           "qwen2.5-0.5b-instruct", "phi-3-mini-4k-instruct",
                           "gemma-3-270m"}) {
    INFO(card);
    const std::string package = std::string(LINNET_SOURCE_DIR) + "/nest/" + card;
    linnet::test::TempDir dir;
    std::filesystem::copy_file(std::string(LINNET_TEST_DATA) + "/nest/configs/" + card + ".json",
                               dir.path() / "config.json");
    std::ofstream(dir.path() / "model.safetensors").put('\0');  // found, not read: nothing is bound here
    // Every card names a family the zoo describes (nest/families), and its
    // model's config.json is that family's.
    std::optional<linnet::nest::Family> family = linnet::nest::cardFamily(package, linnet::nest::readCardConfig(package));
    REQUIRE(family);
    CHECK_NOTHROW(linnet::nest::checkFamily(*family, package, linnet::nest::readConfigJson((dir.path() / "config.json").string())));
    linnet::nest::LoadOptions o;
    o.weights = dir.path().string();
    // The card's own generics (SmolLM2-135M's f32 T aside, which is never checked) agree with the config.
    linnet::nest::LoadOptions checked;
    REQUIRE_NOTHROW(checked = linnet::nest::prepareLoad(package, o));
    // Taken from the config, they are the card's.
    o.genericsFromConfig = true;
    linnet::nest::LoadOptions taken = linnet::nest::prepareLoad(package, o);
    CardConfig c = linnet::nest::readCardConfig(package);
    for (const char* g : {"Vocab", "H", "Heads", "KvHeads", "D", "Inner", "Layers"}) {
      INFO(g);
      if (g == std::string("D") && !c.generics.count(g)) continue;  // the Llama source has none
      REQUIRE(taken.generics.count(g));
      CHECK(taken.generics.at(g).str() == c.generics.at(g).str());
    }
  }
}
