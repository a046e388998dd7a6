// Host code calling a package of one's own (examples/tally, built in
// docs/tutorial.md) through the C++ API: load it, call `add` twice (its
// state keeps the sums between calls), then `means`.
//
//   build/bin/tally examples/tally            # or: tally PACKAGE --backend=reference
#include <cstdio>
#include <string>
#include <vector>

#include "nest/nest.h"

using linnet::nest::DType;
using linnet::nest::Tensor;

static void print(const char* what, const Tensor& t) {
  std::printf("%s:", what);
  for (double v : t.toFloats()) std::printf(" %g", v);
  std::printf("\n");
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s PACKAGE [--backend=NAME]\n", argv[0]);
    return 2;
  }
  // Tally has no params, so no checkpoint: randomWeights binds the (none) there are.
  linnet::nest::LoadOptions options{.randomWeights = true};
  if (argc > 2 && std::string(argv[2]).starts_with("--backend=")) options.backend = std::string(argv[2]).substr(10);
  try {
    linnet::nest::Model model = linnet::nest::load(argv[1], options);
    std::printf("%s on %s, N = %lld\n", model.name().c_str(), model.backend().c_str(),
                static_cast<long long>(model.dims().at("N")));
    // Scalars: start 1, step 0.5; then start 0, step 1.
    print("add", model.call("add", {Tensor::scalarF(DType::F32, 1.0), Tensor::scalarF(DType::F32, 0.5)})[0]);
    print("add", model.call("add", {Tensor::scalarF(DType::F32, 0.0), Tensor::scalarF(DType::F32, 1.0)})[0]);
    print("means", model.call("means", {})[0]);
  } catch (const linnet::nest::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
