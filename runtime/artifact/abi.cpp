#include "artifact/abi.h"
#include "artifact/manifest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace linnet::artifact {

std::string callSymbol(std::string_view function) { return fmt::format("linnet_call_{}", function); }

std::vector<int64_t> descriptor(void* data, std::span<const int64_t> shape) {
  int rank = static_cast<int>(shape.size());
  std::vector<int64_t> d(descWords(rank));
  d[kDescAllocated] = d[kDescAligned] = reinterpret_cast<int64_t>(data);
  d[kDescOffset] = 0;
  int64_t stride = 1;
  for (int k = rank - 1; k >= 0; --k) {
    d[kDescSizes + k] = shape[k];
    d[descStrides(rank) + k] = stride;
    stride *= shape[k];
  }
  return d;
}

std::string cDescriptorLayout() {
  return fmt::format(
      "/* memref descriptors (runtime/artifact/abi.h): int64 words */\n"
      "#define LINNET_DESC_ALIGNED {}\n"
      "#define LINNET_DESC_OFFSET {}\n"
      "#define LINNET_DESC_SIZES(rank) {}\n"
      "#define LINNET_DESC_STRIDES(rank) ({} + (rank))\n",
      kDescAligned, kDescOffset, kDescSizes, kDescSizes);
}

std::string cEntryPoints(const Manifest& manifest, const std::vector<std::string>& functions,
                         std::string_view prologue) {
  std::string out;
  for (size_t i = 0; i < manifest.entries.size(); ++i) {
    const Entry& e = manifest.entries[i];
    size_t n = e.inputs.size() + manifest.params.size() + manifest.states.size() + e.outputs.size();
    std::vector<std::string> decl(n, "void*"), call;
    for (size_t k = 0; k < n; ++k) call.push_back(fmt::format("a[{}]", k));
    out += fmt::format("extern void _mlir_ciface_{}({});\n", functions[i], fmt::join(decl, ", "));
    out += fmt::format("void {}(void** a) {{ {}_mlir_ciface_{}({}); }}\n", e.symbol, prologue, functions[i],
                       fmt::join(call, ", "));
  }
  return out;
}

}  // namespace linnet::artifact
