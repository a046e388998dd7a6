// Helpers shared by the linnet_weights tests: fixture paths, a scratch
// folder, and hand-made safetensors bytes for corrupt-file tests.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "weights/mapped_file.h"

namespace linnet::weights::test {

inline std::filesystem::path dataDir() { return std::filesystem::path(LINNET_TEST_DATA) / "weights"; }

using Bytes = std::vector<std::byte>;

inline Bytes toBytes(std::string_view s) {
  Bytes b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

inline Bytes readBytes(const std::filesystem::path& p) {
  MappedFile m = MappedFile::open(p);
  return Bytes(m.bytes().begin(), m.bytes().end());
}

// A fresh folder under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("linnet_weights_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

  std::filesystem::path write(const std::string& name, std::span<const std::byte> bytes) const {
    auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  std::filesystem::path write(const std::string& name, std::string_view text) const {
    return write(name, toBytes(text));
  }

 private:
  std::filesystem::path path_;
};

// 8-byte little-endian header length, the header text, then `dataSize`
// bytes (0, 1, 2, ...).
inline Bytes safetensorsBytes(std::string_view header, std::size_t dataSize, std::uint64_t lengthField = UINT64_MAX) {
  std::uint64_t n = lengthField == UINT64_MAX ? header.size() : lengthField;
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::byte>((n >> (8 * i)) & 0xff));
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (std::size_t i = 0; i < dataSize; ++i) out.push_back(static_cast<std::byte>(i & 0xff));
  return out;
}

template <class T>
std::vector<T> valuesOf(std::span<const std::byte> data) {
  std::vector<T> out(data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), data.data(), out.size() * sizeof(T));
  return out;
}

}  // namespace linnet::weights::test
