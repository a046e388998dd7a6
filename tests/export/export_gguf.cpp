// `linnet export gguf` through its library: the llama card's two-layer f32
// fixture (tests/data/llama/gqa2) exported and read back through runtime/gguf
// as a Hugging Face checkpoint gives the very tensors it came from; the
// metadata is the model's; quantized exports hold the encoders' blocks; the
// tokenizer fixture travels; refusals leave nothing behind.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <map>

#include "../runtime/temp_dir.h"
#include "export_fixtures.h"
#include "export/gguf_export.h"
#include "export/quantize.h"
#include "gguf/architecture.h"
#include "gguf/tokenizer.h"
#include "weights/safetensors.h"

using namespace linnet;
using gguf::GgmlType;
using linnet::test::TempDir;
using linnet::test::kGqa2;
using linnet::test::kTokenizer;
using Catch::Matchers::Contains;
namespace ex = linnet::exporter;

namespace {

// The llama family's GGUF names (nest/families/llama.toml).
const gguf::Architecture& llama() {
  static const gguf::Architecture a =
      gguf::readArchitecture(std::filesystem::path(LINNET_SOURCE_DIR) / "nest/families/llama.toml");
  return a;
}

ex::GgufExportOptions gqa2(const std::filesystem::path& out) {
  return test::gqa2Export<ex::GgufExportOptions>(out.string());
}

std::vector<float> f32Of(const weights::TensorInfo& t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

}  // namespace

TEST_CASE("an f32 export reads back as the checkpoint it came from", "[export][gguf]") {
  TempDir dir;
  auto out = dir / "gqa2.gguf";
  std::vector<std::string> log;
  ex::GgufExportResult r = ex::exportGguf(gqa2(out), [&](const std::string& s) { log.push_back(s); });
  CHECK(r.tensors == 22);  // 21 params + rope_freqs.weight
  CHECK(r.bytes == std::filesystem::file_size(out));
  REQUIRE(log.size() == 1);
  CHECK_THAT(log[0], Contains("no tokenizer"));

  weights::Checkpoint source = weights::Checkpoint::open(kGqa2);
  gguf::File file = gguf::File::open(out);
  auto hf = gguf::loadAsHuggingFace(file, llama());
  CHECK(hf.size() == source.tensors().size());
  for (const auto& [name, t] : hf) {
    INFO(name);
    const weights::TensorInfo* s = source.find(name);
    REQUIRE(s);
    CHECK(t.shape == s->shape);
    CHECK(t.toF32() == f32Of(*s));  // bit-exact: q/k permuted on the way out, back on the way in
  }
  // llama.cpp's layout on disk: the q rows as convert_hf_to_gguf.py's permute leaves them.
  std::vector<float> q = f32Of(*source.find("model.layers.0.self_attn.q_proj.weight"));
  gguf::permuteRows(q, 64, 64, 4);
  CHECK(file.dequantize(file.at("blk.0.attn_q.weight")) == q);

  const gguf::Metadata& m = file.metadata();
  CHECK(m.getString("general.architecture") == "llama");
  CHECK(m.getString("general.name") == "Llama 3.1 8B Instruct");
  CHECK(m.getInt("llama.block_count") == 2);
  CHECK(m.getInt("llama.context_length") == 64);
  CHECK(m.getInt("llama.embedding_length") == 64);
  CHECK(m.getInt("llama.feed_forward_length") == 96);
  CHECK(m.getInt("llama.attention.head_count") == 4);
  CHECK(m.getInt("llama.attention.head_count_kv") == 2);
  CHECK(m.getInt("llama.rope.dimension_count") == 16);
  CHECK(m.getInt("llama.vocab_size") == 64);
  CHECK(m.getFloat("llama.rope.freq_base") == 500000.0);
  CHECK(m.getFloat("llama.attention.layer_norm_rms_epsilon") == Approx(1e-5).epsilon(1e-7));
  CHECK(m.getInt("general.file_type") == 0);
  CHECK(m.getString("tokenizer.ggml.model") == "none");
  // The card's lm_head binds its own tensor: output.weight is written.
  CHECK(file.find("output.weight"));
  // The llama3-scaled rope tables: rope_freqs.weight, as convert_hf_to_gguf.py computes it.
  const gguf::TensorInfo& rf = file.at("rope_freqs.weight");
  CHECK(rf.shape == std::vector<std::int64_t>{8});
  std::ifstream in(std::string(LINNET_TEST_DATA) + "/export/rope_factors.json");
  nlohmann::json ropes = nlohmann::json::parse(in);
  for (const auto& want : ropes) {
    std::vector<float> got = ex::llama3RopeFactors(want["theta"], want["head_dim"], want["factor"],
                                                   want["low_freq_factor"], want["high_freq_factor"],
                                                   want["original_max_position_embeddings"]);
    std::vector<float> expected = want["factors"].get<std::vector<float>>();
    REQUIRE(got.size() == expected.size());
    for (std::size_t k = 0; k < got.size(); ++k) CHECK(got[k] == Approx(expected[k]).epsilon(1e-6));
    if (want["head_dim"] == 16) CHECK(file.dequantize(rf) == got);
  }
}

TEST_CASE("a quantized export holds the encoders' blocks; norms stay f32", "[export][gguf]") {
  TempDir dir;
  for (auto [type, name] : {std::pair{GgmlType::Q8_0, "q8_0"}, std::pair{GgmlType::Q4_K, "q4_k"},
                            std::pair{GgmlType::Q6_K, "q6_k"}, std::pair{GgmlType::BF16, "bf16"},
                            std::pair{GgmlType::Q4_0, "q4_0"}, std::pair{GgmlType::F16, "f16"}}) {
    DYNAMIC_SECTION(name) {
      auto o = gqa2(dir / (std::string(name) + ".gguf"));
      o.type = type;
      std::vector<std::string> log;
      ex::exportGguf(o, [&](const std::string& s) { log.push_back(s); });
      gguf::File file = gguf::File::open(o.output);
      weights::Checkpoint source = weights::Checkpoint::open(kGqa2);
      for (const gguf::TensorInfo& t : file.tensors()) {
        INFO(t.name);
        bool quantized = t.shape.size() == 2;
        // Rows of 64 or 96 are not whole 256-value blocks: llama-quantize's fallback.
        GgmlType want = !quantized                 ? GgmlType::F32
                        : type == GgmlType::Q4_K   ? GgmlType::Q5_0
                        : type == GgmlType::Q6_K   ? GgmlType::Q8_0
                                                   : type;
        CHECK(t.type == want);
        if (t.name == "rope_freqs.weight") continue;
        std::string hfName = *llama().huggingFaceName(t.name);
        std::vector<float> values = f32Of(*source.find(hfName));
        if (t.name.find("attn_q.") != std::string::npos) gguf::permuteRows(values, t.shape[0], t.shape[1], 4);
        if (t.name.find("attn_k.") != std::string::npos) gguf::permuteRows(values, t.shape[0], t.shape[1], 2);
        std::vector<std::byte> expected(ex::rowBytes(want, t.shape.back()) * (values.size() / t.shape.back()));
        ex::encodeRows(want, values, t.shape.back(), expected);
        CHECK(std::vector<std::byte>(t.data.begin(), t.data.end()) == expected);
      }
      std::int64_t fileType = file.metadata().getInt("general.file_type");
      const std::map<GgmlType, std::int64_t> fileTypes = {{GgmlType::Q8_0, 7}, {GgmlType::Q4_K, 15}, {GgmlType::Q6_K, 18},
                                                          {GgmlType::BF16, 32}, {GgmlType::Q4_0, 2}, {GgmlType::F16, 1}};
      CHECK(fileType == fileTypes.at(type));
      if (type == GgmlType::Q4_K) CHECK(log.size() == 1 + 16);  // the tokenizer warning, 16 fallbacks
    }
  }
}

TEST_CASE("the tokenizer of a tokenizer.json travels", "[export][gguf][tokenizer]") {
  TempDir dir;
  auto o = gqa2(dir / "tok.gguf");
  o.tokenizer = kTokenizer;
  std::vector<std::string> log;
  ex::exportGguf(o, [&](const std::string& s) { log.push_back(s); });
  REQUIRE(log.size() == 1);
  CHECK_THAT(log[0], Contains("62 tokens for Vocab = 64"));
  gguf::File file = gguf::File::open(o.output);
  gguf::TokenizerData t = gguf::readTokenizer(file);
  CHECK(t.model == "gpt2");
  CHECK(t.pre == "smollm");
  REQUIRE(t.tokens.size() == 64);
  CHECK(t.tokens[0] == "<|endoftext|>");
  CHECK(t.tokens[29] == "\xc4\xa0");  // Ġ
  CHECK(t.tokens[62] == "[PAD62]");
  CHECK(t.typeOf(0) == gguf::TokenType::Control);
  CHECK(t.typeOf(3) == gguf::TokenType::Normal);
  CHECK(t.typeOf(63) == gguf::TokenType::Unused);
  CHECK(t.merges.size() == 32);
  CHECK(t.merges[0] == "t h");
  CHECK(t.bosId == 1);
  CHECK(t.eosId == 2);
  CHECK(t.paddingId == 2);
  CHECK(t.unknownId == 0);
  REQUIRE(t.chatTemplate);
  CHECK_THAT(*t.chatTemplate, Contains("<|im_start|>"));
  // The same vocabulary and merges as the tokenizer.json, once turned back into one.
  std::ifstream in(kTokenizer);
  nlohmann::json given = nlohmann::json::parse(in);
  nlohmann::json back = gguf::huggingFaceTokenizerJson(t);
  for (const auto& [token, id] : given["model"]["vocab"].items()) CHECK(back["model"]["vocab"][token] == id);
  CHECK(back["model"]["merges"] == given["model"]["merges"]);
  CHECK(back["pre_tokenizer"] == given["pre_tokenizer"]);
}

TEST_CASE("a GGUF export re-exported keeps every byte of its tensors", "[export][gguf]") {
  TempDir dir;
  auto first = gqa2(dir / "a.gguf");
  first.type = GgmlType::Q8_0;
  first.tokenizer = kTokenizer;
  ex::exportGguf(first);
  auto second = gqa2(dir / "b.gguf");
  second.load.weights = first.output;
  second.tokenizer.clear();  // the source's own
  ex::exportGguf(second);
  gguf::File a = gguf::File::open(first.output), b = gguf::File::open(second.output);
  REQUIRE(a.tensors().size() == b.tensors().size());
  for (const gguf::TensorInfo& t : a.tensors()) {
    INFO(t.name);
    const gguf::TensorInfo& u = b.at(t.name);
    CHECK(u.type == t.type);
    CHECK(u.shape == t.shape);
    CHECK(std::vector<std::byte>(u.data.begin(), u.data.end()) == std::vector<std::byte>(t.data.begin(), t.data.end()));
  }
  for (const auto& [key, value] : a.metadata().entries()) {
    INFO(key);
    const gguf::Value* v = b.metadata().find(key);
    REQUIRE(v);
    CHECK(v->toString(1u << 20) == value.toString(1u << 20));
  }
}

TEST_CASE("refusals come before anything is written", "[export][gguf]") {
  TempDir dir;
  auto out = dir / "m.gguf";
  dir.write("m.gguf", std::as_bytes(std::span("keep", 4)));
  auto o = gqa2(out);
  CHECK_THROWS_WITH(ex::exportGguf(o), Contains("exists; pass --force"));
  o.load.generics.insert_or_assign("Layers", 3);  // the checkpoint has 2
  o.force = true;
  CHECK_THROWS_WITH(ex::exportGguf(o), Contains("cannot bind"));
  CHECK(std::filesystem::file_size(out) == 4);
  auto bad = gqa2(dir / "n.gguf");
  bad.tokenizer = std::string(LINNET_TEST_DATA) + "/tokenizer/bytebpe/tokenizer.json";  // NFC: not llama.cpp's smollm
  CHECK_THROWS_WITH(ex::exportGguf(bad), Contains("none that llama.cpp names"));
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);
}

TEST_CASE("permuteRowBytes moves whole rows as gguf::permuteRows moves floats", "[export][gguf]") {
  std::vector<float> w(8 * 3);
  for (std::size_t k = 0; k < w.size(); ++k) w[k] = static_cast<float>(k);
  std::vector<float> p = w;
  gguf::permuteRows(p, 8, 3, 2);
  std::vector<std::byte> moved = ex::permuteRowBytes(std::as_bytes(std::span<const float>(w)), 8, 12, 2);
  CHECK(std::memcmp(moved.data(), p.data(), moved.size()) == 0);
}

namespace {

// The families' fixtures (tests/families/make_fixtures.py) at the generics
// their config.json gives, and the GGUF that make_gguf_fixtures.py wrote of
// each with llama.cpp's own tensor map and metadata writer (gguf-py).
struct FamilyFixture {
  const char* card;
  std::map<std::string, nest::GenericValue> generics;
};

const FamilyFixture kFamilies[] = {
    {"qwen3-0.6b", {{"Vocab", 96}, {"H", 48}, {"Heads", 4}, {"KvHeads", 2}, {"D", 16}, {"Inner", 80}, {"Layers", 2}}},
    {"qwen2.5-0.5b-instruct",
     {{"Vocab", 96}, {"H", 64}, {"Heads", 4}, {"KvHeads", 2}, {"D", 16}, {"Inner", 96}, {"Layers", 2}}},
    {"phi-3-mini-4k-instruct",
     {{"Vocab", 96}, {"H", 64}, {"Heads", 4}, {"KvHeads", 2}, {"D", 16}, {"Inner", 96}, {"Layers", 2}}},
    // QueryScale = D: the fixture's 24 is no GGUF's (see below).
    {"gemma-3-270m",
     {{"Vocab", 96}, {"H", 48}, {"Heads", 4}, {"KvHeads", 1}, {"D", 16}, {"Inner", 80}, {"Layers", 7}, {"Window", 4},
      {"QueryScale", 16}, {"Pattern", 6}}},
};

ex::GgufExportOptions familyExport(const FamilyFixture& f, const std::filesystem::path& out) {
  ex::GgufExportOptions o;
  o.package = std::string(LINNET_SOURCE_DIR) + "/nest/" + f.card;
  o.load.weights = std::string(LINNET_TEST_DATA) + "/families/" + f.card + "/model.safetensors";
  o.load.generics = f.generics;
  o.load.generics.insert_or_assign("T", "f32");
  o.load.generics.insert_or_assign("MaxSeq", 4096);  // the fixtures' max_position_embeddings
  o.output = out.string();
  return o;
}

}  // namespace

// Names, stored norms and hyperparameter keys come from the family
// descriptors (nest/families/*.toml [gguf]); checked against files written
// by llama.cpp's own tables. Every tensor is byte-equal; every metadata key
// both write has one value. (That llama.cpp reads these files as
// transformers' models: make_gguf_fixtures.py.)
TEST_CASE("each family's export is the GGUF llama.cpp's converter writes", "[export][gguf][families]") {
  for (const FamilyFixture& f : kFamilies) {
    SECTION(f.card) {
      TempDir dir;
      auto out = dir / "model.gguf";
      ex::exportGguf(familyExport(f, out));
      gguf::File ours = gguf::File::open(out);
      gguf::File theirs =
          gguf::File::open(std::string(LINNET_TEST_DATA) + "/families/" + f.card + "/model.gguf");
      CHECK(ours.architecture() == theirs.architecture());
      REQUIRE(ours.tensors().size() == theirs.tensors().size());
      for (const gguf::TensorInfo& t : theirs.tensors()) {
        INFO(t.name);
        const gguf::TensorInfo* o = ours.find(t.name);
        REQUIRE(o);
        CHECK(o->type == t.type);
        CHECK(o->shape == t.shape);
        CHECK(std::memcmp(o->data.data(), t.data.data(), std::min(o->data.size(), t.data.size())) == 0);
      }
      std::size_t shared = 0;
      for (const auto& [key, value] : theirs.metadata().entries()) {
        if (key.starts_with("tokenizer.") || key == "general.name") continue;
        const gguf::Value* v = ours.metadata().find(key);
        // Phi-3's sliding window (llama.cpp does not use it) and its rope's
        // original context are not written.
        if (!v && std::string(f.card) == "phi-3-mini-4k-instruct") continue;
        INFO(key);
        REQUIRE(v);
        CHECK(v->toString() == value.toString());
        ++shared;
      }
      CHECK(shared >= 9);
    }
  }
}

TEST_CASE("a Gemma whose query scale is not its head size has no GGUF", "[export][gguf][families]") {
  TempDir dir;
  FamilyFixture gemma = kFamilies[3];
  gemma.generics.insert_or_assign("QueryScale", 24);
  CHECK_THROWS_WITH(ex::exportGguf(familyExport(gemma, dir / "g.gguf")),
                    Contains("gemma3.attention.key_length: the generic D gives 16 and the generic QueryScale gives "
                             "24, but a GGUF holds one value"));
  gemma.generics.insert_or_assign("QueryScale", 16);
  gemma.generics.insert_or_assign("Pattern", 4);
  CHECK_THROWS_WITH(ex::exportGguf(familyExport(gemma, dir / "g.gguf")),
                    Contains("the generic Pattern = 4 (sliding_window_pattern), but a GGUF has no key for it: "
                             "llama.cpp assumes 6"));
  CHECK(std::filesystem::is_empty(dir.path()));
}
