// Helpers shared by the linnet_weights tests: fixture paths, a scratch
// folder, and hand-made safetensors bytes for corrupt-file tests.
#pragma once


#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "temp_dir.h"
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

using linnet::test::TempDir;

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
