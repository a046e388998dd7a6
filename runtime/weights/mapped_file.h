// A read-only memory mapping of one whole regular file.
//
// Opening checks that the path exists, is a regular file (not a directory,
// FIFO or device) and can be read; an empty file gives an empty span and no
// mapping. The bytes stay valid while the MappedFile lives. As with any
// mmap, a file truncated by another process while mapped can fault on
// access; files are expected not to change while in use.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>

namespace linnet::weights {

class MappedFile {
 public:
  // Throws Error naming the path and the reason (missing, a directory, not
  // readable, ...).
  static MappedFile open(const std::filesystem::path& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void reset() noexcept;

  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace linnet::weights
