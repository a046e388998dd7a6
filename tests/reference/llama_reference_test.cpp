// The zoo's cards against transformers: every entry that the fixtures
// cover, through linnet::nest::load on one backend. Built once per backend
// and fixture set: linnet_llama_<backend>_tests run the Llama card on two
// small configs (grouped and multi-query attention, several layers, rope
// frequencies in all three llama3 bands; tests/reference/make_llama_fixtures.py),
// linnet_families_<backend>_tests (LINNET_TEST_FAMILIES) every other
// family's card on its Hugging Face folder, generics from its config.json
// (tests/families/make_fixtures.py). The backends: reference (the op-by-op
// oracle), cpu (compiled CPU code) and cuda-emulated (the cuda target's
// host/device split run on the CPU).
#include <catch2/catch.hpp>

#include <cmath>

#include "nest/nest.h"
#include "support/fixture_generics.h"
#include "weights/safetensors.h"

using linnet::nest::DType;
using linnet::nest::Tensor;

namespace {

const std::string kBackend = LINNET_TEST_BACKEND;

// A card and the transformers fixture it is checked on: `generics.txt`
// beside the checkpoint (the Llama fixtures), or a Hugging Face folder whose
// config.json gives the generics (--generics-from-config). `file`, when
// set, is read instead of the folder: a GGUF beside it, whose metadata gives
// the generics.
struct Fixture {
  const char* card;
  const char* dir;
  bool fromConfig;
  const char* file = nullptr;
};

Tensor toTensor(const linnet::weights::TensorInfo& info) {
  return Tensor::fromBytes(info.dtype, info.shape, info.data);
}

using linnet::testing::setGeneric;
using linnet::testing::setGenerics;

// The card loaded with one fixture's generics (and `extra` overrides), its
// params bound from the fixture's checkpoint through bindings.json.
struct Card {
  std::unique_ptr<linnet::nest::Model> model;
  linnet::weights::Checkpoint expected;

  explicit Card(const Fixture& fixture, const std::vector<std::string>& extra = {}) {
    std::string dir = std::string(LINNET_TEST_DATA) + "/" + fixture.dir;
    linnet::nest::LoadOptions options;
    options.backend = kBackend;
    options.cacheDir = LINNET_TEST_CACHE;
    if (fixture.fromConfig) {
      options.weights = fixture.file ? dir + "/" + fixture.file : dir;
      options.genericsFromConfig = true;
      setGeneric(options, "MaxSeq=64");
    } else {
      options.weights = dir + "/" + (fixture.file ? fixture.file : "model.safetensors");
      setGenerics(options, dir + "/generics.txt");
    }
    for (const std::string& line : extra) setGeneric(options, line);
    model = std::make_unique<linnet::nest::Model>(
        linnet::nest::load(std::string(LINNET_SOURCE_DIR) + "/nest/" + fixture.card, options));
    expected = linnet::weights::Checkpoint::open(dir + "/expected.safetensors");
  }
  Tensor want(const std::string& name) { return toTensor(expected.at(name)); }
  int64_t vocab() { return want("logits1").shape.back(); }
};

double maxAbsDiff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape == b.shape);
  double worst = 0;
  for (int64_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::fabs(a.asDouble(k) - b.asDouble(k)));
  return worst;
}

// logits[0, s, :] as [1, V].
Tensor row(const Tensor& logits, int64_t s) {
  int64_t v = logits.shape.back();
  std::vector<double> r(v);
  for (int64_t k = 0; k < v; ++k) r[k] = logits.asDouble(s * v + k);
  return Tensor::fromFloats(DType::F32, {1, v}, r);
}

// Rows of [n, V] tensors stacked.
Tensor stack(const std::vector<Tensor>& rows) {
  std::vector<double> out;
  for (const Tensor& r : rows) {
    std::vector<double> v = r.toFloats();
    out.insert(out.end(), v.begin(), v.end());
  }
  return Tensor::fromFloats(DType::F32, {static_cast<int64_t>(rows.size()), rows[0].shape.back()}, out);
}

Tensor ints(DType dt, std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  return Tensor::fromInts(dt, std::move(shape), values);
}
Tensor i32(int64_t v) { return Tensor::scalarI(DType::I32, v); }

std::vector<int64_t> flat(const Tensor& t) { return t.toInts(); }

int32_t argmax(const Tensor& logits) {
  std::vector<double> v = logits.toFloats();
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

std::vector<int64_t> iotaFrom(int64_t lo, int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t k = 0; k < n; ++k) v[k] = lo + k;
  return v;
}

std::vector<int64_t> cat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

constexpr double kTol = 1e-4;
#if defined(LINNET_TEST_FAMILIES)
const Fixture kConfigs[] = {{"qwen3-0.6b", "families/qwen3-0.6b", true},
                            {"qwen2.5-0.5b-instruct", "families/qwen2.5-0.5b-instruct", true},
                            {"phi-3-mini-4k-instruct", "families/phi-3-mini-4k-instruct", true},
                            {"gemma-3-270m", "families/gemma-3-270m", true}};
#elif defined(LINNET_TEST_GQA2_ONLY)
// cuda-emulated compiles every entry shape a second time through the cuda
// target's host/device split: grouped attention only, to keep CI's time
// (the CPU and reference runs cover multi-query attention).
const Fixture kConfigs[] = {{"llama-3.1-8b-instruct", "llama/gqa2", false}};
#else
const Fixture kConfigs[] = {{"llama-3.1-8b-instruct", "llama/gqa2", false},
                            {"llama-3.1-8b-instruct", "llama/mqa3", false}};
#endif

// The largest magnitude among `t`'s values: the scale that f32 logits over
// many layers are compared relative to.
double maxAbs(const Tensor& t) {
  double m = 0;
  for (int64_t k = 0; k < t.size(); ++k) m = std::max(m, std::fabs(t.asDouble(k)));
  return m;
}

}  // namespace

TEST_CASE("forward, next_token, decode, prefill and generate agree with transformers",
          "[reference][llama]") {
  for (const Fixture& config : kConfigs) {
    SECTION(config.dir) {
      Card card(config);
      Tensor tokens = card.want("tokens1");
      Tensor logits = card.want("logits1");
      int64_t S = tokens.shape[1];

      Tensor forward = card.model->call("forward", {tokens})[0];
      INFO("forward max abs diff " << maxAbsDiff(forward, logits));
      CHECK(maxAbsDiff(forward, logits) < kTol);
      // The rule decided for f32 over many layers: within 1e-5 of the logits' scale.
      CHECK(maxAbsDiff(forward, logits) <= 1e-5 * maxAbs(logits));

      CHECK(maxAbsDiff(card.model->call("next_token", {tokens})[0], row(logits, S - 1)) < kTol);

      // decode, token by token, equals forward at each position.
      card.model->resetState();
      for (int64_t s = 0; s < S; ++s) {
        Tensor step = card.model->call("decode", {ints(DType::I32, {1, 1}, {tokens.asInt(s)}), i32(s)})[0];
        INFO("decode at position " << s);
        CHECK(maxAbsDiff(step, row(logits, s)) < kTol);
      }

      // prefill, then greedy decoding in the graph, gives transformers' greedy ids.
      card.model->resetState();
      Tensor prefilled = card.model->call("prefill", {tokens, i32(0)})[0];
      CHECK(maxAbsDiff(prefilled, row(logits, S - 1)) < kTol);
      std::vector<int64_t> greedy = flat(card.want("greedy1"));
      int64_t steps = static_cast<int64_t>(greedy.size());
      CHECK(argmax(prefilled) == greedy[0]);
      Tensor first = ints(DType::I32, {1, 1}, {greedy[0]});
      Tensor rest = card.model->call("generate", {first, i32(S)}, {{"Steps", steps - 1}})[0];
      CHECK(flat(rest) == std::vector<int64_t>(greedy.begin() + 1, greedy.end()));

      // generate_until stops after the end token, with zeros past the count.
      card.model->resetState();
      card.model->call("prefill", {tokens, i32(0)});
      int64_t eos = greedy[4];
      int64_t stop = std::find(greedy.begin() + 1, greedy.end(), eos) - greedy.begin();
      if (kBackend == "cuda-emulated") {
        // Its `while` tests a flag computed on the device: the cuda target
        // refuses it, naming the loop, rather than reading device memory.
        CHECK_THROWS_WITH(card.model->call("generate_until", {first, i32(S), i32(eos)}, {{"MaxNew", 12}}),
                          Catch::Contains("host code would touch device memory") &&
                              Catch::Contains("lib.linnet\":494:9"));
      } else {
        auto until = card.model->call("generate_until", {first, i32(S), i32(eos)}, {{"MaxNew", 12}});
        int64_t count = until[1].asInt(0);
        CHECK(count == std::min<int64_t>(stop, 12));
        for (int64_t k = 0; k < 12; ++k)
          CHECK(until[0].asInt(k) == (k < count ? greedy[k + 1] : 0));
      }

      // sample: a fixed key gives the same ids every run; a tiny temperature
      // gives the greedy ones.
      auto sample = [&](double temperature) {
        card.model->resetState();
        card.model->call("prefill", {tokens, i32(0)});
        Tensor key = ints(DType::I64, {2}, {42, 7});
        return card.model->call("sample", {first, i32(S), key, Tensor::scalarF(DType::F32, temperature)},
                                {{"Steps", 8}})[0];
      };
      Tensor once = sample(1.0);
      CHECK(flat(sample(1.0)) == flat(once));
      CHECK(flat(sample(1e-6)) == std::vector<int64_t>(greedy.begin() + 1, greedy.begin() + 9));
    }
  }
}

TEST_CASE("several requests at once equal per-request runs", "[reference][llama]") {
  for (const Fixture& config : kConfigs) {
    SECTION(config.dir) {
      Card card(config, {"Batch=2"});
      Tensor t1 = card.want("tokens1"), t2 = card.want("tokens2");
      Tensor full1 = card.want("full_logits1"), full2 = card.want("full_logits2");
      Tensor g1 = card.want("greedy1"), g2 = card.want("greedy2");
      int64_t S1 = t1.shape[1], S2 = t2.shape[1], S = std::max(S1, S2);
      Tensor want = stack({row(full1, S1 - 1), row(full2, S2 - 1)});
      Tensor step = stack({row(full1, S1), row(full2, S2)});
      Tensor next = ints(DType::I32, {2, 1}, {g1.asInt(0), g2.asInt(0)});
      Tensor at = ints(DType::I32, {2}, {S1, S2});

      // prefill_slots: both prompts padded to S, into rows 1 and 0, then a
      // decode_rows step continues each at its own position.
      std::vector<int64_t> padded(2 * S, 0);
      std::vector<int64_t> ids1 = flat(t1), ids2 = flat(t2);
      std::copy(ids1.begin(), ids1.end(), padded.begin() + S);  // row 1 of the input -> slot 0
      std::copy(ids2.begin(), ids2.end(), padded.begin());
      auto slotted = card.model->call("prefill_slots", {ints(DType::I32, {2, S}, padded),
                                                        ints(DType::I32, {2}, {1, 0}),
                                                        ints(DType::I32, {2}, {S2, S1})})[0];
      CHECK(maxAbsDiff(slotted, stack({row(full2, S2 - 1), row(full1, S1 - 1)})) < kTol);
      CHECK(maxAbsDiff(card.model->call("decode_rows", {next, at})[0], step) < kTol);

      // prefill_packed: the two prompts end to end, no padding.
      card.model->resetState();
      std::vector<int64_t> packed = cat(flat(t1), flat(t2));
      int64_t P = S1 + S2;
      auto packedLogits = card.model->call("prefill_packed", {
          ints(DType::I32, {P}, packed),
          ints(DType::I32, {P}, cat(std::vector<int64_t>(S1, 0), std::vector<int64_t>(S2, 1))),
          ints(DType::I32, {P}, cat(iotaFrom(0, S1), iotaFrom(0, S2))),
          ints(DType::I32, {P}, cat(std::vector<int64_t>(S1, 0), std::vector<int64_t>(S2, 1))),
          ints(DType::I32, {2}, {S1 - 1, P - 1})})[0];
      CHECK(maxAbsDiff(packedLogits, want) < kTol);
      CHECK(maxAbsDiff(card.model->call("decode_rows", {next, at})[0], step) < kTol);

      // step_packed: prompt 2 joins into row 1 while row 0 (prompt 1, already
      // prefilled) takes its next step, in one pass.
      card.model->resetState();
      card.model->call("prefill_packed", {ints(DType::I32, {S1}, flat(t1)), ints(DType::I32, {S1}, std::vector<int64_t>(S1, 0)),
                                          ints(DType::I32, {S1}, iotaFrom(0, S1)), ints(DType::I32, {S1}, std::vector<int64_t>(S1, 0)),
                                          ints(DType::I32, {2}, {S1 - 1, S1 - 1})});
      int64_t unused = 63;  // MaxSeq - 1: where no request reads
      auto stepped = card.model->call("step_packed", {
          ints(DType::I32, {S2}, flat(t2)), ints(DType::I32, {S2}, std::vector<int64_t>(S2, 1)),
          ints(DType::I32, {S2}, iotaFrom(0, S2)), ints(DType::I32, {S2}, std::vector<int64_t>(S2, 0)),
          ints(DType::I32, {2}, {S2 - 1, S2 - 1}), ints(DType::I32, {2, 1}, {g1.asInt(0), 0}),
          ints(DType::I32, {2}, {S1, unused})})[0];
      Tensor firstRows = stack({row(full2, S2 - 1), row(full1, S1)});
      Tensor got = stack({row(stepped, 0), row(stepped, 2)});  // prompt 2's logits, row 0's step
      CHECK(maxAbsDiff(got, firstRows) < kTol);
    }
  }
}

TEST_CASE("paged entries equal per-request runs", "[reference][llama]") {
  for (const Fixture& config : kConfigs) {
    SECTION(config.dir) {
      Card card(config, {"PageSize=4"});
      Tensor t1 = card.want("tokens1"), t2 = card.want("tokens2");
      Tensor full1 = card.want("full_logits1"), full2 = card.want("full_logits2");
      Tensor g1 = card.want("greedy1"), g2 = card.want("greedy2");
      int64_t S1 = t1.shape[1], S2 = t2.shape[1], P = S1 + S2;
      // Pages of 4 positions out of a pool of 64; each row's pages scattered.
      std::vector<int64_t> table = {3, 7, 11, 13, 10, 2, 5, 9};
      auto slot = [&](int64_t r, int64_t pos) { return table[r * 4 + pos / 4] * 4 + pos % 4; };
      std::vector<int64_t> slots;
      for (int64_t p = 0; p < S1; ++p) slots.push_back(slot(0, p));
      for (int64_t p = 0; p < S2; ++p) slots.push_back(slot(1, p));
      Tensor tableT = ints(DType::I32, {2, 4}, table);
      auto prefilled = card.model->call("prefill_paged", {
          ints(DType::I32, {P}, cat(flat(t1), flat(t2))), ints(DType::I32, {P}, cat(iotaFrom(0, S1), iotaFrom(0, S2))),
          ints(DType::I32, {P}, cat(std::vector<int64_t>(S1, 0), std::vector<int64_t>(S2, 1))),
          ints(DType::I32, {P}, slots), ints(DType::I32, {2}, {S1 - 1, P - 1}), tableT})[0];
      CHECK(maxAbsDiff(prefilled, stack({row(full1, S1 - 1), row(full2, S2 - 1)})) < kTol);
      auto decoded = card.model->call("decode_paged", {ints(DType::I32, {2, 1}, {g1.asInt(0), g2.asInt(0)}),
                                                      ints(DType::I32, {2}, {S1, S2}), tableT})[0];
      CHECK(maxAbsDiff(decoded, stack({row(full1, S1), row(full2, S2)})) < kTol);

      // step_paged: prompt 2 again into fresh pages of row 1 while row 0 steps.
      card.model->resetState();
      std::vector<int64_t> slots1(slots.begin(), slots.begin() + S1);
      card.model->call("prefill_paged", {ints(DType::I32, {S1}, flat(t1)), ints(DType::I32, {S1}, iotaFrom(0, S1)),
                                         ints(DType::I32, {S1}, std::vector<int64_t>(S1, 0)),
                                         ints(DType::I32, {S1}, slots1), ints(DType::I32, {2}, {S1 - 1, S1 - 1}), tableT});
      std::vector<int64_t> slots2(slots.begin() + S1, slots.end());
      auto stepped = card.model->call("step_paged", {
          ints(DType::I32, {S2}, flat(t2)), ints(DType::I32, {S2}, iotaFrom(0, S2)),
          ints(DType::I32, {S2}, std::vector<int64_t>(S2, 1)), ints(DType::I32, {S2}, slots2),
          ints(DType::I32, {2}, {S2 - 1, S2 - 1}), ints(DType::I32, {2, 1}, {g1.asInt(0), g2.asInt(0)}),
          ints(DType::I32, {2}, {S1, S2}), tableT})[0];
      // Rows: prompt logits for last[0], last[1], then each row's step. Row 1's
      // step is its position S2 after its own prompt, in the same pass.
      CHECK(maxAbsDiff(stack({row(stepped, 0), row(stepped, 2)}), stack({row(full2, S2 - 1), row(full1, S1)})) < kTol);
    }
  }
}

TEST_CASE("training entries match transformers' log-probabilities", "[reference][llama]") {
  for (const Fixture& config : kConfigs) {
    SECTION(config.dir) {
      Card card(config);
      Tensor t1 = card.want("tokens1"), t2 = card.want("tokens2");
      Tensor lp1 = card.want("token_logp1"), lp2 = card.want("token_logp2");
      int64_t S1 = t1.shape[1], S2 = t2.shape[1], P = S1 + S2;
      Tensor tokens = ints(DType::I32, {P}, cat(flat(t1), flat(t2)));
      Tensor positions = ints(DType::I32, {P}, cat(iotaFrom(0, S1), iotaFrom(0, S2)));
      Tensor segments = ints(DType::I32, {P}, cat(std::vector<int64_t>(S1, 0), std::vector<int64_t>(S2, 1)));
      // Each position's target is its prompt's next token; the last of each prompt has none.
      std::vector<int64_t> targets;
      std::vector<double> weights;
      for (int64_t p = 0; p < S1; ++p) targets.push_back(p + 1 < S1 ? t1.asInt(p + 1) : 0), weights.push_back(p + 1 < S1);
      for (int64_t p = 0; p < S2; ++p) targets.push_back(p + 1 < S2 ? t2.asInt(p + 1) : 0), weights.push_back(p + 1 < S2);
      Tensor targetsT = ints(DType::I64, {P}, targets);
      Tensor weightsT = Tensor::fromFloats(DType::F32, {P}, weights);

      Tensor logp = card.model->call("log_probs_packed", {tokens, positions, segments, targetsT})[0];
      double expectedLoss = 0;
      for (int64_t p = 0; p + 1 < S1; ++p) {
        CHECK(std::fabs(logp.asDouble(p) - lp1.asDouble(p)) < kTol);
        expectedLoss -= lp1.asDouble(p);
      }
      for (int64_t p = 0; p + 1 < S2; ++p) {
        CHECK(std::fabs(logp.asDouble(S1 + p) - lp2.asDouble(p)) < kTol);
        expectedLoss -= lp2.asDouble(p);
      }
      Tensor loss = card.model->call("loss_packed", {tokens, positions, segments, targetsT, weightsT})[0];
      CHECK(std::fabs(loss.asDouble(0) - expectedLoss) < 1e-3);

      Tensor hidden = card.model->call("hidden_packed", {tokens, positions, segments})[0];
      Tensor h1 = card.want("hidden1"), h2 = card.want("hidden2");
      int64_t H = h1.shape[1];
      double worst = 0;
      for (int64_t k = 0; k < S1 * H; ++k) worst = std::max(worst, std::fabs(hidden.asDouble(k) - h1.asDouble(k)));
      for (int64_t k = 0; k < S2 * H; ++k) worst = std::max(worst, std::fabs(hidden.asDouble(S1 * H + k) - h2.asDouble(k)));
      CHECK(worst < kTol);
    }
  }
}

#if defined(LINNET_TEST_FAMILIES)
// Each family's fixture as a GGUF written with llama.cpp's tensor names,
// metadata keys and Gemma's stored norms (tests/families/make_gguf_fixtures.py,
// which also checks that llama.cpp reads Qwen's and Phi's files as
// transformers' models): read through the family's descriptor
// (nest/families/*.toml [gguf]), generics from the file's metadata. A GGUF
// says no dtype: T = f32, as its F32 tensors are.
TEST_CASE("each family's GGUF gives transformers' numbers", "[reference][families][gguf]") {
  for (const Fixture& folder : kConfigs) {
    SECTION(folder.dir) {
      Fixture fixture = folder;
      fixture.file = "model.gguf";
      Card card(fixture, {"T=f32"});
      Tensor tokens = card.want("tokens1");
      Tensor forward = card.model->call("forward", {tokens})[0];
      if (std::string(fixture.card) == "gemma-3-270m") {
        // The fixture scales queries by query_pre_attn_scalar = 24, which a
        // GGUF cannot say: llama.cpp reads key_length (16), and so does the
        // card. Against the card on the safetensors at 16 (the names and
        // the undone norm shift: equal to f32 rounding), and llama.cpp's own
        // logits on the file (make_gguf_fixtures.py), whose GELU is read
        // from an f16 table (ggml's GGML_GELU_FP16): within 5e-3 of the scale.
        Fixture plain{fixture.card, fixture.dir, false, "model.safetensors"};
        Card same(plain, {"Vocab=96", "H=48", "Heads=4", "KvHeads=1", "D=16", "Inner=80", "Layers=7", "Window=4",
                          "QueryScale=16", "Pattern=6", "MaxSeq=64", "T=f32"});
        Tensor want = same.model->call("forward", {tokens})[0];
        INFO("against the safetensors: max abs diff " << maxAbsDiff(forward, want));
        CHECK(maxAbsDiff(forward, want) <= 1e-5 * maxAbs(want));
        auto peer = linnet::weights::Checkpoint::open(std::string(LINNET_TEST_DATA) + "/" + fixture.dir +
                                                      "/llama_cpp.safetensors");
        Tensor theirs = toTensor(peer.at("logits1"));
        INFO("against llama.cpp: max abs diff " << maxAbsDiff(forward, theirs) << ", scale " << maxAbs(theirs));
        CHECK(maxAbsDiff(forward, theirs) <= 5e-3 * maxAbs(theirs));
      } else {
        Tensor want = card.want("logits1");
        INFO("forward max abs diff " << maxAbsDiff(forward, want) << ", logits' scale " << maxAbs(want));
        CHECK(maxAbsDiff(forward, want) <= 1e-5 * maxAbs(want));  // the f32 rule
        std::vector<int64_t> greedy = flat(card.want("greedy1"));
        card.model->resetState();
        Tensor prefilled = card.model->call("prefill", {tokens, i32(0)})[0];
        CHECK(argmax(prefilled) == greedy[0]);
        Tensor first = ints(DType::I32, {1, 1}, {greedy[0]});
        int64_t steps = static_cast<int64_t>(greedy.size()) - 1;
        Tensor rest = card.model->call("generate", {first, i32(tokens.shape[1])}, {{"Steps", steps}})[0];
        CHECK(flat(rest) == std::vector<int64_t>(greedy.begin() + 1, greedy.end()));
      }
    }
  }
}
#endif
