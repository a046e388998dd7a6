// The GGUF writer, read back by runtime/gguf's reader: every metadata value
// type, tensor layout and alignment, and the temporary file that is renamed
// into place only once complete.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>

#include "../runtime/temp_dir.h"
#include "export/gguf_writer.h"
#include "export/quantize.h"
#include "gguf/gguf.h"

using namespace linnet::gguf;
namespace ex = linnet::exporter;
using linnet::test::TempDir;

namespace {

std::vector<std::byte> floats(std::initializer_list<float> v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), std::data(v), b.size());
  return b;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("a written GGUF reads back", "[export][writer]") {
  TempDir dir;
  auto path = dir / "m.gguf";
  {
    ex::GgufWriter w;
    w.add("general.architecture", Value{std::string("llama")});
    w.add("u8", Value{std::uint8_t{7}});
    w.add("i8", Value{std::int8_t{-7}});
    w.add("u16", Value{std::uint16_t{700}});
    w.add("i16", Value{std::int16_t{-700}});
    w.add("u32", Value{std::uint32_t{70000}});
    w.add("i32", Value{std::int32_t{-70000}});
    w.add("f32", Value{1.5f});
    w.add("bool", Value{true});
    w.add("u64", Value{std::uint64_t{1} << 40});
    w.add("i64", Value{-(std::int64_t{1} << 40)});
    w.add("f64", Value{0.1});
    w.add("strings", Value{Array{std::vector<std::string>{"a", "", "\xe2\x96\x81x"}}});
    w.add("ints", Value{Array{std::vector<std::int32_t>{1, -2, 3}}});
    w.add("nested", Value{Array{std::vector<Array>{Array{std::vector<float>{1, 2}}, Array{std::vector<bool>{true}}}}});
    CHECK_THROWS_AS(w.add("u8", Value{std::uint8_t{1}}), std::invalid_argument);
    w.addTensor("a", GgmlType::F32, {2, 3});
    w.addTensor("b", GgmlType::F32, {1});
    CHECK_THROWS_AS(w.addTensor("c", GgmlType::Q8_0, {2, 16}), std::invalid_argument);  // not whole blocks
    w.addTensor("q", GgmlType::Q8_0, {2, 32});
    w.open(path);
    w.writeTensor(floats({1, 2, 3, 4, 5, 6}));
    w.writeTensor(floats({-1}));
    std::vector<float> x(64);
    for (int k = 0; k < 64; ++k) x[k] = 0.25f * (k - 32);
    std::vector<std::byte> q(68);
    ex::encodeRows(GgmlType::Q8_0, x, 32, q);
    w.writeTensor(q);
    CHECK_FALSE(std::filesystem::exists(path));  // not until finish
    w.finish();
    CHECK(std::filesystem::file_size(path) == w.fileSize());
  }
  File f = File::open(path);
  CHECK(f.version() == 3);
  const Metadata& m = f.metadata();
  CHECK(m.getString("general.architecture") == "llama");
  CHECK(m.getInt("u8") == 7);
  CHECK(m.getInt("i8") == -7);
  CHECK(m.getInt("u16") == 700);
  CHECK(m.getInt("i16") == -700);
  CHECK(m.getInt("u32") == 70000);
  CHECK(m.getInt("i32") == -70000);
  CHECK(m.getFloat("f32") == 1.5);
  CHECK(m.getBool("bool"));
  CHECK(m.getInt("u64") == std::int64_t{1} << 40);
  CHECK(m.getInt("i64") == -(std::int64_t{1} << 40));
  CHECK(m.getFloat("f64") == 0.1);
  CHECK(m.getArray("strings", ValueType::String).as<std::string>() ==
        std::vector<std::string>{"a", "", "\xe2\x96\x81x"});
  CHECK(m.getArray("ints", ValueType::I32).as<std::int32_t>() == std::vector<std::int32_t>{1, -2, 3});
  const auto& nested = m.getArray("nested", ValueType::Array).as<Array>();
  REQUIRE(nested.size() == 2);
  CHECK(nested[0].as<float>() == std::vector<float>{1, 2});
  CHECK(nested[1].as<bool>() == std::vector<bool>{true});
  REQUIRE(f.tensors().size() == 3);
  CHECK(f.at("a").shape == std::vector<std::int64_t>{2, 3});
  CHECK(f.at("a").dims == std::vector<std::uint64_t>{3, 2});
  CHECK(f.dequantize(f.at("a")) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(f.dequantize(f.at("b")) == std::vector<float>{-1});
  CHECK(f.at("q").type == GgmlType::Q8_0);
  std::vector<float> back = f.dequantize(f.at("q"));
  CHECK(back[0] == Approx(-8.0f).margin(0.01));
  CHECK(back[63] == Approx(7.75f).margin(0.01));
  for (const TensorInfo& t : f.tensors()) CHECK(t.offset % 32 == 0);
}

TEST_CASE("general.alignment moves the tensors", "[export][writer]") {
  TempDir dir;
  ex::GgufWriter w;
  w.addTensor("a", GgmlType::F32, {3});
  w.add("general.alignment", Value{std::uint32_t{64}});
  w.addTensor("b", GgmlType::F32, {1});
  CHECK(w.tensors()[1].offset == 64);
  ex::GgufWriter v;
  CHECK_THROWS_AS(v.add("general.alignment", Value{std::int32_t{64}}), std::invalid_argument);  // UINT32 only
  CHECK_THROWS_AS(v.add("general.alignment", Value{std::uint32_t{48}}), std::invalid_argument);  // a power of two
}

TEST_CASE("an unfinished file never replaces the destination", "[export][writer]") {
  TempDir dir;
  auto path = dir.write("m.gguf", std::as_bytes(std::span("old contents", 12)));
  std::filesystem::path temp;
  {
    ex::GgufWriter w;
    w.add("general.architecture", Value{std::string("llama")});
    w.addTensor("a", GgmlType::F32, {2});
    w.open(path);
    temp = w.temporaryPath();
    CHECK(temp.parent_path() == path.parent_path());
    CHECK(std::filesystem::exists(temp));
    // Abandoned here (an exception while writing, say).
  }
  CHECK_FALSE(std::filesystem::exists(temp));
  CHECK(slurp(path) == "old contents");
  {
    ex::GgufWriter w;
    w.addTensor("a", GgmlType::F32, {2});
    w.open(path);
    CHECK_THROWS(w.finish());  // a tensor missing
  }
  CHECK(slurp(path) == "old contents");
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 1);
}
