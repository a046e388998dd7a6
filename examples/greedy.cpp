// Host code using a nest package through the C++ API: load the llama card
// with small generics and a checkpoint, then decode greedily with the
// `prefill` and `decode` entries, the KV caches kept between calls.
//
//   build/bin/greedy nest/llama-3.1-8b-instruct tests/data/llama/gqa2/model.safetensors \
//       Vocab=64 H=64 Heads=4 KvHeads=2 Inner=96 Layers=2 MaxSeq=64 T=f32 -- 3 14 15 9
//
// The default backend is compiled code (`cpu`: each entry shape compiled on
// first use, then cached); `--backend=NAME` among the settings picks another
// (`reference`: the op-by-op oracle).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "nest/nest.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s PACKAGE WEIGHTS [--backend=cpu] [Name=Value]... -- TOKEN...\n", argv[0]);
    return 2;
  }
  linnet::nest::LoadOptions options{.weights = argv[2]};
  int i = 3;
  for (; i < argc && std::string(argv[i]) != "--"; ++i) {
    std::string set = argv[i];
    if (set.starts_with("--backend=")) {
      options.backend = set.substr(10);
      continue;
    }
    auto eq = set.find('=');
    std::string value = set.substr(eq + 1);
    char* end = nullptr;
    long long n = std::strtoll(value.c_str(), &end, 10);
    if (*end == '\0') options.generics.insert_or_assign(set.substr(0, eq), static_cast<int64_t>(n));
    else options.generics.insert_or_assign(set.substr(0, eq), value);
  }
  std::vector<int64_t> prompt;
  for (++i; i < argc; ++i) prompt.push_back(std::atoll(argv[i]));
  try {
    auto model = linnet::nest::load(argv[1], options);
    using linnet::nest::DType;
    using linnet::nest::Tensor;
    Tensor tokens = Tensor::fromInts(DType::I32, {1, static_cast<int64_t>(prompt.size())}, prompt);
    Tensor logits = model.call("prefill", {tokens, Tensor::scalarI(DType::I32, 0)})[0];
    auto argmax = [](const Tensor& t) {
      std::vector<double> v = t.toFloats();
      return static_cast<int64_t>(std::max_element(v.begin(), v.end()) - v.begin());
    };
    std::printf("%s:", model.name().c_str());
    int64_t pos = static_cast<int64_t>(prompt.size());
    for (int step = 0; step < 8; ++step, ++pos) {
      Tensor next = Tensor::fromInts(DType::I32, {1, 1}, {argmax(logits)});
      std::printf(" %lld", static_cast<long long>(next.asInt(0)));
      logits = model.call("decode", {next, Tensor::scalarI(DType::I32, pos)})[0];
    }
    std::printf("\n");
  } catch (const linnet::nest::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
