#include "sema/stdlib.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "sema/checker.h"

namespace fs = std::filesystem;

namespace linnet::sema {

Stdlib::Stdlib(std::string dir) : dir_(std::move(dir)), diags_(sources_), program_(sources_, diags_, dir_) {}

std::shared_ptr<const Stdlib> Stdlib::load(const std::string& dir, std::string& errors) {
  std::shared_ptr<Stdlib> lib(new Stdlib(dir));
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(fs::path(dir) / "std", ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().extension() == ".linnet") files.push_back(it->path());
  if (ec || files.empty()) {
    errors = dir + ": no standard library here (expected std/**/*.linnet)";
    return nullptr;
  }
  std::sort(files.begin(), files.end());  // file ids in a fixed order
  for (const fs::path& file : files) {
    // std/nn/attention.linnet is `std.nn.attention`, as a `use` path names it.
    std::string name;
    const fs::path relative = fs::relative(file, dir).replace_extension();
    for (const fs::path& part : relative)
      name += (name.empty() ? "" : ".") + part.string();
    lib->program_.loadModule(name, file.string(), {});
  }
  if (!lib->diags_.hasErrors()) {
    Checker checker(lib->program_, lib->diags_);
    checker.checkDefinitions();
  }
  if (lib->diags_.hasErrors()) {
    errors = lib->diags_.render();
    return nullptr;
  }
  return lib;
}

const Module* Stdlib::find(const std::string& canonicalPath) const {
  auto it = program_.byPath_.find(canonicalPath);
  return it == program_.byPath_.end() ? nullptr : it->second;
}

}  // namespace linnet::sema
