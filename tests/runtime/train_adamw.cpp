// runtime/train's AdamW and gradient clipping against torch's own, step by
// step (tests/data/train/adamw.json: tests/train/make_adamw_fixture.py).
// torch's CPU kernels may fuse multiply-adds in their vector lanes and sum
// norms in another order, so the rule is relative: every param within 1e-6
// of torch's after each of six steps, the norm too (measured with torch
// 2.15: the params bitwise equal, the norms within 7e-8).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "train/adamw.h"
#include "train/parallel.h"

namespace {

using nlohmann::json;
using linnet::train::AdamW;
using linnet::train::ParamGrad;

json adamwFixture() {
  std::ifstream in(LINNET_TEST_DATA "/train/adamw.json");
  REQUIRE(in);
  return json::parse(in);
}

std::vector<std::vector<float>> tensors(const json& lists) {
  std::vector<std::vector<float>> out;
  for (const json& l : lists) out.push_back(l.get<std::vector<float>>());
  return out;
}

// The largest |a - b| / max(|b|, 1e-3) over all params.
double worstRelative(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    for (size_t k = 0; k < want[i].size(); ++k)
      worst = std::max(worst, std::abs(double(got[i][k]) - want[i][k]) / std::max(std::abs(double(want[i][k])), 1e-3));
  return worst;
}

}  // namespace

TEST_CASE("AdamW and clip_grad_norm_ follow torch step by step") {
  json f = adamwFixture();
  const json& s = f["settings"];
  std::vector<std::vector<float>> params = tensors(f["initial"]);
  std::vector<size_t> sizes;
  for (auto& p : params) sizes.push_back(p.size());
  AdamW adamw({s["beta1"], s["beta2"], s["eps"], s["weight_decay"]}, sizes);
  int step = 0;
  for (const json& want : f["steps"]) {
    std::vector<std::vector<float>> grads = tensors(want["grads"]);
    std::vector<std::span<float>> gradSpans(grads.begin(), grads.end());
    float norm = linnet::train::clipGradNorm(gradSpans, s["max_norm"].get<double>());
    INFO("step " << step);
    CHECK(std::abs(norm - want["norm"].get<double>()) <= 1e-6 * want["norm"].get<double>());
    std::vector<ParamGrad> pg;
    for (size_t i = 0; i < params.size(); ++i) pg.push_back({params[i], grads[i]});
    adamw.step(want["lr"].get<double>(), pg);
    double worst = worstRelative(params, tensors(want["params"]));
    INFO("worst relative difference " << worst);
    CHECK(worst <= 1e-6);
    ++step;
  }
  CHECK(adamw.steps() == 6);
}

TEST_CASE("A param of the wrong size is refused, not read past") {
  AdamW adamw({}, {4});
  std::vector<float> p(3), g(3);
  std::vector<ParamGrad> pg{{p, g}};
  CHECK_THROWS_WITH(adamw.step(1e-3, pg), Catch::Matchers::Contains("param 0 has 3 values"));
  CHECK(adamw.steps() == 0);
}

TEST_CASE("A non-finite gradient norm stops the step") {
  std::vector<float> g{1.0f, INFINITY};
  std::vector<std::span<float>> spans{g};
  CHECK_THROWS_WITH(linnet::train::clipGradNorm(spans, 1.0), Catch::Matchers::Contains("norm is inf"));
}

// The trainer's path: the norm on threads, clipping folded into the step
// (ParamGrad::gradScale), params of several pieces: the same bits as
// clipping in place and stepping on one thread.
TEST_CASE("Clipping folded into the step, on threads, equals clipping in place on one") {
  const std::vector<size_t> sizes{3 * linnet::train::kPieceElements + 17, 5, linnet::train::kPieceElements};
  std::vector<std::vector<float>> grads, params;
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(static_cast<int32_t>(state >> 8) - (1 << 23)) / static_cast<float>(1 << 20);
  };
  for (size_t n : sizes) {
    grads.emplace_back(n);
    params.emplace_back(n);
    for (size_t k = 0; k < n; ++k) grads.back()[k] = next(), params.back()[k] = next();
  }
  // In place, one thread.
  std::vector<std::vector<float>> clipped = grads, oneThread = params;
  std::vector<std::span<float>> clipSpans(clipped.begin(), clipped.end());
  float inPlaceNorm = linnet::train::clipGradNorm(clipSpans, 1.0, 1);
  AdamW first({}, sizes, 1);
  std::vector<ParamGrad> pg;
  for (size_t i = 0; i < sizes.size(); ++i) pg.push_back({oneThread[i], clipped[i]});
  first.step(1e-3, pg);
  // Folded, three threads.
  std::vector<std::span<const float>> read(grads.begin(), grads.end());
  float norm = linnet::train::gradNorm(read, 3);
  CHECK(norm == inPlaceNorm);
  const float factor = linnet::train::clipFactor(norm, 1.0);
  CHECK(factor < 1.0f);  // the clipping is exercised
  AdamW second({}, sizes, 3);
  pg.clear();
  for (size_t i = 0; i < sizes.size(); ++i) pg.push_back({params[i], grads[i], factor});
  second.step(1e-3, pg);
  CHECK(params == oneThread);
}
