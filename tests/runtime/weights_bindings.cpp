// bindings.json and weights::bind(): a tiny llama-like model (Vocab 16, H 8, 2 heads,
// 1 KV head, Inner 12) against a 3-layer bf16 checkpoint in 2 shards.
#include <catch2/catch.hpp>

#include <algorithm>

#include "weights/bindings.h"
#include "weights/convert.h"
#include "weights/error.h"
#include "weights/npy.h"
#include "weights/safetensors.h"
#include "weights_test_util.h"

using namespace linnet::weights;
using linnet::DType;
namespace weights = linnet::weights;  // bind() is called qualified: ADL would also find std::bind
using namespace linnet::weights::test;
using Catch::Matchers::Contains;

namespace {

// What `linnetc check` would give for the tiny model with `layers` layers.
std::vector<ParamSpec> tinyModel(int layers, DType t = DType::BF16) {
  std::vector<ParamSpec> out{{"embedding.weight", {16, 8}, t}, {"norm.weight", {8}, t}, {"lm_head.weight", {16, 8}, t}};
  for (int i = 0; i < layers; ++i) {
    std::string l = "layers." + std::to_string(i) + ".";
    out.push_back({l + "attention_norm.weight", {8}, t});
    out.push_back({l + "attention.q_proj.weight", {8, 8}, t});
    out.push_back({l + "attention.k_proj.weight", {4, 8}, t});
    out.push_back({l + "attention.v_proj.weight", {4, 8}, t});
    out.push_back({l + "attention.o_proj.weight", {8, 8}, t});
    out.push_back({l + "mlp_norm.weight", {8}, t});
    out.push_back({l + "mlp.gate.weight", {12, 8}, t});
    out.push_back({l + "mlp.up.weight", {12, 8}, t});
    out.push_back({l + "mlp.down.weight", {8, 12}, t});
  }
  return out;
}

Checkpoint tinyCheckpoint() { return Checkpoint::open(dataDir() / "tiny" / "model.safetensors.index.json"); }
Bindings tinyBindings() { return Bindings::load(dataDir() / "tiny" / "bindings.json"); }

std::string bindError(const std::vector<ParamSpec>& spec, const Bindings& b, const Checkpoint& c, BindOptions o = {}) {
  try {
    weights::bind(spec, b, c, o);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::size_t lineCount(const std::string& s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

// The fixture's value formula: tensor k (in sorted name order), element i.
float patternValue(int k, int i) { return static_cast<float>(((i * 7 + k) % 17) - 8) / 8.0f; }

}  // namespace

TEST_CASE("bindings.json loads and rejects bad entries", "[weights][bindings]") {
  Bindings b = tinyBindings();
  CHECK(b.size() == 30);
  REQUIRE(b.find("layers.1.attention.q_proj.weight"));
  CHECK(*b.find("layers.1.attention.q_proj.weight") == "model.layers.1.self_attn.q_proj.weight");
  CHECK(!b.find("layers.9.attention.q_proj.weight"));
  CHECK_THAT(b.source(), Contains("bindings.json"));

  CHECK_THROWS_WITH(Bindings::parse(R"({"a": "x", "b": 3, "c": ["y"], "d": ""})", "b.json"),
                    Contains("b.json: 3 invalid bindings") && Contains("\"b\": value must be a checkpoint tensor name "
                                                                       "(a string), got 3") &&
                        Contains("\"c\": value must be") && Contains("\"d\": the checkpoint tensor name is empty"));
  CHECK_THROWS_WITH(Bindings::parse(R"({"a": "x", "a": "y"})", "b.json"), Contains("key \"a\" appears twice"));
  CHECK_THROWS_WITH(Bindings::parse(R"(["a", "x"])", "b.json"), Contains("must be a JSON object"));
  CHECK_THROWS_WITH(Bindings::parse(R"({"a": "x",})", "b.json"), Contains("b.json: not well-formed JSON"));
  CHECK_THROWS_WITH(Bindings::parse(R"({"": "x"})", "b.json"), Contains("empty Linnet path"));
  CHECK_THROWS_WITH(Bindings::load(dataDir() / "tiny" / "nope.json"), Contains("nope.json: no such file"));
  // Two Linnet paths may share a checkpoint tensor (tied weights).
  CHECK(Bindings::parse(R"({"a": "x", "b": "x"})", "b.json").size() == 2);
}

TEST_CASE("path patterns", "[weights][bindings]") {
  CHECK(pathPattern("layers.3.attention.q_proj.weight") == "layers.*.attention.q_proj.weight");
  CHECK(pathPattern("blocks.10.experts.7.w1") == "blocks.*.experts.*.w1");
  CHECK(pathPattern("norm.weight") == "norm.weight");
  CHECK(pathPattern("x2.y") == "x2.y");
}

// The same tiny model bound through patterns, as llama.cpp's name tables do.
Bindings tinyPatternBindings(const std::string& extra = {}) {
  return Bindings::parse(R"({
    "embedding.weight": "model.embed_tokens.weight",
    "norm.weight": "model.norm.weight",
    "lm_head.weight": "lm_head.weight",
    "layers.*.attention_norm.weight": "model.layers.*.input_layernorm.weight",
    "layers.*.mlp_norm.weight": "model.layers.*.post_attention_layernorm.weight",
    "layers.*.attention.q_proj.weight": "model.layers.*.self_attn.q_proj.weight",
    "layers.*.attention.k_proj.weight": "model.layers.*.self_attn.k_proj.weight",
    "layers.*.attention.v_proj.weight": "model.layers.*.self_attn.v_proj.weight",
    "layers.*.attention.o_proj.weight": "model.layers.*.self_attn.o_proj.weight",
    "layers.*.mlp.gate.weight": "model.layers.*.mlp.gate_proj.weight",
    "layers.*.mlp.up.weight": "model.layers.*.mlp.up_proj.weight",
    "layers.*.mlp.down.weight": "model.layers.*.mlp.down_proj.weight")" + extra + "}",
                         "patterns.json");
}

TEST_CASE("pattern bindings bind as the listed ones do, and as strictly", "[weights][bindings]") {
  Bindings p = tinyPatternBindings();
  CHECK(p.size() == 12);
  CHECK(*p.find("layers.2.mlp.up.weight") == "model.layers.2.mlp.up_proj.weight");
  CHECK(*p.find("layers.17.mlp.up.weight") == "model.layers.17.mlp.up_proj.weight");
  CHECK(!p.find("layers.x.mlp.up.weight"));
  CHECK(!p.find("layers.2.mlp.up.bias"));
  // Every parameter reaches the same checkpoint tensor as through the listed bindings.
  BoundWeights listed = weights::bind(tinyModel(3), tinyBindings(), tinyCheckpoint());
  BoundWeights patterned = weights::bind(tinyModel(3), p, tinyCheckpoint());
  REQUIRE(patterned.size() == listed.size());
  for (const BoundTensor& t : listed.tensors())
    CHECK(patterned.at(t.param.path).checkpointName == t.checkpointName);
  // More layers than the checkpoint has: each missing one is named.
  auto problems = bindingProblems(tinyModel(4), p, tinyCheckpoint());
  CHECK(problems.size() == 9);
  CHECK_THAT(problems.front(), Contains("layers.3.") && Contains("not in the checkpoint"));
  // An exact key wins over the pattern for its path.
  Bindings tied = tinyPatternBindings(R"(, "layers.1.mlp.up.weight": "model.layers.0.mlp.up_proj.weight")");
  CHECK(*tied.find("layers.1.mlp.up.weight") == "model.layers.0.mlp.up_proj.weight");
  CHECK(*tied.find("layers.2.mlp.up.weight") == "model.layers.2.mlp.up_proj.weight");
  // A pattern for a parameter the model has for no index is an error, as a listed one is.
  auto unknown = bindingProblems(tinyModel(2), tinyPatternBindings(R"(, "layers.*.mlp.upp.weight": "x.*")"),
                                 tinyCheckpoint());
  REQUIRE(unknown.size() == 1);
  CHECK_THAT(unknown[0], Contains("layers.*.mlp.upp.weight -> x.*") && Contains("does not have"));
  CHECK_THROWS_WITH(Bindings::parse(R"({"layers.*.w": "model.layers.w"})", "b.json"),
                    Contains("the path has 1 `*` and the checkpoint name \"model.layers.w\" has 0"));
  CHECK_THROWS_WITH(Bindings::parse(R"({"layers.1*.w": "model.layers.*.w"})", "b.json"),
                    Contains("a `*` must be a whole component of the path"));
  CHECK_THROWS_WITH(Bindings::parse(R"({"w": "model.*.w"})", "b.json"), Contains("the path has 0 `*`"));
}

TEST_CASE("binding the full model: views into the mapped shards", "[weights][bindings]") {
  Checkpoint ckpt = tinyCheckpoint();
  auto spec = tinyModel(3);
  BoundWeights w = weights::bind(spec, tinyBindings(), ckpt);
  REQUIRE(w.size() == 30);
  CHECK(w.convertedCount() == 0);
  CHECK(w.totalBytes() == (16 * 8 * 2 + 8 + 3 * (8 + 64 + 32 + 32 + 64 + 8 + 96 * 3)) * 2);
  CHECK(w.tensors()[0].param.path == "embedding.weight");  // in the model's order
  const BoundTensor& q = w.at("layers.1.attention.q_proj.weight");
  CHECK(q.checkpointName == "model.layers.1.self_attn.q_proj.weight");
  CHECK(q.param.shape == Shape{8, 8});
  CHECK_FALSE(q.converted);
  CHECK(q.data.data() == ckpt.at(q.checkpointName).data.data());  // no copy
  CHECK(w.at("lm_head.weight").file == 1);

  // Values: tensor k in sorted checkpoint-name order follows patternValue.
  const auto& names = ckpt.tensors();
  int k = static_cast<int>(std::find_if(names.begin(), names.end(),
                                        [&](const TensorInfo& t) { return t.name == q.checkpointName; }) -
                           names.begin());
  auto bits = valuesOf<std::uint16_t>(q.data);
  bool same = true;
  for (int i = 0; i < 64; ++i) same = same && bf16ToF32(bits[i]) == patternValue(k, i);
  CHECK(same);
  CHECK(w.find("layers.3.mlp.up.weight") == nullptr);
  CHECK_THROWS_WITH(w.at("layers.3.mlp.up.weight"), Contains("no bound parameter"));
}

TEST_CASE("a checkpoint and bindings with more layers than the model are fine", "[weights][bindings]") {
  BoundWeights w = weights::bind(tinyModel(2), tinyBindings(), tinyCheckpoint());
  CHECK(w.size() == 21);
  CHECK(w.find("layers.2.mlp.up.weight") == nullptr);
  CHECK(bindingProblems(tinyModel(1), tinyBindings(), tinyCheckpoint()).empty());
}

TEST_CASE("the bound weights outlive the Checkpoint they came from", "[weights][bindings]") {
  BoundWeights w = [] {
    Checkpoint c = tinyCheckpoint();
    return weights::bind(tinyModel(1), tinyBindings(), c);
  }();
  auto bits = valuesOf<std::uint16_t>(w.at("norm.weight").data);
  REQUIRE(bits.size() == 8);
  CHECK(w.checkpoint().size() == 30);
}

TEST_CASE("a checkpoint missing tensors: every one reported", "[weights][bindings][errors]") {
  // Only the first shard: lm_head and layer 2 are absent.
  Checkpoint shard1 = Checkpoint::openFiles({dataDir() / "tiny" / "model-00001-of-00002.safetensors"});
  std::string m = bindError(tinyModel(3), tinyBindings(), shard1);
  CHECK_THAT(m, Contains("10 problems"));
  CHECK_THAT(m, Contains("lm_head.weight -> lm_head.weight: not in the checkpoint; model expects [16, 8] bf16"));
  CHECK_THAT(m, Contains("layers.2.mlp.down.weight -> model.layers.2.mlp.down_proj.weight: not in the checkpoint; "
                         "model expects [8, 12] bf16; did you mean 'model.layers.0.mlp.down_proj.weight'?"));
  CHECK(lineCount(m) == 10);
  // The model with two layers does not need them: only lm_head is missing.
  std::string m2 = bindError(tinyModel(2), tinyBindings(), shard1);
  CHECK_THAT(m2, Contains("1 problem:") && Contains("lm_head.weight -> lm_head.weight: not in the checkpoint"));
}

TEST_CASE("dtype mismatches: an error that suggests conversion, or a conversion when asked", "[weights][bindings]") {
  auto f32Model = tinyModel(2, DType::F32);
  std::string m = bindError(f32Model, tinyBindings(), tinyCheckpoint());
  CHECK_THAT(m, Contains("21 problems"));
  CHECK_THAT(m, Contains("layers.0.mlp.up.weight -> model.layers.0.mlp.up_proj.weight: dtype mismatch: model expects "
                         "[12, 8] f32, checkpoint has [12, 8] bf16") &&
                    Contains("set BindOptions.convertTo = f32 to convert at load"));
  CHECK_THAT(bindError(f32Model, tinyBindings(), tinyCheckpoint(), {.convertTo = DType::F16}),
             Contains("conversion was asked to f16, but this parameter is f32"));

  Checkpoint ckpt = tinyCheckpoint();
  BoundWeights w = weights::bind(f32Model, tinyBindings(), ckpt, {.convertTo = DType::F32});
  CHECK(w.convertedCount() == 21);
  const BoundTensor& up = w.at("layers.0.mlp.up.weight");
  CHECK(up.converted);
  CHECK(up.storedDType == DType::BF16);
  CHECK(up.param.dtype == DType::F32);
  REQUIRE(up.data.size() == 96 * 4);
  auto f = valuesOf<float>(up.data);
  auto src = valuesOf<std::uint16_t>(ckpt.at("model.layers.0.mlp.up_proj.weight").data);
  bool same = true;
  for (std::size_t i = 0; i < 96; ++i) same = same && f[i] == bf16ToF32(src[i]);
  CHECK(same);

  // i32 cannot take a float tensor, whatever the options.
  std::vector<ParamSpec> intModel{{"norm.weight", {8}, DType::I32}};
  CHECK_THAT(bindError(intModel, Bindings::fromEntries({{"norm.weight", "model.norm.weight"}}, "b.json"),
                       tinyCheckpoint(), {.convertTo = DType::F32}),
             Contains("bf16 does not convert to i32"));
  CHECK_THROWS_WITH(weights::bind(intModel, tinyBindings(), tinyCheckpoint(), {.convertTo = DType::I32}),
                    Contains("BindOptions.convertTo = i32 is not supported"));
}

TEST_CASE("f32 checkpoint converted to bf16 and f16 at load matches independent rounding", "[weights][bindings]") {
  Checkpoint ckpt = Checkpoint::open(dataDir() / "convert.safetensors");
  Bindings b = Bindings::fromEntries({{"x", "x"}}, "inline");
  auto bf = weights::bind({{"x", {24}, DType::BF16}}, b, ckpt, {.convertTo = DType::BF16});
  auto want = readNpy(dataDir() / "npy" / "convert_bf16.npy", {.u2IsBF16 = true});
  CHECK(std::equal(bf.at("x").data.begin(), bf.at("x").data.end(), want.data.begin(), want.data.end()));
  auto h = weights::bind({{"x", {24}, DType::F16}}, b, ckpt, {.convertTo = DType::F16});
  auto wantH = readNpy(dataDir() / "npy" / "convert_f16.npy");
  CHECK(std::equal(h.at("x").data.begin(), h.at("x").data.end(), wantH.data.begin(), wantH.data.end()));
  CHECK_THAT(bindError({{"x", {24}, DType::BF16}}, b, ckpt),
             Contains("x -> x: dtype mismatch: model expects [24] bf16, checkpoint has [24] f32"));
}

TEST_CASE("all problems are reported together, one line each", "[weights][bindings][errors]") {
  auto spec = tinyModel(2);
  // A wrong shape (the model thinks k_proj is [8, 8]), a dtype mismatch, and
  // a parameter bindings.json does not mention.
  for (auto& p : spec) {
    if (p.path == "layers.1.attention.k_proj.weight") p.shape = {8, 8};
    if (p.path == "norm.weight") p.dtype = DType::F16;
  }
  spec.push_back({"layers.0.attention.rope.freqs", {2}, DType::F32});
  auto entries = tinyBindings().entries();
  std::map<std::string, std::string> e(entries.begin(), entries.end());
  e.erase("layers.0.attention.q_proj.weight");
  e["layers.0.attn.q.weight"] = "model.layers.0.self_attn.q_proj.weight";  // misspelt path: no such param
  e["layers.0.mlp.up.weight"] = "model.layers.0.mlp.up_proj.weights";      // misspelt tensor name
  e["norm.weight.extra"] = "model.norm.weight";                            // no such param either
  Bindings b = Bindings::fromEntries(e, "bindings.json");
  std::string m = bindError(spec, b, tinyCheckpoint());
  INFO(m);
  CHECK_THAT(m, Contains("cannot bind the model's 22 parameters to checkpoint") && Contains("7 problems:"));
  CHECK(lineCount(m) == 7);
  CHECK_THAT(m, Contains("layers.1.attention.k_proj.weight -> model.layers.1.self_attn.k_proj.weight: shape mismatch: "
                         "model expects [8, 8] bf16, checkpoint has [4, 8] bf16 (in model-00001-of-00002.safetensors)"));
  CHECK_THAT(m, Contains("norm.weight -> model.norm.weight: dtype mismatch: model expects [8] f16, checkpoint has [8] "
                         "bf16"));
  CHECK_THAT(m, Contains("layers.0.mlp.up.weight -> model.layers.0.mlp.up_proj.weights: not in the checkpoint; model "
                         "expects [12, 8] bf16; did you mean 'model.layers.0.mlp.up_proj.weight'?"));
  CHECK_THAT(m, Contains("layers.0.attention.rope.freqs -> (none): no binding in bindings.json; model expects [2] f32"));
  CHECK_THAT(m, Contains("layers.0.attn.q.weight -> model.layers.0.self_attn.q_proj.weight: bindings.json binds a "
                         "parameter the model does not have (no layers.*.attn.q.weight for any index); did you mean "
                         "'layers.0.attention.q_proj.weight'?"));
  CHECK_THAT(m, Contains("norm.weight.extra -> model.norm.weight: bindings.json binds a parameter the model does not "
                         "have; did you mean 'norm.weight'?"));
  CHECK_THAT(m, Contains("layers.0.attention.q_proj.weight -> (none): no binding in bindings.json; model expects "
                         "[8, 8] bf16. Is \"layers.0.attn.q.weight\" a misspelling of it?"));
  CHECK(bindingProblems(spec, b, tinyCheckpoint()).size() == 7);

  // Both a shape and a dtype mismatch on one tensor: one line, both named.
  std::vector<ParamSpec> one{{"norm.weight", {9}, DType::F32}};
  CHECK_THAT(bindError(one, Bindings::fromEntries({{"norm.weight", "model.norm.weight"}}, "b.json"), tinyCheckpoint()),
             Contains("shape and dtype mismatch: model expects [9] f32, checkpoint has [8] bf16"));
  // A duplicated parameter in the model's list is reported, not trusted.
  std::vector<ParamSpec> twice{{"norm.weight", {8}, DType::BF16}, {"norm.weight", {8}, DType::BF16}};
  CHECK_THAT(bindError(twice, tinyBindings(), tinyCheckpoint()), Contains("lists this parameter twice"));
}
