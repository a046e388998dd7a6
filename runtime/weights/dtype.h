// Element types as checkpoints spell them, and shapes.
//
// The types themselves are linnet::DType (common/dtype.h): the six Linnet
// dtypes plus the storage types found in safetensors files (F64, I8, U8,
// I16). Safetensors spells them "F32", "BF16", "BOOL", ...; Linnet "f32",
// "bf16", "bool", ... (linnet::name).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.h"

namespace linnet::weights {

// "F32", "BF16", "F16", "I32", "I64", "BOOL", "F64", "I8", "U8", "I16".
std::string_view safetensorsName(DType t);
// Exact spellings only; nullopt for anything else.
std::optional<DType> parseSafetensorsDType(std::string_view s);
// "F32, BF16, ..." for messages.
std::string supportedSafetensorsDTypes();

using Shape = std::vector<std::int64_t>;

// "[2, 3]"; "[]" for a scalar.
std::string shapeString(const Shape& s);
// Product of the dimensions, or nullopt when a dimension is negative or the
// product overflows int64.
std::optional<std::int64_t> elementCount(const Shape& s);

}  // namespace linnet::weights
