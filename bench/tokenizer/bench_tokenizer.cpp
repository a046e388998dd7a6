// Encoding throughput of linnet::tokenizer (driven by bench_tokenizer.py).
//
//   bench_tokenizer TOKENIZER_JSON TEXT_FILE [REPEATS] [whole|lines] [IDS_OUT]
//
// Encodes the text REPEATS times (as one string, or line by line), prints one
// JSON line {"load_s", "tokens", "best_s", "tokens_per_s", "decode_s"}; with
// IDS_OUT also writes the ids (one per line) for comparison.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: bench_tokenizer TOKENIZER_JSON TEXT_FILE [REPEATS] [whole|lines] [IDS_OUT]\n";
    return 2;
  }
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const std::string mode = argc > 4 ? argv[4] : "whole";
  try {
    double t0 = now();
    const linnet::tokenizer::Tokenizer tok = linnet::tokenizer::Tokenizer::load(argv[1]);
    const double loadSeconds = now() - t0;
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::vector<std::string> lines;
    if (mode == "lines") {
      std::istringstream ls(text);
      std::string line;
      while (std::getline(ls, line)) lines.push_back(line + "\n");
    }
    std::vector<int32_t> ids;
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
      t0 = now();
      if (mode == "lines") {
        ids.clear();
        for (const std::string& l : lines) {
          const auto v = tok.encode(l);
          ids.insert(ids.end(), v.begin(), v.end());
        }
      } else {
        ids = tok.encode(text);
      }
      best = std::min(best, now() - t0);
    }
    t0 = now();
    const std::string decoded = tok.decode(ids);
    const double decodeSeconds = now() - t0;
    if (argc > 5) {
      std::ofstream out(argv[5]);
      for (int32_t id : ids) out << id << "\n";
    }
    std::printf(
        "{\"load_s\": %.4f, \"bytes\": %zu, \"tokens\": %zu, \"best_s\": %.5f, \"tokens_per_s\": %.0f, "
        "\"decode_s\": %.5f, \"roundtrip\": %s}\n",
        loadSeconds, text.size(), ids.size(), best, static_cast<double>(ids.size()) / best, decodeSeconds,
        decoded == text ? "true" : "false");
  } catch (const std::exception& e) {
    std::cerr << "bench_tokenizer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
