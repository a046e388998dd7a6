// The safetensors reader: fixtures written by PyPI safetensors, and corrupt
// files made here, each of which must fail with its own clear message.
#include <catch2/catch.hpp>

#include <cmath>

#include "weights/convert.h"
#include "weights/error.h"
#include "weights/mapped_file.h"
#include "weights/safetensors.h"
#include "weights_test_util.h"

using namespace linnet::weights;
using linnet::DType;
using namespace linnet::weights::test;
using Catch::Matchers::Contains;

TEST_CASE("single file: names, dtypes, shapes, values, metadata", "[weights][safetensors]") {
  auto ckpt = Checkpoint::open(dataDir() / "single.safetensors");
  REQUIRE(ckpt.size() == 3);
  CHECK(ckpt.tensors()[0].name == "bias");  // sorted by name
  CHECK(ckpt.tensors()[1].name == "embed.weight");
  CHECK(ckpt.tensors()[2].name == "norm.weight");
  CHECK(ckpt.files().size() == 1);
  CHECK(ckpt.metadata(0).at("format") == "pt");
  CHECK(ckpt.metadata(0).at("note") == "linnet test");
  CHECK_THAT(ckpt.description(), Contains("single.safetensors"));

  const TensorInfo& e = ckpt.at("embed.weight");
  CHECK(e.dtype == DType::F32);
  CHECK(e.shape == Shape{4, 3});
  CHECK(e.elementCount() == 12);
  REQUIRE(e.data.size() == 48);
  auto ev = valuesOf<float>(e.data);
  for (int i = 0; i < 12; ++i) CHECK(ev[i] == static_cast<float>(i));
  CHECK(valuesOf<float>(ckpt.at("norm.weight").data) == std::vector<float>{1.0f, 0.5f, -2.0f});

  const TensorInfo& b = ckpt.at("bias");
  CHECK(b.dtype == DType::F16);
  auto bv = valuesOf<std::uint16_t>(b.data);
  REQUIRE(bv.size() == 4);
  CHECK(f16ToF32(bv[0]) == 0.25f);
  CHECK(f16ToF32(bv[1]) == -0.5f);
  CHECK(f16ToF32(bv[2]) == 1.5f);
  CHECK(f16ToF32(bv[3]) == 2.0f);

  CHECK(ckpt.find("missing") == nullptr);
  CHECK_THROWS_WITH(ckpt.at("embed.weights"), Contains("no tensor 'embed.weights'") && Contains("did you mean 'embed.weight'"));
  // Data spans lie inside the mapped file.
  CHECK(e.data.data() > ckpt.at("bias").data.data() - 1000);
}

TEST_CASE("every dtype reads back with its values", "[weights][safetensors]") {
  auto ckpt = Checkpoint::open(dataDir() / "dtypes.safetensors");
  REQUIRE(ckpt.size() == 12);
  auto t = [&](const char* n) -> const TensorInfo& { return ckpt.at(n); };
  CHECK(t("f32").dtype == DType::F32);
  CHECK(t("f32").shape == Shape{2, 3});
  CHECK(valuesOf<float>(t("f32").data) == std::vector<float>{-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f});
  CHECK(t("bf16").dtype == DType::BF16);
  {
    auto v = valuesOf<std::uint16_t>(t("bf16").data);
    REQUIRE(v.size() == 5);
    CHECK(bf16ToF32(v[0]) == 1.0f);
    CHECK(bf16ToF32(v[1]) == -2.0f);
    CHECK(bf16ToF32(v[2]) == 0.5f);
    CHECK(bf16ToF32(v[3]) == 3.140625f);
    CHECK(std::signbit(bf16ToF32(v[4])));
  }
  CHECK(t("f16").dtype == DType::F16);
  {
    auto v = valuesOf<std::uint16_t>(t("f16").data);
    CHECK(f16ToF32(v[2]) == 65504.0f);
    CHECK(f16ToF32(v[3]) == 0x1p-14f);
  }
  CHECK(t("f64").dtype == DType::F64);
  CHECK(valuesOf<double>(t("f64").data) == std::vector<double>{M_PI, -1e300, 0.1});
  CHECK(t("i8").dtype == DType::I8);
  CHECK(valuesOf<std::int8_t>(t("i8").data) == std::vector<std::int8_t>{-128, -1, 0, 127});
  CHECK(t("u8").dtype == DType::U8);
  CHECK(valuesOf<std::uint8_t>(t("u8").data) == std::vector<std::uint8_t>{0, 1, 128, 255});
  CHECK(t("i16").dtype == DType::I16);
  CHECK(valuesOf<std::int16_t>(t("i16").data) == std::vector<std::int16_t>{-32768, 7, 32767});
  CHECK(t("i32").dtype == DType::I32);
  CHECK(t("i32").shape == Shape{2, 2});
  CHECK(valuesOf<std::int32_t>(t("i32").data) == std::vector<std::int32_t>{INT32_MIN, -1, 0, INT32_MAX});
  CHECK(t("i64").dtype == DType::I64);
  CHECK(valuesOf<std::int64_t>(t("i64").data) == std::vector<std::int64_t>{INT64_MIN, 42, INT64_MAX});
  CHECK(t("bool").dtype == DType::Bool);
  CHECK(valuesOf<std::uint8_t>(t("bool").data) == std::vector<std::uint8_t>{1, 0, 1, 1, 0});
  CHECK(t("empty").shape == Shape{0, 3});
  CHECK(t("empty").data.empty());
  CHECK(t("scalar").shape.empty());
  CHECK(valuesOf<float>(t("scalar").data) == std::vector<float>{3.5f});
}

TEST_CASE("sharded checkpoint through index.json, and the same shards without it", "[weights][safetensors]") {
  auto ckpt = Checkpoint::open(dataDir() / "tiny" / "model.safetensors.index.json");
  CHECK(ckpt.size() == 30);  // 3 globals + 3 layers x 9
  REQUIRE(ckpt.files().size() == 2);
  CHECK(ckpt.files()[0].filename() == "model-00001-of-00002.safetensors");
  CHECK_THAT(ckpt.description(), Contains("model.safetensors.index.json (2 shards)"));
  CHECK(ckpt.at("lm_head.weight").file == 1);
  CHECK(ckpt.at("model.layers.2.mlp.up_proj.weight").file == 1);
  CHECK(ckpt.at("model.layers.0.mlp.up_proj.weight").file == 0);
  const TensorInfo& q = ckpt.at("model.layers.1.self_attn.q_proj.weight");
  CHECK(q.dtype == DType::BF16);
  CHECK(q.shape == Shape{8, 8});
  CHECK(ckpt.at("model.layers.1.self_attn.k_proj.weight").shape == Shape{4, 8});
  CHECK(ckpt.metadata(1).at("format") == "pt");

  auto plain = Checkpoint::openFiles({dataDir() / "tiny" / "model-00001-of-00002.safetensors",
                                      dataDir() / "tiny" / "model-00002-of-00002.safetensors"});
  REQUIRE(plain.size() == 30);
  for (std::size_t i = 0; i < 30; ++i) {
    CHECK(plain.tensors()[i].name == ckpt.tensors()[i].name);
    CHECK(std::equal(plain.tensors()[i].data.begin(), plain.tensors()[i].data.end(), ckpt.tensors()[i].data.begin(),
                     ckpt.tensors()[i].data.end()));
  }
  CHECK_THAT(plain.description(), Contains("and 1 more shard"));
}

TEST_CASE("a copy of a Checkpoint keeps its mappings", "[weights][safetensors]") {
  std::span<const std::byte> data;
  Checkpoint copy;
  {
    auto ckpt = Checkpoint::open(dataDir() / "single.safetensors");
    copy = ckpt;
    data = ckpt.at("norm.weight").data;
  }
  CHECK(valuesOf<float>(data) == std::vector<float>{1.0f, 0.5f, -2.0f});
  CHECK(copy.size() == 3);
  Checkpoint empty;
  CHECK(empty.size() == 0);
  CHECK(empty.find("x") == nullptr);
}

namespace {
// The message of the Error that opening `bytes` as a .safetensors file gives.
std::string openError(const TempDir& dir, const std::string& name, const Bytes& bytes) {
  auto p = dir.write(name, bytes);
  try {
    Checkpoint::open(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("corrupt safetensors files each give their own clear error", "[weights][safetensors][errors]") {
  TempDir dir;
  const std::string ok = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

  SECTION("empty file") {
    auto m = openError(dir, "empty.safetensors", {});
    CHECK_THAT(m, Contains("empty.safetensors") && Contains("file is empty"));
  }
  SECTION("shorter than the length field") {
    auto m = openError(dir, "short.safetensors", toBytes("abc"));
    CHECK_THAT(m, Contains("short.safetensors") && Contains("3 bytes, too short"));
  }
  SECTION("header length past the end") {
    auto m = openError(dir, "h.safetensors", safetensorsBytes("{" + ok + "}", 8, 5000));
    CHECK_THAT(m, Contains("h.safetensors") && Contains("header length 5000 is past the end") && Contains("truncated"));
  }
  SECTION("absurd header length does not overflow") {
    auto m = openError(dir, "huge.safetensors", safetensorsBytes("{}", 0, 0xfffffffffffffff0ull));
    CHECK_THAT(m, Contains("exceeds the 100 MB limit"));
  }
  SECTION("header is not JSON") {
    auto m = openError(dir, "j.safetensors", safetensorsBytes("{\"a\": {\"dtype\": F32", 0));
    CHECK_THAT(m, Contains("j.safetensors: header: not well-formed JSON") && Contains("line 1"));
  }
  SECTION("header is not UTF-8") {
    auto m = openError(dir, "u.safetensors", safetensorsBytes("{\"\xff\xfe\":1}", 0));
    CHECK_THAT(m, Contains("not well-formed JSON"));
  }
  SECTION("header is not an object") {
    auto m = openError(dir, "arr.safetensors", safetensorsBytes("[1, 2]  ", 0));
    CHECK_THAT(m, Contains("header must be a JSON object"));
  }
  SECTION("unknown dtype names the tensor and the supported ones") {
    auto m = openError(dir, "dt.safetensors",
                       safetensorsBytes(R"({"layers.0.w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2));
    CHECK_THAT(m, Contains("dt.safetensors: tensor 'layers.0.w': unsupported dtype \"F8_E4M3\"") &&
                      Contains("BF16") && Contains("Convert the tensor"));
  }
  SECTION("dtype of the wrong JSON type") {
    auto m = openError(dir, "dt2.safetensors", safetensorsBytes(R"({"a":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", 8));
    CHECK_THAT(m, Contains("tensor 'a': dtype must be a string"));
  }
  SECTION("missing field") {
    auto m = openError(dir, "mf.safetensors", safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2]}})", 8));
    CHECK_THAT(m, Contains("tensor 'a': header entry has no \"data_offsets\""));
  }
  SECTION("entry that is not an object") {
    auto m = openError(dir, "eo.safetensors", safetensorsBytes(R"({"a":[1,2,3]})", 0));
    CHECK_THAT(m, Contains("tensor 'a': header entry must be an object"));
  }
  SECTION("negative and fractional dimensions") {
    auto m1 = openError(dir, "neg.safetensors", safetensorsBytes(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8));
    CHECK_THAT(m1, Contains("tensor 'a': shape [-2] has an entry that is not a non-negative integer"));
    auto m2 = openError(dir, "frac.safetensors", safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8));
    CHECK_THAT(m2, Contains("not a non-negative integer (2.5)"));
  }
  SECTION("shape with too many elements") {
    auto m = openError(dir, "big.safetensors",
                       safetensorsBytes(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", 8));
    CHECK_THAT(m, Contains("tensor 'a': shape [4611686018427387904, 4] has too many elements"));
  }
  SECTION("data_offsets inconsistent with shape x dtype") {
    auto m = openError(dir, "sz.safetensors", safetensorsBytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 12));
    CHECK_THAT(m, Contains("tensor 'a': data_offsets [0, 8] span 8 bytes, but shape [3] x F32 needs 12 bytes"));
  }
  SECTION("data_offsets reversed") {
    auto m = openError(dir, "rev.safetensors", safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8));
    CHECK_THAT(m, Contains("data_offsets [8, 0] end before they begin"));
  }
  SECTION("data_offsets malformed") {
    auto m = openError(dir, "off.safetensors", safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8));
    CHECK_THAT(m, Contains("data_offsets must be [begin, end]"));
  }
  SECTION("tensor past the end of the file") {
    auto m = openError(dir, "past.safetensors", safetensorsBytes("{" + ok + "}", 4));
    CHECK_THAT(m, Contains("past.safetensors: tensor 'a': data_offsets [0, 8] run past the end of the data section (4 "
                           "bytes)") &&
                      Contains("truncated"));
  }
  SECTION("overlapping tensors name both") {
    auto m = openError(dir, "ov.safetensors",
                       safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                        12));
    CHECK_THAT(m, Contains("ov.safetensors: tensors 'a' (bytes [0, 8)) and 'b' (bytes [4, 12)) overlap"));
  }
  SECTION("a tensor inside another overlaps too") {
    auto m = openError(dir, "ov2.safetensors",
                       safetensorsBytes(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                                        R"("c":{"dtype":"F32","shape":[1],"data_offsets":[12,16]},)"
                                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                        16));
    CHECK_THAT(m, Contains("tensors 'a'") && Contains("'b'") && Contains("overlap"));
  }
  SECTION("empty tensors overlap nothing") {
    auto p = dir.write("z.safetensors",
                       safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                        R"("z":{"dtype":"I64","shape":[0,5],"data_offsets":[4,4]}})",
                                        8));
    auto ckpt = Checkpoint::open(p);
    CHECK(ckpt.at("z").data.empty());
  }
  SECTION("duplicate tensor name in one header") {
    auto m = openError(dir, "dup.safetensors", safetensorsBytes("{" + ok + "," + ok + "}", 8));
    CHECK_THAT(m, Contains("dup.safetensors: header") && Contains("key \"a\" appears twice"));
  }
  SECTION("__metadata__ must hold strings") {
    auto m = openError(dir, "md.safetensors", safetensorsBytes(R"({"__metadata__":{"step":3},)" + ok + "}", 8));
    CHECK_THAT(m, Contains("__metadata__ entry \"step\" must be a string, got 3"));
    auto m2 = openError(dir, "md2.safetensors", safetensorsBytes(R"({"__metadata__":"x",)" + ok + "}", 8));
    CHECK_THAT(m2, Contains("__metadata__ must be an object"));
  }
  SECTION("recognisable other formats get a hint") {
    auto lfs = openError(dir, "lfs.safetensors",
                         toBytes("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 16060522240\n"));
    CHECK_THAT(lfs, Contains("Git LFS pointer"));
    auto json = openError(dir, "idx.safetensors", toBytes("{\n  \"metadata\": {},\n  \"weight_map\": {}\n}\n"));
    CHECK_THAT(json, Contains("looks like JSON"));
  }
  SECTION("every truncation of a valid file is an error, never a crash") {
    Bytes full = readBytes(dataDir() / "single.safetensors");
    int errors = 0;
    for (std::size_t n = 0; n < full.size(); ++n) {
      try {
        parseSafetensors(std::span(full).first(n), "cut");
      } catch (const Error&) {
        ++errors;
      }
    }
    CHECK(errors == static_cast<int>(full.size()));
  }
  SECTION("flipped header bytes give an Error or a valid result, never a crash") {
    Bytes full = readBytes(dataDir() / "dtypes.safetensors");
    std::size_t headerEnd = 8 + std::to_integer<std::size_t>(full[0]) + (std::to_integer<std::size_t>(full[1]) << 8);
    int outcomes = 0;
    for (std::size_t i = 0; i < headerEnd; ++i) {
      for (unsigned char v : {0x00, 0x22, 0x30, 0x39, 0x5d, 0x7d, 0xff}) {
        Bytes mutated = full;
        mutated[i] = static_cast<std::byte>(v);
        try {
          auto h = parseSafetensors(mutated, "mutated");
          for (const auto& t : h.tensors) REQUIRE(t.data.data() + t.data.size() <= mutated.data() + mutated.size());
        } catch (const Error&) {
        }
        ++outcomes;
      }
    }
    CHECK(outcomes == static_cast<int>(headerEnd * 7));
  }
}

TEST_CASE("paths that are not checkpoint files", "[weights][safetensors][errors]") {
  TempDir dir;
  CHECK_THROWS_WITH(Checkpoint::open(dir / "nope.safetensors"), Contains("nope.safetensors: no such file"));
  CHECK_THROWS_WITH(MappedFile::open(dir.path()), Contains("is a directory, not a file"));
  CHECK_THROWS_WITH(Checkpoint::openFiles({dir.path()}), Contains("is a directory"));
  // A directory given as the checkpoint: say what to pass instead.
  CHECK_THROWS_WITH(Checkpoint::open(dataDir() / "tiny"),
                    Contains("is a directory, not a checkpoint file") && Contains("pass its index") &&
                        Contains("model.safetensors.index.json"));
  CHECK_THROWS_WITH(Checkpoint::open(dir.path()), Contains("holds no .safetensors"));
  CHECK_THROWS_WITH(Checkpoint::openFiles({}), Contains("no checkpoint files given"));
}

TEST_CASE("shards must not share tensor names, and an index must match its shards", "[weights][safetensors][errors]") {
  TempDir dir;
  auto tensorA = safetensorsBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  auto tensorB = safetensorsBytes(R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8);
  auto s1 = dir.write("s1.safetensors", tensorA);
  auto s2 = dir.write("s2.safetensors", tensorA);
  auto s3 = dir.write("s3.safetensors", tensorB);
  CHECK_THROWS_WITH(Checkpoint::openFiles({s1, s2}),
                    Contains("tensor 'a' appears in two shards") && Contains("s1.safetensors") && Contains("s2.safetensors"));
  CHECK(Checkpoint::openFiles({s1, s3}).size() == 2);
  CHECK_THROWS_WITH(Checkpoint::openFiles({s1, s3, dir.path() / "." / "s1.safetensors"}),
                    Contains("the same file is given twice as a shard"));

  auto idx = [&](const std::string& text) {
    auto p = dir.write("model.safetensors.index.json", text);
    try {
      Checkpoint::open(p);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(idx(R"({"weight_map": {"a": "s1.safetensors", "b": "s3.safetensors"}})") == "(no error)");
  CHECK_THAT(idx(R"({"weight_map": {"a": "s1.safetensors", "a": "s3.safetensors"}})"),
             Contains("model.safetensors.index.json") && Contains("key \"a\" appears twice"));
  CHECK_THAT(idx(R"({"metadata": {}})"), Contains("not a safetensors index") && Contains("weight_map"));
  CHECK_THAT(idx(R"({"weight_map": {}})"), Contains("weight_map is empty"));
  CHECK_THAT(idx(R"({"weight_map": {"a": 3}})"), Contains("weight_map[\"a\"] must be a shard file name"));
  CHECK_THAT(idx(R"({"weight_map": {"a": "gone.safetensors"}})"),
             Contains("shard 1 of 1 named by its weight_map cannot be opened") && Contains("gone.safetensors: no such file"));
  CHECK_THAT(idx(R"({"weight_map": {"a": "s1.safetensors", "b": "s3.safetensors", "c": "s3.safetensors"}})"),
             Contains("weight_map says tensor 'c' is in s3.safetensors, but no shard holds it"));
  CHECK_THAT(idx(R"({"weight_map": {"a": "s1.safetensors", "b": "s1.safetensors"}})"),
             Contains("weight_map says tensor 'b' is in s1.safetensors, but no shard holds it"));
  CHECK_THAT(idx(R"({"weight_map": {"a": "s3.safetensors", "b": "s1.safetensors"}})"),
             Contains("weight_map says tensor 'a' is in s3.safetensors, but it is in s1.safetensors"));
  CHECK_THAT(idx(R"({"weight_map": {"a": "s1.safetensors", "x": "s3.safetensors"}})"),
             Contains("weight_map says tensor 'x'"));
  CHECK_THAT(idx(R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})"),
             Contains("tensor 'a' appears in two shards"));
  CHECK_THAT(idx("{\"weight_map\": "), Contains("not well-formed JSON"));
  CHECK_THAT(idx(""), Contains("not well-formed JSON"));
  // Shard names may not leave the index's folder.
  CHECK_THAT(idx(R"({"weight_map": {"a": "../s1.safetensors"}})"),
             Contains("model.safetensors.index.json: weight_map[\"a\"] names ../s1.safetensors, which leaves the "
                      "index's folder"));
  CHECK_THAT(idx(R"({"weight_map": {"a": "sub/../../s1.safetensors"}})"), Contains("leaves the index's folder"));
  CHECK_THAT(idx(R"({"weight_map": {"a": "s1.safetensors", "b": "./s3.safetensors"}})"), Contains("(no error)"));
  // A checkpoint may be named otherwise in messages (a GGUF's temporary conversion).
  {
    Checkpoint c = Checkpoint::openFiles({s1});
    c.setDescription("model.gguf");
    CHECK(c.description() == "model.gguf");
    CHECK_THROWS_WITH(c.at("nope"), Contains("checkpoint model.gguf: no tensor 'nope'"));
  }
  // A corrupt shard is reported with its place in the index.
  dir.write("bad.safetensors", toBytes("xy"));
  CHECK_THAT(idx(R"({"weight_map": {"a": "s1.safetensors", "q": "bad.safetensors"}})"),
             Contains("bad.safetensors (shard 1 of 2 in model.safetensors.index.json): file is 2 bytes"));
}
