// NumPy .npy files (format versions 1.0, 2.0 and 3.0) for the runtime's
// `--input NAME=@file.npy` and `--output @file.npy`.
//
// Read and written: little-endian, C-order arrays of
//   '<f4' f32   '<f2' f16   '<f8' f64   '<i4' i32   '<i8' i64
//   '<i2' i16   '|i1' i8    '|u1' u8    '|b1' bool
// ('=' and '<' are taken as the same; single-byte types may use any of
// '|', '<', '=').
//
// bfloat16 is not a NumPy dtype. Linnet's convention: a bf16 array is stored
// as '<u2' holding the raw bfloat16 bit patterns (the high 16 bits of the
// float32 value; in NumPy, `(a.astype('<f4').view('<u4') >> 16).astype('<u2')`
// truncates, and `(x.astype('<u4') << 16).view('<f4')` turns them back into
// float32 exactly). writeNpy writes bf16 that way. A '<u2' file is read as
// bf16 only when the reader says bf16 is expected (NpyReadOptions), because
// a '<u2' file on its own could just as well hold integers; otherwise it is
// refused with a message explaining the convention. ml_dtypes' bfloat16
// ('<V2' in the header) is read the same way.
//
// Refused with a clear Error: big-endian data (fix: a.astype('<f4')),
// Fortran order (fix: np.ascontiguousarray(a)), object and structured
// dtypes, complex numbers, wrong magic, truncated or oversized data, and
// bool bytes other than 0 and 1.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "weights/dtype.h"

namespace linnet::weights {

struct NpyArray {
  DType dtype = DType::F32;
  Shape shape;                   // () for a 0-d array
  std::vector<std::byte> data;   // elementCount(shape) x byteSize(dtype), little-endian, C order

  std::int64_t elementCount() const;
};

struct NpyReadOptions {
  // Read '<u2' (and '<V2') arrays as bf16 bit patterns; set it when the
  // value read is known to be bf16 (e.g. an --input whose type is bf16).
  bool u2IsBF16 = false;
  // Refuse storage-only dtypes ('<f8', '|u1', '|i1', '<i2'), naming the file
  // and the fix, where the array becomes a value of the language.
  bool languageTypesOnly = false;
};

// `label` names the data in messages (a path, or "--input tokens").
NpyArray parseNpy(std::span<const std::byte> bytes, std::string_view label, NpyReadOptions options = {});
NpyArray readNpy(const std::filesystem::path& path, NpyReadOptions options = {});

// The .npy bytes for an array (version 1.0, or 2.0 when the header needs
// it), laid out exactly as numpy.save lays them out. `data` must hold
// elementCount(shape) x byteSize(dtype) bytes. Throws Error otherwise.
std::vector<std::byte> encodeNpy(DType dtype, const Shape& shape, std::span<const std::byte> data);
// Writes encodeNpy's bytes to `path` (through a temporary file in the same
// folder, renamed into place).
void writeNpy(const std::filesystem::path& path, DType dtype, const Shape& shape, std::span<const std::byte> data);
void writeNpy(const std::filesystem::path& path, const NpyArray& array);

// The .npy descr for a dtype ('<f4', '|b1', bf16 -> '<u2').
std::string_view npyDescr(DType dtype);

}  // namespace linnet::weights
