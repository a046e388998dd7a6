// The GGUF export's encoders against llama.cpp's own: every type on the
// committed vectors of tests/data/export (make_gguf_fixtures.py: gguf.quants
// for F16, BF16, Q8_0, Q4_0, Q5_0; ggml's quantize_row_*_ref for Q4_K, Q6_K),
// byte for byte.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "export/quantize.h"
#include "gguf/types.h"

using linnet::gguf::GgmlType;
namespace ex = linnet::exporter;

namespace {

std::vector<std::byte> readFile(const std::string& name) {
  std::ifstream in(std::string(LINNET_TEST_DATA) + "/export/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(bytes.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<float> input() {
  std::vector<std::byte> b = readFile("quant_input.f32.bin");
  std::vector<float> x(b.size() / 4);
  std::memcpy(x.data(), b.data(), b.size());
  return x;
}

constexpr std::int64_t kRow = 512;

}  // namespace

TEST_CASE("encoders equal gguf.quants and ggml byte for byte", "[export][quantize]") {
  const std::vector<float> x = input();
  REQUIRE(x.size() == 12 * kRow);
  const std::pair<GgmlType, const char*> types[] = {
      {GgmlType::F16, "quant_f16.bin"},   {GgmlType::BF16, "quant_bf16.bin"}, {GgmlType::Q8_0, "quant_q8_0.bin"},
      {GgmlType::Q4_0, "quant_q4_0.bin"}, {GgmlType::Q5_0, "quant_q5_0.bin"}, {GgmlType::Q4_K, "quant_q4_k.bin"},
      {GgmlType::Q6_K, "quant_q6_k.bin"},
  };
  for (const auto& [type, file] : types) {
    DYNAMIC_SECTION(linnet::gguf::typeName(type)) {
      std::vector<std::byte> want = readFile(file);
      std::vector<std::byte> got(ex::rowBytes(type, kRow) * 12);
      REQUIRE(got.size() == want.size());
      ex::encodeRows(type, x, kRow, got, 1);
      // Row by row, so a failure names the row (and the case it holds).
      for (std::size_t r = 0; r < 12; ++r) {
        INFO("row " << r);
        std::size_t n = ex::rowBytes(type, kRow);
        CHECK(std::memcmp(got.data() + r * n, want.data() + r * n, n) == 0);
      }
      // Threads change nothing.
      std::vector<std::byte> threaded(got.size());
      ex::encodeRows(type, x, kRow, threaded, 3);
      CHECK(threaded == got);
    }
  }
}

TEST_CASE("encoded blocks decode close to their input", "[export][quantize]") {
  // A sanity bound on top of bit-exactness: what ggml reads back.
  const std::vector<float> x = input();
  const std::vector<float> x0(x.begin(), x.begin() + kRow);  // row 0: N(0, 0.02)
  for (auto [type, bound] : {std::pair{GgmlType::Q8_0, 0.0005}, std::pair{GgmlType::Q4_0, 0.01},
                             std::pair{GgmlType::Q5_0, 0.005}, std::pair{GgmlType::Q4_K, 0.01},
                             std::pair{GgmlType::Q6_K, 0.003}}) {
    std::vector<std::byte> q(ex::rowBytes(type, kRow));
    ex::encodeRows(type, x0, kRow, q);
    std::vector<float> back(kRow);
    linnet::gguf::dequantize(type, q, back);
    double worst = 0;
    for (std::int64_t k = 0; k < kRow; ++k) worst = std::max(worst, std::fabs(double(back[k]) - x0[k]));
    INFO(linnet::gguf::typeName(type));
    CHECK(worst < bound);
  }
}

TEST_CASE("encodeRows refuses what does not fit", "[export][quantize]") {
  std::vector<float> x(100);
  std::vector<std::byte> out(1000);
  CHECK_THROWS_AS(ex::encodeRows(GgmlType::Q8_0, x, 100, out), std::invalid_argument);  // 100 % 32
  CHECK_THROWS_AS(ex::encodeRows(GgmlType::Q4_1, x, 100, out), std::invalid_argument);  // not encodable
  std::vector<float> y(64);
  std::vector<std::byte> small(10);
  CHECK_THROWS_AS(ex::encodeRows(GgmlType::Q8_0, y, 32, small), std::invalid_argument);
  CHECK(ex::canEncode(GgmlType::Q6_K));
  CHECK_FALSE(ex::canEncode(GgmlType::Q5_K));
}
