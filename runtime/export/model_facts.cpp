#include "export/model_facts.h"

#include "export/checked_package.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <filesystem>

#include "base/diagnostics.h"
#include "nest/backend.h"
#include "sema/checker.h"
#include "sema/program.h"

namespace linnet::exporter {

void requireWeightsSource(const std::string& package, const nest::LoadOptions& load, const char* command) {
  if (load.randomWeights && !load.weights.empty())
    throw nest::Error(fmt::format("{}: --weights and --random-weights exclude each other", command));
  if (!load.randomWeights && load.weights.empty())
    throw nest::Error(fmt::format("{}: no weights given: pass a .safetensors file, an index.json, a Hugging Face "
                                  "folder or a .gguf (--weights), or ask for random weights (--random-weights)",
                                  package));
}

std::optional<double> ModelFacts::constant(const std::string& fullName) const {
  auto it = constants.find(fullName);
  if (it == constants.end()) return std::nullopt;
  return it->second;
}

std::optional<int64_t> ModelFacts::dim(const std::string& n) const {
  auto it = dims.find(n);
  if (it == dims.end()) return std::nullopt;
  return it->second;
}

std::unique_ptr<CheckedPackage> checkPackage(const std::string& package, const nest::LoadOptions& options) {
  auto c = std::make_unique<CheckedPackage>();
  c->program = std::make_unique<sema::Program>(c->sources, c->diags, nest::stdlibFor(options));
  sema::Program& program = *c->program;
  Diagnostics& diags = c->diags;
  for (const auto& [k, v] : options.generics) program.setGeneric(k + "=" + v.str());
  program.loadPackage(package);
  std::optional<sema::Summary> summary;
  if (program.root() && !diags.hasErrors()) {
    sema::Checker checker(program, diags);
    checker.checkDefinitions();
    if (!diags.hasErrors()) summary = checker.instantiateRoot();
  }
  if (diags.hasErrors()) throw nest::Error(diags.render());
  if (!summary) throw nest::Error(fmt::format("{}: no root block to export (nest.toml [source] root)", package));
  c->summary = std::move(*summary);
  return c;
}

ModelFacts instantiate(const std::string& package, const nest::LoadOptions& options) {
  std::unique_ptr<CheckedPackage> checked = checkPackage(package, options);
  const sema::Program& program = *checked->program;
  const sema::Summary* summary = &checked->summary;

  ModelFacts f;
  f.package = package;
  f.name = program.package().name;
  for (const auto& [k, v] : program.package().generics) {
    if (v.number) f.dims[k] = *v.number;
    else if (!v.dtype.empty()) f.dtypes[k] = v.dtype;
  }
  for (const sema::ParamInfo& p : summary->params) f.params.push_back({p.path, p.shape, p.dtype, std::nullopt});
  for (const auto& m : program.modules()) {
    for (const auto& [alias, item] : m->imports)
      if (item.module) f.imported.insert(item.module->name + "." + item.name);
    for (const auto& [name, item] : m->items)
      if (item.kind == sema::Item::Const)
        if (auto v = program.constantValue(m->name + "." + name)) f.constants[m->name + "." + name] = *v;
  }

  std::filesystem::path nestToml = std::filesystem::path(package) / "nest.toml";
  if (std::filesystem::exists(nestToml)) {
    try {
      toml::table t = toml::parse_file(nestToml.string());
      if (auto v = t["model"]["name"].value<std::string>()) f.name = *v;
      if (auto v = t["model"]["title"].value<std::string>()) f.title = *v;
      if (auto v = t["model"]["license"].value<std::string>()) f.license = *v;
      if (auto v = t["model"]["family"].value<std::string>()) f.family = *v;
    } catch (const toml::parse_error& e) {
      throw nest::Error(fmt::format("{}: {}", nestToml.string(), e.description()));
    }
  }
  return f;
}

}  // namespace linnet::exporter
