// linnetc build: a checked package compiled for the CPU into an artifact
// folder (manifest.json + model.so), or one stage printed with --emit.
#ifdef LINNET_HAVE_MLIR
#include "driver/build.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "base/diagnostics.h"
#include "ir/mlirgen.h"
#include "llvm/Support/raw_ostream.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "sema/checker.h"
#include "sema/program.h"
#include "syntax/ast_printer.h"
#include "targets/cpu/pipeline.h"

namespace linnet::driver {

namespace {

using sema::Scalar;

// `x=i32:1x8` -> (i32, [1, 8]); `pos=i32:` is a scalar; `pos=int:` a literal.
ir::TensorSpec parseArg(const std::string& text) {
  auto eq = text.find('=');
  std::string name = eq == std::string::npos ? "" : text.substr(0, eq);
  std::string rest = eq == std::string::npos ? text : text.substr(eq + 1);
  auto colon = rest.find(':');
  if (colon == std::string::npos) throw std::runtime_error(fmt::format("--arg `{}`: expected NAME=DTYPE:D0xD1...", text));
  // `int` and `float`: a literal that takes the parameter's declared dtype.
  std::string dtName = rest.substr(0, colon);
  bool weak = dtName == "int" || dtName == "float";
  auto dt = weak ? std::optional(dtName == "int" ? Scalar::I64 : Scalar::F32) : sema::scalarNamed(dtName);
  if (!dt) throw std::runtime_error(fmt::format("--arg `{}`: unknown element type", text));
  ir::TensorSpec s{name, *dt, {}, weak};
  std::string dims = rest.substr(colon + 1);
  size_t at = 0;
  while (at < dims.size()) {
    size_t x = dims.find('x', at);
    std::string d = dims.substr(at, x == std::string::npos ? std::string::npos : x - at);
    try {
      s.shape.push_back(std::stoll(d));
    } catch (...) {
      throw std::runtime_error(fmt::format("--arg `{}`: `{}` is not a dimension", text, d));
    }
    if (x == std::string::npos) break;
    at = x + 1;
  }
  return s;
}

nlohmann::ordered_json specJson(const ir::TensorSpec& s) {
  return {{"name", s.name}, {"dtype", sema::name(s.dtype)}, {"shape", s.shape}};
}

}  // namespace

int runBuild(const BuildArgs& args) {
  auto start = std::chrono::steady_clock::now();
  SourceManager sources;
  Diagnostics diags(sources);
  sema::Program program(sources, diags, args.stdlib);
  for (const auto& s : args.sets) program.setGeneric(s);
  if (!diags.hasErrors()) program.loadPackage(args.package);
  if (program.root() && !diags.hasErrors()) {
    sema::Checker checker(program, diags);
    checker.checkDefinitions();
    if (!diags.hasErrors()) checker.instantiateRoot();
  }
  if (diags.hasErrors()) {
    fputs(diags.render().c_str(), stderr);
    fmt::print(stderr, "{}: {} error{}\n", args.package, diags.errorCount(), diags.errorCount() == 1 ? "" : "s");
    return 1;
  }
  if (args.emit == "ast") {
    // The package's own modules (not the standard library's), as parsed.
    for (const auto& m : program.modules())
      if (m->ast && !m->name.starts_with("std.") && m->name != "std")
        fputs(syntax::printAst(*m->ast, sources).c_str(), stdout);
    return 0;
  }
  if (args.target != "cpu") {
    fmt::print(stderr, "linnetc: unknown target `{}` (this build has: cpu)\n", args.target);
    return 2;
  }

  mlir::MLIRContext context;
  cpu::registerEverything(context);
  std::vector<ir::EntryInstance> built;
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  try {
    ir::MLIRGen gen(context, program);
    // Entry generics: --generic, then nest.toml's [check].
    // With --arg the argument shapes bind them instead of [check].
    std::map<std::string, int64_t> generics;
    if (args.argSpecs.empty())
      for (const auto& [k, v] : program.package().check)
        if (v.number) generics[k] = *v.number;
    for (const auto& g : args.generics) {
      auto eq = g.find('=');
      if (eq == std::string::npos) throw std::runtime_error(fmt::format("--generic `{}`: expected NAME=VALUE", g));
      generics[g.substr(0, eq)] = std::stoll(g.substr(eq + 1));
    }
    std::vector<std::string> entries = args.entries;
    if (entries.empty()) {
      const sema::Item* item = program.lookup(*program.root(), program.package().rootBlock);
      for (const auto& fn : item->block->fns)
        if (fn->isEntry) entries.push_back(fn->name.name);
    }
    for (const std::string& name : entries) {
      try {
        std::vector<ir::TensorSpec> specs;
        if (!args.argSpecs.empty()) {
          for (const auto& a : args.argSpecs) specs.push_back(parseArg(a));
        } else {
          specs = gen.entryParams(name, generics);
        }
        built.push_back(gen.addEntry(name, specs, generics));
      } catch (const ir::GenError& e) {
        if (!args.entries.empty()) throw;
        skipped.push_back({{"name", name}, {"reason", e.what()}});
        fmt::print(stderr, "linnetc: entry `{}` not compiled: {}\n", name, e.what());
      }
    }
    mlir::ModuleOp module = gen.module();
    auto print = [&](mlir::ModuleOp m) {
      std::string text;
      llvm::raw_string_ostream os(text);
      m.print(os, mlir::OpPrintingFlags().enableDebugInfo(args.debugLocations, false).useLocalScope(args.debugLocations));
      fputs(text.c_str(), stdout);
    };
    if (mlir::failed(mlir::verify(module))) {
      print(module);
      fmt::print(stderr, "linnetc: internal compiler error: MLIRGen produced invalid IR\n");
      return 3;
    }
    if (args.emit == "mlir") return print(module), 0;
    if (args.emit == "linalg") return cpu::lower(module, cpu::Stage::Linalg), print(module), 0;
    if (args.emit == "bufferized") return cpu::lower(module, cpu::Stage::Bufferized), print(module), 0;
    cpu::lower(module, cpu::Stage::LLVMDialect);
    if (args.emit == "lowered") return print(module), 0;
    std::string llvmIR = cpu::translateToLLVMIR(module);
    if (args.emit == "llvm") return fputs(llvmIR.c_str(), stdout), 0;
    if (!args.emit.empty()) {
      fmt::print(stderr, "linnetc: unknown --emit `{}` (ast, checked, mlir, linalg, bufferized, lowered, llvm)\n", args.emit);
      return 2;
    }
    if (built.empty()) {
      fmt::print(stderr, "linnetc: no entry could be compiled\n");
      return 1;
    }
    namespace fs = std::filesystem;
    fs::create_directories(args.output);
    std::string library = "model.so";
    cpu::compileSharedObject(llvmIR, cpu::entryShim(built, gen.params().size(), gen.states().size()),
                             (fs::path(args.output) / library).string());
    if (!args.keepIR) fs::remove(fs::path(args.output) / "model.ll");

    nlohmann::ordered_json manifest;
    manifest["format"] = "linnet-artifact-1";
    manifest["package"] = program.package().name;
    manifest["target"] = args.target;
    manifest["library"] = library;
    manifest["init"] = "linnet_init";  // called once after loading: computes the hoisted constants
    nlohmann::ordered_json g = nlohmann::ordered_json::object();
    for (const auto& [k, v] : program.package().generics) {
      if (v.number) g[k] = *v.number;
      else g[k] = v.dtype;
    }
    manifest["generics"] = g;
    manifest["params"] = nlohmann::ordered_json::array();
    for (const auto& p : gen.params()) manifest["params"].push_back(specJson(p));
    manifest["states"] = nlohmann::ordered_json::array();
    for (const auto& s : gen.states()) manifest["states"].push_back(specJson(s));
    manifest["entries"] = nlohmann::ordered_json::array();
    for (const auto& e : built) {
      nlohmann::ordered_json j;
      j["name"] = e.entry;
      j["symbol"] = "linnet_call_" + e.symbol;
      j["generics"] = e.generics;
      j["inputs"] = nlohmann::ordered_json::array();
      for (const auto& s : e.inputs) j["inputs"].push_back(specJson(s));
      j["outputs"] = nlohmann::ordered_json::array();
      for (const auto& s : e.outputs) j["outputs"].push_back(specJson(s));
      manifest["entries"].push_back(j);
    }
    manifest["skipped"] = skipped;
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    manifest["build_seconds"] = seconds;
    std::ofstream(fs::path(args.output) / "manifest.json") << manifest.dump(2) << "\n";
    fmt::print("{}: built {} entr{} for cpu into {} in {:.1f} s\n", args.package, built.size(),
               built.size() == 1 ? "y" : "ies", args.output, seconds);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "linnetc: {}\n", e.what());
    return 1;
  }
}

}  // namespace linnet::driver
#endif
