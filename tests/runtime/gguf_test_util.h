// Helpers shared by the linnet_gguf tests: fixture paths, a scratch folder,
// raw little-endian reads, and a small GGUF writer for hand-made (and
// deliberately broken) files.
#pragma once


#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "temp_dir.h"

namespace linnet::gguf::test {

inline std::filesystem::path dataDir() { return std::filesystem::path(LINNET_TEST_DATA) / "gguf"; }

using Bytes = std::vector<std::byte>;

inline Bytes readFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Bytes b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

inline nlohmann::json readJson(const std::filesystem::path& p) {
  std::ifstream f(p);
  return nlohmann::json::parse(f);
}

template <class T>
std::vector<T> readValues(const std::filesystem::path& p) {
  Bytes b = readFile(p);
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

inline std::uint32_t bitsOf(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

using linnet::test::TempDir;

// Appends little-endian values.
struct Out {
  Bytes b;
  template <class T>
  Out& put(T v) {
    return append(&v, sizeof(T));
  }
  Out& str(std::string_view s) {
    put<std::uint64_t>(s.size());
    return append(s.data(), s.size());
  }
  Out& raw(const Bytes& x) { return append(x.data(), x.size()); }
  Out& append(const void* p, std::size_t n) {
    const std::size_t at = b.size();
    b.resize(at + n);
    if (n) std::memcpy(b.data() + at, p, n);
    return *this;
  }
};

// Builds a GGUF file piece by piece; the counts in the header are those of
// the pieces added unless overridden.
struct Builder {
  std::uint32_t version = 3;
  std::uint64_t alignment = 32;
  Out kv, ti, data;
  std::uint64_t kvCount = 0, tensorCount = 0;
  std::optional<std::uint64_t> kvCountOverride, tensorCountOverride;

  // A key with raw value bytes (type given).
  Builder& key(std::string_view k, std::uint32_t type, const Bytes& value) {
    kv.str(k).put(type).raw(value);
    ++kvCount;
    return *this;
  }
  Builder& u32(std::string_view k, std::uint32_t v) { return key(k, 4, Out().put(v).b); }
  Builder& i32(std::string_view k, std::int32_t v) { return key(k, 5, Out().put(v).b); }
  Builder& string(std::string_view k, std::string_view v) { return key(k, 8, Out().str(v).b); }
  Builder& align(std::uint32_t a) {
    alignment = a;
    return u32("general.alignment", a);
  }
  // A tensor info only (data added separately, if at all).
  Builder& info(std::string_view name, std::vector<std::uint64_t> dims, std::uint32_t type, std::uint64_t offset) {
    ti.str(name).put(static_cast<std::uint32_t>(dims.size()));
    for (auto d : dims) ti.put(d);
    ti.put(type).put(offset);
    ++tensorCount;
    return *this;
  }
  // An F32 tensor with its data, at the next aligned offset.
  Builder& f32(std::string_view name, std::vector<std::uint64_t> dims, const std::vector<float>& values) {
    while (data.b.size() % alignment) data.b.push_back(std::byte{0});
    info(name, std::move(dims), 0, data.b.size());
    for (float v : values) data.put(v);
    return *this;
  }
  Bytes header() const {
    Out h;
    h.b = {std::byte{'G'}, std::byte{'G'}, std::byte{'U'}, std::byte{'F'}};
    h.put(version).put(tensorCountOverride.value_or(tensorCount)).put(kvCountOverride.value_or(kvCount));
    return h.b;
  }
  Bytes build() const {
    Out o;
    o.raw(header()).raw(kv.b).raw(ti.b);
    if (tensorCount == 0 && data.b.empty()) return o.b;  // no padding: the file ends with the metadata
    while (o.b.size() % alignment) o.b.push_back(std::byte{0});
    o.raw(data.b);
    return o.b;
  }
};

}  // namespace linnet::gguf::test
