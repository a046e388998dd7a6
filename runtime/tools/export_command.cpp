#include "tools/export_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>

#include "export/gguf_export.h"
#include "export/hf_export.h"
#include "export/hf_safetensors.h"
#ifdef LINNET_HAVE_ONNX_EXPORT
#include "export/onnx/onnx_export.h"
#endif
#include "tools/arguments.h"

namespace linnet::tools {

namespace {

CLI::Option* once(CLI::Option* o) { return o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast); }

const char* kExportNotes = R"(
PACKAGE is a nest package; its parameters are bound from --weights (a
.safetensors file, a *.safetensors.index.json or a .gguf) through its
bindings.json as `linnet call` binds them, with the same --set/--convert. The
output is written beside OUT and renamed into place once complete; an existing
OUT is replaced only with --force. See docs/export.md.
)";

// What every format takes: the model and where it goes.
void addCommon(CLI::App* cmd, ExportArgs& a) {
  cmd->add_option("PACKAGE", a.package, "A nest package (nest.toml, linnet.toml, bindings.json, src/)")
      ->required()
      ->type_name("DIR");
  once(cmd->add_option("--weights", a.load.weights, "A .safetensors file, a *.safetensors.index.json or a .gguf file"))
      ->type_name("PATH");
  cmd->add_flag("--random-weights", a.load.randomWeights, "Seeded random parameters instead of a checkpoint");
  once(cmd->add_option_function<std::string>(
          "--seed", [&a](const std::string& v) { a.load.seed = static_cast<uint64_t>(parseInt(v, "--seed")); },
          "Seed of --random-weights (default 0)"))
      ->type_name("INT");
  cmd->add_flag("--convert", a.load.convertDTypes, "Convert checkpoint floats to the model's dtype");
  cmd->add_option("--adapter", a.load.adapter, "A LoRA adapter folder (peft's layout) merged into the weights")
      ->type_name("DIR");
  once(cmd->add_option("--stdlib", a.load.stdlib, "Standard library folder (default: LINNET_STDLIB, then the build's)"))
      ->type_name("DIR");
  cmd->add_option_function<std::vector<std::string>>(
         "--set",
         [&a](const std::vector<std::string>& sets) {
           for (const auto& s : sets) {
             std::pair<std::string, std::string> kv = splitAssignment(s, "--set");
             const std::string& name = kv.first;
             std::visit([&](auto v) { a.load.generics.insert_or_assign(name, v); },
                        parseGenericValue(kv.second, "--set " + s));
           }
         },
         "Override a generic of nest.toml's [generics] (repeatable)")
      ->allow_extra_args(false)
      ->type_name("K=V");
  cmd->add_option("-o,--output", a.output, "What to write (gguf: a file; hf: a folder)")->required()->type_name("OUT");
  cmd->add_flag("--force", a.force, "Replace OUT if it exists (only once the new one is complete)");
}

CLI::Validator typeNames() {
  const auto& names = exporter::ggufTypeNames();
  return CLI::Validator(
      [&names](std::string& v) -> std::string {
        if (exporter::ggufTypeNamed(v)) return {};
        return fmt::format("`{}`: expected one of {}", v, fmt::join(names, ", "));
      },
      fmt::format("{{{}}}", fmt::join(names, "|")));
}

// The options every format's library takes, from the common flags.
template <class Options>
Options commonOptions(const ExportArgs& a, const char* format) {
  refuseWeightsWithRandom(a.load.weights, a.load.randomWeights, fmt::format("export {}", format));
  Options o;
  o.package = a.package;
  o.load = a.load;
  o.output = a.output;
  o.tokenizer = a.tokenizer;
  o.force = a.force;
  return o;
}

void printLog(const std::string& line) { fmt::print(stderr, "linnet: {}\n", line); }
#ifdef LINNET_HAVE_ONNX_EXPORT
void defineOnnx(CLI::App* cmd, ExportArgs& a) {
  a.onnx = cmd->add_subcommand("onnx", "One entry as an ONNX model (opset 17) for ONNX Runtime");
  a.onnx->footer(std::string(kExportNotes) +
                 "\nonnx: the entry's own generics (forward's B and S, prefill's S) become dynamic axes where the graph "
                 "allows (a note names any left static, and why); --static-axes fixes them at --generic's values. "
                 "States the entry touches are inputs past.PATH and outputs present.PATH.\n");
  addCommon(a.onnx, a);
  once(a.onnx->add_option("--entry", a.entry, "The entry to export: forward, prefill, decode, ..."))
      ->required()
      ->type_name("NAME");
  a.onnx->add_option_function<std::vector<std::string>>(
             "--generic",
             [&a](const std::vector<std::string>& gs) {
               for (const auto& g : gs) {
                 auto [k, n] = splitAssignment(g, "--generic");
                 a.entryGenerics[k] = parseInt(n, "--generic " + k);
               }
             },
             "A dimension generic of the entry (forward's B and S), as linnet call takes it; --set does the same")
      ->allow_extra_args(false)
      ->type_name("K=N");
  a.onnx->add_flag("--static-axes", a.staticAxes,
                   "Every axis static at the sizes given (--generic), none dynamic");
  once(a.onnx->add_option("--external-data", a.externalData,
                          "Initializers in OUT.data beside the model: auto (past 1 GiB), always or never"))
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->type_name("auto|always|never");
}

int runOnnx(ExportArgs& a) {
  exporter::OnnxExportOptions o;
  o.package = a.package;
  o.load = a.load;
  o.entry = a.entry;
  o.entryGenerics = a.entryGenerics;
  o.output = a.output;
  o.externalData = *exporter::externalDataNamed(a.externalData);
  o.force = a.force;
  o.dynamicAxes = !a.staticAxes;
  exporter::OnnxExportResult r = exporter::exportOnnx(o, printLog);
  auto list = [](const std::vector<exporter::OnnxTensorInfo>& ts) {
    std::vector<std::string> out;
    for (const auto& t : ts) {
      std::vector<std::string> axes;
      for (size_t k = 0; k < t.shape.size(); ++k)
        axes.push_back(k < t.axes.size() && !t.axes[k].empty() ? t.axes[k] : std::to_string(t.shape[k]));
      out.push_back(fmt::format("{} {}[{}]", t.name, name(t.dtype), fmt::join(axes, ", ")));
    }
    return fmt::format("{}", fmt::join(out, "; "));
  };
  fmt::print("{}: {} nodes, {} initializers, {} bytes{} in {:.1f} s\n", r.path, r.nodes, r.initializers, r.bytes,
             r.dataPath.empty() ? "" : fmt::format(" + {} bytes in {}", r.dataBytes, r.dataPath), r.seconds);
  fmt::print("inputs: {}\noutputs: {}\n", list(r.inputs), list(r.outputs));
  return 0;
}
#endif

}  // namespace

CLI::App* defineExport(CLI::App& app, ExportArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "export", "Write the package's model for another stack (gguf: llama.cpp; hf: Hugging Face; onnx: ONNX Runtime)");
  cmd->require_subcommand(0, 1);
  cmd->add_flag("--formats", a.listFormats, "List the formats this build writes, one a line");
  a.gguf = cmd->add_subcommand("gguf", "A GGUF v3 file for llama.cpp (the architecture of the card's family)");
  a.gguf->footer(std::string(kExportNotes) +
                 "\ngguf: --type quantizes every 2-D weight but norms (llama-quantize's fallback where a row is "
                 "not whole blocks); without it a GGUF source keeps each tensor's type, a safetensors one takes "
                 "the model's dtype.\n");
  addCommon(a.gguf, a);
  once(a.gguf->add_option("--type", a.type,
                          "f32, f16, bf16, q8_0, q4_0, q4_k or q6_k (default: a GGUF source's own types, else the "
                          "model's dtype)"))
      ->check(typeNames())
      ->type_name("TYPE");
  once(a.gguf->add_option("--tokenizer", a.tokenizer,
                          "A tokenizer.json (tokenizer_config.json beside it) or a .gguf whose tokenizer to carry "
                          "(default: the --weights file when it is a GGUF)"))
      ->type_name("PATH");
  once(a.gguf->add_option_function<std::string>(
          "--threads",
          [&a](const std::string& v) {
            a.threads = parseInt(v, "--threads");
            if (a.threads < 1 || a.threads > 1024) throw Usage(fmt::format("--threads `{}`: 1 to 1024", v));
          },
          "Threads that quantize (default: all cores)"))
      ->type_name("INT");
  a.hf = cmd->add_subcommand("hf", "A Hugging Face checkpoint folder for transformers' from_pretrained");
  a.hf->footer(std::string(kExportNotes) +
               "\nhf: OUT is a folder: safetensors shards under bindings.json's checkpoint names (a tied head once), "
               "config.json through nest.toml's [config] table, generation_config.json, tokenizer files.\n");
  addCommon(a.hf, a);
  once(a.hf->add_option("--dtype", a.dtype,
                        "bf16, f16 or f32 (default: the model's dtype; f32 from a quantized GGUF source)"))
      ->check(CLI::IsMember(exporter::hfDtypeNames()))
      ->type_name("DTYPE");
  once(a.hf->add_option("--shard-size", a.shardSize, "Largest shard: bytes, or 5GB, 500MB, 2GiB (default 5GB)"))
      ->type_name("SIZE");
  once(a.hf->add_option("--tokenizer", a.tokenizer,
                        "A tokenizer.json (its folder's files are copied), a folder, or a .gguf whose tokenizer to "
                        "rebuild (default: the --weights folder, else a GGUF --weights)"))
      ->type_name("PATH");
#ifdef LINNET_HAVE_ONNX_EXPORT
  defineOnnx(cmd, a);
#endif
  return cmd;
}

int runExport(ExportArgs& a) {
  if (a.gguf && a.gguf->parsed()) {
    auto o = commonOptions<exporter::GgufExportOptions>(a, "gguf");
    if (!a.type.empty()) o.type = exporter::ggufTypeNamed(a.type);
    o.threads = static_cast<int>(a.threads);
    exporter::GgufExportResult r = exporter::exportGguf(o, printLog);
    std::vector<std::string> types;
    for (const auto& [name, n] : r.types) types.push_back(fmt::format("{} {}", n, name));
    fmt::print("{}: {} tensors ({}), {} bytes in {:.1f} s\n", r.path, r.tensors, fmt::join(types, ", "), r.bytes,
               r.seconds);
    return 0;
  }
  if (a.hf && a.hf->parsed()) {
    auto o = commonOptions<exporter::HfExportOptions>(a, "hf");
    if (!a.dtype.empty()) o.dtype = exporter::hfDtypeNamed(a.dtype);
    if (!a.shardSize.empty()) {
      auto bytes = exporter::parseByteSize(a.shardSize);
      if (!bytes)
        throw Usage(fmt::format("--shard-size `{}`: expected bytes (5000000000) or a size such as 5GB, 500MB, 2GiB",
                                a.shardSize));
      o.shardBytes = *bytes;
    }
    exporter::HfExportResult r = exporter::exportHf(o, printLog);
    fmt::print("{}: {} tensors ({}) in {} shard{}, {} bytes ({} files) in {:.1f} s\n", r.path, r.tensors,
               name(r.dtype), r.shards, r.shards == 1 ? "" : "s", r.bytes, r.files.size(), r.seconds);
    return 0;
  }
#ifdef LINNET_HAVE_ONNX_EXPORT
  if (a.onnx && a.onnx->parsed()) return runOnnx(a);
#endif
  if (a.listFormats) {
    fmt::print("gguf  llama.cpp: GGUF v3, the card family's architecture (docs/export.md)\n");
    fmt::print("hf    Hugging Face: safetensors shards, config.json, tokenizer files (docs/export.md)\n");
#ifdef LINNET_HAVE_ONNX_EXPORT
    fmt::print("onnx  ONNX Runtime: one entry as an ONNX graph, opset 17 (docs/export.md)\n");
#endif
    return 0;
  }
  throw Usage("export: name a format (gguf, hf, onnx); see linnet export --help");
}

}  // namespace linnet::tools
