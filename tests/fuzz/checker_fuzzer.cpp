// libFuzzer target: the whole front end (parse, resolve, shape-check) on
// arbitrary source must neither crash, hang nor trip a sanitizer. The
// standard library is loaded from the source tree, so fuzzed programs can
// import and call it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/diagnostics.h"
#include "sema/checker.h"
#include "sema/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  linnet::SourceManager sources;
  linnet::Diagnostics diags(sources);
  linnet::sema::Program program(sources, diags, LINNET_STDLIB_DIR);
  program.loadSource("fuzz.linnet", std::string(reinterpret_cast<const char*>(data), size));
  if (program.root()) {
    linnet::sema::Checker checker(program, diags);
    checker.checkDefinitions();
  }
  (void)diags.render();
  return 0;
}
