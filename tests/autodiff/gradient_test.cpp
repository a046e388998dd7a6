// The derived gradient (compiler/autodiff) of the card's `loss_packed`, run
// on the reference backend in float64 (WideFloats: the card in f32, never
// rounded) with seeded random params, checked
// against central finite differences of the same entry (rule: 1e-6 of the
// param's gradient norm), and for the properties a packed loss must have: a
// token of weight 0 contributes exactly nothing, a packed batch's gradient
// is the sum of its prompts' gradients run alone, and `log_probs_packed`
// weighed by a cotangent gives loss_packed's gradient for the negated
// weights.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <random>

#include "autodiff/token_log_probs.h"
#include "base/diagnostics.h"
#include "sema/checker.h"
#include "sema/program.h"
#include "targets/reference/model.h"

using linnet::reference::Model;
using linnet::reference::Scalar;
using linnet::reference::Tensor;

namespace {

const std::string kCard = std::string(LINNET_SOURCE_DIR) + "/nest/llama-3.1-8b-instruct";
const std::vector<std::string> kTiny = {"Vocab=24", "H=16",     "Heads=4", "KvHeads=2", "Inner=24",
                                        "Layers=2", "MaxSeq=16", "Batch=1", "T=f32"};

struct TinyCard {
  linnet::reference::WideFloats wide;  // f32 evaluated in float64
  linnet::SourceManager sources;
  linnet::Diagnostics diags{sources};
  linnet::sema::Program program{sources, diags, LINNET_STDLIB_DIR};
  std::unique_ptr<Model> model;
  std::map<std::string, Tensor> params;

  TinyCard() {
    for (const std::string& g : kTiny) REQUIRE(program.setGeneric(g));
    REQUIRE(program.loadPackage(kCard));
    linnet::sema::Checker checker(program, diags);
    checker.checkDefinitions();
    REQUIRE(checker.instantiateRoot().has_value());
    REQUIRE(diags.render() == "");
    model = std::make_unique<Model>(program);
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal(0.0, 0.3);
    for (const auto& spec : model->params()) {
      Tensor t = Tensor::zeros(spec.dtype, spec.shape);
      bool norm = spec.path.find("norm") != std::string::npos;
      for (double& v : t.f) v = (norm ? 1.0 : 0.0) + normal(rng);
      params[spec.path] = t;
    }
    rebind();
  }
  void rebind() {
    model->bind([&](const linnet::reference::ParamSpec& p) { return params.at(p.path); });
  }
};

Tensor ints(Scalar dt, const std::vector<int64_t>& v) {
  Tensor t = Tensor::zeros(dt, {static_cast<int64_t>(v.size())});
  t.i = v;
  return t;
}

// Prompts packed end to end: `loss_packed`'s five inputs.
struct Packed {
  std::vector<int64_t> tokens, positions, segments, targets;
  std::vector<double> weights;
  void add(const std::vector<int64_t>& prompt, const std::vector<double>& w) {
    int64_t segment = segments.empty() ? 0 : segments.back() + 1;
    for (size_t k = 0; k < prompt.size(); ++k) {
      tokens.push_back(prompt[k]);
      positions.push_back(static_cast<int64_t>(k));
      segments.push_back(segment);
      targets.push_back(k + 1 < prompt.size() ? prompt[k + 1] : 0);
      weights.push_back(w[k]);
    }
  }
  std::vector<Tensor> args() const {
    Tensor wt = Tensor::zeros(Scalar::F32, {static_cast<int64_t>(weights.size())});
    wt.f = weights;
    return {ints(Scalar::I32, tokens), ints(Scalar::I32, positions), ints(Scalar::I32, segments),
            ints(Scalar::I64, targets), wt};
  }
};

const std::vector<std::vector<int64_t>> kPrompts = {{3, 17, 5, 9}, {1, 22, 8}, {4, 4, 13, 20, 2}};
const std::vector<std::vector<double>> kWeights = {{1, 1, 0, 0}, {0, 1, 0}, {1, 0, 1, 1, 0}};

Packed packedAll() {
  Packed p;
  for (size_t k = 0; k < kPrompts.size(); ++k) p.add(kPrompts[k], kWeights[k]);
  return p;
}

auto all = [](const std::string&) { return true; };

double loss(TinyCard& card, const Packed& p) { return card.model->call("loss_packed", p.args()).at(0).f.at(0); }

double norm(const Tensor& t) {
  double s = 0;
  for (double v : t.f) s += v * v;
  return std::sqrt(s);
}

// `packed`, the gradient of `prompts` packed, against the sum of each
// prompt's run alone (float64: only the order of sums differs).
void checkSumOfPrompts(TinyCard& card, const std::vector<std::vector<int64_t>>& prompts,
                       const std::vector<std::vector<double>>& weights, const Model::Gradient& packed) {
  std::vector<Tensor> sum;
  double value = 0;
  for (size_t k = 0; k < prompts.size(); ++k) {
    Packed one;
    one.add(prompts[k], weights[k]);
    Model::Gradient alone = card.model->gradient("loss_packed", one.args(), {}, all);
    value += alone.value.f.at(0);
    if (sum.empty()) sum = alone.grads;
    else
      for (size_t j = 0; j < sum.size(); ++j)
        for (size_t e = 0; e < sum[j].f.size(); ++e) sum[j].f[e] += alone.grads[j].f[e];
  }
  CHECK(packed.value.f.at(0) == Approx(value).epsilon(1e-12));
  for (size_t k = 0; k < sum.size(); ++k) {
    INFO(packed.params[k]);
    double diff = 0;
    for (size_t e = 0; e < sum[k].f.size(); ++e) diff = std::max(diff, std::abs(sum[k].f[e] - packed.grads[k].f[e]));
    CHECK(diff <= 1e-12 * norm(sum[k]));
  }
}

}  // namespace

TEST_CASE("loss_packed's gradient equals central differences for every param") {
  TinyCard card;
  Packed p = packedAll();
  Model::Gradient g = card.model->gradient("loss_packed", p.args(), {}, all);
  REQUIRE(g.params.size() == card.params.size());
  CHECK(g.value.f.at(0) == Approx(loss(card, p)).epsilon(1e-12));
  const double eps = 1e-5;
  for (size_t k = 0; k < g.params.size(); ++k) {
    const std::string& path = g.params[k];
    Tensor& w = card.params.at(path);
    double scale = norm(g.grads[k]);
    INFO(path << ": gradient norm " << scale);
    REQUIRE(scale > 0);
    for (int64_t at : {int64_t{0}, w.size() / 2, w.size() - 1}) {
      double saved = w.f[at];
      w.f[at] = saved + eps;
      card.rebind();
      double up = loss(card, p);
      w.f[at] = saved - eps;
      card.rebind();
      double down = loss(card, p);
      w.f[at] = saved;
      double fd = (up - down) / (2 * eps);
      INFO("element " << at << ": derived " << g.grads[k].f[at] << ", differences " << fd);
      CHECK(std::abs(fd - g.grads[k].f[at]) <= 1e-6 * scale);
    }
    card.rebind();
  }
}

TEST_CASE("a token of weight 0 contributes nothing, and a packed batch's gradient is its prompts' sum") {
  TinyCard card;
  Packed p = packedAll();
  Model::Gradient packed = card.model->gradient("loss_packed", p.args(), {}, all);

  Packed other = p;  // every weight-0 target changed
  for (size_t k = 0; k < other.targets.size(); ++k)
    if (other.weights[k] == 0) other.targets[k] = (other.targets[k] + 5) % 24;
  Model::Gradient changed = card.model->gradient("loss_packed", other.args(), {}, all);
  CHECK(changed.value.f == packed.value.f);
  for (size_t k = 0; k < packed.grads.size(); ++k) {
    INFO(packed.params[k]);
    CHECK(changed.grads[k].f == packed.grads[k].f);
  }

  checkSumOfPrompts(card, kPrompts, kWeights, packed);
}

// 300 positions: the output head's log-probabilities go by two chunks of
// 128 rows in a loop and a tail of 44 (autodiff/token_log_probs.h), each
// prompt alone by one chunk.
TEST_CASE("the output head by chunks of rows gives a packed batch its prompts' summed gradient") {
  TinyCard card;
  std::mt19937_64 rng(5);
  std::vector<std::vector<int64_t>> prompts(20);
  std::vector<std::vector<double>> weights(20);
  Packed p;
  for (size_t k = 0; k < prompts.size(); ++k) {
    for (int t = 0; t < 15; ++t) {
      prompts[k].push_back(static_cast<int64_t>(rng() % 24));
      weights[k].push_back(static_cast<double>(rng() % 3) / 2);
    }
    p.add(prompts[k], weights[k]);
  }
  REQUIRE(linnet::autodiff::tokenChunkRows(300, 24) == 128);
  Model::Gradient packed = card.model->gradient("loss_packed", p.args(), {}, all);
  CHECK(packed.value.f.at(0) == Approx(loss(card, p)).epsilon(1e-12));  // the entry's own head, unchunked
  checkSumOfPrompts(card, prompts, weights, packed);
}

TEST_CASE("log_probs_packed weighed by a cotangent is loss_packed weighed by its negation") {
  TinyCard card;
  Packed p = packedAll();
  std::vector<Tensor> args = p.args();
  Tensor cotangent = args.back();
  for (double& v : cotangent.f) v = -v;
  args.pop_back();
  Model::Gradient logProbs = card.model->gradient("log_probs_packed", args, {}, all, cotangent);
  Model::Gradient loss = card.model->gradient("loss_packed", p.args(), {}, all);
  REQUIRE(logProbs.params == loss.params);
  CHECK(logProbs.value.shape == std::vector<int64_t>{static_cast<int64_t>(p.tokens.size())});
  for (size_t k = 0; k < loss.grads.size(); ++k) {
    INFO(loss.params[k]);
    double diff = 0;
    for (size_t e = 0; e < loss.grads[k].f.size(); ++e)
      diff = std::max(diff, std::abs(logProbs.grads[k].f[e] - loss.grads[k].f[e]));
    CHECK(diff <= 1e-12 * norm(loss.grads[k]));
  }
  Tensor wrong = Tensor::zeros(Scalar::F32, {2});
  CHECK_THROWS_WITH(card.model->gradient("log_probs_packed", args, {}, all, wrong),
                    Catch::Matchers::Contains("but the cotangent is"));
}

TEST_CASE("--wrt restricts the params; entries without a gradient are named") {
  TinyCard card;
  Packed p = packedAll();
  auto onlyNorms = [](const std::string& path) { return path.find("norm") != std::string::npos; };
  Model::Gradient norms = card.model->gradient("loss_packed", p.args(), {}, onlyNorms);
  Model::Gradient every = card.model->gradient("loss_packed", p.args(), {}, all);
  REQUIRE(!norms.params.empty());
  for (size_t k = 0; k < norms.params.size(); ++k) {
    CHECK(norms.params[k].find("norm") != std::string::npos);
    for (size_t j = 0; j < every.params.size(); ++j)
      if (every.params[j] == norms.params[k]) CHECK(norms.grads[k].f == every.grads[j].f);
  }
  // log_probs_packed is a vector: it needs a cotangent. decode writes its caches.
  std::vector<Tensor> four = p.args();
  four.pop_back();
  CHECK_THROWS_WITH(card.model->gradient("log_probs_packed", four, {}, all),
                    Catch::Matchers::Contains("its gradient needs a cotangent of that type"));
  CHECK_THROWS_WITH(card.model->gradient("decode", {Tensor::zeros(Scalar::I32, {1, 1}), Tensor::scalarI(Scalar::I32, 0)},
                                         {}, all),
                    Catch::Matchers::Contains("writes state"));
}

TEST_CASE("the scanned tapes (each layer recomputed, or its values stacked) give the unrolled tape's gradient") {
  using linnet::autodiff::Policy;
  const Policy policy = GENERATE(Policy::Scan, Policy::Saved);
  INFO("tape " << linnet::autodiff::policyName(policy));
  TinyCard card;
  Packed p;
  p.add({3, 7, 1, 9, 4}, {0, 1, 1, 1, 1});
  p.add({5, 2, 8}, {0, 1, 0.5});
  auto all = [](const std::string&) { return true; };
  Model::Gradient scan = card.model->gradient("loss_packed", p.args(), {}, all, std::nullopt, false, policy);
  Model::Gradient unrolled =
      card.model->gradient("loss_packed", p.args(), {}, all, std::nullopt, false, Policy::Unrolled);
  CHECK(scan.tape == policy);  // the layer loop was kept, not unrolled in a fallback
  CHECK(unrolled.tape == Policy::Unrolled);
  REQUIRE(scan.params == unrolled.params);
  CHECK(scan.value.f == unrolled.value.f);
  for (size_t k = 0; k < scan.params.size(); ++k) {
    INFO(scan.params[k]);
    double diff = 0, norm = 0;
    for (size_t i = 0; i < scan.grads[k].f.size(); ++i) {
      diff = std::max(diff, std::abs(scan.grads[k].f[i] - unrolled.grads[k].f[i]));
      norm = std::max(norm, std::abs(unrolled.grads[k].f[i]));
    }
    CHECK(diff <= 1e-12 * std::max(norm, 1e-30));  // float64 throughout: only the order of sums differs
  }
}

namespace {

// m (rows x inner) times n (inner x cols), with either read transposed.
Tensor product(const Tensor& m, bool tm, const Tensor& n, bool tn) {
  const int64_t rows = m.shape[tm ? 1 : 0], inner = m.shape[tm ? 0 : 1], cols = n.shape[tn ? 0 : 1];
  Tensor out = Tensor::zeros(Scalar::F32, {rows, cols});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (int64_t t = 0; t < inner; ++t)
        s += m.f[static_cast<size_t>(tm ? t * rows + i : i * inner + t)] *
             n.f[static_cast<size_t>(tn ? j * inner + t : t * cols + j)];
      out.f[static_cast<size_t>(i * cols + j)] = s;
    }
  return out;
}

double maxDiff(const Tensor& a, const Tensor& b) {
  double d = 0;
  for (size_t i = 0; i < a.f.size(); ++i) d = std::max(d, std::abs(a.f[i] - b.f[i]));
  return d;
}

}  // namespace

// Every matrix: the projections (attention's and the MLP's, read in the
// layer loop), the embedding (read by a gather: a scattered cotangent) and
// the output head (outside the loop).
TEST_CASE("a low-rank gradient is B^T dW and dW A^T of the full gradient, on every tape") {
  using linnet::autodiff::Policy;
  const Policy policy = GENERATE(Policy::Scan, Policy::Saved, Policy::Unrolled);
  INFO("tape " << linnet::autodiff::policyName(policy));
  TinyCard card;
  Packed p = packedAll();
  const int64_t rank = 3;
  linnet::reference::LowRank lowRank{rank, {}};
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(0.0, 0.5);
  std::vector<std::string> matrices;
  for (const auto& spec : card.model->params()) {
    if (spec.shape.size() != 2) continue;
    matrices.push_back(spec.path);
    Tensor a = Tensor::zeros(Scalar::F32, {rank, spec.shape[1]}), b = Tensor::zeros(Scalar::F32, {spec.shape[0], rank});
    for (double& v : a.f) v = normal(rng);
    for (double& v : b.f) v = normal(rng);
    lowRank.factors[spec.path + ".lora_A"] = a;
    lowRank.factors[spec.path + ".lora_B"] = b;
  }
  auto isMatrix = [&](const std::string& path) {
    return std::find(matrices.begin(), matrices.end(), path) != matrices.end();
  };
  Model::Gradient full = card.model->gradient("loss_packed", p.args(), {}, isMatrix, std::nullopt, false, policy);
  Model::Gradient low =
      card.model->gradient("loss_packed", p.args(), {}, isMatrix, std::nullopt, false, policy, lowRank);
  CHECK(low.tape == policy);
  CHECK(low.value.f == full.value.f);
  REQUIRE(full.params == matrices);
  REQUIRE(low.params.size() == 2 * matrices.size());
  for (size_t k = 0; k < matrices.size(); ++k) {
    INFO(matrices[k]);
    REQUIRE(low.params[2 * k] == matrices[k] + ".lora_A");
    REQUIRE(low.params[2 * k + 1] == matrices[k] + ".lora_B");
    const Tensor& dW = full.grads[k];
    Tensor dA = product(lowRank.factors.at(low.params[2 * k + 1]), true, dW, false);  // B^T dW
    Tensor dB = product(dW, false, lowRank.factors.at(low.params[2 * k]), true);       // dW A^T
    CHECK(low.grads[2 * k].shape == dA.shape);
    CHECK(low.grads[2 * k + 1].shape == dB.shape);
    // float64 throughout: only the order of the sums differs.
    CHECK(maxDiff(low.grads[2 * k], dA) <= 1e-12 * std::max(norm(dA), 1e-30));
    CHECK(maxDiff(low.grads[2 * k + 1], dB) <= 1e-12 * std::max(norm(dB), 1e-30));
  }
}

TEST_CASE("a low-rank gradient factors matrices only, and needs every factor") {
  TinyCard card;
  Packed p = packedAll();
  auto onlyNorm = [](const std::string& path) { return path == "norm.weight"; };
  CHECK_THROWS_WITH(card.model->gradient("loss_packed", p.args(), {}, onlyNorm, std::nullopt, false,
                                         linnet::autodiff::Policy::Scan, {2, {}}),
                    Catch::Matchers::Contains("param `norm.weight` is") &&
                        Catch::Matchers::Contains("a low-rank gradient (LoRA) factors matrices only"));
  auto head = [](const std::string& path) { return path == "lm_head.weight"; };
  CHECK_THROWS_WITH(card.model->gradient("loss_packed", p.args(), {}, head, std::nullopt, false,
                                         linnet::autodiff::Policy::Scan, {2, {}}),
                    Catch::Matchers::Contains("needs its factor `lm_head.weight.lora_A`"));
}
