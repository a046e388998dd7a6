#include "export/gguf_writer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <type_traits>

#include "export/quantize.h"

namespace linnet::exporter {

namespace {

void append(std::vector<std::byte>& out, const void* data, std::size_t size) {
  std::size_t at = out.size();
  out.resize(at + size);
  if (size) std::memcpy(out.data() + at, data, size);
}

template <class T>
void put(std::vector<std::byte>& out, T v) {
  static_assert(std::is_trivially_copyable_v<T>);
  append(out, &v, sizeof(T));
}

void putString(std::vector<std::byte>& out, const std::string& s) {
  put<std::uint64_t>(out, s.size());
  append(out, s.data(), s.size());
}

void putArray(std::vector<std::byte>& out, const gguf::Array& a);

template <class T>
void putItems(std::vector<std::byte>& out, const std::vector<T>& items) {
  for (const auto& v : items) {
    if constexpr (std::is_same_v<T, std::string>) putString(out, v);
    else if constexpr (std::is_same_v<T, gguf::Array>) putArray(out, v);
    else if constexpr (std::is_same_v<T, bool>) put<std::uint8_t>(out, v ? 1 : 0);
    else put<T>(out, v);
  }
}

void putArray(std::vector<std::byte>& out, const gguf::Array& a) {
  put<std::uint32_t>(out, static_cast<std::uint32_t>(a.type()));
  put<std::uint64_t>(out, a.size());
  std::visit([&](const auto& items) { putItems(out, items); }, a.items);
}

void putValue(std::vector<std::byte>& out, const gguf::Value& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) putString(out, x);
        else if constexpr (std::is_same_v<T, gguf::Array>) putArray(out, x);
        else if constexpr (std::is_same_v<T, bool>) put<std::uint8_t>(out, x ? 1 : 0);
        else put<T>(out, x);
      },
      v.data);
}

std::uint64_t alignUp(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

}  // namespace

std::vector<std::byte> encodeValue(const gguf::Value& value) {
  std::vector<std::byte> out;
  putValue(out, value);
  return out;
}

GgufWriter::~GgufWriter() {
  if (file_) std::fclose(file_);
  if (!temp_.empty() && !finished_) {
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

void GgufWriter::add(std::string key, gguf::Value value) {
  for (const auto& [k, v] : metadata_)
    if (k == key) throw std::invalid_argument(fmt::format("metadata key '{}' added twice", key));
  if (key == "general.alignment") {
    auto a = value.asInt();
    if (value.type() != gguf::ValueType::U32 || !a || *a <= 0 || (*a & (*a - 1)))
      throw std::invalid_argument("general.alignment must be a UINT32 power of two");
    alignment_ = static_cast<std::uint64_t>(*a);
    // Offsets already planned move to the new alignment.
    dataSize_ = 0;
    for (PlannedTensor& t : tensors_) {
      t.offset = dataSize_;
      dataSize_ = alignUp(dataSize_ + t.bytes, alignment_);
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

const PlannedTensor& GgufWriter::addTensor(std::string name, gguf::GgmlType type, std::vector<std::int64_t> shape) {
  if (file_) throw std::invalid_argument("tensors are added before the file is opened");
  for (const PlannedTensor& t : tensors_)
    if (t.name == name) throw std::invalid_argument(fmt::format("tensor '{}' added twice", name));
  if (shape.empty() || shape.size() > gguf::kMaxDims)
    throw std::invalid_argument(fmt::format("tensor '{}': {} dims (1 to {})", name, shape.size(), gguf::kMaxDims));
  const gguf::TypeTraits& tr = gguf::typeTraits(type);
  if (shape.back() % tr.blockSize != 0)
    throw std::invalid_argument(fmt::format("tensor '{}': rows of {} are not whole {} blocks of {}", name,
                                            shape.back(), tr.name, tr.blockSize));
  std::uint64_t rows = 1;
  for (std::size_t k = 0; k + 1 < shape.size(); ++k) rows *= static_cast<std::uint64_t>(shape[k]);
  PlannedTensor t{std::move(name), type, std::move(shape), dataSize_, 0};
  t.bytes = rows * rowBytes(type, t.shape.back());
  dataSize_ = alignUp(dataSize_ + t.bytes, alignment_);
  tensors_.push_back(std::move(t));
  return tensors_.back();
}

std::uint64_t GgufWriter::headerSize() const {
  std::uint64_t n = 4 + 4 + 8 + 8;
  for (const auto& [k, v] : metadata_) n += 8 + k.size() + 4 + encodeValue(v).size();
  for (const PlannedTensor& t : tensors_) n += 8 + t.name.size() + 4 + 8 * t.shape.size() + 4 + 8;
  return alignUp(n, alignment_);
}

std::uint64_t GgufWriter::fileSize() const {
  // The last tensor's padding is written too, as gguf-py does.
  return headerSize() + dataSize_;
}

void GgufWriter::writeBytes(const void* data, std::size_t size) {
  if (size && std::fwrite(data, 1, size, file_) != size)
    throw gguf::Error(fmt::format("{}: cannot write: {}", temp_.string(), std::strerror(errno)));
}

void GgufWriter::open(const std::filesystem::path& destination) {
  destination_ = destination;
  std::filesystem::path dir = destination.parent_path();
  temp_ = (dir.empty() ? std::filesystem::path(".") : dir) /
          fmt::format(".{}.{}.part", destination.filename().string(), ::getpid());
  file_ = std::fopen(temp_.c_str(), "wb");
  if (!file_) {
    std::string why = std::strerror(errno);
    temp_.clear();
    throw gguf::Error(fmt::format("{}: cannot create a temporary file beside it: {}", destination.string(), why));
  }
  std::vector<std::byte> h;
  append(h, "GGUF", 4);
  put<std::uint32_t>(h, 3);
  put<std::uint64_t>(h, tensors_.size());
  put<std::uint64_t>(h, metadata_.size());
  for (const auto& [k, v] : metadata_) {
    putString(h, k);
    put<std::uint32_t>(h, static_cast<std::uint32_t>(v.type()));
    putValue(h, v);
  }
  for (const PlannedTensor& t : tensors_) {
    putString(h, t.name);
    put<std::uint32_t>(h, static_cast<std::uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) put<std::uint64_t>(h, static_cast<std::uint64_t>(*it));
    put<std::uint32_t>(h, static_cast<std::uint32_t>(t.type));
    put<std::uint64_t>(h, t.offset);
  }
  h.resize(alignUp(h.size(), alignment_), std::byte{0});
  writeBytes(h.data(), h.size());
}

void GgufWriter::writeTensor(std::span<const std::byte> bytes) {
  if (!file_) throw std::logic_error("GgufWriter::writeTensor before open");
  if (next_ >= tensors_.size()) throw std::logic_error("GgufWriter::writeTensor: more tensors than planned");
  const PlannedTensor& t = tensors_[next_];
  if (bytes.size() != t.bytes)
    throw std::logic_error(fmt::format("tensor '{}': {} bytes given, {} planned", t.name, bytes.size(), t.bytes));
  writeBytes(bytes.data(), bytes.size());
  static const std::vector<std::byte> zeros(4096);
  std::uint64_t pad = alignUp(t.bytes, alignment_) - t.bytes;
  while (pad) {
    std::size_t n = std::min<std::uint64_t>(pad, zeros.size());
    writeBytes(zeros.data(), n);
    pad -= n;
  }
  ++next_;
}

void GgufWriter::finish() {
  if (!file_) throw std::logic_error("GgufWriter::finish before open");
  if (next_ != tensors_.size())
    throw std::logic_error(fmt::format("GgufWriter::finish after {} of {} tensors", next_, tensors_.size()));
  bool ok = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  std::string why = ok ? "" : std::strerror(errno);
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok) throw gguf::Error(fmt::format("{}: cannot write: {}", temp_.string(), why.empty() ? "close failed" : why));
  std::error_code ec;
  std::filesystem::rename(temp_, destination_, ec);
  if (ec) throw gguf::Error(fmt::format("{}: cannot rename {} onto it: {}", destination_.string(), temp_.string(), ec.message()));
  finished_ = true;
}

}  // namespace linnet::exporter
