// libFuzzer target: the lexer and parser on arbitrary bytes must neither
// crash, hang nor trip a sanitizer, and must report an error for what they
// cannot parse.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/diagnostics.h"
#include "syntax/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  linnet::SourceManager sources;
  linnet::Diagnostics diags(sources);
  uint32_t file = sources.add("fuzz.linnet", std::string(reinterpret_cast<const char*>(data), size));
  auto module = linnet::syntax::parseFile(sources, file, diags);
  // Rendering exercises the line and column arithmetic on every diagnostic.
  (void)diags.render();
  return module ? 0 : 1;
}
