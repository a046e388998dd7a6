// The runtime's device layer (in the manner of IREE's HAL): where compiled
// code runs and where its buffers live. linnet::nest's compiled backend is
// written against this interface only; each device is a folder here with a
// driver listed in registry.cpp (host/: this machine's CPU, through dlopen).
//
// Host memory crosses over through import/importOutput/read, which a device
// that can address host memory (the host) implements without copying.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>

#include "artifact/manifest.h"
#include "base/random_fill.h"
#include "device/buffer.h"
#include "device/executable.h"

namespace linnet::device {

class Device {
 public:
  virtual ~Device() = default;

  // `bytes` of device memory, zeroed.
  virtual BufferPtr allocate(std::size_t bytes) = 0;
  // Host memory the device will read (inputs, params): used in place where
  // the device can (the host, when `alignment`-aligned), else copied. `owner`
  // keeps the bytes alive as long as the buffer; it may be null when the
  // caller keeps them alive longer.
  virtual BufferPtr import(std::span<const std::byte> bytes, std::shared_ptr<const void> owner,
                           std::size_t alignment) = 0;
  // Host memory the device will write (outputs): used in place where the
  // device can, else a device buffer of that size for read() to copy back.
  // The bytes must outlive the buffer.
  virtual BufferPtr importOutput(std::span<std::byte> bytes) = 0;
  // Host bytes into a buffer at `offset`.
  virtual void write(Buffer& to, std::size_t offset, std::span<const std::byte> bytes) = 0;
  // A buffer's bytes into host memory; nothing to copy when `into` is the
  // buffer's own memory (an output imported in place).
  virtual void read(const Buffer& from, std::span<std::byte> into) = 0;
  // `into.size()` bytes of a buffer from `offset` (one layer of a stacked
  // param); past the end is std::out_of_range.
  virtual void readAt(const Buffer& from, std::size_t offset, std::span<std::byte> into) = 0;
  virtual void zero(Buffer& buffer) = 0;
  // The seeded random values of `fill` (base/random_fill.h) into `to` at
  // byte `offset`, drawn where the buffer lives: the same bits on every
  // device (--random-weights without 16 GB crossing over to a GPU).
  virtual void fillRandom(Buffer& to, std::size_t offset, const RandomFill& fill) = 0;
  // How many threads the code this device loads may use; 0, the default:
  // all cores. A device that runs code elsewhere ignores it.
  virtual void setThreads(int threads) { (void)threads; }
  // Whether a buffer's address() is host memory the runtime may read and
  // write directly (the host device), not only through write() and read().
  virtual bool hostAddressable() const { return false; }
  // The device memory's bandwidth as a device-to-device copy of `bytes`
  // measures it, now: bytes read plus bytes written per second, the best of
  // `reps` copies. nullopt for a device whose memory is the host's (the
  // bench measures that itself).
  virtual std::optional<double> copyBandwidth(std::size_t bytes, int reps) {
    (void)bytes, (void)reps;
    return std::nullopt;
  }

  // Loads the code of the artifact folder `dir`, whose manifest is
  // `manifest` (built for this device's target), and runs its init. Throws
  // std::runtime_error naming the folder on failure.
  virtual std::unique_ptr<Executable> load(const artifact::Manifest& manifest, const std::filesystem::path& dir) = 0;
};

}  // namespace linnet::device
