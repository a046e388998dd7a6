// linnetc: the Linnet compiler driver.
//   linnetc check PACKAGE [--set Name=Value]...   parse, resolve and shape-check
//   linnetc explain PACKAGE [--at FILE:LINE[:COL]] [--set Name=Value]... [--json]
//                                                  what each shape proof rests on
//   linnetc build PACKAGE -o DIR | --emit STAGE    compile (LLVM/MLIR builds)
//   linnetc lsp                                     a language server on stdin/stdout
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <regex>

#include "common/process.h"
#include "common/install.h"
#include "driver/build.h"
#include "driver/check.h"
#include "driver/explain.h"
#include "lsp/server.h"
#include "sema/checker.h"
#ifdef LINNET_HAVE_MLIR
#include "targets/target.h"
#endif

namespace {

std::string withCommas(int64_t v) {
  std::string digits = std::to_string(v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string bytes(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return fmt::format("{:.2f} {}", v, units[u]);
}

std::string shapeStr(const std::vector<int64_t>& s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

// `layers.7.mlp.up.weight` -> `layers.*.mlp.up.weight`, so a summary lists a
// layer's parameters once.
std::string collapseIndices(const std::string& path) {
  static const std::regex index(R"(\.\d+\.)");
  return std::regex_replace(path, index, ".*.");
}

void printSummary(const std::string& package, const linnet::sema::Summary& s, bool allParams,
                  double seconds) {
  fmt::print("{}: ok\n", package);
  fmt::print("  root: {}\n", s.root);
  fmt::print("  blocks instantiated: {}\n", s.blockCount);
  fmt::print("  entries ({}):\n", s.entries.size());
  for (const auto& e : s.entries) fmt::print("    {}\n", e.signature);
  struct Group {
    std::vector<int64_t> shape;
    const char* dtype;
    int count = 0;
  };
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (const auto& p : s.params) {
    std::string key = allParams ? p.path : collapseIndices(p.path);
    auto [it, inserted] = groups.try_emplace(key, Group{p.shape, linnet::sema::name(p.dtype)});
    if (inserted) order.push_back(key);
    ++it->second.count;
  }
  fmt::print("  parameters: {} tensors, {} values, {}\n", s.params.size(),
             withCommas(s.paramCount), bytes(s.paramBytes));
  for (const auto& key : order) {
    const Group& g = groups[key];
    fmt::print("    {} {} {}{}\n", key, shapeStr(g.shape), g.dtype,
               g.count > 1 ? fmt::format("  (x{})", g.count) : "");
  }
  fmt::print("  state: {} tensors, {}\n", s.states.size(), bytes(s.stateBytes));
  fmt::print("  checked in {:.3f} s\n", seconds);
}

// --stdlib, else $LINNET_STDLIB, the installed one, the build's (common/install.h).
std::string stdlibDir(const std::string& flag) { return flag.empty() ? linnet::defaultStdlibDir() : flag; }

constexpr const char* kStdlibHelp =
    "Standard library folder (default: LINNET_STDLIB, else the installed share/linnet/stdlib, else the source "
    "tree's stdlib/)";

int runCheck(const std::string& package, const std::vector<std::string>& sets,
             const std::string& stdlib, bool allParams) {
  auto start = std::chrono::steady_clock::now();
  auto checked = linnet::driver::checkPackage(package, sets, stdlibDir(stdlib));
  if (!checked) return 1;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (checked->summary) {
    printSummary(package, *checked->summary, allParams, seconds);
  } else {
    fmt::print("{}: ok ({} modules checked in {:.3f} s; no root block to instantiate)\n", package,
               checked->program->modules().size(), seconds);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  linnet::dieWithParent();  // a compile the runtime started ends with it
  CLI::App app{"linnetc: the Linnet compiler"};
  app.set_version_flag("--version", std::string("linnetc ") + LINNET_VERSION);
  app.require_subcommand(1);

  std::string package, stdlib;
  std::vector<std::string> sets;
  bool allParams = false;
  app.footer(
      "\nlinnetc COMMAND --help describes a command. A package is a folder with a linnet.toml (and, for a nest\n"
      "package, a nest.toml whose [generics] --set overrides); see docs/language.md and docs/tutorial.md.\n");
  auto* check = app.add_subcommand("check", "Parse, resolve and shape-check a package or file");
  check->add_option("PACKAGE", package, "Package folder (with linnet.toml) or a .linnet file")
      ->required()
      ->type_name("PATH");
  check->add_option("--set", sets, "Override a generic of the root block (repeatable)")->type_name("NAME=VALUE");
  check->add_option("--stdlib", stdlib, kStdlibHelp)->type_name("DIR");
  check->add_flag("--params", allParams, "List every parameter tensor, not one per layer");
  check->footer(
      "\nExit 0 and a summary (the root block's parameters and state at its generics), or 1 and the diagnostics.\n"
      "A single .linnet file is checked symbolically, every definition, without instantiating a root block.\n");

  linnet::driver::ExplainArgs explainArgs;
  auto* explain = app.add_subcommand(
      "explain", "Show each shape obligation of a package's definitions and the facts that prove it");
  explain->add_option("PACKAGE", explainArgs.package, "Package folder (with linnet.toml) or a .linnet file")
      ->required()
      ->type_name("PATH");
  explain->add_option("--at", explainArgs.at,
                      "Only the obligations at FILE:LINE, or of the innermost expression at FILE:LINE:COL")
      ->type_name("PLACE");
  explain->add_option("--set", explainArgs.sets, "Override a generic of the root block (repeatable)")
      ->type_name("NAME=VALUE");
  explain->add_option("--stdlib", stdlib, kStdlibHelp)->type_name("DIR");
  explain->add_flag("--json", explainArgs.json, "One JSON object per obligation, one per line");

  bool lspVerbose = false;
  auto* lsp = app.add_subcommand("lsp", "Serve the Language Server Protocol on stdin and stdout, for editors");
  lsp->add_option("--stdlib", stdlib, kStdlibHelp)->type_name("DIR");
  lsp->add_flag("--verbose", lspVerbose, "Log each request and check with its time on stderr");
  bool lspStdio = false;
  lsp->add_flag("--stdio", lspStdio, "Accepted for editors that pass it: stdio is the only transport");
  lsp->footer(
      "\nDiagnostics on open, change and save (the package of each open document, checked with the editor's\n"
      "unsaved texts), hover (types, symbolic and at the package's generics, and shape proofs), go to\n"
      "definition and document symbols. Set-up for VS Code and Neovim: docs/editor.md.\n");

#ifdef LINNET_HAVE_MLIR
  linnet::driver::BuildArgs build;
  auto* buildCmd = app.add_subcommand("build", "Compile a package's entries into an artifact folder");
  buildCmd->add_option("PACKAGE", build.package, "Package folder (with linnet.toml)")->required()->type_name("DIR");
  buildCmd->add_option("--set", build.sets, "Override a generic of the root block (repeatable)")
      ->type_name("NAME=VALUE");
  buildCmd->add_option("--stdlib", stdlib, kStdlibHelp)->type_name("DIR");
  buildCmd->add_option("--target", build.target,
                       "Code generation target: " + linnet::targets::targetNames() + " (default: the first)")
      ->type_name("NAME");
  buildCmd->add_option("-o,--output", build.output, "Artifact folder to write")->type_name("DIR");
  buildCmd->add_option("--entry", build.entries, "Entry to compile (repeatable; default: every entry)")
      ->type_name("NAME");
  buildCmd->add_option("--generic", build.generics, "An entry generic (default: nest.toml's [check])")
      ->type_name("NAME=VALUE");
  buildCmd->add_option("--arg", build.argSpecs,
                       "The one --entry's argument types in order (scalar: i32:)")
      ->type_name("NAME=DTYPE:D0xD1");
  buildCmd->add_option("--emit", build.emit,
                       "Print a stage instead: " + linnet::driver::stageNames("") + " (the default target's)")
      ->type_name("STAGE");
  buildCmd->add_flag("--manifest-only", build.manifestOnly,
                     "Write only manifest.json: params, states and entry signatures, no code");
  buildCmd->add_flag("--debug-locations", build.debugLocations, "Print source locations with --emit");
  buildCmd->add_flag("--keep-ir", build.keepIR, "Keep model.ll beside model.so");
  buildCmd->add_option("--numerics", build.numerics,
                       "exact (the language's, the default) or fast (weight products may quantize activations to 8 "
                       "bits)")
      ->check(CLI::IsMember({"exact", "fast"}))
      ->type_name("MODE");
  buildCmd->add_option("--products", build.products,
                       "own (the target's kernels for decode's products, the default) or library (every matrix "
                       "product the target's library takes goes to it; cuda: cuBLASLt, to compare the two)")
      ->check(CLI::IsMember({"own", "library"}))
      ->type_name("MODE");
  buildCmd->add_option("--param-storage", build.paramStorage,
                       "A param held in a storage format (layers.*.mlp.up.weight=q4_1; repeatable)")
      ->type_name("PATH=FORMAT");
  buildCmd->add_flag("--gradient", build.gradient,
                     "Compile the one --entry's gradient instead (docs/train.md): outputs `value`, then d value / "
                     "d param for each param, named by its path");
  buildCmd->add_option("--wrt", build.wrt,
                       "With --gradient: a param to differentiate, by its path (layers.0.mlp.up.weight; "
                       "repeatable; default: every float param)")
      ->type_name("PATH");
  buildCmd->add_option("--tape", build.tape,
                       "With --gradient: recompute (each layer recomputed from its saved input, the default), "
                       "saved (each layer's values the reverse reads stacked in the forward loop) or unrolled "
                       "(every layer copied, every value kept)")
      ->check(CLI::IsMember({"recompute", "saved", "unrolled"}))
      ->type_name("POLICY");
  buildCmd->add_option("--low-rank", build.lowRank,
                       "With --gradient: each --wrt matrix W [out, in] seen as W + B A (LoRA; A [R, in], B [out, "
                       "R]): the gradient takes inputs PATH.lora_A and PATH.lora_B and gives d value / d A and d "
                       "value / d B under those names, never forming d W")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->type_name("R");
  buildCmd->footer(
      "\nWrites DIR/manifest.json (entries, signatures, params, states, generics) and the target's code\n"
      "(model.so for cpu); --manifest-only writes the manifest alone. `linnet` runs such builds itself, on\n"
      "first use of each entry shape (--backend cpu).\n");
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A usage error: exit 2, as `linnet`'s, with the help to read.
    std::vector<CLI::App*> given = app.get_subcommands();
    fmt::print(stderr, "linnetc: {}; see linnetc {}--help\n", e.what(),
               given.empty() ? "" : given[0]->get_name() + " ");
    return 2;
  }
  if (check->parsed()) return runCheck(package, sets, stdlib, allParams);
  if (lsp->parsed()) {
    std::ios::sync_with_stdio(false);
    return linnet::lsp::runServer(std::cin, std::cout, std::cerr, stdlibDir(stdlib), lspVerbose);
  }
  if (explain->parsed()) {
    explainArgs.stdlib = stdlibDir(stdlib);
    return linnet::driver::runExplain(explainArgs);
  }
#ifdef LINNET_HAVE_MLIR
  if (buildCmd->parsed()) {
    build.stdlib = stdlibDir(stdlib);
    // The checked stage is what `linnetc check` prints: the instantiated summary.
    if (build.emit == "checked") return runCheck(build.package, build.sets, stdlib, true);
    if (build.emit.empty() && build.output.empty()) {
      fmt::print(stderr, "linnetc build: give an artifact folder (-o DIR) or a stage to print (--emit)\n");
      return 2;
    }
    return linnet::driver::runBuild(build);
  }
#endif
  return 2;
}
