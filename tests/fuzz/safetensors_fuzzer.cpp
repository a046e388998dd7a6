// libFuzzer target for linnet_weights: arbitrary bytes parsed as a whole
// safetensors file from memory (the same parser Checkpoint::open runs on a
// mapping). What parses must keep the header's promises: every tensor's
// bytes lie inside the input and span exactly shape x dtype, names sorted
// and unique, no two tensors overlapping; its floats then convert. Any
// outcome but success or weights::Error is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "weights/convert.h"
#include "weights/error.h"
#include "weights/safetensors.h"

using namespace linnet::weights;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  SafetensorsHeader header;
  try {
    header = parseSafetensors(bytes, "<fuzz>");
  } catch (const Error&) {
    return 0;
  }
  std::vector<std::pair<const std::byte*, const std::byte*>> extents;
  for (std::size_t i = 0; i < header.tensors.size(); ++i) {
    const TensorInfo& t = header.tensors[i];
    if (i > 0 && !(header.tensors[i - 1].name < t.name)) std::abort();  // sorted, unique
    if (t.data.data() < bytes.data() || t.data.data() + t.data.size() > bytes.data() + bytes.size())
      std::abort();
    if (t.elementCount() < 0 ||
        static_cast<std::uint64_t>(t.elementCount()) * linnet::byteSize(t.dtype) != t.data.size())
      std::abort();
    if (!t.data.empty()) extents.emplace_back(t.data.data(), t.data.data() + t.data.size());
    if (canConvert(t.dtype, linnet::DType::F32) && t.data.size() <= (1u << 20)) {
      std::vector<std::byte> out(static_cast<std::size_t>(t.elementCount()) * 4);
      convertElements(t.dtype, t.data, linnet::DType::F32, out);
    }
  }
  std::sort(extents.begin(), extents.end());
  for (std::size_t i = 1; i < extents.size(); ++i)
    if (extents[i].first < extents[i - 1].second) std::abort();  // overlapping tensors
  return 0;
}
