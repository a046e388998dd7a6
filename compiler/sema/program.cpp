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
    package_.rootCrate = package_.name;
    std::string nest = (fs::path(dir) / "nest.toml").string();
    std::optional<toml::table> n;
    if (fs::exists(nest)) {
      n = toml::parse_file(nest);
      if (auto p = (*n)["source"]["path"].value<std::string>())
        package_.rootFile = (fs::path(dir) / *p).string();
    }
    package_.crates.push_back({package_.name, dir, package_.rootFile});
    if (!readDependencies(dir, manifest, 0)) return false;
    if (n) {
      if (auto from = (*n)["source"]["package"].value<std::string>()) {
        const Crate* c = findCrate(*from);
        if (!c) {
          diags_.error({}, fmt::format("{}: [source] package = \"{}\" is not this package nor one of its "
                                       "dependencies; add it to linnet.toml's [dependencies]",
                                       nest, *from));
          return false;
        }
        if ((*n)["source"]["path"]) {
          diags_.error({}, fmt::format("{}: [source] has both `package` and `path`; the root module is "
                                       "the package's own, so drop `path`",
                                       nest));
          return false;
        }
        package_.rootFile = c->rootFile;
        package_.rootCrate = c->name;
      }
      package_.rootBlock = (*n)["source"]["root"].value_or(std::string());
      if (auto* tbl = (*n)["constants"].as_table()) {
        for (auto& [key, value] : *tbl) {
          ConstantSetting c;
          c.origin = fmt::format("{} [constants] \"{}\"", nest, std::string(key.str()));
          if (auto i = value.value_exact<int64_t>()) {
            c.number = static_cast<double>(*i);
            c.isInteger = true;
          } else if (auto f = value.value_exact<double>()) {
            c.number = *f;
          } else if (auto b = value.value_exact<bool>()) {
            c.number = *b;
            c.isBool = true;
          } else {
            diags_.error({}, fmt::format("{}: must be a number or a boolean", c.origin));
            continue;
          }
          constantSettings_[std::string(key.str())] = c;
        }
      }
      if (auto* tbl = (*n)["replace"].as_table()) {
        for (auto& [key, value] : *tbl) {
          std::string origin = fmt::format("{} [replace] \"{}\"", nest, std::string(key.str()));
          auto target = value.value<std::string>();
          if (!target || target->find('.') == std::string::npos) {
            diags_.error({}, fmt::format("{}: must name the replacing item by its full name, as in "
                                         "\"std.nn.rope.rotary_tables\"",
                                         origin));
            continue;
          }
          replacements_[std::string(key.str())] = {*target, origin};
        }
      }
      auto readValues = [&](const char* section, std::map<std::string, GenericValue>& out) {
        if (auto* tbl = (*n)[section].as_table()) {
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
      readValues("check", package_.check);
    }
    for (const auto& [name, value] : package_.overrides) package_.generics[name] = value;
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    diags_.error({}, fmt::format("{}:{}:{}: malformed TOML: {}", src.path ? *src.path : manifest,
                                 src.begin.line, src.begin.column, e.description()));
    return false;
  }
  return !diags_.hasErrors();
}

// linnet.toml's [dependencies]: `name = { path = "..." }`, the path relative
// to the manifest's folder, read transitively. A package reached twice by the
// same folder is read once; two folders with one name are an error.
bool Program::readDependencies(const std::string& dir, const std::string& manifest, int depth) {
  toml::table t = toml::parse_file(manifest);
  auto* deps = t["dependencies"].as_table();
  if (!deps) return true;
  if (depth > 32) {
    diags_.error({}, fmt::format("{}: dependencies nest more than 32 deep", manifest));
    return false;
  }
  for (auto& [key, value] : *deps) {
    std::string name(key.str());
    auto path = value.is_table() ? (*value.as_table())["path"].value<std::string>() : std::nullopt;
    if (!path) {
      diags_.error({}, fmt::format("{}: [dependencies] {} must be a table with a `path`, as in {} = {{ path = "
                                   "\"../{}\" }}",
                                   manifest, name, name, name));
      return false;
    }
    fs::path depDir = fs::path(dir) / *path;
    std::string depManifest = (depDir / "linnet.toml").string();
    if (!fs::exists(depManifest)) {
      diags_.error({}, fmt::format("{}: [dependencies] {}: {} is not a Linnet package (it has no linnet.toml)",
                                   manifest, name, depDir.string()));
      return false;
    }
    std::string depName = toml::parse_file(depManifest)["package"]["name"].value_or(std::string());
    if (depName != name) {
      diags_.error({}, fmt::format("{}: [dependencies] {}: the package at {} is named `{}`; name the "
                                   "dependency after the package",
                                   manifest, name, depDir.string(), depName));
      return false;
    }
    std::error_code ec;
    if (const Crate* seen = findCrate(name)) {
      if (fs::equivalent(seen->dir, depDir, ec)) continue;
      diags_.error({}, fmt::format("{}: two different packages are named `{}`: {} and {}", manifest, name,
                                   seen->dir, depDir.string()));
      return false;
    }
    std::string rootFile = (depDir / "src" / "lib.linnet").string();
    if (fs::exists(depDir / "nest.toml"))
      if (auto p = toml::parse_file((depDir / "nest.toml").string())["source"]["path"].value<std::string>())
        rootFile = (depDir / *p).string();
    package_.crates.push_back({name, depDir.lexically_normal().string(), rootFile});
    if (!readDependencies(depDir.string(), depManifest, depth + 1)) return false;
  }
  return true;
}

const Crate* Program::findCrate(const std::string& name) const {
  for (const Crate& c : package_.crates)
    if (c.name == name) return &c;
  return nullptr;
}

std::vector<std::string> Program::packageDirs() const {
  std::vector<std::string> dirs;
  for (const Crate& c : package_.crates) dirs.push_back(c.dir);
  return dirs;
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
  root_ = loadModule(package_.rootCrate, package_.rootFile, {}, nullptr, package_.rootCrate);
  if (!root_) return false;
  applyConstants();
  checkReplacementsUsed();
  return !diags_.hasErrors();
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
                             std::string& moduleName, std::string& crate) {
  fs::path file;
  const std::string& first = path[0].name;
  if (first == "crate") {
    const Crate* c = from.crate.empty() ? nullptr : findCrate(from.crate);
    file = c ? fs::path(c->dir) / "src" : fs::path(crateDir_);
    moduleName = c ? c->name : package_.name;
    crate = from.crate;
  } else if (first == "std") {
    file = fs::path(stdlibDir_) / first;
    moduleName = first;
    crate.clear();
  } else if (const Crate* c = findCrate(first)) {
    // `use llama::{Model}` is the dependency's root module.
    if (path.size() == 1) {
      moduleName = c->name;
      crate = c->name;
      return c->rootFile;
    }
    file = fs::path(c->dir) / "src";
    moduleName = c->name;
    crate = c->name;
  } else {
    diags_.error(path[0].range, fmt::format("a `use` path starts with `crate` (this package), `std` (the "
                                            "standard library) or a dependency in linnet.toml's "
                                            "[dependencies], not `{}`",
                                            first));
    return {};
  }
  for (size_t i = 1; i < path.size(); ++i) {
    file /= path[i].name;
    moduleName += "." + path[i].name;
  }
  return file.string() + ".linnet";
}

const Module* Program::loadModule(const std::string& name, const std::string& path, SourceRange usedAt,
                                  const std::string* text, const std::string& crate) {
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
  module->crate = crate;
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
    bool dependencyRoot = use.path.size() == 1 && findCrate(use.path[0].name);
    if (use.path.size() < 2 && !dependencyRoot && (use.path[0].name == "crate" || use.path[0].name == "std")) {
      diags_.error(use.range, "a `use` path names a module, as in `use crate.attention::{X}`");
      continue;
    }
    std::string moduleName, crate;
    std::string path = pathFor(use.path, module, moduleName, crate);
    if (path.empty()) continue;
    SourceRange pathRange = SourceRange::merge(use.path.front().range, use.path.back().range);
    const Module* target = loadModule(moduleName, path, pathRange, nullptr, crate);
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
      const Item* bound = &it->second;
      if (replacements_.count(target->name + "." + name.name)) {
        bound = replacementFor(target->name + "." + name.name, name.range);
        if (!bound) continue;
      }
      auto [prev, inserted] = module.imports.emplace(name.name, *bound);
      if (!inserted && prev->second.module != bound->module) {
        diags_.error(name.range, fmt::format("`{}` is ambiguous: it is imported from both `{}` "
                                             "and `{}`",
                                             name.name, prev->second.module->name, bound->module->name));
      } else if (!inserted) {
        diags_.error(name.range, fmt::format("`{}` is imported twice", name.name));
      }
    }
  }
}

const Item* Program::replacementFor(const std::string& original, SourceRange usedAt) {
  Replacement& r = replacements_.at(original);
  r.used = true;
  auto fail = [&](const std::string& why) -> const Item* {
    diags_.error(usedAt, fmt::format("{}: {}", r.origin, why));
    return nullptr;
  };
  std::vector<syntax::Ident> path;
  for (size_t start = 0;;) {
    size_t dot = r.target.find('.', start);
    path.push_back({r.target.substr(start, dot - start), usedAt});
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  std::string itemName = path.back().name;
  path.pop_back();
  if (path.empty() || path[0].name == "crate")
    return fail(fmt::format("`{}` must start with `std` or a package's name", r.target));
  Module from;
  from.crate = package_.rootCrate;
  std::string moduleName, crate;
  std::string file = pathFor(path, from, moduleName, crate);
  if (file.empty()) return nullptr;
  const Module* m = loadModule(moduleName, file, usedAt, nullptr, crate);
  if (!m) return nullptr;
  auto it = m->items.find(itemName);
  if (it == m->items.end()) return fail(fmt::format("module `{}` has no item named `{}`", moduleName, itemName));
  if (!it->second.isPub) return fail(fmt::format("`{}` is private to module `{}`", itemName, moduleName));
  return &it->second;
}

void Program::checkReplacementsUsed() {
  for (const auto& [original, r] : replacements_) {
    if (r.used) continue;
    auto dot = original.rfind('.');
    const Module* m = nullptr;
    for (const auto& mod : modules_)
      if (dot != std::string::npos && mod->name == original.substr(0, dot)) m = mod.get();
    if (!m || !m->items.count(original.substr(dot + 1)))
      diags_.error({}, fmt::format("{}: the program has no item `{}` to replace", r.origin, original));
    else
      diags_.error({}, fmt::format("{}: `{}` is never imported, so replacing it changes nothing; drop the entry",
                                   r.origin, original));
  }
}

// [constants]: a constant's initializer becomes the card's literal, checked
// against its declared type; everything downstream sees only the new value.
void Program::applyConstants() {
  for (const auto& [fullName, c] : constantSettings_) {
    auto dot = fullName.rfind('.');
    Module* m = nullptr;
    for (const auto& mod : modules_)
      if (dot != std::string::npos && mod->name == fullName.substr(0, dot)) m = mod.get();
    syntax::ConstDecl* decl = nullptr;
    if (m)
      for (auto& k : m->ast->consts)
        if (k->name.name == fullName.substr(dot + 1)) decl = k.get();
    if (!decl) {
      diags_.error({}, fmt::format("{}: the program has no constant `{}` (name it as module.NAME, as in "
                                   "\"llama.rope.THETA\"; only the packages' own constants can be set)",
                                   c.origin, fullName));
      continue;
    }
    std::string type = decl->type && decl->type->kind == syntax::TypeKind::Named ? decl->type->name.name : "";
    bool isFloat = type == "f32" || type == "f64" || type == "f16" || type == "bf16";
    bool isInt = type.size() > 1 && (type[0] == 'i' || type[0] == 'u') &&
                 std::all_of(type.begin() + 1, type.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    SourceRange at = decl->value ? decl->value->range : decl->range;
    if (isFloat && !c.isBool) {
      decl->value = std::make_unique<syntax::FloatLiteralExpr>(at, c.number);
    } else if (isInt && c.isInteger) {
      decl->value = std::make_unique<syntax::IntLiteralExpr>(at, static_cast<int64_t>(c.number));
    } else if (type == "bool" && c.isBool) {
      decl->value = std::make_unique<syntax::BoolLiteralExpr>(at, c.number != 0);
    } else {
      Diagnostic& d = diags_.error({}, fmt::format("{}: `{}` is declared `{}`, so it takes {}", c.origin, fullName,
                                                   type.empty() ? "?" : type,
                                                   isFloat  ? "a number"
                                                   : isInt  ? "an integer"
                                                   : type == "bool" ? "true or false"
                                                                    : "no value from nest.toml"));
      Diagnostics::note(d, decl->name.range, "declared here");
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
