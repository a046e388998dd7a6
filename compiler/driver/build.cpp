// linnetc build: check -> generate (MLIRGen) -> the shared pipeline -> the
// target's lowering and code -> the manifest; or one stage printed with
// --emit. No target is named here: they come from targets/target.h.
#ifdef LINNET_HAVE_MLIR
#include "driver/build.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "artifact/manifest.h"
#include "driver/check.h"
#include "driver/generate.h"
#include "driver/param_storage.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "syntax/ast_printer.h"
#include "targets/target.h"
#include "transforms/pipeline.h"

namespace linnet::driver {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> stagesOf(const targets::Target* target) {
  std::vector<std::string> out(std::begin(kSharedStages), std::end(kSharedStages));
  if (target)
    for (auto& s : target->stages()) out.push_back(s);
  return out;
}

const targets::Target* targetFor(const std::string& name) {
  return name.empty() ? targets::allTargets().front().get() : targets::findTarget(name);
}

artifact::TensorSpec spec(const ir::TensorSpec& s) { return {s.name, s.dtype, s.shape}; }

// Everything but the code: the target fills in library, init and symbols.
artifact::Manifest manifestFor(const sema::Program& program, const ir::MLIRGen& gen, const Generated& generated,
                               std::string_view target, const std::map<std::string, Storage>& storage) {
  artifact::Manifest m;
  m.package = program.package().name;
  m.target = target;
  for (const auto& [k, v] : program.package().generics) {
    if (v.number) m.generics.emplace_back(k, *v.number);
    else m.generics.emplace_back(k, v.dtype);
  }
  for (const auto& p : gen.params()) {
    m.params.push_back(spec(p));
    if (auto it = storage.find(p.name); it != storage.end()) m.params.back().storage = it->second;
  }
  for (const auto& s : gen.states()) m.states.push_back(spec(s));
  m.signatures = signatures(program);
  for (const auto& e : generated.entries) {
    artifact::Entry entry{e.entry, "", e.generics, {}, {}};
    for (const auto& s : e.inputs) entry.inputs.push_back(spec(s));
    for (const auto& s : e.outputs) entry.outputs.push_back(spec(s));
    m.entries.push_back(std::move(entry));
  }
  m.skipped = generated.skipped;
  return m;
}

void printAstOf(const CheckedPackage& checked) {
  // The package's own modules (not the standard library's), as parsed.
  for (const auto& m : checked.program->modules())
    if (m->ast && !m->name.starts_with("std.") && m->name != "std")
      fputs(syntax::printAst(*m->ast, checked.sources).c_str(), stdout);
}

}  // namespace

std::string stageNames(const std::string& target) {
  return fmt::format("{}", fmt::join(stagesOf(targetFor(target)), ", "));
}

int runBuild(const BuildArgs& args) {
  auto start = std::chrono::steady_clock::now();
  const targets::Target* target = targetFor(args.target);
  if (!target) {
    fmt::print(stderr, "linnetc: unknown target `{}` (this build has: {})\n", args.target, targets::targetNames());
    return 2;
  }
  if (!args.paramStorage.empty() && !target->readsStorageFormats()) {
    fmt::print(stderr,
               "linnetc: --param-storage `{}`: the {} target reads params as plain elements only; drop "
               "--param-storage (the runtime dequantizes a checkpoint's quantized weights for this target)\n",
               args.paramStorage.front(), target->name());
    return 2;
  }
  if (args.gradient && args.entries.size() != 1) {
    fmt::print(stderr, "linnetc: --gradient needs exactly one --entry (the entry to differentiate)\n");
    return 2;
  }
  if (args.lowRank > 0 && !args.gradient) {
    fmt::print(stderr, "linnetc: --low-rank {} asks for a LoRA gradient: add --gradient\n", args.lowRank);
    return 2;
  }
  if (!args.wrt.empty() && !args.gradient) {
    fmt::print(stderr, "linnetc: --wrt `{}` chooses params of a gradient: add --gradient\n", args.wrt.front());
    return 2;
  }
  std::vector<std::string> stages = stagesOf(target);
  if (!args.emit.empty() && std::find(stages.begin(), stages.end(), args.emit) == stages.end()) {
    fmt::print(stderr, "linnetc: unknown --emit `{}` ({})\n", args.emit, fmt::join(stages, ", "));
    return 2;
  }
  auto checked = checkPackage(args.package, args.sets, args.stdlib);
  if (!checked) return 1;
  if (args.emit == "ast") return printAstOf(*checked), 0;
  const sema::Program& program = *checked->program;

  mlir::DialectRegistry registry;
  transforms::registerDialects(registry);
  target->registerDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  auto print = [&](mlir::ModuleOp m) {
    std::string text;
    llvm::raw_string_ostream os(text);
    m.print(os, mlir::OpPrintingFlags().enableDebugInfo(args.debugLocations, false).useLocalScope(args.debugLocations));
    fputs(text.c_str(), stdout);
  };
  try {
    ir::MLIRGen gen(context, program);
    Generated generated;
    if (!args.manifestOnly) generated = generate(gen, program, args, target->sharedOptions().targetAttentionF32);
    std::map<std::string, Storage> storage = parseParamStorage(args.paramStorage, gen.params());
    mlir::ModuleOp module = gen.module();
    if (mlir::failed(mlir::verify(module))) {
      print(module);
      fmt::print(stderr, "linnetc: internal compiler error: MLIRGen produced invalid IR\n");
      return 3;
    }
    if (args.emit == "mlir") return print(module), 0;
    markParamStorage(module, generated, gen.params(), storage);
    // Read by the targets' lowering of weight products (kernel_calls.cpp).
    if (args.numerics == "fast") module->setAttr("linnet.numerics", mlir::StringAttr::get(&context, "fast"));
    // Read by the shared pipeline's choice of library products (transforms/pipeline.h).
    if (args.products == "library")
      module->setAttr(transforms::kProductsAttr, mlir::StringAttr::get(&context, "library"));
    if (!args.manifestOnly) transforms::lowerToLinalg(module, target->sharedOptions());
    if (args.emit == "linalg") return print(module), 0;
    if (!args.emit.empty()) {
      if (auto text = target->lower(module, args.emit)) fputs(text->c_str(), stdout);
      else print(module);
      return 0;
    }
    if (generated.entries.empty() && !args.manifestOnly) {
      fmt::print(stderr, "linnetc: no entry could be compiled\n");
      return 1;
    }
    artifact::Manifest manifest = manifestFor(program, gen, generated, target->name(), storage);
    manifest.numerics = args.numerics;
    fs::create_directories(args.output);
    if (!args.manifestOnly) {
      std::vector<std::string> functions;
      for (const auto& e : generated.entries) functions.push_back(e.symbol);
      target->buildArtifact(module, functions, manifest, args.output, {.keepIR = args.keepIR});
    }
    manifest.buildSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    artifact::write(manifest, args.output);
    size_t n = manifest.entries.size();
    if (args.manifestOnly)
      fmt::print("{}: wrote the manifest for {} into {}\n", args.package, target->name(), args.output);
    else
      fmt::print("{}: built {} entr{} for {} into {} in {:.1f} s\n", args.package, n, n == 1 ? "y" : "ies",
                 target->name(), args.output, manifest.buildSeconds);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "linnetc: {}\n", e.what());
    return 1;
  }
}

}  // namespace linnet::driver
#endif
