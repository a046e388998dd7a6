// .npy reading and writing against files written by numpy.save.
#include <catch2/catch.hpp>

#include "weights/convert.h"
#include "weights/error.h"
#include "weights/npy.h"
#include "weights/safetensors.h"
#include "weights_test_util.h"

using namespace linnet::weights;
using linnet::DType;
using namespace linnet::weights::test;
using Catch::Matchers::Contains;

namespace {
std::filesystem::path npyPath(const std::string& name) { return dataDir() / "npy" / (name + ".npy"); }

std::string parseError(const Bytes& bytes, NpyReadOptions opt = {}) {
  try {
    parseNpy(bytes, "in.npy", opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

Bytes npyWithHeader(std::string header, std::size_t dataBytes, int major = 1) {
  Bytes out = toBytes("\x93NUMPY");
  out.push_back(static_cast<std::byte>(major));
  out.push_back(std::byte{0});
  out.push_back(static_cast<std::byte>(header.size() & 0xff));
  out.push_back(static_cast<std::byte>(header.size() >> 8));
  if (major != 1) {
    out.push_back(std::byte{0});
    out.push_back(std::byte{0});
  }
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  out.resize(out.size() + dataBytes);
  return out;
}
}  // namespace

TEST_CASE("npy files written by numpy match the same arrays in safetensors", "[weights][npy]") {
  auto ckpt = Checkpoint::open(dataDir() / "dtypes.safetensors");
  for (const char* name : {"f32", "f16", "f64", "i8", "u8", "i16", "i32", "i64", "bool", "empty", "scalar"}) {
    INFO(name);
    NpyArray a = readNpy(npyPath(name));
    const TensorInfo& t = ckpt.at(name);
    CHECK(a.dtype == t.dtype);
    CHECK(a.shape == t.shape);
    CHECK(a.elementCount() == t.elementCount());
    CHECK(std::equal(a.data.begin(), a.data.end(), t.data.begin(), t.data.end()));
  }
  NpyArray s = readNpy(npyPath("scalar"));
  CHECK(s.shape.empty());
  CHECK(valuesOf<float>(s.data) == std::vector<float>{3.5f});
  NpyArray b = readNpy(npyPath("bool"));
  CHECK(valuesOf<std::uint8_t>(b.data) == std::vector<std::uint8_t>{1, 0, 1, 1, 0});
}

TEST_CASE("npy format 2.0 and 3-d arrays", "[weights][npy]") {
  NpyArray v1 = readNpy(npyPath("f32_3d"));
  NpyArray v2 = readNpy(npyPath("f32_3d_v2"));
  CHECK(v1.shape == Shape{2, 3, 4});
  CHECK(v2.shape == Shape{2, 3, 4});
  CHECK(v1.data == v2.data);
  auto v = valuesOf<float>(v1.data);
  REQUIRE(v.size() == 24);
  CHECK(v[0] == 0.0f);
  CHECK(v[13] == 13.0f);  // C order: [1][0][1]
  CHECK(v[23] == 23.0f);
}

TEST_CASE("bf16 in npy is '<u2' bits, read as bf16 only when expected", "[weights][npy]") {
  CHECK_THROWS_WITH(readNpy(npyPath("bf16_bits")),
                    Contains("bf16_bits.npy: .npy dtype '<u2'") && Contains("raw bfloat16 bits") &&
                        Contains("only where a bf16 value is expected"));
  NpyArray a = readNpy(npyPath("bf16_bits"), {.u2IsBF16 = true});
  CHECK(a.dtype == DType::BF16);
  auto ckpt = Checkpoint::open(dataDir() / "dtypes.safetensors");
  const TensorInfo& t = ckpt.at("bf16");
  CHECK(std::equal(a.data.begin(), a.data.end(), t.data.begin(), t.data.end()));
  CHECK(bf16ToF32(valuesOf<std::uint16_t>(a.data)[3]) == 3.140625f);
  CHECK(npyDescr(DType::BF16) == "<u2");
  // ml_dtypes' bfloat16 header reads the same way.
  Bytes v2 = npyWithHeader("{'descr': '<V2', 'fortran_order': False, 'shape': (1,), }\n", 2);
  CHECK(parseNpy(v2, "v2.npy", {.u2IsBF16 = true}).dtype == DType::BF16);
}

TEST_CASE("arrays Linnet refuses say why and how to fix them", "[weights][npy][errors]") {
  CHECK_THROWS_WITH(readNpy(npyPath("fortran")), Contains("fortran.npy") && Contains("Fortran (column-major) order") &&
                                                     Contains("np.ascontiguousarray"));
  CHECK_THROWS_WITH(readNpy(npyPath("big_endian")), Contains("'>f4' is big-endian") && Contains("astype('<f4')"));
  CHECK_THROWS_WITH(readNpy(npyPath("u4")), Contains("'<u4' (unsigned) is not a Linnet dtype"));
  CHECK_THROWS_WITH(readNpy(npyPath("complex")), Contains("'<c8' (complex) is not supported"));
  // Storage-only dtypes, where a language value is wanted, are refused naming the file.
  const NpyReadOptions language{.languageTypesOnly = true};
  CHECK_THROWS_WITH(readNpy(npyPath("f64"), language),
                    Contains("f64.npy: .npy dtype '<f8' (f64) is a storage type, not a Linnet value type") &&
                        Contains("astype('<f4')"));
  CHECK_THROWS_WITH(readNpy(npyPath("u8"), language),
                    Contains("u8.npy: .npy dtype '|u1' (u8) is a storage type") && Contains("astype('<i4')"));
  CHECK(readNpy(npyPath("f64")).dtype == DType::F64);
  CHECK(readNpy(npyPath("f32"), language).dtype == DType::F32);
}

TEST_CASE("our writer produces numpy.save's bytes exactly", "[weights][npy]") {
  for (const char* name : {"f32", "f16", "f64", "i8", "u8", "i16", "i32", "i64", "bool", "empty", "scalar", "f32_3d"}) {
    INFO(name);
    Bytes numpyBytes = readBytes(npyPath(name));
    NpyArray a = parseNpy(numpyBytes, name);
    CHECK(encodeNpy(a.dtype, a.shape, a.data) == numpyBytes);
  }
  Bytes bits = readBytes(npyPath("bf16_bits"));
  NpyArray b = parseNpy(bits, "bits", {.u2IsBF16 = true});
  CHECK(encodeNpy(b.dtype, b.shape, b.data) == bits);
}

TEST_CASE("writeNpy round trip and large headers", "[weights][npy]") {
  TempDir dir;
  std::vector<std::int64_t> v{1, -2, 3, -4, 5, -6};
  Bytes data(v.size() * 8);
  std::memcpy(data.data(), v.data(), data.size());
  writeNpy(dir / "out.npy", DType::I64, {3, 2}, data);
  NpyArray r = readNpy(dir / "out.npy");
  CHECK(r.dtype == DType::I64);
  CHECK(r.shape == Shape{3, 2});
  CHECK(valuesOf<std::int64_t>(r.data) == v);
  CHECK_FALSE(std::filesystem::exists(dir / ("out.npy.tmp" + std::to_string(::getpid()))));

  // bf16 written as '<u2', read back as bf16 when expected.
  std::vector<std::uint16_t> h{f32ToBf16(1.5f), f32ToBf16(-3.0f)};
  Bytes hb(4);
  std::memcpy(hb.data(), h.data(), 4);
  writeNpy(dir / "bf.npy", NpyArray{DType::BF16, {2}, hb});
  CHECK_THROWS_AS(readNpy(dir / "bf.npy"), Error);
  CHECK(readNpy(dir / "bf.npy", {.u2IsBF16 = true}).data == hb);

  // A header too long for format 1.0 switches to 2.0.
  Shape many(25000, 1);
  Bytes one(4);
  Bytes enc = encodeNpy(DType::F32, many, one);
  CHECK(std::to_integer<int>(enc[6]) == 2);
  CHECK((enc.size() - 4) % 64 == 0);
  CHECK(parseNpy(enc, "many").shape == many);

  CHECK_THROWS_WITH(encodeNpy(DType::F32, {2, 2}, one), Contains("needs 16 bytes, got 4"));
  CHECK_THROWS_WITH(writeNpy(dir / "no" / "such" / "dir.npy", DType::F32, {1}, one), Contains("cannot create"));
}

TEST_CASE("corrupt npy files each give their own clear error", "[weights][npy][errors]") {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  CHECK(parseError(npyWithHeader(good, 8)) == "(no error)");
  CHECK_THAT(parseError({}), Contains("in.npy: file is empty"));
  CHECK_THAT(parseError(toBytes("PK\x03\x04 not numpy")), Contains("not a NumPy .npy file"));
  CHECK_THAT(parseError(toBytes("\x93NUMPY\x01")), Contains("not a NumPy .npy file"));
  CHECK_THAT(parseError(npyWithHeader(good, 8, 9)), Contains("format version 9.0 is not supported"));
  Bytes cut = npyWithHeader(good, 8);
  cut.resize(20);
  CHECK_THAT(parseError(cut), Contains("header length") && Contains("truncated"));
  CHECK_THAT(parseError(npyWithHeader(good, 5)), Contains("data is truncated: shape [2] of <f4 needs 8 bytes, the file holds 5"));
  CHECK_THAT(parseError(npyWithHeader(good, 12)), Contains("4 bytes after the data"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': '<f4', 'shape': (2,), }", 8)), Contains("no 'fortran_order'"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8)),
             Contains("malformed"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 'y'}", 8)),
             Contains("unexpected key 'x'"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8)),
             Contains("structured (record) dtypes are not supported"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8)),
             Contains("expected a non-negative integer in the shape"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 8)),
             Contains("shape dimension too large"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 8)),
             Contains("too large"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", 8)),
             Contains("is not a dtype Linnet reads"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", 24)),
             Contains("(strings) is not supported"));
  CHECK_THAT(parseError(npyWithHeader("{'descr': '<f4', 'fortran_order': 'no', 'shape': (2,), }", 8)),
             Contains("fortran_order must be True or False"));
  Bytes badBool = npyWithHeader("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n", 3);
  badBool.back() = std::byte{7};
  CHECK_THAT(parseError(badBool), Contains("bool element 2 holds byte 7"));
  // Python 2 longs and a 1-d Fortran array (same layout as C) are fine.
  CHECK(parseError(npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2L,), }", 8)) == "(no error)");
  TempDir dir;
  CHECK_THROWS_WITH(readNpy(dir.path()), Contains("is a directory"));
  CHECK_THROWS_WITH(readNpy(dir / "missing.npy"), Contains("missing.npy: no such file"));
  // Every truncation of a numpy file is an error.
  Bytes full = readBytes(npyPath("f32_3d"));
  int errors = 0;
  for (std::size_t n = 0; n < full.size(); ++n) {
    try {
      parseNpy(std::span(full).first(n), "cut");
    } catch (const Error&) {
      ++errors;
    }
  }
  CHECK(errors == static_cast<int>(full.size()));
}
