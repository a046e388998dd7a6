// The card's `loss_packed` gradient, derived by compiler/autodiff and run
// through linnet::nest on the reference backend (or the one
// $LINNET_TEST_BACKEND names: ctest autodiff_torch_cpu runs the compiled
// gradient, `linnetc build --gradient`), against torch autograd on
// the same f32 checkpoint (tests/data/llama/gqa2) and the same packed batch:
// tests/autodiff/make_gradient_fixture.py wrote the expected gradients
// under the checkpoint's names. Rule: every param within 1e-5 relative L2 of
// torch's (measured: 2.5e-6 at most), the loss within 1e-6 relative.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

#include "nest/nest.h"
#include "support/fixture_generics.h"
#include "weights/bindings.h"
#include "weights/npy.h"
#include "weights/safetensors.h"

using linnet::nest::Tensor;

namespace {

const std::string kCard = std::string(LINNET_SOURCE_DIR) + "/nest/llama-3.1-8b-instruct";
const std::string kData = std::string(LINNET_TEST_DATA);

Tensor npy(const std::string& name) {
  auto a = linnet::weights::readNpy(kData + "/autodiff/" + name + ".npy");
  return Tensor::fromBytes(a.dtype, a.shape, a.data);
}

double relativeL2(const Tensor& ours, const Tensor& want) {
  double diff = 0, norm = 0;
  for (int64_t k = 0; k < want.size(); ++k) {
    double d = ours.asDouble(k) - want.asDouble(k);
    diff += d * d;
    norm += want.asDouble(k) * want.asDouble(k);
  }
  return std::sqrt(diff / norm);
}

}  // namespace

TEST_CASE("loss_packed's gradient on the gqa2 fixture equals torch autograd's") {
  linnet::nest::LoadOptions options;
  const char* backend = std::getenv("LINNET_TEST_BACKEND");
  options.backend = backend ? backend : "reference";
  options.weights = kData + "/llama/gqa2/model.safetensors";
  linnet::testing::setGenerics(options, kData + "/llama/gqa2/generics.txt");
  linnet::nest::Model model = linnet::nest::load(kCard, options);
  std::vector<Tensor> args = {npy("tokens"), npy("positions"), npy("segments"), npy("targets"), npy("weights")};
  linnet::nest::Gradient g = model.gradient("loss_packed", args, {}, [](const std::string&) { return true; });

  auto expected = linnet::weights::Checkpoint::open(kData + "/autodiff/gqa2_gradients.safetensors");
  auto bindings = linnet::weights::Bindings::load(kCard + "/bindings.json");
  auto want = [&](const std::string& name) {
    const auto& info = expected.at(name);
    return Tensor::fromBytes(info.dtype, info.shape, info.data);
  };
  CHECK(std::abs(g.value.asDouble(0) - want("loss").asDouble(0)) <= 1e-6 * std::abs(want("loss").asDouble(0)));
  REQUIRE(g.params.size() == expected.size() - 1);  // every param, and the loss
  for (size_t k = 0; k < g.params.size(); ++k) {
    std::string name = bindings.find(g.params[k]).value();
    INFO(g.params[k] << " (" << name << ")");
    REQUIRE(g.grads[k].shape == want(name).shape);
    CHECK(relativeL2(g.grads[k], want(name)) <= 1e-5);
  }
}
