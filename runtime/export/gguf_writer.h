// Writing GGUF v3 files (the layout runtime/gguf/gguf.h reads): metadata
// key/values of any GGUF value type, tensor infos, then the data section,
// every tensor's bytes aligned to `general.alignment` (32 unless given).
//
// The file is written to a temporary file beside the destination and renamed
// into place only once complete (rename replaces a destination atomically),
// so an existing file is never half-overwritten and a failed export leaves
// nothing behind: the destructor removes an unfinished temporary file.
//
//   GgufWriter w;
//   w.add("general.architecture", Value{std::string("llama")});
//   w.addTensor("token_embd.weight", GgmlType::F32, {64, 64});  // row-major shape
//   w.open("model.gguf");   // writes the header; tensors must be added before
//   w.writeTensor(bytes);   // in the order added, exactly each one's size
//   w.finish();             // flush, close, rename into place
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"

namespace linnet::exporter {

struct PlannedTensor {
  std::string name;
  gguf::GgmlType type = gguf::GgmlType::F32;
  std::vector<std::int64_t> shape;  // row-major (outermost first); written innermost first
  std::uint64_t offset = 0;         // in the data section
  std::uint64_t bytes = 0;
};

class GgufWriter {
 public:
  GgufWriter() = default;
  GgufWriter(const GgufWriter&) = delete;
  GgufWriter& operator=(const GgufWriter&) = delete;
  ~GgufWriter();  // removes an unfinished temporary file

  // Metadata, in the order added. A key added twice: std::invalid_argument.
  void add(std::string key, gguf::Value value);
  // A tensor: its size comes from the type's blocks (the innermost dim must
  // be a whole number of blocks, else std::invalid_argument).
  const PlannedTensor& addTensor(std::string name, gguf::GgmlType type, std::vector<std::int64_t> shape);

  const std::vector<std::pair<std::string, gguf::Value>>& metadata() const { return metadata_; }
  const std::vector<PlannedTensor>& tensors() const { return tensors_; }
  std::uint64_t alignment() const { return alignment_; }
  // The whole file's size once written.
  std::uint64_t fileSize() const;

  // Creates the temporary file beside `destination` and writes everything
  // before the data section. Throws gguf::Error naming the file.
  void open(const std::filesystem::path& destination);
  // The next tensor's bytes (then its padding).
  void writeTensor(std::span<const std::byte> bytes);
  // After the last tensor: flushes, closes and renames onto the destination.
  void finish();

  const std::filesystem::path& temporaryPath() const { return temp_; }

 private:
  void writeBytes(const void* data, std::size_t size);
  std::uint64_t headerSize() const;

  std::vector<std::pair<std::string, gguf::Value>> metadata_;
  std::vector<PlannedTensor> tensors_;
  std::uint64_t alignment_ = gguf::kDefaultAlignment;
  std::uint64_t dataSize_ = 0;
  std::filesystem::path destination_, temp_;
  std::FILE* file_ = nullptr;
  std::size_t next_ = 0;
  bool finished_ = false;
};

// The GGUF encoding of a metadata value (without its type tag), for tests.
std::vector<std::byte> encodeValue(const gguf::Value& value);

}  // namespace linnet::exporter
