#include "export/onnx/onnx_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "common/hash.h"
#include "common/output_file.h"
#include "common/units.h"
#include "elaborate/program.h"
#include "export/checked_package.h"
#include "export/model_facts.h"
#include "nest/backend.h"
#include "export/onnx/onnx_check.h"
#include "export/onnx/onnx_dynamic.h"
#include "export/onnx/onnx_emitters.h"
#include "export/onnx/onnx_graph.h"
#include "export/onnx/onnx_lower.h"
#include "nest/params.h"
#include "nest/tensor.h"

namespace linnet::exporter {

namespace fs = std::filesystem;
using nest::Error;
using namespace onnx_export;

namespace {

constexpr uint64_t kExternalAbove = 1ull << 30;  // auto: initializers past 1 GiB go beside the model
// protobuf refuses messages of 2 GiB; keep room for the graph itself.
constexpr uint64_t kProtobufLimit = (2ull << 30) - (64ull << 20);

uint64_t elementBytes(DType dtype, const std::vector<int64_t>& shape) {
  uint64_t n = byteSize(dtype);
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

// --set names the root block's generics and the entry's own (forward's B
// and S): which is which, from the package's sources before checking.
struct SplitGenerics {
  std::map<std::string, nest::GenericValue> root;
  std::map<std::string, int64_t> entry;  // given, or a size to sample at
  std::vector<std::string> entryDims;    // the entry's dimension generics, in order
  std::set<std::string> unset;           // given no value (dynamic axes only)
};

// Where the dynamic axes sample an entry generic given no value.
constexpr int64_t kUnsetSize = 3;

SplitGenerics splitGenerics(const OnnxExportOptions& o) {
  SourceManager sources;
  Diagnostics diags(sources);
  sema::Program program(sources, diags, nest::stdlibFor(o.load));
  program.loadPackage(o.package);
  const sema::Item* item = program.root() ? program.lookup(*program.root(), program.package().rootBlock) : nullptr;
  if (diags.hasErrors() || !item || !item->block) {
    if (diags.hasErrors()) throw Error(diags.render());
    throw Error(fmt::format("{}: no root block to export (nest.toml [source] root)", o.package));
  }
  const syntax::FnDecl* entry = nullptr;
  std::vector<std::string> entries;
  for (const auto& fn : item->block->fns)
    if (fn->isEntry) {
      entries.push_back(fn->name.name);
      if (fn->name.name == o.entry) entry = fn.get();
    }
  if (!entry)
    throw Error(fmt::format("{}: no entry `{}` (the root block has {})", o.package, o.entry, fmt::join(entries, ", ")));
  std::set<std::string> entryDims;
  for (const syntax::GenericParam& g : entry->generics)
    if (g.kind.name == "Dim") entryDims.insert(g.name.name);
  SplitGenerics out;
  for (const auto& [name, value] : o.entryGenerics) {
    if (!entryDims.count(name))
      throw Error(fmt::format("--generic {}={}: entry `{}` has no dimension generic `{}`", name, value, o.entry, name));
    out.entry[name] = value;
  }
  for (const auto& [name, value] : o.load.generics) {
    if (!entryDims.count(name)) {
      out.root.insert_or_assign(name, value);
      continue;
    }
    const int64_t* n = std::get_if<int64_t>(&value.value);
    if (!n) throw Error(fmt::format("--set {}={}: the entry's generic `{}` is a dimension", name, value.str(), name));
    out.entry[name] = *n;
  }
  for (const syntax::GenericParam& g : entry->generics) {
    if (g.kind.name != "Dim") continue;
    out.entryDims.push_back(g.name.name);
    if (g.defaultValue || out.entry.count(g.name.name)) continue;
    if (!o.dynamicAxes)
      throw Error(fmt::format("entry `{}` has the dimension generic `{}`: give it a value with --generic {}=N (or --set; "
                              "with --static-axes the ONNX graph has static shapes)",
                              o.entry, g.name.name, g.name.name));
    out.unset.insert(g.name.name);
    out.entry[g.name.name] = kUnsetSize;
  }
  return out;
}

// Whether `name` is a data file an export of `model` writes: FILE.onnx.data
// (older exports) or FILE.onnx.<16 hex digits>.data.
bool isDataFileOf(const std::string& name, const std::string& model) {
  if (name == model + ".data") return true;
  if (name.size() != model.size() + 1 + 16 + 5 || !name.starts_with(model + ".") || !name.ends_with(".data"))
    return false;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(model.size()) + 1, name.end() - 5,
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

// After the model was renamed into place: the data files of the model it
// replaced (any but `keep`), now read by nothing.
void removeReplacedData(const fs::path& dir, const std::string& model, const std::string& keep) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code removed;
    if (name != keep && isDataFileOf(name, model) && it->is_regular_file(removed)) fs::remove(it->path(), removed);
  }
}

// The output's folder and the refusals that need nothing else.
fs::path checkOutput(const OnnxExportOptions& o) {
  if (o.output.empty()) throw Error("export onnx: no output file: pass -o FILE.onnx");
  const fs::path out(o.output);
  if (fs::is_directory(out)) throw Error(fmt::format("{} is a folder; -o names the .onnx file to write", o.output));
  if (auto why = unwritableOutput(out)) throw Error(*why);
  if (fs::exists(out) && !o.force)
    throw Error(fmt::format("{}: exists; pass --force to replace it (it is replaced, with its data file, only once "
                            "the new model is complete and checked)",
                            o.output));
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  if (!fs::is_directory(dir)) throw Error(fmt::format("{}: no folder {} to write it in", o.output, dir.string()));
  requireWeightsSource(o.package, o.load, "export onnx");
  return dir;
}

// A temporary folder beside the output, removed unless released.
struct Scratch {
  fs::path path;
  ~Scratch() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

// A graph input's or output's info, its axes named where dynamic.
OnnxTensorInfo infoOf(const std::string& name, const elab::TensorType& type,
                      const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values) {
  OnnxTensorInfo info{name, type.dtype, type.shape, {}};
  for (const onnx::ValueInfoProto& v : values)
    if (v.name() == name)
      for (const auto& d : v.type().tensor_type().shape().dim()) info.axes.push_back(d.dim_param());
  return info;
}

}  // namespace

std::optional<ExternalData> externalDataNamed(const std::string& name) {
  if (name == "auto") return ExternalData::Auto;
  if (name == "always") return ExternalData::Always;
  if (name == "never") return ExternalData::Never;
  return std::nullopt;
}

OnnxExportResult exportOnnx(const OnnxExportOptions& o, const std::function<void(const std::string&)>& log) {
  const auto t0 = std::chrono::steady_clock::now();
  auto note = [&](const std::string& s) {
    if (log) log(s);
  };
  const fs::path dir = checkOutput(o);
  const fs::path out(o.output);

  // --- The entry, elaborated and lowered: every refusal comes here. ------
  SplitGenerics generics = splitGenerics(o);
  nest::LoadOptions load = o.load;
  load.generics = generics.root;
  std::unique_ptr<CheckedPackage> checked = checkPackage(o.package, load);
  std::map<std::string, int64_t> dims;
  for (const auto& [k, v] : checked->program->package().generics)
    if (v.number) dims[k] = *v.number;

  onnx::ModelProto model;
  model.set_ir_version(8);  // ONNX 1.10+; what opset 17 came with
  model.set_producer_name("linnet");
  model.set_doc_string(fmt::format("{}: entry `{}`", checked->program->package().name, o.entry));
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  onnx::GraphProto& graph = *model.mutable_graph();
  LoweredEntry lowered;
  std::unique_ptr<elab::Program> program;
  // The entry lowered at some sizes of its own generics (the params, the
  // states and their order do not depend on them).
  auto lowerAt = [&](const Sizes& sizes, LoweredEntry* out) {
    onnx::GraphProto g;
    g.set_name(fmt::format("{}.{}", checked->program->package().name, o.entry));
    GraphBuilder builder(g);
    auto p = std::make_unique<elab::Program>(*checked->program);
    elab::EntryInstance entry = p->entry(o.entry, p->entryParams(o.entry, sizes), sizes);
    LoweredEntry l = lowerEntry(*p, entry, builder);
    if (out) *out = std::move(l), program = std::move(p);
    return g;
  };
  try {
    graph = lowerAt(generics.entry, &lowered);
  } catch (const elab::Error& e) {
    throw Error(fmt::format("{}: entry `{}`: {}", o.package, o.entry, e.what()));
  } catch (const Refusal& e) {
    throw Error(fmt::format("{}: entry `{}` cannot be exported to ONNX: {}", o.package, o.entry, e.what()));
  }
  DynamicAxes dynamic;
  if (o.dynamicAxes && !generics.entryDims.empty()) {
    dynamic = makeDynamic([&](const Sizes& sizes) { return lowerAt(sizes, nullptr); }, generics.entryDims,
                          generics.entry);
    for (const auto& [g, why] : dynamic.staticWhy)
      if (generics.unset.count(g))
        throw Error(fmt::format("{}: entry `{}`: its generic `{}` cannot be a dynamic axis of the ONNX graph ({}); give "
                                "it a size with --generic {}=SIZE",
                                o.package, o.entry, g, why, g));
    if (!dynamic.dynamic.empty()) graph = std::move(dynamic.graph);
  }

  // --- Where the initializers go. -----------------------------------------
  uint64_t total = 0;
  for (const GraphValue& p : lowered.params) total += elementBytes(p.type.dtype, p.type.shape);
  const bool external = o.externalData == ExternalData::Always ||
                        (o.externalData == ExternalData::Auto && total > kExternalAbove);
  if (!external && total > kProtobufLimit)
    throw Error(fmt::format("{}: the initializers are {}, past protobuf's 2 GiB limit for one .onnx file: use "
                            "--external-data auto or always",
                            o.output, bytesText(total)));
  std::error_code ec;
  fs::space_info space = fs::space(dir, ec);
  if (!ec && space.available < total + (64u << 20))
    throw Error(fmt::format("{}: the export needs {}, but {} has {} free", o.output, bytesText(total), dir.string(),
                            bytesText(space.available)));

  // --- The parameters, bound as `linnet call` binds them (in its order: the
  // instance tree's, so --random-weights draws the same values). ---------
  std::vector<nest::ParamInfo> params;
  for (const elab::Instance* inst : program->instances())
    for (const elab::Member& m : inst->params)
      params.push_back({inst->pathOf(m.name), m.type.shape, m.type.dtype, std::nullopt});
  std::vector<nest::ParamBytes> bound;
  const bool drawEach = nest::drawsRandomApart(o.load);
  if (!drawEach) bound = nest::bindParams(o.package, params, dims, load);
  std::map<std::string, size_t> used;
  for (size_t k = 0; k < lowered.params.size(); ++k) used[lowered.params[k].name] = k;

  Scratch scratch{dir / fmt::format(".{}.{}.part", out.filename().string(), getpid())};
  fs::create_directory(scratch.path);
  // A data file of its own name, so that replacing a model and its data is
  // one rename (the model's): the model read before or after it finds the
  // data it was written with. (One fixed name needed two renames, and a
  // crash between them left a model beside another's data.)
  const std::string dataName =
      fmt::format("{}.{:016x}.data", out.filename().string(),
                  fnv1a(static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()),
                        fnv1a(static_cast<uint64_t>(getpid()), kFnvOffset)));
  const fs::path modelTemp = scratch.path / out.filename(), dataTemp = scratch.path / dataName;
  std::ofstream data;
  if (external) data.open(dataTemp, std::ios::binary);
  uint64_t offset = 0;
  std::vector<onnx::TensorProto> initializers(lowered.params.size());
  nest::Progress progress("linnet: writing initializers", params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    progress.step();
    std::optional<nest::Tensor> drawn;
    std::span<const std::byte> bytes;
    if (drawEach) {
      drawn = nest::randomParam(params[k], o.load.seed);  // `linnet call`'s values
      bytes = drawn->bytes();
    } else {
      bytes = bound[k].bytes;
    }
    auto it = used.find(params[k].path);
    if (it == used.end()) continue;
    onnx::TensorProto& t = initializers[it->second];
    t.set_name(params[k].path);
    t.set_data_type(onnxElementType(params[k].dtype));
    for (int64_t d : params[k].shape) t.add_dims(d);
    if (!external) {
      t.set_raw_data(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      continue;
    }
    data.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, const std::string& value) {
      onnx::StringStringEntryProto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", dataName);
    add("offset", std::to_string(offset));
    add("length", std::to_string(bytes.size()));
    offset += bytes.size();
  }
  bound.clear();
  for (onnx::TensorProto& t : initializers) *graph.add_initializer() = std::move(t);
  if (external) {
    data.flush();
    if (!data) throw Error(fmt::format("{}: cannot write {}", o.output, dataTemp.string()));
    data.close();
  }
  if (model.ByteSizeLong() > kProtobufLimit)
    throw Error(fmt::format("{}: the model is {}, past protobuf's 2 GiB limit: use --external-data always",
                            o.output, bytesText(model.ByteSizeLong())));
  {
    std::ofstream m(modelTemp, std::ios::binary);
    if (!model.SerializeToOstream(&m) || !m.flush())
      throw Error(fmt::format("{}: cannot write {}", o.output, modelTemp.string()));
  }

  // --- Held to the checker and shape inference, then renamed into place. --
  try {
    checkModelFile(modelTemp.string());
    checkInferredShapes(withoutData(model));
  } catch (const std::runtime_error& e) {
    throw Error(fmt::format("{}: internal: the exported graph is not valid ONNX, nothing was written: {}", o.output,
                            e.what()));
  }
  OnnxExportResult r;
  r.path = o.output;
  r.bytes = fs::file_size(modelTemp);
  if (external) {
    r.dataPath = (dir / dataName).string();
    r.dataBytes = offset;
    fs::rename(dataTemp, r.dataPath);  // a new name: the model it would replace still reads its own
  }
  fs::rename(modelTemp, out);
  removeReplacedData(dir, out.filename().string(), external ? dataName : "");
  r.nodes = static_cast<size_t>(graph.node_size());
  r.initializers = static_cast<size_t>(graph.initializer_size());
  for (const GraphValue& v : lowered.inputs) r.inputs.push_back(infoOf(v.name, v.type, graph.input()));
  for (const LoweredEntry::State& s : lowered.states)
    r.inputs.push_back(infoOf("past." + s.path, s.type, graph.input()));
  for (const GraphValue& v : lowered.outputs) r.outputs.push_back(infoOf(v.name, v.type, graph.output()));
  for (const LoweredEntry::State& s : lowered.states)
    r.outputs.push_back(infoOf("present." + s.path, s.type, graph.output()));
  r.generics = dims;
  for (const auto& [k, v] : generics.entry)
    if (!dynamic.dynamic.count(k)) r.generics[k] = v;
  r.dynamic = dynamic.dynamic;
  r.staticWhy = dynamic.staticWhy;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (external) note(fmt::format("note: {} of initializers in {}", bytesText(r.dataBytes), r.dataPath));
  for (const auto& [g, where] : r.dynamic) note(fmt::format("note: `{}` is a dynamic axis (read from {})", g, where));
  for (const auto& [g, why] : r.staticWhy)
    note(fmt::format("note: `{}` stays static at {}: {}", g, generics.entry.at(g), why));
  return r;
}

}  // namespace linnet::exporter
