// SmolLM2-135M-Instruct's own GGUF (Q8_0 embeddings, Q4_1 elsewhere; fetched
// by scripts/fetch-smollm2.sh) through `linnet export gguf` and read back:
// with each tensor's stored type kept, every tensor is the source's byte for
// byte (its q/k rows un-permuted for binding, permuted again on the way out)
// and so is the tokenizer; as F32, every tensor is the source dequantized.
#include <catch2/catch.hpp>

#include "../runtime/temp_dir.h"
#include "export/gguf_export.h"
#include "gguf/gguf.h"

using namespace linnet;
using linnet::test::TempDir;
namespace ex = linnet::exporter;

namespace {

const std::string kSource = std::string(LINNET_SOURCE_DIR) + "/.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf";

ex::GgufExportOptions smollm2(const std::filesystem::path& out) {
  ex::GgufExportOptions o;
  o.package = std::string(LINNET_SOURCE_DIR) + "/nest/smollm2-135m-instruct";
  o.load.weights = kSource;
  o.load.generics = {{"MaxSeq", 8192}};  // the source's context_length
  o.output = out.string();
  return o;
}

std::vector<std::byte> bytesOf(const gguf::TensorInfo& t) { return {t.data.begin(), t.data.end()}; }

}  // namespace

TEST_CASE("SmolLM2's GGUF exported with its own types is bit-exact", "[export][smollm2]") {
  TempDir dir;
  ex::GgufExportResult r = ex::exportGguf(smollm2(dir / "keep.gguf"));
  gguf::File a = gguf::File::open(kSource), b = gguf::File::open(r.path);
  REQUIRE(b.tensors().size() == a.tensors().size());
  for (const gguf::TensorInfo& t : a.tensors()) {
    INFO(t.name);
    const gguf::TensorInfo& u = b.at(t.name);
    CHECK(gguf::typeName(u.type) == gguf::typeName(t.type));
    CHECK(u.shape == t.shape);
    CHECK(bytesOf(u) == bytesOf(t));
  }
  // The model's and tokenizer's metadata as the source has it (general.name
  // and the provenance keys are the card's own).
  for (const auto& [key, value] : a.metadata().entries()) {
    if (key.starts_with("general.") && key != "general.architecture" && key != "general.file_type" &&
        key != "general.quantization_version")
      continue;
    INFO(key);
    const gguf::Value* v = b.metadata().find(key);
    REQUIRE(v);
    CHECK(v->type() == value.type());
    CHECK(v->toString(1u << 22) == value.toString(1u << 22));
  }
}

TEST_CASE("SmolLM2's GGUF exported as F32 holds its dequantized values", "[export][smollm2]") {
  TempDir dir;
  auto o = smollm2(dir / "f32.gguf");
  o.type = gguf::GgmlType::F32;
  ex::GgufExportResult r = ex::exportGguf(o);
  gguf::File a = gguf::File::open(kSource), b = gguf::File::open(r.path);
  CHECK(b.metadata().getInt("general.file_type") == 0);
  for (const gguf::TensorInfo& t : a.tensors()) {
    INFO(t.name);
    const gguf::TensorInfo& u = b.at(t.name);
    CHECK(u.type == gguf::GgmlType::F32);
    CHECK(b.dequantize(u) == a.dequantize(t));
  }
}
