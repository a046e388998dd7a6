// `linnet export onnx` through its library, on the llama card's two-layer
// f32 fixture (tests/data/llama/gqa2): forward, prefill and decode pass
// onnx::checker and ONNX shape inference with the entries' output shapes;
// states are past/present pairs; the initializers are the checkpoint's
// tensors bit for bit (and --random-weights' values); external data reads
// back; refusals write nothing. ONNX Runtime's run of the same exports is
// tests/export/check_onnx_with_onnxruntime.sh (needs PyPI).
#include <catch2/catch.hpp>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cstring>
#include <fstream>
#include <map>

#include "../runtime/temp_dir.h"
#include "export_fixtures.h"
#include "export/onnx/onnx_check.h"
#include "export/onnx/onnx_export.h"
#include "nest/params.h"
#include "weights/safetensors.h"

using namespace linnet;
using linnet::test::TempDir;
using linnet::test::kCard;
using linnet::test::kGqa2;
using Catch::Matchers::Contains;
namespace ex = linnet::exporter;
namespace fs = std::filesystem;

namespace {

// With --static-axes at B=1 S=8 (forward) and S=8 (prefill).
ex::OnnxExportOptions gqa2(const fs::path& out, const std::string& entry) {
  auto o = test::gqa2Export<ex::OnnxExportOptions>(out.string());
  if (entry == "forward") o.load.generics.insert({{"B", 1}, {"S", 8}});
  if (entry == "prefill") o.load.generics.insert({"S", 8});
  o.entry = entry;
  o.dynamicAxes = false;
  return o;
}

// Each axis's name where dynamic, else its size.
std::vector<std::string> axesOf(const onnx::ValueInfoProto& v) {
  std::vector<std::string> s;
  for (const auto& d : v.type().tensor_type().shape().dim())
    s.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param());
  return s;
}

onnx::ModelProto readModel(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromIstream(&in));
  return m;
}

std::vector<int64_t> shapeOf(const onnx::ValueInfoProto& v) {
  std::vector<int64_t> s;
  for (const auto& d : v.type().tensor_type().shape().dim()) s.push_back(d.dim_value());
  return s;
}

// The graph's outputs as shape inference gives them, from scratch.
std::map<std::string, std::vector<int64_t>> inferredOutputs(const onnx::ModelProto& model) {
  onnx::ModelProto m = ex::onnx_export::withoutData(model);
  for (auto& o : *m.mutable_graph()->mutable_output()) o.mutable_type()->mutable_tensor_type()->clear_shape();
  onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(true, 1));
  std::map<std::string, std::vector<int64_t>> out;
  for (const auto& o : m.graph().output()) {
    REQUIRE(o.type().tensor_type().has_shape());
    out[o.name()] = shapeOf(o);
  }
  return out;
}

std::string bytesOf(const onnx::TensorProto& t, const fs::path& dir) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return t.raw_data();
  std::map<std::string, std::string> e;
  for (const auto& kv : t.external_data()) e[kv.key()] = kv.value();
  std::ifstream in(dir / e.at("location"), std::ios::binary);
  in.seekg(std::stoll(e.at("offset")));
  std::string s(std::stoull(e.at("length")), '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  REQUIRE(in);
  return s;
}

const std::vector<std::string> kCaches = {"layers.0.attention.cache_k", "layers.0.attention.cache_v",
                                          "layers.1.attention.cache_k", "layers.1.attention.cache_v"};

}  // namespace

TEST_CASE("forward, prefill and decode pass the checker and shape inference (static axes)", "[export][onnx]") {
  TempDir dir;
  struct Case {
    std::string entry;
    std::vector<std::string> args;
    std::vector<int64_t> result;
  };
  for (const Case& c : std::vector<Case>{{"forward", {"tokens"}, {1, 8, 64}},
                                         {"prefill", {"tokens", "pos"}, {1, 64}},
                                         {"decode", {"token", "pos"}, {1, 64}}}) {
    INFO(c.entry);
    fs::path out = dir / (c.entry + ".onnx");
    ex::OnnxExportResult r = ex::exportOnnx(gqa2(out, c.entry));
    CHECK(r.bytes == fs::file_size(out));
    CHECK(r.dataPath.empty());
    CHECK(fs::directory_iterator(dir.path()) != fs::directory_iterator());
    REQUIRE_NOTHROW(onnx::checker::check_model(out.string()));
    onnx::ModelProto m = readModel(out);
    REQUIRE(m.opset_import_size() == 1);
    CHECK(m.opset_import(0).version() == 17);
    // Arguments by their names, then past.* for each state; results, then present.*.
    std::vector<std::string> inputs, outputs;
    for (const auto& i : m.graph().input()) inputs.push_back(i.name());
    for (const auto& o : m.graph().output()) outputs.push_back(o.name());
    std::vector<std::string> wantIn = c.args, wantOut = {"result"};
    if (c.entry != "forward")
      for (const std::string& s : kCaches) wantIn.push_back("past." + s), wantOut.push_back("present." + s);
    CHECK(inputs == wantIn);
    CHECK(outputs == wantOut);
    // Shape inference from scratch gives each output the entry's shape.
    auto inferred = inferredOutputs(m);
    CHECK(inferred.at("result") == c.result);
    for (const auto& i : m.graph().input())
      if (i.name().starts_with("past.")) {
        CHECK(shapeOf(i) == std::vector<int64_t>{1, 2, 64, 16});
        CHECK(inferred.at("present." + i.name().substr(5)) == shapeOf(i));
        CHECK(i.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT);
      }
  }
}

TEST_CASE("an entry's own generics become named axes where the graph allows", "[export][onnx]") {
  TempDir dir;
  struct Case {
    std::string entry;
    std::vector<std::string> tokens, result;
  };
  // No sizes given: forward's B and S and prefill's S are read from tokens.
  for (const Case& c : std::vector<Case>{{"forward", {"B", "S"}, {"B", "S", "64"}},
                                         {"prefill", {"1", "S"}, {"1", "64"}},
                                         {"decode", {"1", "1"}, {"1", "64"}}}) {
    INFO(c.entry);
    fs::path out = dir / (c.entry + ".onnx");
    auto o = test::gqa2Export<ex::OnnxExportOptions>(out.string());
    o.entry = c.entry;
    ex::OnnxExportResult r = ex::exportOnnx(o);
    REQUIRE_NOTHROW(onnx::checker::check_model(out.string()));
    onnx::ModelProto m = readModel(out);
    CHECK(axesOf(m.graph().input(0)) == c.tokens);
    CHECK(axesOf(m.graph().output(0)) == c.result);
    std::vector<std::string> named;  // the result's axes: names where dynamic, "" where static
    for (const std::string& a : c.tokens) named.push_back(std::isdigit(static_cast<unsigned char>(a[0])) ? "" : a);
    CHECK(r.inputs[0].axes == named);
    CHECK(r.staticWhy.empty());
    CHECK(r.dynamic.size() == (c.entry == "forward" ? 2u : c.entry == "prefill" ? 1u : 0u));
    if (c.entry != "decode") CHECK(r.dynamic.at("S") == "tokens, axis 1");
    for (const auto& i : m.graph().input())  // the caches stay static
      if (i.name().starts_with("past.")) CHECK(axesOf(i) == std::vector<std::string>{"1", "2", "64", "16"});
  }
  const std::string ops = std::string(LINNET_TEST_DATA) + "/export/onnx_ops";
  auto opsExport = [&](const std::string& entry, std::map<std::string, int64_t> sizes) {
    ex::OnnxExportOptions o;
    o.package = ops;
    o.load.randomWeights = true;
    o.entry = entry;
    o.entryGenerics = std::move(sizes);
    o.output = (dir / (entry + ".onnx")).string();
    o.force = true;
    return o;
  };
  // ramp's N is x's axis, whatever size was asked for.
  ex::OnnxExportResult ramp = ex::exportOnnx(opsExport("ramp", {{"N", 5}}));
  CHECK(ramp.inputs[0].axes == std::vector<std::string>{"N"});
  CHECK(ramp.outputs[0].axes == std::vector<std::string>{"N"});
  // count's N is no argument's axis: static at the size given, and an error
  // without one, naming why.
  ex::OnnxExportResult count = ex::exportOnnx(opsExport("count", {{"N", 5}}));
  CHECK(count.outputs[0].shape == std::vector<int64_t>{5});
  CHECK(count.outputs[0].axes == std::vector<std::string>{""});
  CHECK_THAT(count.staticWhy.at("N"), Contains("no input of the entry has an axis of size N"));
  CHECK_THROWS_WITH(ex::exportOnnx(opsExport("count", {})),
                    Contains("its generic `N` cannot be a dynamic axis") && Contains("--generic N=SIZE"));
  // --static-axes: every axis as given.
  auto fixed = opsExport("ramp", {{"N", 5}});
  fixed.dynamicAxes = false;
  CHECK(ex::exportOnnx(fixed).inputs[0].axes == std::vector<std::string>{""});
}

TEST_CASE("initializers are the checkpoint's tensors bit for bit, by their Linnet paths", "[export][onnx]") {
  TempDir dir;
  fs::path out = dir / "forward.onnx";
  ex::exportOnnx(gqa2(out, "forward"));
  onnx::ModelProto m = readModel(out);
  weights::Checkpoint source = weights::Checkpoint::open(kGqa2);
  std::ifstream bj(kCard + "/bindings.json");
  nlohmann::json bindings = nlohmann::json::parse(bj);
  CHECK(m.graph().initializer_size() == 21);  // every param forward reads
  for (const onnx::TensorProto& t : m.graph().initializer()) {
    INFO(t.name());
    REQUIRE(bindings.contains(t.name()));
    const weights::TensorInfo* s = source.find(bindings[t.name()].get<std::string>());
    REQUIRE(s);
    CHECK(t.data_type() == onnx::TensorProto::FLOAT);
    CHECK(std::vector<int64_t>(t.dims().begin(), t.dims().end()) == s->shape);
    std::string bytes = bytesOf(t, dir.path());
    REQUIRE(bytes.size() == s->data.size());
    CHECK(std::memcmp(bytes.data(), s->data.data(), bytes.size()) == 0);
  }
}

TEST_CASE("a --force export replaces the model and its data as a pair", "[export][onnx]") {
  TempDir dir;
  fs::path model = dir / "m.onnx";
  ex::OnnxExportOptions o = gqa2(model, "decode");
  o.externalData = ex::ExternalData::Always;
  ex::OnnxExportResult first = ex::exportOnnx(o);
  std::ofstream(dir / "m.onnx.data") << "an older export's data";  // the fixed name exports once used
  std::ofstream(dir / "m.onnx.other.data") << "not ours";
  o.force = true;
  ex::OnnxExportResult second = ex::exportOnnx(o);
  // The new data came in under a new name before the model's rename; the
  // data of the model replaced is gone after it; other files stay.
  CHECK(second.dataPath != first.dataPath);
  CHECK(fs::exists(second.dataPath));
  CHECK_FALSE(fs::exists(first.dataPath));
  CHECK_FALSE(fs::exists(dir / "m.onnx.data"));
  CHECK(fs::exists(dir / "m.onnx.other.data"));
  REQUIRE_NOTHROW(onnx::checker::check_model(model.string()));
  // Embedded again: no data file is left beside it.
  o.externalData = ex::ExternalData::Never;
  ex::exportOnnx(o);
  CHECK_FALSE(fs::exists(second.dataPath));
}

TEST_CASE("external data beside the model reads back", "[export][onnx]") {
  TempDir dir;
  fs::path embedded = dir / "embedded.onnx", external = dir / "external.onnx";
  ex::exportOnnx(gqa2(embedded, "decode"));
  ex::OnnxExportOptions o = gqa2(external, "decode");
  o.externalData = ex::ExternalData::Always;
  ex::OnnxExportResult r = ex::exportOnnx(o);
  // FILE.onnx.<16 hex digits>.data: a name of its own (replaced as a pair, below).
  CHECK(fs::path(r.dataPath).parent_path() == external.parent_path());
  CHECK(fs::path(r.dataPath).filename().string().size() == external.filename().string().size() + 22);
  CHECK(r.dataPath.starts_with(external.string() + "."));
  CHECK(r.dataPath.ends_with(".data"));
  CHECK(r.dataBytes == fs::file_size(r.dataPath));
  CHECK(r.bytes < 400000);  // the graph alone
  REQUIRE_NOTHROW(onnx::checker::check_model(external.string()));
  onnx::ModelProto a = readModel(embedded), b = readModel(external);
  REQUIRE(a.graph().initializer_size() == b.graph().initializer_size());
  uint64_t total = 0;
  for (int k = 0; k < a.graph().initializer_size(); ++k) {
    const onnx::TensorProto &x = a.graph().initializer(k), &y = b.graph().initializer(k);
    INFO(x.name());
    CHECK(y.data_location() == onnx::TensorProto::EXTERNAL);
    CHECK(y.raw_data().empty());
    CHECK(x.name() == y.name());
    CHECK(bytesOf(x, dir.path()) == bytesOf(y, dir.path()));
    total += x.raw_data().size();
  }
  CHECK(total == r.dataBytes);
  // Nothing else is left beside them (the scratch folder is gone).
  size_t files = 0;
  for (auto it = fs::directory_iterator(dir.path()); it != fs::directory_iterator(); ++it) ++files;
  CHECK(files == 3);
}

TEST_CASE("--random-weights gives linnet call's values", "[export][onnx]") {
  TempDir dir;
  ex::OnnxExportOptions o = gqa2(dir / "r.onnx", "forward");
  o.load.weights.clear();
  o.load.randomWeights = true;
  o.load.seed = 7;
  ex::exportOnnx(o);
  onnx::ModelProto m = readModel(dir / "r.onnx");
  // What the backends bind: nest::bindParams over the instance tree's params.
  std::vector<nest::ParamInfo> params;
  for (const auto& t : m.graph().initializer())
    params.push_back({t.name(), {t.dims().begin(), t.dims().end()}, DType::F32, std::nullopt});
  std::vector<nest::ParamBytes> bound = nest::bindParams(kCard, params, {}, o.load);
  for (int k = 0; k < m.graph().initializer_size(); ++k) {
    INFO(params[k].path);
    const std::string& raw = m.graph().initializer(k).raw_data();
    REQUIRE(raw.size() == bound[k].bytes.size());
    CHECK(std::memcmp(raw.data(), bound[k].bytes.data(), raw.size()) == 0);
  }
}

TEST_CASE("what ONNX cannot express is refused before anything is written", "[export][onnx]") {
  TempDir dir;
  auto refused = [&](ex::OnnxExportOptions o, const std::string& why) {
    INFO(o.entry);
    CHECK_THROWS_WITH(ex::exportOnnx(o), Contains(why));
    CHECK(fs::directory_iterator(dir.path()) == fs::directory_iterator());  // no file, no scratch folder
  };
  ex::OnnxExportOptions loop = gqa2(dir / "loop.onnx", "generate_until");
  loop.load.generics.insert({"MaxNew", 4});
  refused(loop, "src/lib.linnet:494:9: a `while` loop");
  ex::OnnxExportOptions points = gqa2(dir / "points.onnx", "prefill_slots");
  points.load.generics.insert({{"M", 1}, {"S", 4}});
  refused(points, "std/nn/cache.linnet:54:12: `write_points`");
  refused(gqa2(dir / "none.onnx", "no_such_entry"), "no entry `no_such_entry`");
  ex::OnnxExportOptions unbound = gqa2(dir / "s.onnx", "prefill");
  unbound.load.generics.erase("S");
  refused(unbound, "--generic S=N (or --set");
  ex::OnnxExportOptions never = gqa2(dir / "n.onnx", "decode");
  never.externalData = ex::ExternalData::Never;
  never.load.weights = "/no/such.safetensors";
  CHECK_THROWS(ex::exportOnnx(never));
  CHECK(fs::directory_iterator(dir.path()) == fs::directory_iterator());
}

TEST_CASE("an existing output is kept without --force and replaced whole with it", "[export][onnx]") {
  TempDir dir;
  fs::path out = dir / "m.onnx";
  { std::ofstream(out) << "old"; }
  CHECK_THROWS_WITH(ex::exportOnnx(gqa2(out, "decode")), Contains("exists; pass --force"));
  CHECK(fs::file_size(out) == 3);
  ex::OnnxExportOptions o = gqa2(out, "decode");
  o.force = true;
  ex::exportOnnx(o);
  REQUIRE_NOTHROW(onnx::checker::check_model(out.string()));
}

TEST_CASE("the emitters the card does not reach pass the checker and shape inference", "[export][onnx]") {
  // tests/data/export/onnx_ops: ONNX Runtime runs them against the reference
  // in check_onnx_with_onnxruntime.py; here, the graph's validity and shapes.
  TempDir dir;
  const std::string package = std::string(LINNET_TEST_DATA) + "/export/onnx_ops";
  struct Case {
    std::string entry;
    std::map<std::string, std::vector<int64_t>> outputs;
  };
  for (const Case& c : std::vector<Case>{
           {"reductions", {{"result.0", {2}}, {"result.1", {2}}, {"result.2", {4}}, {"result.3", {2, 1}}}},
           {"binders", {{"result.0", {4}}, {"result.1", {4}}, {"result.2", {4}}}},
           {"integers", {{"result.0", {6}}, {"result.1", {6}}, {"result.2", {12}}}},
           {"pick", {{"result.0", {3}}, {"result.1", {3, 5}}}},
           {"accumulate", {{"result", {2, 3}}, {"present.total", {2, 4}}}}}) {
    INFO(c.entry);
    ex::OnnxExportOptions o;
    o.package = package;
    o.load.randomWeights = true;
    o.entry = c.entry;
    o.output = (dir / (c.entry + ".onnx")).string();
    ex::OnnxExportResult r = ex::exportOnnx(o);
    REQUIRE_NOTHROW(onnx::checker::check_model(o.output));
    onnx::ModelProto m = readModel(o.output);
    CHECK(inferredOutputs(m) == c.outputs);
    CHECK(m.graph().initializer_size() == (c.entry == "accumulate" ? 1 : 0));
    if (c.entry == "accumulate") CHECK(r.inputs.back().name == "past.total");
  }
}
