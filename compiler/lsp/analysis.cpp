#include "lsp/analysis.h"

#include <chrono>
#include <filesystem>

#include "lsp/documents.h"
#include "sema/checker.h"

namespace linnet::lsp {

namespace fs = std::filesystem;

uint32_t Analysis::fileOf(const std::string& canonical) const {
  auto it = fileIds.find(canonical);
  return it == fileIds.end() ? 0 : it->second;
}

const sema::Module* Analysis::moduleOf(uint32_t file) const {
  if (!program || file == 0) return nullptr;
  for (const auto& m : program->modules())
    if (m->file == file) return m.get();
  return nullptr;
}

std::vector<uint32_t> Analysis::ownFiles() const {
  std::vector<uint32_t> out;
  if (program)
    for (const auto& m : program->modules()) out.push_back(m->file);
  return out;
}

std::string packageOf(const std::string& path) {
  std::error_code ec;
  for (fs::path dir = fs::path(path).parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::exists(dir / "linnet.toml", ec)) return dir.string();
    if (dir == dir.root_path()) break;
  }
  return {};
}

std::unique_ptr<Analysis> analyze(const std::string& path, const std::map<std::string, std::string>& overlay,
                                  const std::shared_ptr<const sema::Stdlib>& stdlib, const std::string& stdlibDir) {
  auto start = std::chrono::steady_clock::now();
  auto a = std::make_unique<Analysis>();
  a->program = stdlib ? std::make_unique<sema::Program>(a->sources, a->diags, stdlib)
                      : std::make_unique<sema::Program>(a->sources, a->diags, stdlibDir);
  a->sources.setOverlay(overlay);
  std::string package = packageOf(path);
  a->root = package.empty() ? path : package;
  if (package.empty()) {
    auto it = overlay.find(canonicalPath(path));
    if (it != overlay.end())
      a->program->loadSource(path, it->second);
    else
      a->program->loadFile(path);
  } else {
    a->program->loadPackage(package);
  }
  // As `linnetc check`: syntax and name errors stop here, checking
  // half-parsed code only cascades.
  if (a->program->root() && !a->diags.hasErrors()) {
    sema::Checker checker(*a->program, a->diags);
    checker.setExplainer(&a->explainer);
    checker.setIndex(&a->index);
    checker.checkDefinitions();
    if (!a->diags.hasErrors()) checker.instantiateRoot();
  }
  a->explainer.attachDiagnostics(a->diags.all());
  for (uint32_t id = 1; id <= a->sources.fileCount(); ++id)
    a->fileIds.emplace(canonicalPath(a->sources.file(id).path()), id);
  a->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return a;
}

}  // namespace linnet::lsp
