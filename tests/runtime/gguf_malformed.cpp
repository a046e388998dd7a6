// Malformed GGUF files: each must fail with an Error that names the file and
// says what is wrong, never crash, hang or allocate without bound. Files are
// hand-made (Builder) or fixture bytes truncated/corrupted, parsed from
// memory and, for a few, from a temp dir.
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>

#include "gguf/gguf.h"
#include "gguf_test_util.h"

using namespace linnet::gguf;
using namespace linnet::gguf::test;
using Catch::Matchers::Contains;

namespace {

std::string errorOf(const Bytes& b, const std::string& label = "bad.gguf") {
  try {
    File f = File::parse(b, label);
    for (const TensorInfo& t : f.tensors())
      if (typeTraits(t.type).dequantizable) (void)f.dequantize(t);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

template <class T>
void poke(Bytes& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}

Builder oneTensor(std::vector<std::uint64_t> dims, std::uint32_t type, std::uint64_t offset) {
  Builder g;
  g.info("w", std::move(dims), type, offset);
  g.data.b.resize(64);
  return g;
}

}  // namespace

TEST_CASE("magic and version", "[gguf][malformed]") {
  CHECK_THAT(errorOf(Bytes(3)), Contains("bad.gguf: not a GGUF file: only 3 bytes long"));
  Bytes b = Builder().build();
  b[0] = std::byte{'X'};
  CHECK_THAT(errorOf(b), Contains("bad.gguf: not a GGUF file: starts with bytes 58 47 55 46"));
  std::memcpy(b.data(), "tjgg", 4);
  CHECK_THAT(errorOf(b), Contains("legacy GGML/GGJT file"));
  Builder v1;
  v1.version = 1;
  CHECK_THAT(errorOf(v1.build()), Contains("bad.gguf: GGUF version 1 is not supported"));
  Builder v4;
  v4.version = 4;
  CHECK_THAT(errorOf(v4.build()), Contains("bad.gguf: unsupported GGUF version 4 (this reader reads versions 2 and 3)"));
  Builder be;
  be.version = 0x03000000;
  CHECK_THAT(errorOf(be.build()), Contains("big-endian GGUF file"));
  CHECK_THAT(errorOf(Bytes{std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}, std::byte{3}}),
             Contains("truncated: the version of the header needs 4 bytes at offset 4, but the file ends at 5"));
  Builder ok;
  CHECK(errorOf(ok.build()) == "(no error)");
}

TEST_CASE("counts larger than the file could hold", "[gguf][malformed]") {
  Builder kv;
  kv.kvCountOverride = std::numeric_limits<std::uint64_t>::max();
  CHECK_THAT(errorOf(kv.build()), Contains("claims 18446744073709551615 metadata entries"));
  Builder tc;
  tc.tensorCountOverride = 1ull << 40;
  CHECK_THAT(errorOf(tc.build()), Contains("claims 1099511627776 tensors"));
  Builder tc2;  // fits the header check, not what is left after the metadata
  tc2.string("k", std::string(100, 'x'));
  tc2.tensorCountOverride = 4;
  CHECK_THAT(errorOf(tc2.build()), Contains("bytes after the metadata hold at most 0 tensor infos"));
}

TEST_CASE("strings and arrays", "[gguf][malformed]") {
  Builder s;
  s.key("name", 8, Out().put<std::uint64_t>(1ull << 62).b);
  CHECK_THAT(errorOf(s.build()),
             Contains("the string of metadata 'name' at offset") && Contains("claims 4611686018427387904 bytes"));
  Builder k;
  k.kv.put<std::uint64_t>(1000).raw(Bytes(20));
  k.kvCount = 1;
  CHECK_THAT(errorOf(k.build()), Contains("the key of metadata entry #0") && Contains("claims 1000 bytes"));
  Builder a;
  a.key("arr", 9, Out().put<std::uint32_t>(4).put<std::uint64_t>(1ull << 61).b);
  CHECK_THAT(errorOf(a.build()), Contains("metadata 'arr' at offset") && Contains("claims 2305843009213693952 elements of UINT32"));
  Builder as;  // string elements need 8 bytes each at least
  as.key("arr", 9, Out().put<std::uint32_t>(8).put<std::uint64_t>(3).put<std::uint64_t>(0).put<std::uint64_t>(0).b);
  CHECK_THAT(errorOf(as.build()), Contains("claims 3 elements of STRING"));
  Builder ae;  // truncated inside the third string of an array
  ae.key("tokens", 9, Out().put<std::uint32_t>(8).put<std::uint64_t>(3).str("a").str("b").raw(Bytes(6)).b);
  CHECK_THAT(errorOf(ae.build()), Contains("truncated: the string length of metadata 'tokens'[2] needs 8 bytes"));
  Builder ne;  // inside a nested array
  ne.key("n", 9,
         Out().put<std::uint32_t>(9).put<std::uint64_t>(2).put<std::uint32_t>(8).put<std::uint64_t>(1).str("x")
             .put<std::uint32_t>(8).put<std::uint64_t>(1).put<std::uint64_t>(99).b);
  CHECK_THAT(errorOf(ne.build()), Contains("the string of metadata 'n'[1][0]") && Contains("claims 99 bytes"));
}

TEST_CASE("unknown value types, deep nesting, duplicate keys", "[gguf][malformed]") {
  Builder v;
  v.key("x", 13, Out().put<std::uint32_t>(0).b);
  CHECK_THAT(errorOf(v.build()), Contains("metadata 'x' has unknown value type 13"));
  Builder a;
  a.key("x", 9, Out().put<std::uint32_t>(77).put<std::uint64_t>(0).b);
  CHECK_THAT(errorOf(a.build()), Contains("metadata 'x' is an array of unknown value type 77"));
  Out deep;
  for (int i = 0; i < 20; ++i) deep.put<std::uint32_t>(9).put<std::uint64_t>(1);
  deep.put<std::uint32_t>(0).put<std::uint64_t>(0);
  Builder d;
  d.key("deep", 9, deep.b);
  CHECK_THAT(errorOf(d.build()), Contains("metadata 'deep'[0][0][0][0][0][0][0] nests arrays more than 8 levels deep"));
  Builder dup;
  dup.u32("k", 1).u32("j", 2).u32("k", 3);
  CHECK_THAT(errorOf(dup.build()), Contains("metadata key 'k' appears twice (entries #0 and #2)"));
}

TEST_CASE("general.alignment", "[gguf][malformed]") {
  Builder t;
  t.string("general.alignment", "32");
  CHECK_THAT(errorOf(t.build()), Contains("general.alignment must be a UINT32, found STRING"));
  Builder z;
  z.u32("general.alignment", 0);
  CHECK_THAT(errorOf(z.build()), Contains("general.alignment = 0 is not a power of two"));
  Builder n;
  n.u32("general.alignment", 48);
  CHECK_THAT(errorOf(n.build()), Contains("general.alignment = 48 is not a power of two"));
}

TEST_CASE("tensor infos", "[gguf][malformed]") {
  CHECK_THAT(errorOf(oneTensor({1, 1, 1, 1, 1}, 0, 0).build()),
             Contains("tensor info #0 ('w') has 5 dimensions; GGUF allows at most 4"));
  CHECK_THAT(errorOf(oneTensor({1ull << 63}, 0, 0).build()),
             Contains("tensor info #0 ('w') has dimension 0 = 9223372036854775808, larger than the int64 maximum"));
  CHECK_THAT(errorOf(oneTensor({1ull << 32, 1ull << 32}, 0, 0).build()),
             Contains("has shape [4294967296, 4294967296] whose element count overflows int64"));
  CHECK_THAT(errorOf(oneTensor({32}, 4, 0).build()), Contains("tensor info #0 ('w') has unknown ggml type 4"));
  CHECK_THAT(errorOf(oneTensor({32}, 1000, 0).build()), Contains("unknown ggml type 1000"));
  CHECK_THAT(errorOf(oneTensor({40, 3}, 12, 0).build()),
             Contains("tensor info #0 ('w') is Q4_K with shape [3, 40]: its rows of 40 elements are not a whole "
                      "number of 256-element blocks"));
  CHECK_THAT(errorOf(oneTensor({4}, 0, 16).build()),
             Contains("tensor info #0 ('w') has data offset 16, not a multiple of the alignment 32"));
  Builder dup;
  dup.f32("w", {1}, {1.0f}).f32("w", {1}, {2.0f});
  CHECK_THAT(errorOf(dup.build()), Contains("tensor 'w' appears twice (tensor infos #0 and #1)"));
  Builder tr;  // truncated in the dims
  tr.ti.str("w").put<std::uint32_t>(2).put<std::uint64_t>(4);
  tr.tensorCount = 1;
  tr.kv.put<std::uint64_t>(0);  // padding so the count check passes
  tr.kvCountOverride = 0;
  Bytes tb = tr.header();
  tb.insert(tb.end(), tr.ti.b.begin(), tr.ti.b.end());
  tb.resize(tb.size() + 4);
  CHECK_THAT(errorOf(tb), Contains("truncated: the dimensions of tensor info #0 ('w') needs 8 bytes"));
}

TEST_CASE("tensor data out of range or overlapping", "[gguf][malformed]") {
  CHECK_THAT(errorOf(oneTensor({16}, 0, 64).build()),
             Contains("tensor 'w' (F32, shape [16]) needs bytes [64, 128) of the data section") &&
                 Contains("holds 64 bytes: the file is truncated or the tensor's offset is wrong"));
  CHECK_THAT(errorOf(oneTensor({32}, 0, 0).build()), Contains("needs bytes [0, 128)"));
  CHECK_THAT(errorOf(oneTensor({32}, 0, 1ull << 63).build()), Contains("needs bytes [9223372036854775808, "));
  CHECK_THAT(errorOf(oneTensor({64}, 0, 0xffffffffffffffe0ull).build()), Contains("overflow"));
  Builder o;
  o.info("a", {8}, 0, 0).info("b", {8}, 0, 0);
  o.data.b.resize(64);
  CHECK_THAT(errorOf(o.build()), Contains("tensors 'a' (data bytes [0, 32)) and 'b' (data bytes [0, 32)) overlap"));
  Builder o2;
  o2.info("a", {16}, 0, 0).info("b", {4}, 0, 32);
  o2.data.b.resize(64);
  CHECK_THAT(errorOf(o2.build()), Contains("tensors 'a' (data bytes [0, 64)) and 'b' (data bytes [32, 48)) overlap"));
  Builder ok;  // adjacent and empty tensors are fine, in any order
  ok.info("b", {8}, 0, 32).info("a", {8}, 0, 0).info("e", {0}, 0, 32);
  ok.data.b.resize(64);
  CHECK(errorOf(ok.build()) == "(no error)");
}

TEST_CASE("every truncation of real files fails cleanly", "[gguf][malformed]") {
  for (const char* name : {"metadata.gguf", "types.gguf"}) {
    const Bytes full = readFile(dataDir() / name);
    // Padding after the last tensor's data is not needed; anything shorter fails.
    const File f = File::parse(full, name);
    std::size_t end = 0;
    for (const TensorInfo& t : f.tensors())
      end = std::max<std::size_t>(end, static_cast<std::size_t>(t.data.data() - full.data()) + t.data.size());
    CHECK(end + 64 > full.size());
    for (std::size_t n = 0; n < end; ++n) {
      const Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
      const std::string e = errorOf(cut, name);
      INFO(name << " cut to " << n << " bytes: " << e);
      REQUIRE(e.rfind(std::string(name) + ": ", 0) == 0);
      REQUIRE((e.find("truncated") != std::string::npos || e.find("claims") != std::string::npos ||
               e.find("hold at most") != std::string::npos || e.find("only") != std::string::npos));
    }
  }
  const Bytes llama = readFile(dataDir() / "llama.gguf");
  for (std::size_t n = 0; n < llama.size(); n += 97) {
    const Bytes cut(llama.begin(), llama.begin() + static_cast<std::ptrdiff_t>(n));
    REQUIRE(errorOf(cut, "llama.gguf").rfind("llama.gguf: ", 0) == 0);
  }
}

TEST_CASE("corrupted bytes never crash", "[gguf][malformed]") {
  // Flip each byte of the header, metadata and tensor infos of a real file
  // to a few values: every result parses or fails with an Error.
  const Bytes full = readFile(dataDir() / "metadata.gguf");
  std::size_t errors = 0;
  for (std::size_t i = 0; i < 1472; ++i)
    for (std::uint8_t v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      Bytes b = full;
      b[i] = std::byte{v};
      errors += errorOf(b) != "(no error)";
    }
  CHECK(errors > 1000);
}

TEST_CASE("errors name the path of an opened file", "[gguf][malformed]") {
  TempDir tmp;
  Bytes b = readFile(dataDir() / "types.gguf");
  b.resize(b.size() - 100);
  const auto p = tmp.write("cut.gguf", b);
  CHECK_THROWS_WITH(File::open(p), Contains(p.string() + ": tensor 'q4_k.3d'") && Contains("the file is truncated"));
  Bytes m = readFile(dataDir() / "metadata.gguf");
  poke<std::uint32_t>(m, 4, 7);
  const auto p2 = tmp.write("v7.gguf", m);
  CHECK_THROWS_WITH(File::open(p2), Contains(p2.string() + ": unsupported GGUF version 7"));
}

TEST_CASE("a quantized block whose scale is not finite", "[gguf][malformed]") {
  // One Q8_0 block (type 8): an f16 scale, then 32 int8 values.
  for (std::uint16_t scale : {std::uint16_t{0x7C00}, std::uint16_t{0x7E00}, std::uint16_t{0xFC00}}) {
    Builder g = oneTensor({32}, 8, 0);
    std::memcpy(g.data.b.data(), &scale, 2);
    g.data.b[2] = std::byte{1};
    CHECK_THAT(errorOf(g.build()),
               Contains("bad.gguf: tensor 'w' has a Q8_0 block (0 of 1) whose scale is not finite") &&
                   Contains("the file is damaged"));
  }
  Builder fine = oneTensor({32}, 8, 0);
  CHECK(errorOf(fine.build()) == "(no error)");
}
