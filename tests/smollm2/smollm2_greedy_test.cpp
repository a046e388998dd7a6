// SmolLM2-135M-Instruct, a real model from its GGUF file (Q8_0 and Q4_1:
// dequantized at load by the reference backend, read as stored by compiled
// code's weight kernels; dequantized at load for the cuda target's code,
// which reads no storage format), on one backend (built once per backend:
// the reference, compiled CPU code, the cuda target's code run on the CPU)
// against transformers on the same file: 32
// greedy new tokens after each of five chat-templated prompts (two on the
// reference backend and cuda-emulated) (tests/data/smollm2/greedy.json, made by
// tests/smollm2/make_fixtures.py).
// The model file is fetched by scripts/fetch-smollm2.sh (ctest fixture).
#include <catch2/catch.hpp>

#include <fstream>
#include <nlohmann/json.hpp>

#include "nest/nest.h"

using linnet::nest::DType;
using linnet::nest::Tensor;

TEST_CASE("SmolLM2 greedy ids equal transformers' on five prompts", "[smollm2]") {
  std::ifstream in(std::string(LINNET_TEST_DATA) + "/smollm2/greedy.json");
  nlohmann::json fixture = nlohmann::json::parse(in);
  linnet::nest::LoadOptions options;
  options.weights = std::string(LINNET_SOURCE_DIR) + "/" + fixture["model"].get<std::string>();
  options.backend = LINNET_TEST_BACKEND;
  options.cacheDir = LINNET_TEST_CACHE;
  auto model = linnet::nest::load(std::string(LINNET_SOURCE_DIR) + "/nest/smollm2-135m-instruct", options);
  // The reference backend, an interpreter (about 2 s a token here), and the
  // cuda target's kernels run as loops on the CPU (cuda-emulated) run the
  // first two prompts; compiled CPU code runs all five.
  const std::string backend = LINNET_TEST_BACKEND;
  const size_t cases = backend == "reference" || backend == "cuda-emulated" ? 2 : fixture["cases"].size();
  for (size_t i = 0; i < cases; ++i) {
    const auto& c = fixture["cases"][i];
    SECTION(c["prompt"].get<std::string>()) {
      model.resetState();
      std::vector<int64_t> ids = c["ids"].get<std::vector<int64_t>>();
      std::vector<int64_t> want = c["greedy"].get<std::vector<int64_t>>();
      Tensor tokens = Tensor::fromInts(DType::I32, {1, static_cast<int64_t>(ids.size())}, ids);
      Tensor logits = model.call("prefill", {tokens, Tensor::scalarI(DType::I32, 0)})[0];
      std::vector<int64_t> got;
      for (size_t k = 0; k < want.size(); ++k) {
        std::vector<double> v = logits.toFloats();
        got.push_back(std::max_element(v.begin(), v.end()) - v.begin());
        if (k + 1 == want.size()) break;
        Tensor token = Tensor::fromInts(DType::I32, {1, 1}, {got.back()});
        logits = model.call("decode", {token, Tensor::scalarI(DType::I32, static_cast<int64_t>(ids.size() + k))})[0];
      }
      CHECK(got == want);
    }
  }
}
