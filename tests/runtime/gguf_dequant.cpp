// Dequantization against llama.cpp's own reference (gguf.quants.dequantize):
// every value bit for bit, for every supported type; then the rounding to
// f16 and bf16 against numpy / gguf.quants.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "gguf/gguf.h"
#include "gguf_test_util.h"

using namespace linnet::gguf;
using linnet::DType;
using namespace linnet::gguf::test;
using Catch::Matchers::Contains;

namespace {
struct Fixture {
  File file = File::open(dataDir() / "types.gguf");
  nlohmann::json manifest = readJson(dataDir() / "types.json");
  std::vector<float> f32 = readValues<float>(dataDir() / "types.f32.bin");
  std::vector<std::uint16_t> f16 = readValues<std::uint16_t>(dataDir() / "types.f16.bin");
  std::vector<std::uint16_t> bf16 = readValues<std::uint16_t>(dataDir() / "types.bf16.bin");
};
}  // namespace

TEST_CASE("dequantized values equal gguf.quants' bit for bit", "[gguf][dequant]") {
  Fixture fx;
  std::set<std::string> types;
  REQUIRE(fx.manifest["tensors"].size() == 22);
  for (const auto& e : fx.manifest["tensors"]) {
    const std::string name = e["name"];
    INFO("tensor " << name);
    const TensorInfo& t = fx.file.at(name);
    CHECK(typeName(t.type) == e["type"].get<std::string>());
    CHECK(t.shape == e["shape"].get<std::vector<std::int64_t>>());
    const std::size_t off = e["offset"], n = e["count"];
    REQUIRE(t.elementCount == n);
    std::vector<float> got = fx.file.dequantize(t);
    REQUIRE(got.size() == n);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (bitsOf(got[i]) != bitsOf(fx.f32[off + i])) {
        if (mismatches++ < 5) FAIL_CHECK("element " << i << ": got " << got[i] << ", expected " << fx.f32[off + i]);
      }
    CHECK(mismatches == 0);
    types.insert(e["type"].get<std::string>());
  }
  CHECK(types == std::set<std::string>{"F32", "F16", "BF16", "F64", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K",
                                       "Q3_K", "Q4_K", "Q5_K", "Q6_K"});
}

TEST_CASE("reading as f16 and bf16 rounds to nearest even like numpy and ggml", "[gguf][dequant]") {
  Fixture fx;
  for (const auto& e : fx.manifest["tensors"]) {
    const std::string name = e["name"];
    INFO("tensor " << name);
    const TensorInfo& t = fx.file.at(name);
    const std::size_t off = e["offset"], n = e["count"];
    for (DType d : {DType::F16, DType::BF16}) {
      const std::vector<std::uint16_t>& want = d == DType::F16 ? fx.f16 : fx.bf16;
      std::vector<std::byte> got = fx.file.read(t, d);
      REQUIRE(got.size() == 2 * n);
      std::size_t mismatches = 0;
      for (std::size_t i = 0; i < n; ++i) {
        std::uint16_t h;
        std::memcpy(&h, got.data() + 2 * i, 2);
        const float a = d == DType::F16 ? f16ToF32(h) : bf16ToF32(h);
        const float b = d == DType::F16 ? f16ToF32(want[off + i]) : bf16ToF32(want[off + i]);
        const bool same = std::isnan(a) ? std::isnan(b) : h == want[off + i];
        if (!same && mismatches++ < 5)
          FAIL_CHECK(linnet::name(d) << " element " << i << ": got " << h << ", expected " << want[off + i]);
      }
      CHECK(mismatches == 0);
    }
    std::vector<std::byte> asF32 = fx.file.read(t, DType::F32);
    REQUIRE(asF32.size() == 4 * n);
    CHECK(std::memcmp(asF32.data(), fx.f32.data() + off, 4 * n) == 0);
  }
}

TEST_CASE("a type that cannot be dequantized names the tensor and the type", "[gguf][dequant]") {
  Fixture fx;
  const TensorInfo& t = fx.file.at("iq2_xxs");
  CHECK(t.type == GgmlType::IQ2_XXS);
  CHECK(t.shape == std::vector<std::int64_t>{1, 256});
  CHECK(t.data.size() == 66);
  CHECK_THROWS_AS(fx.file.dequantize(t), Error);
  CHECK_THROWS_WITH(fx.file.dequantize(t), Contains("types.gguf") && Contains("tensor 'iq2_xxs'") &&
                                               Contains("IQ2_XXS") && Contains("cannot dequantize") &&
                                               Contains("Q4_K"));
  CHECK_THROWS_WITH(fx.file.read(t, DType::BF16), Contains("tensor 'iq2_xxs'"));
}

TEST_CASE("type table", "[gguf][dequant]") {
  CHECK(typeTraits(12)->name == "Q4_K");
  CHECK(typeTraits(12)->blockSize == 256);
  CHECK(typeTraits(12)->typeSize == 144);
  CHECK(typeTraits(14)->typeSize == 210);
  CHECK(typeTraits(8)->typeSize == 34);
  CHECK(typeTraits(4) == nullptr);  // Q4_2, removed from ggml
  CHECK(typeTraits(999) == nullptr);
  CHECK(typeName(999) == "unknown type 999");
  CHECK(typeName(GgmlType::BF16) == "BF16");
  CHECK(dequantizableTypes() == "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, F64, BF16");
}

TEST_CASE("low-level dequantize checks its sizes", "[gguf][dequant]") {
  std::vector<std::byte> block(18);
  std::vector<float> out(32);
  CHECK_NOTHROW(dequantize(GgmlType::Q4_0, block, out));
  std::vector<float> odd(31);
  CHECK_THROWS_WITH(dequantize(GgmlType::Q4_0, block, odd), Contains("not whole blocks of 32"));
  std::vector<std::byte> shortBlock(17);
  CHECK_THROWS_WITH(dequantize(GgmlType::Q4_0, shortBlock, out), Contains("17 bytes of Q4_0"));
  CHECK_THROWS_WITH(dequantize(GgmlType::IQ4_NL, block, out), Contains("dequantizing IQ4_NL is not supported"));
}

TEST_CASE("f32 to f16 and bf16: nearest even, specials", "[gguf][dequant]") {
  CHECK(f32ToF16(1.0f) == 0x3c00);
  CHECK(f32ToF16(65504.0f) == 0x7bff);
  CHECK(f32ToF16(65520.0f) == 0x7c00);                 // rounds up to inf
  CHECK(f32ToF16(-INFINITY) == 0xfc00);
  CHECK(f32ToF16(1.0f + 0x1p-11f) == 0x3c00);          // tie -> even
  CHECK(f32ToF16(1.0f + 3 * 0x1p-11f) == 0x3c02);      // tie -> even (up)
  CHECK(f32ToF16(0x1p-24f) == 0x0001);                 // smallest subnormal
  CHECK(f32ToF16(0x1p-25f) == 0x0000);                 // tie -> even (zero)
  CHECK(f32ToF16(-0.0f) == 0x8000);
  CHECK((f32ToF16(NAN) & 0x7e00) == 0x7e00);
  CHECK(f16ToF32(0x0001) == 0x1p-24f);
  CHECK(f32ToBf16(1.0f) == 0x3f80);
  CHECK(f32ToBf16(1.0f + 0x1p-8f) == 0x3f80);          // tie -> even
  CHECK(f32ToBf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
  CHECK(f32ToBf16(3.4028235e38f) == 0x7f80);           // rounds to inf
  CHECK((f32ToBf16(-NAN) & 0xffc0) == 0xffc0);
  CHECK(bf16ToF32(0x3f80) == 1.0f);
  for (std::uint32_t h = 0; h < 0x10000; ++h) {  // every finite f16 round-trips
    const float f = f16ToF32(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    REQUIRE(f32ToF16(f) == h);
  }
}
