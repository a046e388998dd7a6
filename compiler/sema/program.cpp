#include "sema/program.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <toml++/toml.h>

#include "sema/stdlib.h"
#include "syntax/parser.h"

namespace fs = std::filesystem;

namespace linnet::sema {

Program::Program(SourceManager& sources, Diagnostics& diags, std::string stdlibDir)
    : sources_(sources), diags_(diags), stdlibDir_(std::move(stdlibDir)) {}

Program::Program(SourceManager& sources, Diagnostics& diags, std::shared_ptr<const Stdlib> stdlib)
    : sources_(sources), diags_(diags), stdlibDir_(stdlib->dir()), stdlib_(std::move(stdlib)) {
  if (sources_.fileCount() != 0)
    throw std::invalid_argument("sema::Program: a shared Stdlib needs an empty SourceManager");
  sources_.share(stdlib_->sources());
}

Program::~Program() = default;

// `--set Name=Value`: an integer (range-checked, never saturated) or an
// element type name. Errors go to `error` and give std::nullopt.
static std::optional<GenericValue> parseGenericValue(const std::string& text, std::string origin,
                                                     std::string& error) {
  GenericValue v;
  v.origin = std::move(origin);
  size_t digits = text.size() > 1 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  bool integer = digits < text.size() &&
                 std::all_of(text.begin() + digits, text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!integer) {
    v.dtype = text;
    return v;
  }
  int64_t n = 0;
  const char* first = text.data() + (text[0] == '+' ? 1 : 0);
  auto [ptr, ec] = std::from_chars(first, text.data() + text.size(), n);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    error = fmt::format("{}: `{}` does not fit in 64 bits signed (the range is {} to {}); give a "
                        "value in that range",
                        v.origin, text, INT64_MIN, INT64_MAX);
    return std::nullopt;
  }
  v.number = n;
  return v;
}

bool Program::readToml(const std::string& dir) {
  std::string manifest = (fs::path(dir) / "linnet.toml").string();
  if (!fs::exists(manifest)) {
    diags_.error({}, fmt::format("{}: not a Linnet package: there is no linnet.toml (a package is "
                                 "a folder with linnet.toml and src/lib.linnet)",
                                 dir));
    return false;
  }
  try {
    toml::table t = toml::parse_file(manifest);
    package_.name = t["package"]["name"].value_or(std::string());
    if (package_.name.empty()) {
      diags_.error({}, fmt::format("{}: [package] has no `name`", manifest));
      return false;
    }
    package_.rootFile = (fs::path(dir) / "src" / "lib.linnet").string();
    std::string nest = (fs::path(dir) / "nest.toml").string();
    if (fs::exists(nest)) {
      toml::table n = toml::parse_file(nest);
      if (auto p = n["source"]["path"].value<std::string>())
        package_.rootFile = (fs::path(dir) / *p).string();
      package_.rootBlock = n["source"]["root"].value_or(std::string());
      auto readValues = [&](const char* section, std::map<std::string, GenericValue>& out) {
        if (auto* tbl = n[section].as_table()) {
          for (auto& [key, value] : *tbl) {
            GenericValue v;
            v.origin = fmt::format("{} [{}]", nest, section);
            if (auto i = value.value<int64_t>()) v.number = *i;
            else if (auto s = value.value<std::string>()) v.dtype = *s;
            else {
              diags_.error({}, fmt::format("{}: [{}] {} must be an integer or an element type "
                                           "name such as \"bf16\"",
                                           nest, section, std::string(key.str())));
              continue;
            }
            out[std::string(key.str())] = v;
          }
        }
      };
      readValues("generics", package_.generics);
      for (const auto& [name, value] : package_.overrides) package_.generics[name] = value;
      readValues("check", package_.check);
    }
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    diags_.error({}, fmt::format("{}:{}:{}: malformed TOML: {}", src.path ? *src.path : manifest,
                                 src.begin.line, src.begin.column, e.description()));
    return false;
  }
  return true;
}

bool Program::setGeneric(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == assignment.size()) {
    diags_.error({}, fmt::format("--set `{}`: expected Name=Value, as in --set Layers=2",
                                 assignment));
    return false;
  }
  std::string problem;
  auto parsed = parseGenericValue(assignment.substr(eq + 1), "--set " + assignment, problem);
  if (!parsed) {
    diags_.error({}, problem);
    return false;
  }
  GenericValue v = *parsed;
  package_.overrides[assignment.substr(0, eq)] = v;
  package_.generics[assignment.substr(0, eq)] = v;
  return true;
}

bool Program::loadPackage(const std::string& dir) {
  if (!fs::is_directory(dir)) return loadFile(dir);
  if (!readToml(dir)) return false;
  crateDir_ = (fs::path(dir) / "src").string();
  package_.dir = dir;
  if (!fs::exists(package_.rootFile)) {
    diags_.error({}, fmt::format("{}: the package's root module is missing", package_.rootFile));
    return false;
  }
  root_ = loadModule(package_.name, package_.rootFile, {});
  return root_ && !diags_.hasErrors();
}

bool Program::loadFile(const std::string& path) {
  if (!fs::exists(path)) {
    diags_.error({}, fmt::format("{}: no such file or package folder", path));
    return false;
  }
  crateDir_ = fs::path(path).parent_path().string();
  package_.dir = crateDir_;
  package_.name = fs::path(path).stem().string();
  package_.rootFile = path;
  root_ = loadModule(package_.name, path, {});
  return root_ && !diags_.hasErrors();
}

bool Program::loadSource(const std::string& path, std::string text) {
  crateDir_ = fs::path(path).parent_path().string();
  package_.dir = crateDir_;
  package_.name = fs::path(path).stem().string();
  package_.rootFile = path;
  root_ = loadModule(package_.name, path, {}, &text);
  return root_ && !diags_.hasErrors();
}

std::string Program::pathFor(const std::vector<syntax::Ident>& path, const Module& from,
                             std::string& moduleName) const {
  fs::path file;
  if (path[0].name == "crate") {
    file = crateDir_;
    moduleName = package_.name;
  } else {
    file = fs::path(stdlibDir_) / path[0].name;
    moduleName = path[0].name;
  }
  for (size_t i = 1; i < path.size(); ++i) {
    file /= path[i].name;
    moduleName += "." + path[i].name;
  }
  return file.string() + ".linnet";
}

const Module* Program::loadModule(const std::string& name, const std::string& path, SourceRange usedAt,
                                  const std::string* text) {
  std::error_code ec;
  std::string canonical = fs::weakly_canonical(path, ec).string();
  if (ec) canonical = path;
  if (auto it = byPath_.find(canonical); it != byPath_.end()) return it->second;
  if (stdlib_ && !text)
    if (const Module* shared = stdlib_->find(canonical)) return shared;
  uint32_t file = text ? sources_.add(path, *text) : sources_.load(path);
  if (file == 0) {
    diags_.error(usedAt, fmt::format("cannot find module `{}`: no file {}", name, path));
    return nullptr;
  }
  auto module = std::make_unique<Module>();
  module->name = name;
  module->path = path;
  module->file = file;
  module->ast = syntax::parseFile(sources_, file, diags_);
  Module* m = module.get();
  byPath_[canonical] = m;
  modules_.push_back(std::move(module));
  if (!m->ast->name.name.empty() && m->ast->name.name != name)
    diags_.error(m->ast->name.range,
                 fmt::format("this file declares module `{}`, but its path makes it `{}`; "
                             "rename one of them",
                             m->ast->name.name, name));
  collectItems(*m);
  resolveImports(*m);
  return m;
}

void Program::collectItems(Module& module) {
  auto add = [&](Item item) {
    auto [it, inserted] = module.items.emplace(item.name, item);
    if (!inserted) {
      Diagnostic& d = diags_.error(item.range, fmt::format("`{}` is defined twice in module `{}`",
                                                          item.name, module.name));
      Diagnostics::note(d, it->second.range, "first defined here");
    }
  };
  for (auto& b : module.ast->blocks) blockModules_[b.get()] = &module;
  for (auto& b : module.ast->blocks)
    add({Item::Block, b->name.name, b->name.range, b->isPub, &module, b.get(), nullptr, nullptr});
  for (auto& f : module.ast->fns)
    add({Item::Fn, f->name.name, f->name.range, f->isPub, &module, nullptr, f.get(), nullptr});
  for (auto& c : module.ast->consts)
    add({Item::Const, c->name.name, c->name.range, c->isPub, &module, nullptr, nullptr, c.get()});
}

void Program::resolveImports(Module& module) {
  for (const syntax::UseDecl& use : module.ast->uses) {
    if (use.path[0].name != "crate" && use.path[0].name != "std") {
      diags_.error(use.path[0].range,
                   fmt::format("a `use` path starts with `crate` (this package) or `std` (the "
                               "standard library), not `{}`",
                               use.path[0].name));
      continue;
    }
    if (use.path.size() < 2) {
      diags_.error(use.range, "a `use` path names a module, as in `use crate.attention::{X}`");
      continue;
    }
    std::string moduleName;
    std::string path = pathFor(use.path, module, moduleName);
    SourceRange pathRange = SourceRange::merge(use.path.front().range, use.path.back().range);
    const Module* target = loadModule(moduleName, path, pathRange);
    if (!target) continue;
    for (const syntax::Ident& name : use.names) {
      auto it = target->items.find(name.name);
      if (it == target->items.end()) {
        diags_.error(name.range,
                     fmt::format("module `{}` has no item named `{}`", target->name, name.name));
        continue;
      }
      if (!it->second.isPub) {
        Diagnostic& d = diags_.error(
            name.range, fmt::format("`{}` is private to module `{}`; mark it `pub` to use it here",
                                    name.name, target->name));
        Diagnostics::note(d, it->second.range, "defined here");
        continue;
      }
      if (auto own = module.items.find(name.name); own != module.items.end()) {
        Diagnostic& d = diags_.error(
            name.range, fmt::format("`{}` is ambiguous: it is imported from `{}` and also "
                                    "defined in this module",
                                    name.name, target->name));
        Diagnostics::note(d, own->second.range, "defined here");
        continue;
      }
      auto [prev, inserted] = module.imports.emplace(name.name, it->second);
      if (!inserted && prev->second.module != target) {
        diags_.error(name.range, fmt::format("`{}` is ambiguous: it is imported from both `{}` "
                                             "and `{}`",
                                             name.name, prev->second.module->name, target->name));
      } else if (!inserted) {
        diags_.error(name.range, fmt::format("`{}` is imported twice", name.name));
      }
    }
  }
}

const Module* Program::moduleOf(const syntax::BlockDecl* block) const {
  auto it = blockModules_.find(block);
  if (it != blockModules_.end()) return it->second;
  return stdlib_ ? stdlib_->moduleOf(block) : nullptr;
}

const Item* Program::lookup(const Module& from, const std::string& name) const {
  if (auto it = from.items.find(name); it != from.items.end()) return &it->second;
  if (auto it = from.imports.find(name); it != from.imports.end()) return &it->second;
  return nullptr;
}

std::optional<double> Program::constantValue(const std::string& fullName) const {
  auto dot = fullName.rfind('.');
  if (dot == std::string::npos) return std::nullopt;
  std::string moduleName = fullName.substr(0, dot), name = fullName.substr(dot + 1);
  for (const auto& m : modules_) {
    if (m->name != moduleName) continue;
    auto it = m->items.find(name);
    if (it == m->items.end() || it->second.kind != Item::Const) return std::nullopt;
    const syntax::Expr* e = it->second.constant->value.get();
    bool negate = false;
    if (e && e->kind == syntax::ExprKind::Unary &&
        static_cast<const syntax::UnaryExpr*>(e)->op == syntax::UnaryOp::Neg) {
      negate = true;
      e = static_cast<const syntax::UnaryExpr*>(e)->operand.get();
    }
    if (!e) return std::nullopt;
    double v;
    if (e->kind == syntax::ExprKind::IntLiteral) v = static_cast<double>(static_cast<const syntax::IntLiteralExpr*>(e)->value);
    else if (e->kind == syntax::ExprKind::FloatLiteral) v = static_cast<const syntax::FloatLiteralExpr*>(e)->value;
    else return std::nullopt;
    return negate ? -v : v;
  }
  return std::nullopt;
}

}  // namespace linnet::sema
