// A program: the package's modules, its dependencies' and the standard
// library modules they use, each with its own items and its imports resolved.
// `crate.a.b` names the file src/a/b.linnet of the module's own package,
// `std.a.b` the file std/a/b.linnet of the standard library, and `dep.a.b`
// the file src/a/b.linnet of a package linnet.toml's [dependencies] names
// (`dep = { path = "../dep" }`). A card's nest.toml may take its root from a
// dependency ([source] package), set constants of the sources ([constants])
// and replace items wherever they are imported ([replace]); docs/nest.md.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "syntax/ast.h"

namespace linnet::sema {

struct Module;
class Stdlib;

struct Item {
  enum Kind { Block, Fn, Const } kind = Block;
  std::string name;
  SourceRange range;
  bool isPub = false;
  const Module* module = nullptr;
  const syntax::BlockDecl* block = nullptr;
  const syntax::FnDecl* fn = nullptr;
  const syntax::ConstDecl* constant = nullptr;
};

struct Module {
  std::string name;  // as the path names it: `llama.attention`, `std.nn.linear`
  std::string crate;  // the package whose `crate.` it sees: `llama`; empty for std
  std::string path;
  uint32_t file = 0;
  std::unique_ptr<syntax::ModuleAst> ast;
  std::map<std::string, Item> items;    // defined here
  std::map<std::string, Item> imports;  // brought in by `use`
};

// A generic value given in nest.toml's [generics] or on the command line.
struct GenericValue {
  std::optional<int64_t> number;
  std::string dtype;  // set for element types, e.g. "bf16"
  std::string origin;  // where it was set, for messages
};

// A package the program's sources come from: the loaded one or a dependency.
struct Crate {
  std::string name;      // linnet.toml's [package] name, the first part of its module names
  std::string dir;       // the package folder
  std::string rootFile;  // its nest.toml's [source] path, else src/lib.linnet
};

struct Package {
  std::string dir;
  std::string name;
  std::string rootFile;   // src/lib.linnet unless nest.toml's [source] says otherwise
  std::string rootBlock;  // nest.toml's [source] root, e.g. "Model"
  std::map<std::string, GenericValue> generics;  // [generics], then --set overrides
  std::map<std::string, GenericValue> overrides;  // --set, applied after reading nest.toml
  std::map<std::string, GenericValue> check;     // [check]: entries' own generics
  std::string rootCrate;  // whose root module is the program's root: `name`, or [source] package
  std::vector<Crate> crates;  // this package first, then its dependencies (transitively)
};

class Program {
 public:
  Program(SourceManager& sources, Diagnostics& diags, std::string stdlibDir);
  // With a standard library loaded and checked once (sema/stdlib.h): its
  // modules are taken from there, neither read nor checked again. `sources`
  // must be empty, so the library's files keep their ids (else
  // std::invalid_argument).
  Program(SourceManager& sources, Diagnostics& diags, std::shared_ptr<const Stdlib> stdlib);
  ~Program();

  // Loads a package folder (linnet.toml, optional nest.toml, src/), or a
  // single .linnet file whose `crate.` is its own folder. False on errors.
  bool loadPackage(const std::string& dir);
  bool loadFile(const std::string& path);
  // Like loadFile, for a root module held in memory (tests, fuzzing).
  bool loadSource(const std::string& path, std::string text);
  // Command-line `--set Name=Value`.
  bool setGeneric(const std::string& assignment);

  const Package& package() const { return package_; }
  const Module* root() const { return root_; }
  // The modules this program loaded itself, which the checker checks; those
  // of a shared Stdlib are not listed (they were checked when it loaded).
  const std::vector<std::unique_ptr<Module>>& modules() const { return modules_; }
  const SourceManager& sources() const { return sources_; }
  // Every package folder the sources come from (this one, then its
  // dependencies): what a compiled artifact's cache key must cover.
  std::vector<std::string> packageDirs() const;

  // A name as seen from a module: its own items, then its imports.
  const Item* lookup(const Module& from, const std::string& name) const;
  // The module that defines a block.
  const Module* moduleOf(const syntax::BlockDecl* block) const;
  // A package constant by its full name (`llama.rope.THETA`) as this program
  // sees it, after nest.toml's [constants]: its value when it is a number
  // literal (negated or not); nullopt for no such constant or another value.
  std::optional<double> constantValue(const std::string& fullName) const;

 private:
  friend class Stdlib;
  const Module* loadModule(const std::string& name, const std::string& path, SourceRange usedAt,
                           const std::string* text = nullptr, const std::string& crate = {});
  void resolveImports(Module& module);
  void collectItems(Module& module);
  // The file a `use` path names and the crate it belongs to; empty when the
  // first part names no package (reported).
  std::string pathFor(const std::vector<syntax::Ident>& path, const Module& from, std::string& moduleName,
                      std::string& crate);
  bool readToml(const std::string& dir);
  bool readDependencies(const std::string& dir, const std::string& manifest, int depth);
  const Crate* findCrate(const std::string& name) const;
  // [replace]: the item bound where `original` (`llama.rope.tables`) is imported.
  const Item* replacementFor(const std::string& original, SourceRange usedAt);
  void applyConstants();
  void checkReplacementsUsed();

  struct Replacement {
    std::string target;  // `std.nn.rope.rotary_tables`
    std::string origin;  // for messages
    bool used = false;
  };
  struct ConstantSetting {
    double number = 0;
    bool isInteger = false;
    bool isBool = false;
    std::string origin;
  };
  std::map<std::string, Replacement> replacements_;
  std::map<std::string, ConstantSetting> constantSettings_;

  SourceManager& sources_;
  Diagnostics& diags_;
  std::string stdlibDir_;
  std::shared_ptr<const Stdlib> stdlib_;
  std::string crateDir_;  // src/ of the package
  Package package_;
  std::vector<std::unique_ptr<Module>> modules_;
  std::map<std::string, const Module*> byPath_;
  std::map<const syntax::BlockDecl*, const Module*> blockModules_;
  const Module* root_ = nullptr;
};

}  // namespace linnet::sema
