// The GGUF reader on fixtures written by llama.cpp's own Python package:
// header, metadata of every value type, tensor infos, alignment.
#include <catch2/catch.hpp>

#include "gguf/gguf.h"
#include "gguf_test_util.h"

using namespace linnet::gguf;
using namespace linnet::gguf::test;
using Catch::Matchers::Contains;

namespace {
File metadataFixture() { return File::open(dataDir() / "metadata.gguf"); }
}  // namespace

TEST_CASE("header, alignment and tensor infos", "[gguf][reader]") {
  File f = metadataFixture();
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 64);
  CHECK(f.dataOffset() == 1536);
  CHECK(f.dataOffset() % 64 == 0);
  CHECK(f.architecture() == "linnet-test");
  CHECK_THAT(f.label(), Contains("metadata.gguf"));
  REQUIRE(f.tensors().size() == 2);

  const TensorInfo& a = f.at("a");
  CHECK(a.type == GgmlType::F32);
  CHECK(a.dims == std::vector<std::uint64_t>{3});
  CHECK(a.shape == std::vector<std::int64_t>{3});
  CHECK(a.offset == 0);
  CHECK(a.elementCount == 3);
  CHECK(a.data.size() == 12);
  CHECK(a.index == 0);
  CHECK(f.dequantize(a) == std::vector<float>{0.0f, 1.0f, 2.0f});

  const TensorInfo& b = f.at("b");
  CHECK(b.type == GgmlType::F16);
  CHECK(b.shape == std::vector<std::int64_t>{2, 2});
  CHECK(b.offset == 64);  // aligned to general.alignment
  CHECK(b.data.data() == f.bytes().data() + f.dataOffset() + 64);
  CHECK(f.dequantize(b) == std::vector<float>{0.0f, 1.0f, 2.0f, 3.0f});

  CHECK(f.find("c") == nullptr);
  CHECK_THROWS_AS(f.at("c"), Error);
  CHECK_THROWS_WITH(f.at("c"), Contains("metadata.gguf") && Contains("no tensor 'c'"));
}

TEST_CASE("metadata: every scalar type", "[gguf][reader]") {
  File f = metadataFixture();
  const Metadata& md = f.metadata();
  REQUIRE(md.size() == 32);
  CHECK(md.entries()[0].first == "general.architecture");
  CHECK(md.entries()[1].first == "general.alignment");
  CHECK(md.entries()[2].first == "general.name");
  CHECK(md.getString("general.name") == "metadata fixture");

  auto type = [&](const char* k) { return md.find(k)->type(); };
  CHECK(type("test.u8") == ValueType::U8);
  CHECK(std::get<std::uint8_t>(md.find("test.u8")->data) == 200);
  CHECK(type("test.i8") == ValueType::I8);
  CHECK(std::get<std::int8_t>(md.find("test.i8")->data) == -100);
  CHECK(std::get<std::uint16_t>(md.find("test.u16")->data) == 65000);
  CHECK(std::get<std::int16_t>(md.find("test.i16")->data) == -32000);
  CHECK(std::get<std::uint32_t>(md.find("test.u32")->data) == 4000000000u);
  CHECK(std::get<std::int32_t>(md.find("test.i32")->data) == -2000000000);
  CHECK(type("test.f32") == ValueType::F32);
  CHECK(std::get<float>(md.find("test.f32")->data) == 0.1f);
  CHECK(md.getBool("test.bool.true") == true);
  CHECK(md.getBool("test.bool.false") == false);
  CHECK(md.getString("test.string") == "h\xc3\xa9llo w\xc3\xb6rld \xe2\x98\x83");
  CHECK(md.getString("test.string.empty").empty());
  CHECK(std::get<std::uint64_t>(md.find("test.u64")->data) == 18000000000000000000ull);
  CHECK(std::get<std::int64_t>(md.find("test.i64")->data) == -9000000000000000000ll);
  CHECK(std::get<double>(md.find("test.f64")->data) == 2.718281828459045);

  // Typed getters convert integers and floats where that is exact.
  CHECK(md.getInt("test.u8") == 200);
  CHECK(md.getInt("test.i16") == -32000);
  CHECK(md.getInt("test.u32") == 4000000000);
  CHECK(md.getInt("test.i64") == -9000000000000000000ll);
  CHECK_THROWS_WITH(md.getInt("test.u64"), Contains("test.u64") && Contains("too large"));
  CHECK(md.getFloat("test.f32") == static_cast<double>(0.1f));
  CHECK(md.getFloat("test.f64") == 2.718281828459045);
  CHECK(md.findInt("missing") == std::nullopt);
  CHECK(md.findString("missing") == nullptr);
  CHECK_THROWS_WITH(md.getString("missing"), Contains("metadata.gguf") && Contains("'missing' is missing"));
  CHECK_THROWS_WITH(md.getString("test.u8"),
                    Contains("metadata.gguf") && Contains("'test.u8' is UINT8 (200), expected a STRING"));
  CHECK_THROWS_WITH(md.getInt("test.string"), Contains("is STRING") && Contains("expected an integer"));
  CHECK_THROWS_WITH(md.getBool("test.i8"), Contains("expected a BOOL"));
}

TEST_CASE("metadata: arrays of every element type, nested arrays", "[gguf][reader]") {
  File f = metadataFixture();
  const Metadata& md = f.metadata();
  CHECK(md.getArray("test.array.u8", ValueType::U8).as<std::uint8_t>() == std::vector<std::uint8_t>{0, 1, 255});
  CHECK(md.getArray("test.array.i8", ValueType::I8).as<std::int8_t>() == std::vector<std::int8_t>{-128, 0, 127});
  CHECK(md.getArray("test.array.u16", ValueType::U16).as<std::uint16_t>() == std::vector<std::uint16_t>{0, 65535});
  CHECK(md.getArray("test.array.i16", ValueType::I16).as<std::int16_t>() == std::vector<std::int16_t>{-32768, 32767});
  CHECK(md.getArray("test.array.u32", ValueType::U32).as<std::uint32_t>() ==
        std::vector<std::uint32_t>{0, 4294967295u});
  CHECK(md.getArray("test.array.i32", ValueType::I32).as<std::int32_t>() ==
        std::vector<std::int32_t>{-2147483647 - 1, 2147483647, 5});
  CHECK(md.getArray("test.array.f32", ValueType::F32).as<float>() == std::vector<float>{0.5f, -1.25f, 3.0e38f});
  CHECK(md.getArray("test.array.bool", ValueType::Bool).as<bool>() == std::vector<bool>{true, false, true});
  CHECK(md.getArray("test.array.string", ValueType::String).as<std::string>() ==
        std::vector<std::string>{"a", "", "\xc3\xbcn\xc3\xaf", "x y"});
  CHECK(md.getArray("test.array.u64", ValueType::U64).as<std::uint64_t>() ==
        std::vector<std::uint64_t>{0, 18446744073709551615ull});
  CHECK(md.getArray("test.array.i64", ValueType::I64).as<std::int64_t>() ==
        std::vector<std::int64_t>{INT64_MIN, INT64_MAX});
  CHECK(md.getArray("test.array.f64", ValueType::F64).as<double>() == std::vector<double>{0.1, -2.5e-300});

  const Array& nested = md.getArray("test.array.nested", ValueType::Array);
  REQUIRE(nested.size() == 2);
  const auto& inner = nested.as<Array>();
  CHECK(inner[0].as<std::int32_t>() == std::vector<std::int32_t>{1, 2});
  CHECK(inner[1].as<std::int32_t>() == std::vector<std::int32_t>{3, 4, 5});
  const auto& ns = md.getArray("test.array.nested.strings", ValueType::Array).as<Array>();
  CHECK(ns[0].as<std::string>() == std::vector<std::string>{"a", "b"});
  CHECK(ns[1].as<std::string>() == std::vector<std::string>{"c"});
  const auto& n3 = md.getArray("test.array.nested3", ValueType::Array).as<Array>();
  REQUIRE(n3.size() == 2);
  CHECK(n3[0].as<Array>()[1].as<float>() == std::vector<float>{2.5f, 3.5f});
  CHECK(n3[1].as<Array>()[0].as<float>() == std::vector<float>{4.5f});
  CHECK(md.find("test.array.nested3")->toString() == "[[[1.5], [2.5, 3.5]], [[4.5]]]");
  CHECK(md.find("test.array.string")->toString(2) == "[\"a\", \"\", ... (4 in all)]");

  CHECK_THROWS_WITH(md.getArray("test.array.u8", ValueType::I32),
                    Contains("'test.array.u8' is ARRAY of UINT8") && Contains("expected an ARRAY of INT32"));
}

TEST_CASE("version 2 files read like version 3", "[gguf][reader]") {
  Bytes b = readFile(dataDir() / "metadata.gguf");
  b[4] = std::byte{2};
  File f = File::parse(b, "v2.gguf");
  CHECK(f.version() == 2);
  CHECK(f.metadata().size() == 32);
  CHECK(f.dequantize(f.at("a")) == std::vector<float>{0.0f, 1.0f, 2.0f});
}

TEST_CASE("parsing from memory: borrowed and copied bytes", "[gguf][reader]") {
  Bytes b = readFile(dataDir() / "metadata.gguf");
  File borrowed = File::parse(b, "<memory>");
  CHECK(borrowed.label() == "<memory>");
  CHECK(borrowed.bytes().data() == b.data());
  File copied = File::parseCopy(b, "<copy>");
  b.assign(b.size(), std::byte{0});  // the copy does not depend on the caller's bytes
  CHECK(copied.metadata().getString("general.name") == "metadata fixture");
  CHECK(copied.dequantize(copied.at("a")) == std::vector<float>{0.0f, 1.0f, 2.0f});
  File copy2 = copied;  // copies share the state
  CHECK(copy2.bytes().data() == copied.bytes().data());
}

TEST_CASE("hand-made files: empty arrays, zero tensors, empty tensors", "[gguf][reader]") {
  Builder g;
  g.key("empty.u8", 9, Out().put<std::uint32_t>(0).put<std::uint64_t>(0).b);
  g.key("empty.strings", 9, Out().put<std::uint32_t>(8).put<std::uint64_t>(0).b);
  g.string("general.architecture", "x");
  File f = File::parseCopy(g.build(), "h.gguf");
  CHECK(f.metadata().getArray("empty.u8", ValueType::U8).size() == 0);
  CHECK(f.metadata().getArray("empty.strings", ValueType::String).size() == 0);
  CHECK(f.tensors().empty());

  Builder e;
  e.info("empty", {0, 7}, 12, 0);  // Q4_K with a zero dim: no bytes, no blocks
  e.f32("one", {1}, {5.0f});
  File fe = File::parseCopy(e.build(), "e.gguf");
  CHECK(fe.at("empty").elementCount == 0);
  CHECK(fe.at("empty").shape == std::vector<std::int64_t>{7, 0});
  CHECK(fe.dequantize(fe.at("empty")).empty());
  CHECK(fe.dequantize(fe.at("one")) == std::vector<float>{5.0f});

  Builder z;  // only empty tensors, and the file ends before the padding to the data section
  z.info("e", {0}, 8, 0);
  Bytes zb = z.build();
  zb.resize(zb.size() - 3);
  File fz = File::parseCopy(zb, "z.gguf");
  CHECK(fz.dataOffset() > zb.size());
  CHECK(fz.at("e").data.empty());
  CHECK(fz.dequantize(fz.at("e")).empty());

  Builder s;  // zero dims: a scalar
  s.info("scalar", {}, 0, 0);
  s.data.put(2.5f);
  File fs = File::parseCopy(s.build(), "s.gguf");
  CHECK(fs.at("scalar").shape.empty());
  CHECK(fs.at("scalar").elementCount == 1);
  CHECK(fs.dequantize(fs.at("scalar")) == std::vector<float>{2.5f});
}

TEST_CASE("opening: missing file, directory", "[gguf][reader]") {
  CHECK_THROWS_WITH(File::open(dataDir() / "nope.gguf"), Contains("nope.gguf") && Contains("no such file"));
  CHECK_THROWS_WITH(File::open(dataDir()), Contains("is a directory"));
  TempDir tmp;
  auto p = tmp.write("empty.gguf", Bytes{});
  CHECK_THROWS_WITH(File::open(p), Contains("empty.gguf") && Contains("only 0 bytes long"));
  File none;
  CHECK(none.tensors().empty());
  CHECK(none.metadata().size() == 0);
}
