// DType names and sizes, shapes, and f32/bf16/f16 conversions.
#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <limits>

#include "weights/convert.h"
#include "weights/dtype.h"
#include "weights/error.h"
#include "weights/npy.h"
#include "weights/safetensors.h"
#include "weights_test_util.h"

using namespace linnet::weights;
using linnet::DType;
using linnet::kAllDTypes;
using namespace linnet::weights::test;
using Catch::Matchers::Contains;

TEST_CASE("dtype names and sizes", "[weights][dtype]") {
  CHECK(safetensorsName(DType::BF16) == "BF16");
  CHECK(safetensorsName(DType::Bool) == "BOOL");
  CHECK(std::string_view(linnet::name(DType::Bool)) == "bool");
  CHECK(std::string_view(linnet::name(DType::BF16)) == "bf16");
  CHECK(linnet::byteSize(DType::F32) == 4);
  CHECK(linnet::byteSize(DType::BF16) == 2);
  CHECK(linnet::byteSize(DType::F16) == 2);
  CHECK(linnet::byteSize(DType::I64) == 8);
  CHECK(linnet::byteSize(DType::F64) == 8);
  CHECK(linnet::byteSize(DType::Bool) == 1);
  CHECK(linnet::byteSize(DType::I8) == 1);
  CHECK(linnet::byteSize(DType::U8) == 1);
  CHECK(linnet::byteSize(DType::I16) == 2);
  CHECK(linnet::byteSize(DType::I32) == 4);
  for (DType t : kAllDTypes) {
    CHECK(parseSafetensorsDType(safetensorsName(t)) == t);
    CHECK(linnet::dtypeNamed(linnet::name(t)) == t);
  }
  CHECK_FALSE(parseSafetensorsDType("f32"));  // safetensors spells it F32
  CHECK_FALSE(parseSafetensorsDType("F8_E4M3"));
  CHECK_FALSE(linnet::dtypeNamed("float32"));
  CHECK(linnet::languageDTypeNamed("bf16") == DType::BF16);
  CHECK_FALSE(linnet::languageDTypeNamed("f64"));  // a storage type, never computed with
  CHECK(linnet::isFloat(DType::BF16));
  CHECK_FALSE(linnet::isFloat(DType::I32));
}

TEST_CASE("shapes", "[weights][dtype]") {
  CHECK(shapeString({}) == "[]");
  CHECK(shapeString({4096, 128}) == "[4096, 128]");
  CHECK(elementCount({}) == 1);
  CHECK(elementCount({2, 3, 4}) == 24);
  CHECK(elementCount({0, 1LL << 62, 1LL << 62}) == 0);
  CHECK_FALSE(elementCount({-1, 3}));
  CHECK_FALSE(elementCount({1LL << 40, 1LL << 40}));
}

TEST_CASE("bf16 conversion rounds to nearest even", "[weights][convert]") {
  CHECK(f32ToBf16(1.0f) == 0x3f80);
  CHECK(f32ToBf16(1.0f + 0x1p-8f) == 0x3f80);        // tie: down to even
  CHECK(f32ToBf16(1.0f + 3 * 0x1p-8f) == 0x3f82);    // tie: up to even
  CHECK(f32ToBf16(1.0f + 0x1p-8f + 0x1p-20f) == 0x3f81);  // above the tie
  CHECK(f32ToBf16(-0.0f) == 0x8000);
  CHECK(f32ToBf16(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(f32ToBf16(std::numeric_limits<float>::max()) == 0x7f80);  // rounds up to inf
  CHECK(std::isnan(bf16ToF32(f32ToBf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits only in the low bits must not become inf.
  CHECK(std::isnan(bf16ToF32(f32ToBf16(std::bit_cast<float>(0x7f800001u)))));
  CHECK(bf16ToF32(0x4049) == 3.140625f);
  // Every bf16 value survives bf16 -> f32 -> bf16.
  int bad = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    float f = bf16ToF32(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) {
      bad += !std::isnan(bf16ToF32(f32ToBf16(f)));
    } else {
      bad += f32ToBf16(f) != h;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("f16 conversion: exhaustive round trip and hand-picked cases", "[weights][convert]") {
  int bad = 0;
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    float f = f16ToF32(static_cast<std::uint16_t>(h));
    if (std::isnan(f))
      bad += !std::isnan(f16ToF32(f32ToF16(f)));
    else
      bad += f32ToF16(f) != h;
  }
  CHECK(bad == 0);
  CHECK(f16ToF32(0x0001) == 0x1p-24f);  // smallest subnormal
  CHECK(f16ToF32(0x7bff) == 65504.0f);
  CHECK(f32ToF16(65519.0f) == 0x7bff);
  CHECK(f32ToF16(65520.0f) == 0x7c00);  // tie rounds to inf
  CHECK(f32ToF16(0x1p-25f) == 0x0000);  // tie rounds to even zero
  CHECK(f32ToF16(3 * 0x1p-25f) == 0x0002);
  CHECK(f32ToF16(-2.0f) == 0xc000);
}

TEST_CASE("conversions agree with numpy (f16) and exact arithmetic (bf16)", "[weights][convert]") {
  auto ckpt = Checkpoint::open(dataDir() / "convert.safetensors");
  const TensorInfo& x = ckpt.at("x");
  REQUIRE(x.dtype == DType::F32);
  auto f32 = valuesOf<float>(x.data);
  auto f16 = readNpy(dataDir() / "npy" / "convert_f16.npy");
  auto bf16 = readNpy(dataDir() / "npy" / "convert_bf16.npy", {.u2IsBF16 = true});
  auto wantF16 = valuesOf<std::uint16_t>(f16.data);
  auto wantBf16 = valuesOf<std::uint16_t>(bf16.data);
  REQUIRE(wantF16.size() == f32.size());
  REQUIRE(wantBf16.size() == f32.size());
  for (std::size_t i = 0; i < f32.size(); ++i) {
    INFO("element " << i << " = " << f32[i]);
    CHECK(f32ToF16(f32[i]) == wantF16[i]);
    CHECK(f32ToBf16(f32[i]) == wantBf16[i]);
  }
  // convertElements does the same over spans.
  std::vector<std::byte> out(f32.size() * 2);
  convertElements(DType::F32, x.data, DType::BF16, out);
  CHECK(out == bf16.data);
  convertElements(DType::F32, x.data, DType::F16, out);
  CHECK(out == f16.data);
}

TEST_CASE("convertElements refuses unsupported pairs and sizes", "[weights][convert]") {
  std::vector<std::byte> a(8), b(8);
  CHECK(canConvert(DType::BF16, DType::F16));
  CHECK(canConvert(DType::I32, DType::I32));
  CHECK_FALSE(canConvert(DType::I32, DType::F32));
  CHECK_THROWS_WITH(convertElements(DType::I32, a, DType::F32, b), Contains("cannot convert i32 to f32"));
  CHECK_THROWS_AS(convertElements(DType::F32, a, DType::BF16, b), Error);  // needs 4 bytes, not 8
  convertElements(DType::I64, a, DType::I64, b);  // same dtype: a copy
  CHECK(a == b);
}
