// A LoRA adapter peft saved (tests/data/adapter, written by
// tests/train/make_adapter_fixture.py) merged at load (--adapter,
// nest/adapter.h): the card's logits on the gqa2 fixture equal peft's with
// the adapter. Rule: f32 over layers, relative to the logits' scale, 1e-5.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "nest/nest.h"
#include "support/fixture_generics.h"
#include "weights/safetensors.h"

using linnet::nest::Tensor;

namespace {

const std::string kData = LINNET_TEST_DATA;

linnet::nest::LoadOptions gqa2(const std::string& adapter) {
  linnet::nest::LoadOptions o;
  o.backend = "reference";
  o.weights = kData + "/llama/gqa2/model.safetensors";
  o.adapter = adapter;
  linnet::testing::setGenerics(o, kData + "/llama/gqa2/generics.txt");
  return o;
}

}  // namespace

TEST_CASE("an adapter peft saved gives peft's logits") {
  auto expected = linnet::weights::Checkpoint::open(kData + "/adapter/expected.safetensors");
  auto tensor = [&](const char* name) {
    const auto& t = expected.at(name);
    return Tensor::fromBytes(t.dtype, t.shape, t.data);
  };
  std::string card = std::string(LINNET_SOURCE_DIR) + "/nest/llama-3.1-8b-instruct";
  auto model = linnet::nest::load(card, gqa2(kData + "/adapter/gqa2_lora"));
  Tensor logits = model.call("forward", {tensor("tokens")}).at(0);
  Tensor want = tensor("logits");
  REQUIRE(logits.shape == want.shape);
  double scale = 0, worst = 0;
  for (int64_t k = 0; k < want.size(); ++k) scale = std::max(scale, std::abs(want.asDouble(k)));
  for (int64_t k = 0; k < want.size(); ++k) worst = std::max(worst, std::abs(logits.asDouble(k) - want.asDouble(k)));
  INFO("worst " << worst << " of a scale " << scale);
  CHECK(worst <= 1e-5 * scale);

  // Without the adapter the logits differ: the adapter did something.
  auto base = linnet::nest::load(card, gqa2(""));
  Tensor plain = base.call("forward", {tensor("tokens")}).at(0);
  double moved = 0;
  for (int64_t k = 0; k < want.size(); ++k) moved = std::max(moved, std::abs(plain.asDouble(k) - want.asDouble(k)));
  CHECK(moved > 100 * worst);
}
