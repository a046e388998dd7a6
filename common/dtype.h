// The element types of tensors, one enum for the compiler and the runtime
// (as ggml_type is for GGUF, the loader and every ggml backend).
//
// The first six are the language's dtypes (docs/language.md): every value a
// Linnet program computes has one of them. The rest are storage types that
// checkpoints and .npy files may hold (safetensors' F64, I8, U8, I16); they
// can be read and converted, never computed with. File formats keep their own
// codes and map them here: safetensors' "BF16" (weights/dtype.h), GGUF's
// ggml types (gguf/types.h), MLIR's element types (ir/mlirgen.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace linnet {

enum class DType : std::uint8_t { F32, BF16, F16, I32, I64, Bool, F64, I8, U8, I16 };

inline constexpr DType kAllDTypes[] = {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64,
                                       DType::Bool, DType::F64, DType::I8, DType::U8, DType::I16};

// "f32", "bf16", "f16", "i32", "i64", "bool", "f64", "i8", "u8", "i16".
const char* name(DType t);
// Any of the names above; nullopt for anything else.
std::optional<DType> dtypeNamed(std::string_view name);
// One of the language's six (f32, bf16, f16, i32, i64, bool).
bool isLanguageType(DType t);
// The language's dtype of that name; nullopt for storage-only types ("f64").
std::optional<DType> languageDTypeNamed(std::string_view name);

// Bytes per element: 4, 2, 2, 4, 8, 1, 8, 1, 1, 2.
std::size_t byteSize(DType t);
bool isFloat(DType t);  // f32, bf16, f16, f64
bool isInt(DType t);    // i32, i64, i8, u8, i16 (not bool)

// Why a literal (a number written on a command line, a weak scalar) cannot
// become an element of `to` unchanged, for a message after "the literal":
// "4294967296 is outside the range of i32 (-2147483648..2147483647)",
// "1.5 is not an integer (i32)", "1e+06 is beyond the largest f16 (65504)".
// Empty when it fits (a float literal may round to the nearest float).
std::string literalMisfit(DType to, int64_t value);
std::string literalMisfit(DType to, double value);

}  // namespace linnet
