// Reading GGUF files (llama.cpp's model format), versions 2 and 3,
// little-endian.
//
// Layout: "GGUF", u32 version, u64 tensor count, u64 metadata count; the
// metadata key/values (key: u64 length + bytes; u32 value type; value); the
// tensor infos (name, u32 n_dims, u64 dims innermost first, u32 ggml type,
// u64 offset into the data section); padding to the alignment
// (`general.alignment`, default 32); the data section.
//
// Everything is validated while parsing, before anything is handed out:
// every read stays inside the file, counts and lengths are checked against
// the bytes left before anything is allocated for them, value types and
// ggml types must be known, keys and tensor names unique, arrays nested at
// most kMaxArrayDepth deep, `general.alignment` a u32 power of two, dims at
// most 4 with a product that fits int64, the innermost dim a whole number of
// blocks, and each tensor's bytes aligned, inside the file and overlapping
// no other tensor's. Every problem throws Error naming the file and what is
// wrong where.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "gguf/error.h"
#include "gguf/types.h"

namespace linnet::gguf {

// GGUF metadata value types; the numbers are the file's.
enum class ValueType : std::uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
// "UINT8", "INT8", ..., "STRING", "ARRAY", ..., "FLOAT64" (GGUF's names);
// "unknown value type N" otherwise.
std::string valueTypeName(std::uint32_t type);
inline std::string valueTypeName(ValueType t) { return valueTypeName(static_cast<std::uint32_t>(t)); }

inline constexpr int kMaxArrayDepth = 8;
inline constexpr std::uint32_t kMaxDims = 4;
inline constexpr std::uint64_t kDefaultAlignment = 32;

// An array: elements of one type, held in the vector of that type (the
// variant's index is the element type's number).
struct Array {
  using Items = std::variant<std::vector<std::uint8_t>, std::vector<std::int8_t>, std::vector<std::uint16_t>,
                             std::vector<std::int16_t>, std::vector<std::uint32_t>, std::vector<std::int32_t>,
                             std::vector<float>, std::vector<bool>, std::vector<std::string>, std::vector<Array>,
                             std::vector<std::uint64_t>, std::vector<std::int64_t>, std::vector<double>>;
  Items items;

  ValueType type() const { return static_cast<ValueType>(items.index()); }
  std::size_t size() const;
  // The elements as a std::vector<T>; T must be the element type's C++ type
  // exactly (std::uint8_t for U8, bool for Bool, Array for Array, ...), else
  // std::bad_variant_access.
  template <class T>
  const std::vector<T>& as() const {
    return std::get<std::vector<T>>(items);
  }
};

// One metadata value; the variant's index is the value type's number.
struct Value {
  using Data = std::variant<std::uint8_t, std::int8_t, std::uint16_t, std::int16_t, std::uint32_t, std::int32_t, float,
                            bool, std::string, Array, std::uint64_t, std::int64_t, double>;
  Data data;

  ValueType type() const { return static_cast<ValueType>(data.index()); }
  bool isInteger() const;
  // Any integer type whose value fits int64; nullopt otherwise.
  std::optional<std::int64_t> asInt() const;
  // F32 or F64; nullopt otherwise.
  std::optional<double> asFloat() const;
  // Compact text for messages and dumps: 42, -1.5, true, "text", [1, 2, 3].
  // Long arrays and strings are abbreviated after `maxItems` elements.
  std::string toString(std::size_t maxItems = 8) const;
};

class Metadata {
 public:
  // In file order.
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  std::size_t size() const { return entries_.size(); }
  const Value* find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != nullptr; }

  // Typed access. The get* forms throw Error (naming the file, the key, and
  // the type found) when the key is missing or holds another type; the find*
  // forms return nullopt/nullptr for a missing key and throw for a wrong type.
  const std::string& getString(std::string_view key) const;
  const std::string* findString(std::string_view key) const;
  // Any integer type; its value must fit int64.
  std::int64_t getInt(std::string_view key) const;
  std::optional<std::int64_t> findInt(std::string_view key) const;
  // F32 or F64 (integers are accepted too).
  double getFloat(std::string_view key) const;
  std::optional<double> findFloat(std::string_view key) const;
  bool getBool(std::string_view key) const;
  std::optional<bool> findBool(std::string_view key) const;
  // An array whose elements have type `element`.
  const Array& getArray(std::string_view key, ValueType element) const;
  const Array* findArray(std::string_view key, ValueType element) const;

  const std::string& label() const { return label_; }

 private:
  friend class Parser;
  std::string label_;
  std::vector<std::pair<std::string, Value>> entries_;
  std::map<std::string, std::size_t, std::less<>> index_;
};

struct TensorInfo {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<std::uint64_t> dims;   // as stored: innermost first (ggml's ne)
  std::vector<std::int64_t> shape;   // row-major, outermost first (PyTorch/safetensors order)
  std::uint64_t offset = 0;          // from the start of the data section
  std::uint64_t elementCount = 0;
  std::span<const std::byte> data;   // exactly this tensor's bytes, inside the file
  std::size_t index = 0;             // position among the file's tensor infos
};

// "[2, 3]"; "[]" for a scalar.
std::string shapeString(const std::vector<std::int64_t>& shape);

class File {
 public:
  // Memory-maps the file read-only. Throws Error for a missing/unreadable
  // file and anything malformed.
  static File open(const std::filesystem::path& path);
  // Parses bytes held by the caller, who keeps them alive and unchanged as
  // long as this File (or a copy, or tensor data taken from it) is used.
  // `label` names them in messages.
  static File parse(std::span<const std::byte> bytes, std::string label);
  // The same, keeping its own copy of the bytes.
  static File parseCopy(std::span<const std::byte> bytes, std::string label);

  File() = default;  // empty: no metadata, no tensors

  const std::string& label() const;  // the path, or the label given to parse
  std::uint32_t version() const;
  const Metadata& metadata() const;
  // In file order.
  const std::vector<TensorInfo>& tensors() const;
  const TensorInfo* find(std::string_view name) const;
  // Throws Error naming the file and the missing tensor.
  const TensorInfo& at(std::string_view name) const;
  std::uint64_t alignment() const;
  std::uint64_t dataOffset() const;  // where the data section starts in the file
  std::span<const std::byte> bytes() const;
  // `general.architecture`, "" when absent.
  std::string architecture() const;

  // The tensor's values as f32, row-major. Throws Error naming the file, the
  // tensor and its type when the type cannot be dequantized.
  std::vector<float> dequantize(const TensorInfo& t) const;
  void dequantize(const TensorInfo& t, std::span<float> out) const;
  // The tensor in `dtype`: little-endian elements, row-major. Via f32, then
  // rounded to nearest even for bf16/f16; a tensor already stored in `dtype`
  // is copied as is.
  std::vector<std::byte> read(const TensorInfo& t, DType dtype) const;

  struct State;  // opaque; shared by copies

 private:
  std::shared_ptr<const State> state_;
};

// Converts f32 values to `dtype` (little-endian bytes).
std::vector<std::byte> convertF32(std::span<const float> values, DType dtype);

}  // namespace linnet::gguf
