// The test artifact of the CUDA device's tests: cuda_test_model.c built as
// model.so (LINNET_TEST_CUDA_MODEL) and its manifest, made here; and the
// check of a device's random values.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "artifact/manifest.h"
#include "base/random_fill.h"
#include "device/device.h"

namespace linnet::cuda_test {

// Entries in the manifest's order; each takes x (input), acc (state), y (output), all f32[n].
enum Entry : std::size_t { Twice, Accumulate, Fill, Constant, FromInit, Missing, ReadFirst };

// What `f` throws, or "(no exception)".
inline std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

// `n` floats of `b`, read back from the device.
inline std::vector<float> readFloats(device::Device& d, const device::Buffer& b, std::size_t n) {
  std::vector<float> out(n);
  d.read(b, std::as_writable_bytes(std::span(out)));
  return out;
}

inline std::filesystem::path artifactDir() { return std::filesystem::path(LINNET_TEST_CUDA_MODEL).parent_path(); }

inline artifact::TensorSpec f32(const char* name, int64_t n) {
  artifact::TensorSpec spec;
  spec.name = name;
  spec.dtype = DType::F32;
  spec.shape = {n};
  return spec;
}

inline artifact::Manifest manifest(int64_t n) {
  artifact::Manifest m;
  m.package = "cuda_test";
  m.target = "cuda";
  m.library = std::filesystem::path(LINNET_TEST_CUDA_MODEL).filename().string();
  m.init = "linnet_test_init";
  m.states = {f32("acc", n)};
  for (const char* name : {"twice", "accumulate", "fill", "constant", "from_init", "missing", "read_first"}) {
    artifact::Entry e;
    e.name = name;
    e.symbol = std::string("linnet_call_") + name;
    e.inputs = {f32("x", n)};
    e.outputs = {f32("y", n)};
    m.entries.push_back(e);
  }
  artifact::recordLibrary(m, artifactDir());
  return m;
}

inline std::span<const std::byte> bytesOf(const std::vector<float>& v) { return std::as_bytes(std::span(v)); }

// Seeded random values drawn by `d` (Device::fillRandom) into a buffer at
// an offset, for each float type, against the host's drawRandom: what
// differs, one line each (empty: the same bits, and zeros around them).
inline std::vector<std::string> randomFillProblems(device::Device& d, std::uint64_t count) {
  std::vector<std::string> problems;
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    RandomFill fill{t, count, 0x243f6a8885a308d3ull, t == DType::F32 ? 1.0 : 0.0, 0.02};
    std::size_t size = byteSize(t), offset = 64 * size, bytes = count * size;
    device::BufferPtr b = d.allocate(bytes + 128 * size);
    d.fillRandom(*b, offset, fill);
    std::vector<std::byte> got(b->size()), want(bytes);
    d.read(*b, got);
    drawRandom(fill, want);
    if (std::memcmp(got.data() + offset, want.data(), bytes) != 0)
      problems.push_back(std::string(name(t)) + ": values differ from the host's");
    for (std::size_t i = 0; i < got.size(); ++i)
      if ((i < offset || i >= offset + bytes) && got[i] != std::byte{0}) {
        problems.push_back(std::string(name(t)) + ": a byte outside the values was written");
        break;
      }
  }
  return problems;
}

// Runs one entry as the compiled backend does: x imported, y imported as an
// output and read back after the call.
struct Runner {
  device::Device& device;
  device::Executable& executable;
  device::BufferPtr acc;
  std::vector<int64_t> shape;

  std::vector<float> call(Entry entry, const std::vector<float>& x) {
    std::vector<float> y(x.size(), -1.0f);
    device::BufferPtr in = device.import(bytesOf(x), nullptr, 4);
    device::BufferPtr out = device.importOutput(std::as_writable_bytes(std::span(y)));
    device::Argument args[] = {{in.get(), shape}, {acc.get(), shape}, {out.get(), shape}};
    executable.call(entry, args);
    device.read(*out, std::as_writable_bytes(std::span(y)));
    return y;
  }
};

}  // namespace linnet::cuda_test
