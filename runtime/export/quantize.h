// Encoding f32 values into ggml tensor types, for writing GGUF files:
//   F32, F16, BF16   plain elements (f16 and bf16 rounded to nearest even;
//                    BF16's NaNs quieted as gguf.quants and ggml do)
//   Q8_0, Q4_0, Q5_0 32-value blocks, bit-exact with PyPI gguf's
//                    gguf.quants.quantize (its numpy transcriptions of
//                    ggml's quantize_row_*_ref)
//   Q4_K, Q6_K       256-value super-blocks, bit-exact with ggml's
//                    quantize_row_q4_K_ref / quantize_row_q6_K_ref (what
//                    llama-quantize runs without an importance matrix);
//                    gguf.quants cannot quantize these, only dequantize
// Every product and sum is rounded on its own (no fused multiply-add), as
// in those references. tests/export/make_gguf_fixtures.py writes the vectors
// tests/export/export_quantize.cpp checks against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "gguf/types.h"

namespace linnet::exporter {

// The types encodeRows can write.
bool canEncode(gguf::GgmlType type);
// "F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K", for messages.
std::string encodableTypes();

// Bytes of one row of `rowLength` values in `type` (rowLength a multiple
// of the type's block size).
std::size_t rowBytes(gguf::GgmlType type, std::int64_t rowLength);

// Encodes rows of `rowLength` values each (values.size() a multiple of it,
// rowLength of the block size) into `out`, which must hold exactly their
// bytes. `threads` > 1 splits the rows among that many threads (the result
// does not depend on it). Throws std::invalid_argument for a type canEncode
// refuses or sizes that do not fit.
void encodeRows(gguf::GgmlType type, std::span<const float> values, std::int64_t rowLength,
                std::span<std::byte> out, int threads = 1);

}  // namespace linnet::exporter
