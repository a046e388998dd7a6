#include "device/cuda/model_library.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <mutex>
#include <set>
#include <stdexcept>
#include <system_error>

namespace linnet::device::cuda {

namespace {

namespace fs = std::filesystem;

// The handles some executable has bound. Never destroyed: an executable may
// be dropped by a static's destructor at exit.
std::mutex& inUseMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
std::set<void*>& inUse() {
  static auto* handles = new std::set<void*>;
  return *handles;
}

void* load(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw std::runtime_error(fmt::format("{}: cannot load: {}", path, dlerror()));
  return handle;
}

void* loadPrivateCopy(const fs::path& path) {
  std::string pattern = (fs::temp_directory_path() / "linnet-cuda-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error(fmt::format("{}: cannot make a folder for a second copy in {}", path.string(),
                                         fs::temp_directory_path().string()));
  fs::path dir = pattern;
  std::error_code ignored;
  try {
    fs::copy_file(path, dir / path.filename());
    void* handle = load((dir / path.filename()).string());
    fs::remove_all(dir, ignored);
    return handle;
  } catch (...) {
    fs::remove_all(dir, ignored);
    throw;
  }
}

}  // namespace

ModelLibrary::ModelLibrary(const fs::path& path) : path_(path.string()) {
  std::lock_guard<std::mutex> lock(inUseMutex());
  handle_ = load(path_);
  if (inUse().count(handle_)) {
    dlclose(handle_);
    handle_ = loadPrivateCopy(path);
  }
  inUse().insert(handle_);
}

ModelLibrary::~ModelLibrary() {
  std::lock_guard<std::mutex> lock(inUseMutex());
  inUse().erase(handle_);
  dlclose(handle_);
}

void* ModelLibrary::find(const std::string& symbol) const { return dlsym(handle_, symbol.c_str()); }

}  // namespace linnet::device::cuda
