// A CUDA artifact's model.so, loaded with dlopen for one executable.
//
// The launch shim in model.so keeps the table it was bound to in static
// variables, so one loaded copy of the library can serve one executable
// only. dlopen hands back the copy already loaded for the same file; when
// that copy is in use, a private copy of the file is loaded instead (copied
// to a temporary folder that is removed at once: the mapping outlives the
// name).
#pragma once

#include <filesystem>
#include <string>

namespace linnet::device::cuda {

class ModelLibrary {
 public:
  // Throws std::runtime_error naming the file when it cannot be loaded.
  explicit ModelLibrary(const std::filesystem::path& path);
  ~ModelLibrary();
  ModelLibrary(const ModelLibrary&) = delete;
  ModelLibrary& operator=(const ModelLibrary&) = delete;

  // The symbol's address, or null.
  void* find(const std::string& symbol) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;  // as given, for messages
  void* handle_ = nullptr;
};

}  // namespace linnet::device::cuda
