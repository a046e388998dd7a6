// GGUF files as Hugging Face checkpoints through the zoo's family
// descriptors (nest/families): names, the undoing of convert_hf_to_gguf.py's
// q/k row permutation and of Gemma's norm shift, tied embeddings, config.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "gguf/architecture.h"
#include "gguf_test_util.h"

using namespace linnet::gguf;
using linnet::DType;
using namespace linnet::gguf::test;
using Catch::Matchers::Contains;

namespace {
const std::filesystem::path kFamilies = std::filesystem::path(LINNET_SOURCE_DIR) / "nest" / "families";
const Architecture& llama() {
  static const Architecture a = readArchitecture(kFamilies / "llama.toml");
  return a;
}
}  // namespace

TEST_CASE("llama.cpp names <-> Hugging Face names", "[gguf][llama]") {
  const std::pair<const char*, const char*> pairs[] = {
      {"token_embd.weight", "model.embed_tokens.weight"},
      {"output_norm.weight", "model.norm.weight"},
      {"output.weight", "lm_head.weight"},
      {"blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight"},
      {"blk.12.attn_q.weight", "model.layers.12.self_attn.q_proj.weight"},
      {"blk.3.attn_q.bias", "model.layers.3.self_attn.q_proj.bias"},
      {"blk.3.attn_k.weight", "model.layers.3.self_attn.k_proj.weight"},
      {"blk.3.attn_v.weight", "model.layers.3.self_attn.v_proj.weight"},
      {"blk.3.attn_output.weight", "model.layers.3.self_attn.o_proj.weight"},
      {"blk.3.ffn_norm.weight", "model.layers.3.post_attention_layernorm.weight"},
      {"blk.3.ffn_gate.weight", "model.layers.3.mlp.gate_proj.weight"},
      {"blk.3.ffn_up.weight", "model.layers.3.mlp.up_proj.weight"},
      {"blk.31.ffn_down.weight", "model.layers.31.mlp.down_proj.weight"},
  };
  for (auto [g, h] : pairs) {
    CHECK(llama().huggingFaceName(g) == std::optional<std::string>(h));
    CHECK(llama().ggufName(h) == std::optional<std::string>(g));
  }
  for (const char* bad : {"rope_freqs.weight", "blk.x.attn_q.weight", "blk..attn_q.weight", "blk.01.attn_q.weight",
                          "blk.1.attn_q", "blk.1.ffn_gate_exps.weight", "token_embd", "blk.1"})
    CHECK(llama().huggingFaceName(bad) == std::nullopt);
  CHECK(llama().ggufName("model.layers.1.self_attn.rotary_emb.inv_freq") == std::nullopt);
}

TEST_CASE("permuteRows matches convert_hf_to_gguf.py's permute, unpermuteRows undoes it", "[gguf][llama]") {
  // 2 heads of dim 4 (half 2), 1 column: HF rows (h, j, i) -> GGUF rows (h, i, j).
  std::vector<float> w(8);
  std::iota(w.begin(), w.end(), 0.0f);
  permuteRows(w, 8, 1, 2);
  CHECK(w == std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7});
  unpermuteRows(w, 8, 1, 2);
  CHECK(w == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7});
  std::vector<float> m(24);  // 12 rows x 2 columns, 3 heads of 4
  std::iota(m.begin(), m.end(), 0.0f);
  const std::vector<float> orig = m;
  permuteRows(m, 12, 2, 3);
  CHECK(m[2] == 4.0f);  // row 1 is HF row 2
  CHECK(m[3] == 5.0f);
  unpermuteRows(m, 12, 2, 3);
  CHECK(m == orig);
  CHECK_THROWS_AS(unpermuteRows(m, 12, 2, 5), std::invalid_argument);
  CHECK_THROWS_AS(unpermuteRows(m, 10, 2, 5), std::invalid_argument);
}

TEST_CASE("loadAsHuggingFace restores the Hugging Face tensors", "[gguf][llama]") {
  File f = File::open(dataDir() / "llama.gguf");
  const nlohmann::json manifest = readJson(dataDir() / "llama.json");
  const std::vector<float> hf = readValues<float>(dataDir() / "llama.hf.bin");
  CHECK(f.metadata().getInt("llama.attention.head_count") == manifest["n_head"].get<int>());
  CHECK(f.metadata().getInt("llama.attention.head_count_kv") == manifest["n_head_kv"].get<int>());
  CHECK_FALSE(hasTiedEmbeddings(f));

  auto tensors = loadAsHuggingFace(f, llama());
  REQUIRE(tensors.size() == manifest["tensors"].size());
  std::size_t compared = 0;
  for (const auto& e : manifest["tensors"]) {
    const std::string name = e["name"];
    INFO("tensor " << name);
    REQUIRE(tensors.count(name) == 1);
    const Tensor& t = tensors.at(name);
    CHECK(t.shape == e["shape"].get<std::vector<std::int64_t>>());
    CHECK(t.dtype == DType::F32);
    CHECK(llama().ggufName(name) == std::optional<std::string>(t.ggufName));
    const std::int64_t off = e["offset"];
    if (off < 0) continue;
    const std::size_t n = e["count"];
    std::vector<float> got = t.toF32();
    REQUIRE(got.size() == n);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < n; ++i) bad += bitsOf(got[i]) != bitsOf(hf[static_cast<std::size_t>(off) + i]);
    CHECK(bad == 0);
    ++compared;
  }
  CHECK(compared == 8);  // q/k weights of both layers, the q bias, two norms, a Q8_0 down_proj
  CHECK(tensors.at("model.layers.1.self_attn.q_proj.weight").ggufType == GgmlType::Q8_0);

  // The stored q rows really are permuted: raw GGUF values differ from HF.
  const auto raw = f.dequantize(f.at("blk.0.attn_q.weight"));
  CHECK(raw != tensors.at("model.layers.0.self_attn.q_proj.weight").toF32());

  // bf16 output: every value the f32 one rounded to nearest even.
  auto b = loadAsHuggingFace(f, llama(), {DType::BF16, false});
  const Tensor& q = b.at("model.layers.0.self_attn.q_proj.weight");
  CHECK(q.dtype == DType::BF16);
  REQUIRE(q.data.size() == 32 * 32 * 2);
  const auto q32 = tensors.at("model.layers.0.self_attn.q_proj.weight").toF32();
  for (std::size_t i = 0; i < q32.size(); ++i) {
    std::uint16_t h;
    std::memcpy(&h, q.data.data() + 2 * i, 2);
    REQUIRE(h == f32ToBf16(q32[i]));
  }
  auto h16 = loadAsHuggingFace(dataDir() / "llama.gguf", llama(), {DType::F16, false});
  const Tensor& emb = h16.at("model.embed_tokens.weight");  // stored F16: copied as is
  CHECK(emb.ggufType == GgmlType::F16);
  CHECK(std::memcmp(emb.data.data(), f.at("token_embd.weight").data.data(), emb.data.size()) == 0);
}

TEST_CASE("storedAsHuggingFace keeps the blocks and moves whole q/k rows", "[gguf][llama]") {
  File f = File::open(dataDir() / "llama.gguf");
  auto tensors = loadAsHuggingFace(f, llama());
  std::size_t reordered = 0;
  for (const TensorInfo& t : f.tensors()) {
    auto hf = llama().huggingFaceName(t.name);
    if (!hf) continue;
    INFO("tensor " << t.name);
    std::optional<StoredTensor> found = storedAsHuggingFace(f, llama(), t);
    REQUIRE(found);
    const StoredTensor& stored = *found;
    CHECK(stored.type == t.type);
    CHECK(stored.shape == t.shape);
    REQUIRE(stored.data.size() == t.data.size());
    // Dequantized, the stored rows are the Hugging Face tensor.
    std::vector<float> values(t.elementCount);
    dequantize(stored.type, stored.data, values);
    CHECK(values == tensors.at(*hf).toF32());
    if (stored.owned) ++reordered;
    else CHECK(stored.data.data() == t.data.data());  // not copied
  }
  CHECK(reordered > 0);  // the q and k weights (and biases) of each layer
}

TEST_CASE("tied embeddings: no output.weight, no lm_head", "[gguf][llama]") {
  File f = File::open(dataDir() / "tied.gguf");
  CHECK(hasTiedEmbeddings(f));
  auto tensors = loadAsHuggingFace(f, llama());
  CHECK(tensors.count("lm_head.weight") == 0);
  CHECK(tensors.count("model.embed_tokens.weight") == 1);
  CHECK(tensors.size() == 12);  // embed, norm, and 10 per layer (q bias included)
  CHECK(huggingFaceConfig(f, llama())["tie_word_embeddings"] == true);
}

TEST_CASE("Hugging Face config from metadata", "[gguf][llama]") {
  File f = File::open(dataDir() / "llama.gguf");
  const nlohmann::json c = huggingFaceConfig(f, llama());
  CHECK(c["model_type"] == "llama");
  CHECK(c["architectures"] == nlohmann::json::array({"LlamaForCausalLM"}));
  CHECK(c["hidden_size"] == 32);
  CHECK(c["intermediate_size"] == 64);
  CHECK(c["num_hidden_layers"] == 2);
  CHECK(c["num_attention_heads"] == 4);
  CHECK(c["num_key_value_heads"] == 2);
  CHECK(c["head_dim"] == 8);
  CHECK(c["rms_norm_eps"].get<double>() == 1e-5);  // FLOAT32 metadata, written as the shortest decimal
  CHECK(c["rope_theta"].get<double>() == 10000.0);
  CHECK(c["max_position_embeddings"] == 128);
  CHECK(c["vocab_size"] == 287);
  CHECK(c["tie_word_embeddings"] == false);
  CHECK(c["bos_token_id"] == 1);
  CHECK(c["eos_token_id"] == 2);
}

TEST_CASE("loadAsHuggingFace refuses other architectures and unknown tensors", "[gguf][llama]") {
  File other = File::open(dataDir() / "types.gguf");
  CHECK_THROWS_WITH(loadAsHuggingFace(other, llama()), Contains("types.gguf") && Contains("'linnet-test'") &&
                                                            Contains("not the llama family's (llama)"));
  CHECK_THROWS_WITH(huggingFaceConfig(other, llama()), Contains("not the llama family's"));

  Builder g;
  g.string("general.architecture", "llama").u32("llama.attention.head_count", 2);
  g.f32("token_embd.weight", {2, 2}, {1, 2, 3, 4});
  g.f32("blk.0.ffn_gate_exps.weight", {1}, {1});
  g.f32("rope_freqs.weight", {1}, {1});
  File f = File::parseCopy(g.build(), "moe.gguf");
  CHECK_THROWS_WITH(loadAsHuggingFace(f, llama()), Contains("moe.gguf") && Contains("'blk.0.ffn_gate_exps.weight'") &&
                                              Contains("no Hugging Face name in the llama family's table"));
  auto t = loadAsHuggingFace(f, llama(), {DType::F32, true});
  CHECK(t.size() == 1);  // rope_freqs.weight is left out silently
  CHECK(t.at("model.embed_tokens.weight").shape == std::vector<std::int64_t>{2, 2});

  Builder q;  // 6 rows cannot be split into 2 x 4 heads
  q.string("general.architecture", "llama").u32("llama.attention.head_count", 4);
  q.f32("blk.0.attn_q.weight", {1, 6}, {1, 2, 3, 4, 5, 6});
  File fq = File::parseCopy(q.build(), "q.gguf");
  CHECK_THROWS_WITH(loadAsHuggingFace(fq, llama()), Contains("q.gguf") && Contains("'blk.0.attn_q.weight'") &&
                                               Contains("[6, 1]") && Contains("4 heads"));
  Builder k;  // head_count missing
  k.string("general.architecture", "llama");
  k.f32("blk.0.attn_k.weight", {1, 4}, {1, 2, 3, 4});
  CHECK_THROWS_WITH(loadAsHuggingFace(File::parseCopy(k.build(), "k.gguf"), llama()),
                    Contains("no metadata key gives its head count") && Contains("{arch}.attention.head_count_kv"));
}

TEST_CASE("per-layer head counts (arrays) are honoured", "[gguf][llama]") {
  Builder g;
  g.string("general.architecture", "llama");
  g.u32("llama.attention.head_count", 2);
  g.key("llama.attention.head_count_kv", 9, Out().put<std::uint32_t>(4).put<std::uint64_t>(2).put(1u).put(2u).b);
  std::vector<float> v(8);
  std::iota(v.begin(), v.end(), 0.0f);
  g.f32("blk.0.attn_k.weight", {1, 8}, v);
  g.f32("blk.1.attn_k.weight", {1, 8}, v);
  auto t = loadAsHuggingFace(File::parseCopy(g.build(), "a.gguf"), llama());
  std::vector<float> one = v, two = v;
  unpermuteRows(one, 8, 1, 1);
  unpermuteRows(two, 8, 1, 2);
  CHECK(one != two);
  CHECK(t.at("model.layers.0.self_attn.k_proj.weight").toF32() == one);
  CHECK(t.at("model.layers.1.self_attn.k_proj.weight").toF32() == two);
}

TEST_CASE("safetensors bytes of the loaded tensors", "[gguf][llama]") {
  std::map<std::string, Tensor> m;
  Tensor a;
  a.shape = {2};
  a.dtype = DType::F32;
  a.data = convertF32(std::vector<float>{1.5f, -2.0f}, DType::F32);
  m["b.weight"] = a;
  Tensor h = a;
  h.dtype = DType::BF16;
  h.data = convertF32(std::vector<float>{1.5f, -2.0f}, DType::BF16);
  m["a.weight"] = h;
  const std::vector<std::byte> st = toSafetensors(m, {{"format", "pt"}});
  std::uint64_t n;
  std::memcpy(&n, st.data(), 8);
  CHECK(n % 8 == 0);
  const auto header = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(st.data()) + 8, n));
  CHECK(header["__metadata__"]["format"] == "pt");
  CHECK(header["a.weight"]["dtype"] == "BF16");
  CHECK(header["a.weight"]["data_offsets"] == nlohmann::json::array({0, 4}));
  CHECK(header["b.weight"]["dtype"] == "F32");
  CHECK(header["b.weight"]["shape"] == nlohmann::json::array({2}));
  CHECK(header["b.weight"]["data_offsets"] == nlohmann::json::array({4, 12}));
  REQUIRE(st.size() == 8 + n + 12);
  float x;
  std::memcpy(&x, st.data() + 8 + n + 4 + 4, 4);
  CHECK(x == -2.0f);
  TempDir tmp;
  writeSafetensors(tmp.path() / "m.safetensors", m);
  CHECK(std::filesystem::file_size(tmp.path() / "m.safetensors") == toSafetensors(m).size());
}

namespace {
const Architecture& family(const char* name) {
  static std::map<std::string, Architecture> read;
  auto it = read.find(name);
  if (it == read.end()) it = read.emplace(name, readArchitecture(kFamilies / (std::string(name) + ".toml"))).first;
  return it->second;
}
}  // namespace

TEST_CASE("every family's names go both ways, one GGUF name per Hugging Face name", "[gguf][families]") {
  for (const auto& entry : std::filesystem::directory_iterator(kFamilies)) {
    if (entry.path().extension() != ".toml") continue;
    const Architecture a = readArchitecture(entry.path());
    INFO(entry.path().string());
    CHECK_FALSE(a.names.empty());
    std::set<std::string> hf;
    for (const TensorName& t : a.layerTensors) {
      CHECK(hf.insert(t.hf).second);
      CHECK(a.huggingFaceName("blk.7." + t.gguf) == "model.layers.7." + t.hf);
      CHECK(a.ggufName("model.layers.7." + t.hf) == "blk.7." + t.gguf);
    }
    for (const TensorName& t : a.tensors) {
      CHECK(a.huggingFaceName(t.gguf) == t.hf);
      CHECK(a.ggufName(t.hf) == t.gguf);
    }
  }
  // What each family adds to or changes in Llama's table.
  CHECK(family("gemma3").huggingFaceName("blk.2.ffn_norm.weight") == "model.layers.2.pre_feedforward_layernorm.weight");
  CHECK(family("gemma3").huggingFaceName("blk.2.post_attention_norm.weight") ==
        "model.layers.2.post_attention_layernorm.weight");
  CHECK(family("qwen3").huggingFaceName("blk.0.attn_k_norm.weight") == "model.layers.0.self_attn.k_norm.weight");
  CHECK(family("phi3").huggingFaceName("blk.1.attn_qkv.weight") == "model.layers.1.self_attn.qkv_proj.weight");
  CHECK(family("phi3").huggingFaceName("blk.1.ffn_up.weight") == "model.layers.1.mlp.gate_up_proj.weight");
  CHECK(family("llama").huggingFaceName("blk.1.attn_q_norm.weight") == std::nullopt);
  for (const char* name : {"qwen2", "qwen3", "phi3", "gemma3"}) CHECK(family(name).permuted.empty());
  CHECK(family("llama").permuted.size() == 2);
}

TEST_CASE("Gemma 3's norms are stored as 1 + w, and its rows in Hugging Face's order", "[gguf][families]") {
  Builder g;
  g.string("general.architecture", "gemma3").u32("gemma3.attention.head_count", 2);
  g.u32("gemma3.attention.head_count_kv", 1).u32("gemma3.embedding_length", 8).u32("gemma3.attention.key_length", 4);
  g.u32("gemma3.attention.sliding_window", 512).u32("gemma3.block_count", 1);
  g.f32("blk.0.attn_norm.weight", {4}, {1.5f, 0.75f, 2.0f, 1.0f});
  g.f32("blk.0.attn_q_norm.weight", {2}, {1.25f, 3.0f});
  std::vector<float> q(16);
  std::iota(q.begin(), q.end(), 0.0f);
  g.f32("blk.0.attn_q.weight", {2, 8}, q);
  g.f32("token_embd.weight", {2, 2}, {1, 2, 3, 4});
  File f = File::parseCopy(g.build(), "gemma.gguf");
  const Architecture& gemma = family("gemma3");
  auto t = loadAsHuggingFace(f, gemma);
  CHECK(t.at("model.layers.0.input_layernorm.weight").toF32() == std::vector<float>{0.5f, -0.25f, 1.0f, 0.0f});
  CHECK(t.at("model.layers.0.self_attn.q_norm.weight").toF32() == std::vector<float>{0.25f, 2.0f});
  CHECK(t.at("model.layers.0.self_attn.q_proj.weight").toF32() == q);  // not permuted
  CHECK(t.count("lm_head.weight") == 0);                                  // tied
  // A shifted tensor has no stored form to read as is; others do, unmoved.
  CHECK_FALSE(storedAsHuggingFace(f, gemma, *f.find("blk.0.attn_norm.weight")));
  auto stored = storedAsHuggingFace(f, gemma, *f.find("blk.0.attn_q.weight"));
  REQUIRE(stored);
  CHECK_FALSE(stored->owned);

  const nlohmann::json c = huggingFaceConfig(f, gemma);
  CHECK(c["model_type"] == "gemma3_text");
  CHECK(c["architectures"] == nlohmann::json::array({"Gemma3ForCausalLM"}));
  CHECK(c["head_dim"] == 4);
  CHECK(c["query_pre_attn_scalar"] == 4);
  CHECK(c["sliding_window"] == 512);
  CHECK(c["rope_local_base_freq"] == 10000.0);
  CHECK(c["tie_word_embeddings"] == true);
  CHECK_FALSE(c.contains("hidden_act"));  // Gemma's defaults replace Llama's whole

  // Read with another family's table: refused, naming both.
  CHECK_THROWS_WITH(loadAsHuggingFace(f, llama()),
                    Contains("gemma.gguf") && Contains("'gemma3'") && Contains("not the llama family's"));
}

TEST_CASE("a descriptor's [gguf] table is checked as it is read", "[gguf][families]") {
  auto table = [](const char* text) { return toml::parse(text); };
  CHECK_THROWS_WITH(architectureFrom(table("permutd = {}"), "x", {"x"}, "x.toml"),
                    Contains("x.toml: [gguf] has no key `permutd`"));
  CHECK_THROWS_WITH(architectureFrom(table("tensors = 3"), "x", {"x"}, "x.toml"),
                    Contains("x.toml: [gguf].tensors must be a table"));
  CHECK_THROWS_WITH(architectureFrom(table("tensors = { \"a.weight\" = 1 }"), "x", {"x"}, "x.toml"),
                    Contains("tensors.\"a.weight\" must be a Hugging Face tensor name"));
  CHECK_THROWS_WITH(architectureFrom(table("shifted = { \"norm.weight\" = \"one\" }"), "x", {"x"}, "x.toml"),
                    Contains("shifted.\"norm.weight\" must be a number"));
  CHECK_THROWS_WITH(architectureFrom(table("config = { hidden_size = [1] }"), "x", {"x"}, "x.toml"),
                    Contains("config.hidden_size must be a key or a list of keys"));
  // extends: entries added or replaced one by one; lists and defaults whole.
  Architecture base = architectureFrom(table("tensors = { \"a\" = \"A\", \"b\" = \"B\" }\npermuted = { q = \"k\" }\n"
                                             "config_defaults = { model_type = \"base\", hidden_act = \"silu\" }"),
                                       "base", {"base"}, "base.toml");
  Architecture derived = architectureFrom(
      table("tensors = { \"b\" = \"B2\", \"c\" = \"C\" }\nconfig_defaults = { model_type = \"derived\" }"), "derived",
      {"derived"}, "derived.toml", &base);
  CHECK(derived.huggingFaceName("a") == "A");
  CHECK(derived.huggingFaceName("b") == "B2");
  CHECK(derived.huggingFaceName("c") == "C");
  CHECK(derived.permuted.size() == 1);
  CHECK(derived.configDefaults == nlohmann::json{{"model_type", "derived"}});
}
