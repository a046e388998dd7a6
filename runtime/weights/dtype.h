// Element types of checkpoint tensors, parameters and .npy arrays.
//
// The six Linnet dtypes (f32, bf16, f16, i32, i64, bool) plus the other
// types found in safetensors files (F64, I8, U8, I16). Two spellings:
// safetensors' ("F32", "BF16", "BOOL", ...) and Linnet's ("f32", "bf16",
// "bool", ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace linnet::weights {

enum class DType : std::uint8_t { F32, BF16, F16, I32, I64, Bool, F64, I8, U8, I16 };

inline constexpr DType kAllDTypes[] = {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64,
                                       DType::Bool, DType::F64, DType::I8, DType::U8, DType::I16};

// "F32", "BF16", "F16", "I32", "I64", "BOOL", "F64", "I8", "U8", "I16".
std::string_view safetensorsName(DType t);
// "f32", "bf16", "f16", "i32", "i64", "bool", "f64", "i8", "u8", "i16".
std::string_view linnetName(DType t);
// Bytes per element: 4, 2, 2, 4, 8, 1, 8, 1, 1, 2.
std::size_t dtypeSize(DType t);
bool isFloat(DType t);

// Exact spellings only; nullopt for anything else.
std::optional<DType> parseSafetensorsDType(std::string_view s);
std::optional<DType> parseLinnetDType(std::string_view s);

// "F32, BF16, ..." for messages.
std::string supportedSafetensorsDTypes();

using Shape = std::vector<std::int64_t>;

// "[2, 3]"; "[]" for a scalar.
std::string shapeString(const Shape& s);
// Product of the dimensions, or nullopt when a dimension is negative or the
// product overflows int64.
std::optional<std::int64_t> elementCount(const Shape& s);

}  // namespace linnet::weights
