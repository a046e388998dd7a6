// The card in bf16 (on the backend this binary was built for), loaded
// through linnet::nest::load from the f32 fixture
// checkpoint with conversion at load, against transformers' own bf16 run of
// the same weights: greedy ids agree step by step until the first step where
// transformers' two best logits tie exactly in bf16 (then either is right).
#include <catch2/catch.hpp>

#include <fstream>

#include "nest/nest.h"
#include "weights/safetensors.h"

using linnet::nest::DType;
using linnet::nest::Tensor;

namespace {

Tensor expectedTensor(const linnet::weights::Checkpoint& c, const std::string& name) {
  const auto& info = c.at(name);
  return Tensor::fromBytes(info.dtype, info.shape, info.data);
}

}  // namespace

TEST_CASE("bf16 greedy decoding agrees with transformers' bf16 run", "[reference][llama][bf16]") {
  for (std::string config : {"gqa2", "mqa3"}) {
    SECTION(config) {
      std::string dir = std::string(LINNET_TEST_DATA) + "/llama/" + config;
      linnet::nest::LoadOptions options;
      options.weights = dir + "/model.safetensors";
      options.convertDTypes = true;
      options.backend = LINNET_TEST_BACKEND;
      options.cacheDir = LINNET_TEST_CACHE;
      std::ifstream generics(dir + "/generics.txt");
      for (std::string line; std::getline(generics, line);) {
        auto eq = line.find('=');
        std::string k = line.substr(0, eq), v = line.substr(eq + 1);
        if (k == "T") options.generics.insert_or_assign(k, "bf16");
        else options.generics.insert_or_assign(k, static_cast<int64_t>(std::stoll(v)));
      }
      auto model = linnet::nest::load(std::string(LINNET_SOURCE_DIR) + "/nest/llama-3.1-8b-instruct", options);
      auto expected = linnet::weights::Checkpoint::open(dir + "/expected.safetensors");
      Tensor tokens = expectedTensor(expected, "tokens1");
      Tensor greedy = expectedTensor(expected, "greedy_bf16");
      Tensor gaps = expectedTensor(expected, "gap_bf16");
      int64_t S = tokens.shape[1];

      Tensor logits = model.call("prefill", {tokens, Tensor::scalarI(DType::I32, 0)})[0];
      CHECK(logits.dtype == DType::BF16);
      int64_t agreed = 0;
      for (int64_t k = 0; k < greedy.shape[1]; ++k) {
        if (gaps.asDouble(k) == 0.0) break;  // an exact tie in transformers' bf16 logits
        std::vector<double> v = logits.toFloats();
        int64_t next = std::max_element(v.begin(), v.end()) - v.begin();
        INFO("step " << k);
        REQUIRE(next == greedy.asInt(k));
        ++agreed;
        Tensor token = Tensor::fromInts(DType::I32, {1, 1}, {next});
        logits = model.call("decode", {token, Tensor::scalarI(DType::I32, S + k)})[0];
      }
      INFO("steps agreed: " << agreed);
      CHECK(agreed >= (config == "gqa2" ? 30 : 24));
    }
  }
}
