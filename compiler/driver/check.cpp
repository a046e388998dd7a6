#include "driver/check.h"

#include <fmt/format.h>

#include <cstdio>

namespace linnet::driver {

std::unique_ptr<CheckedPackage> checkPackage(const std::string& package, const std::vector<std::string>& sets,
                                             const std::string& stdlib) {
  auto c = std::make_unique<CheckedPackage>();
  c->program = std::make_unique<sema::Program>(c->sources, c->diags, stdlib);
  for (const auto& s : sets) c->program->setGeneric(s);
  if (!c->diags.hasErrors()) c->program->loadPackage(package);
  // Syntax and name errors stop here: checking half-parsed code only cascades.
  if (c->program->root() && !c->diags.hasErrors()) {
    sema::Checker checker(*c->program, c->diags);
    checker.checkDefinitions();
    if (!c->diags.hasErrors()) c->summary = checker.instantiateRoot();
  }
  if (!c->diags.hasErrors()) return c;
  // By length: a NUL in a source line must not cut off the diagnostics after it.
  std::string text = c->diags.render();
  fwrite(text.data(), 1, text.size(), stderr);
  fmt::print(stderr, "{}: {} error{}\n", package, c->diags.errorCount(), c->diags.errorCount() == 1 ? "" : "s");
  return nullptr;
}

}  // namespace linnet::driver
