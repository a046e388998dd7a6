// `linnet export hf` through its library: the llama card's two-layer f32
// fixture (tests/data/llama/gqa2) exported and read back with the runtime's
// safetensors reader is the checkpoint it came from, name for name and bit
// for bit; small shards make an index that covers every tensor once; bf16 is
// the project's rounding; config.json is the model's, and every zoo card
// takes its generics back from its own export's config.json; a GGUF source
// and a tied head work; refusals write nothing.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "../runtime/temp_dir.h"
#include "export_fixtures.h"
#include "export/gguf_export.h"
#include "export/hf_config.h"
#include "export/hf_export.h"
#include "export/hf_safetensors.h"
#include "export/model_facts.h"
#include "nest/model_config.h"
#include "nest/params.h"
#include "weights/bindings.h"
#include "weights/convert.h"
#include "weights/safetensors.h"

using namespace linnet;
using linnet::test::TempDir;
using linnet::test::kCard;
using linnet::test::kGqa2;
using linnet::test::kTokenizer;
using Catch::Matchers::Contains;
namespace ex = linnet::exporter;
namespace fs = std::filesystem;

namespace {

const std::string kSmolLM2 = std::string(LINNET_SOURCE_DIR) + "/nest/smollm2-135m-instruct";

ex::HfExportOptions hfGqa2(const fs::path& out) {
  return test::gqa2Export<ex::HfExportOptions>(out.string());
}

nlohmann::json readJson(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

std::vector<std::byte> bytesOf(const weights::TensorInfo& t) { return {t.data.begin(), t.data.end()}; }

std::size_t entries(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("an f32 Hugging Face export reads back as the checkpoint it came from", "[export][hf]") {
  TempDir dir;
  auto out = dir / "gqa2";
  std::vector<std::string> log;
  ex::HfExportResult r = ex::exportHf(hfGqa2(out), [&](const std::string& s) { log.push_back(s); });
  REQUIRE(log.size() == 1);
  CHECK_THAT(log[0], Contains("no tokenizer"));
  CHECK(r.shards == 1);
  CHECK(r.dtype == DType::F32);
  CHECK(r.files == std::vector<std::string>{"model.safetensors", "config.json", "generation_config.json"});
  CHECK(entries(dir.path()) == 1);  // no temporary folder left beside it

  weights::Checkpoint source = weights::Checkpoint::open(kGqa2);
  weights::Checkpoint back = weights::Checkpoint::open(out / "model.safetensors");
  REQUIRE(back.size() == source.size());
  CHECK(r.tensors == back.size());
  for (const weights::TensorInfo& t : source.tensors()) {
    INFO(t.name);
    const weights::TensorInfo* b = back.find(t.name);
    REQUIRE(b);
    CHECK(b->dtype == DType::F32);
    CHECK(b->shape == t.shape);
    CHECK(bytesOf(*b) == bytesOf(t));
  }
  CHECK(back.metadata(0).at("format") == "pt");

  nlohmann::json c = readJson(out / "config.json");
  CHECK(c["architectures"] == nlohmann::json::array({"LlamaForCausalLM"}));
  CHECK(c["model_type"] == "llama");
  CHECK(c["hidden_size"] == 64);
  CHECK(c["intermediate_size"] == 96);
  CHECK(c["num_hidden_layers"] == 2);
  CHECK(c["num_attention_heads"] == 4);
  CHECK(c["num_key_value_heads"] == 2);
  CHECK(c["vocab_size"] == 64);
  CHECK(c["head_dim"] == 16);
  CHECK(c["max_position_embeddings"] == 64);
  CHECK(c["rope_theta"] == 500000.0);
  CHECK(c["rms_norm_eps"] == 1e-5);
  CHECK(c["hidden_act"] == "silu");
  CHECK(c["attention_bias"] == false);
  CHECK(c["mlp_bias"] == false);
  CHECK(c["tie_word_embeddings"] == false);
  CHECK(c["torch_dtype"] == "float32");
  // The fixture's own config.json (transformers wrote it) has this rope_scaling.
  nlohmann::json fixture = readJson(fs::path(kGqa2).parent_path() / "config.json");
  CHECK(c["rope_scaling"] == fixture["rope_scaling"]);
  CHECK_FALSE(c.contains("bos_token_id"));  // no tokenizer, no ids

  nlohmann::json g = readJson(out / "generation_config.json");
  CHECK(g["do_sample"] == true);  // the card's [sampling]
  CHECK(g["temperature"] == 0.6);
  CHECK(g["top_p"] == 0.9);
  CHECK(g["top_k"] == 0);
}

TEST_CASE("small shards: every tensor in one shard, the index covering each once", "[export][hf]") {
  TempDir dir;
  auto o = hfGqa2(dir / "sharded");
  o.shardBytes = 40000;  // an embedding is 16384 bytes, an mlp matrix 24576
  ex::HfExportResult r = ex::exportHf(o);
  REQUIRE(r.shards > 2);
  nlohmann::json index = readJson(dir / "sharded/model.safetensors.index.json");
  weights::Checkpoint source = weights::Checkpoint::open(kGqa2);
  CHECK(index["weight_map"].size() == source.size());
  std::uint64_t total = 0;
  std::set<std::string> shardFiles;
  for (const weights::TensorInfo& t : source.tensors()) {
    INFO(t.name);
    REQUIRE(index["weight_map"].contains(t.name));
    shardFiles.insert(index["weight_map"][t.name].get<std::string>());
    total += t.data.size();
  }
  CHECK(index["metadata"]["total_size"] == total);
  CHECK(shardFiles.size() == r.shards);
  CHECK(shardFiles.count(fmt::format("model-00001-of-{:05d}.safetensors", r.shards)));
  CHECK_FALSE(fs::exists(dir / "sharded/model.safetensors"));
  for (const std::string& f : shardFiles) {
    weights::Checkpoint shard = weights::Checkpoint::open(dir / "sharded" / f);
    std::uint64_t bytes = 0;
    for (const weights::TensorInfo& t : shard.tensors()) bytes += t.data.size();
    CHECK((bytes <= o.shardBytes || shard.size() == 1));
  }
  // The index reads back as the source, tensor for tensor.
  weights::Checkpoint back = weights::Checkpoint::open(dir / "sharded/model.safetensors.index.json");
  REQUIRE(back.size() == source.size());
  for (const weights::TensorInfo& t : source.tensors()) CHECK(bytesOf(back.at(t.name)) == bytesOf(t));
}

TEST_CASE("bf16 and f16 exports are the project's round-to-nearest-even of the values", "[export][hf]") {
  weights::Checkpoint source = weights::Checkpoint::open(kGqa2);
  for (DType d : {DType::BF16, DType::F16}) {
    INFO(name(d));
    TempDir dir;
    auto o = hfGqa2(dir / "half");
    o.dtype = d;
    ex::exportHf(o);
    weights::Checkpoint back = weights::Checkpoint::open(dir / "half/model.safetensors");
    for (const weights::TensorInfo& t : source.tensors()) {
      INFO(t.name);
      const weights::TensorInfo& b = back.at(t.name);
      CHECK(b.dtype == d);
      std::vector<float> values(static_cast<std::size_t>(t.elementCount()));
      std::memcpy(values.data(), t.data.data(), t.data.size());
      std::vector<std::uint16_t> want;
      for (float v : values) want.push_back(d == DType::BF16 ? weights::f32ToBf16(v) : weights::f32ToF16(v));
      REQUIRE(b.data.size() == want.size() * 2);
      CHECK(std::memcmp(b.data.data(), want.data(), b.data.size()) == 0);
    }
    CHECK(readJson(dir / "half/config.json")["torch_dtype"] == ex::torchDtypeName(d));
  }
}

TEST_CASE("a GGUF source exports as the checkpoint, its tokenizer rebuilt", "[export][hf][gguf]") {
  TempDir dir;
  ex::GgufExportOptions g;
  g.package = kCard;
  g.load.weights = kGqa2;
  g.load.generics = test::gqa2Generics();
  g.tokenizer = kTokenizer;
  g.output = (dir / "gqa2.gguf").string();
  ex::exportGguf(g);
  auto o = hfGqa2(dir / "from-gguf");
  o.load.weights = g.output;
  ex::HfExportResult r = ex::exportHf(o);
  CHECK(r.dtype == DType::F32);
  weights::Checkpoint source = weights::Checkpoint::open(kGqa2);
  weights::Checkpoint back = weights::Checkpoint::open(dir / "from-gguf/model.safetensors");
  REQUIRE(back.size() == source.size());
  for (const weights::TensorInfo& t : source.tensors()) CHECK(bytesOf(back.at(t.name)) == bytesOf(t));  // q/k un-permuted
  REQUIRE(fs::exists(dir / "from-gguf/tokenizer.json"));
  nlohmann::json tc = readJson(dir / "from-gguf/tokenizer_config.json");
  CHECK(tc["tokenizer_class"] == "PreTrainedTokenizerFast");
  CHECK(tc["bos_token"] == "<|im_start|>");
  CHECK(tc.contains("chat_template"));
  nlohmann::json c = readJson(dir / "from-gguf/config.json");
  nlohmann::json tok = readJson(dir / "from-gguf/tokenizer.json");
  std::map<std::string, int> ids;
  for (const auto& a : tok["added_tokens"]) ids[a["content"].get<std::string>()] = a["id"].get<int>();
  CHECK(c["bos_token_id"] == ids.at("<|im_start|>"));
  CHECK(c["eos_token_id"] == ids.at("<|im_end|>"));
  CHECK(readJson(dir / "from-gguf/generation_config.json")["eos_token_id"] == ids.at("<|im_end|>"));
}

TEST_CASE("a tokenizer.json's folder is copied as it is", "[export][hf][tokenizer]") {
  TempDir dir;
  auto o = hfGqa2(dir / "tok");
  o.tokenizer = kTokenizer;
  ex::exportHf(o);
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    INFO(f);
    std::ifstream a(fs::path(kTokenizer).parent_path() / f), b(dir / "tok" / f);
    std::stringstream sa, sb;
    sa << a.rdbuf();
    sb << b.rdbuf();
    CHECK(sa.str() == sb.str());
  }
  nlohmann::json c = readJson(dir / "tok/config.json");
  CHECK(c["bos_token_id"].is_number_integer());
  CHECK(c["eos_token_id"].is_number_integer());
}

TEST_CASE("a tied head is written once, with the values linnet call binds", "[export][hf]") {
  TempDir dir;
  ex::HfExportOptions o;
  o.package = kSmolLM2;
  o.load.randomWeights = true;
  o.load.seed = 7;
  o.load.generics = {{"Vocab", 64}, {"H", 64}, {"Heads", 4}, {"KvHeads", 2}, {"Inner", 96}, {"Layers", 2}, {"MaxSeq", 32}};
  o.output = (dir / "tied").string();
  ex::HfExportResult r = ex::exportHf(o);
  ex::ModelFacts facts = ex::instantiate(o.package, o.load);
  CHECK(r.tensors + 1 == facts.params.size());
  weights::Checkpoint back = weights::Checkpoint::open(dir / "tied/model.safetensors");
  CHECK_FALSE(back.find("lm_head.weight"));
  CHECK(readJson(dir / "tied/config.json")["tie_word_embeddings"] == true);
  CHECK_FALSE(readJson(dir / "tied/config.json").contains("rope_scaling"));  // the card replaces the scaled tables
  // Every written tensor holds the very values `--random-weights` binds.
  std::vector<nest::ParamBytes> bound = nest::bindParams(o.package, facts.params, facts.dims, o.load);
  weights::Bindings bindings = weights::Bindings::load(fs::path(o.package) / "bindings.json");
  for (std::size_t k = 0; k < facts.params.size(); ++k) {
    if (facts.params[k].path == "lm_head.weight") continue;
    INFO(facts.params[k].path);
    const weights::TensorInfo& t = back.at(*bindings.find(facts.params[k].path));
    CHECK(std::vector<std::byte>(bound[k].bytes.begin(), bound[k].bytes.end()) == bytesOf(t));
  }
}

TEST_CASE("every zoo card takes its generics back from its exported config.json", "[export][hf][config]") {
  for (const char* name : {"llama-3.1-8b-instruct", "llama-3.2-1b-instruct", "smollm2-135m-instruct",
                           "smollm2-1.7b-instruct", "tinyllama-1.1b-chat", "mistral-7b-instruct-v0.3", "qwen3-0.6b",
                           "qwen2.5-0.5b-instruct", "phi-3-mini-4k-instruct", "gemma-3-270m"}) {
    INFO(name);
    const std::string package = std::string(LINNET_SOURCE_DIR) + "/nest/" + name;
    ex::ModelFacts facts = ex::instantiate(package, {});
    nest::CardConfig card = nest::readCardConfig(package);
    std::vector<std::string> missing;
    ex::HfConfigFacts extra;
    extra.dtype = *dtypeNamed(facts.dtypes.at("T"));
    extra.ropeScaling = ex::llama3RopeScaling(facts, missing);
    // Tied as the export finds it: the head bound to the embedding's tensor.
    weights::Bindings bindings = weights::Bindings::load(fs::path(package) / "bindings.json");
    extra.tiedEmbeddings = bindings.find("lm_head.weight") == bindings.find("embedding.weight");
    REQUIRE(missing.empty());
    TempDir dir;
    std::ofstream(dir / "config.json") << ex::hfConfigJson(facts, card, *nest::cardFamily(package, card), extra).dump(2);
    std::ofstream(dir / "model.safetensors").put('\0');  // found, not read
    nest::LoadOptions o;
    o.weights = dir.path().string();
    REQUIRE_NOTHROW(nest::prepareLoad(package, o));  // checked against the card: no problem
    o.genericsFromConfig = true;
    nest::LoadOptions taken = nest::prepareLoad(package, o);
    for (const nest::KeyMapping& m : card.config->mappings) {
      if (m.isConstant()) continue;
      INFO(m.name);
      REQUIRE(taken.generics.count(m.name));
      CHECK(taken.generics.at(m.name).str() == card.generics.at(m.name).str());
    }
  }
}

TEST_CASE("Hugging Face export refusals come before anything is written", "[export][hf]") {
  TempDir dir;
  fs::create_directories(dir / "out");
  dir.write("out/keep", std::as_bytes(std::span("keep", 4)));
  auto o = hfGqa2(dir / "out");
  CHECK_THROWS_WITH(ex::exportHf(o), Contains("exists; pass --force"));
  o.load.generics.insert_or_assign("Layers", 3);  // the checkpoint has 2
  o.force = true;
  CHECK_THROWS_WITH(ex::exportHf(o), Contains("cannot bind"));
  CHECK(entries(dir / "out") == 1);
  CHECK(entries(dir.path()) == 1);  // no temporary folder, no backup

  // --force replaces the folder whole.
  o.load.generics.insert_or_assign("Layers", 2);
  ex::exportHf(o);
  CHECK_FALSE(fs::exists(dir / "out/keep"));
  CHECK(fs::exists(dir / "out/model.safetensors"));
  CHECK(entries(dir.path()) == 1);

  // A family without a Hugging Face architecture, a parameter without a binding.
  fs::copy(kCard, dir / "card", fs::copy_options::recursive);
  auto card = hfGqa2(dir / "x");
  card.package = (dir / "card").string();
  {
    std::ifstream in(dir / "card/nest.toml");
    std::stringstream s;
    s << in.rdbuf();
    std::string text = s.str();
    text.replace(text.find("family = \"llama\""), 16, "family = \"mamba\"");
    std::ofstream(dir / "card/nest.toml") << text;
  }
  CHECK_THROWS_WITH(ex::exportHf(card), Contains("family = \"mamba\", but the zoo has no descriptor of it"));
  CHECK_FALSE(fs::exists(dir / "x"));
  CHECK(entries(dir.path()) == 2);
}

TEST_CASE("shard sizes as transformers writes them", "[export][hf]") {
  CHECK(ex::parseByteSize("5GB") == 5'000'000'000u);
  CHECK(ex::parseByteSize("500MB") == 500'000'000u);
  CHECK(ex::parseByteSize("2GiB") == 2u << 30);
  CHECK(ex::parseByteSize("100kb") == 100'000u);
  CHECK(ex::parseByteSize("1.5GB") == 1'500'000'000u);
  CHECK(ex::parseByteSize("123") == 123u);
  CHECK_FALSE(ex::parseByteSize("5 GB"));
  CHECK_FALSE(ex::parseByteSize("GB"));
  CHECK_FALSE(ex::parseByteSize("0"));
  CHECK_FALSE(ex::parseByteSize("5XB"));
  // A tensor larger than a shard is a shard of its own; the rest pack in order.
  std::vector<ex::HfTensor> t = {{"a", DType::F32, {10}}, {"b", DType::F32, {100}}, {"c", DType::F32, {5}},
                                 {"d", DType::F32, {5}}};
  auto shards = ex::planShards(t, 60);
  REQUIRE(shards.size() == 3);
  CHECK(shards[0].tensors == std::vector<std::size_t>{0});
  CHECK(shards[1].tensors == std::vector<std::size_t>{1});
  CHECK(shards[2].tensors == std::vector<std::size_t>{2, 3});
  CHECK(shards[2].file == "model-00003-of-00003.safetensors");
  CHECK(ex::planShards(t, 1000).front().file == "model.safetensors");
}
