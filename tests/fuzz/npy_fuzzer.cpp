// libFuzzer target for the .npy reader (linnet_weights): arbitrary bytes
// parsed from memory, with each reader option. An array that parses must hold
// exactly shape x dtype bytes and survive encodeNpy -> parseNpy unchanged.
// Any outcome but success or weights::Error is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "weights/error.h"
#include "weights/npy.h"

using namespace linnet::weights;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  for (NpyReadOptions options : {NpyReadOptions{}, NpyReadOptions{true, false}, NpyReadOptions{true, true}}) {
    NpyArray a;
    try {
      a = parseNpy(bytes, "<fuzz>", options);
    } catch (const Error&) {
      continue;
    }
    if (a.elementCount() < 0 ||
        static_cast<std::uint64_t>(a.elementCount()) * linnet::byteSize(a.dtype) != a.data.size())
      std::abort();
    std::vector<std::byte> again = encodeNpy(a.dtype, a.shape, a.data);
    NpyArray b = parseNpy(again, "<re-encoded>", options);
    if (b.dtype != a.dtype || b.shape != a.shape || b.data != a.data) std::abort();
  }
  return 0;
}
