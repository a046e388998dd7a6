// libFuzzer target: the whole front end (parse, resolve, shape-check) on
// arbitrary source must neither crash, hang nor trip a sanitizer. The
// standard library is loaded and checked once per process (sema::Stdlib), so
// fuzzed programs can import and call it without paying for it each run.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/diagnostics.h"
#include "sema/checker.h"
#include "sema/program.h"
#include "fuzz_stdlib.h"
#include "sema/stdlib.h"

namespace {

std::shared_ptr<const linnet::sema::Stdlib> stdlib() { return fuzzStdlib("checker_fuzzer"); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  linnet::SourceManager sources;
  linnet::Diagnostics diags(sources);
  linnet::sema::Program program(sources, diags, stdlib());
  program.loadSource("fuzz.linnet", std::string(reinterpret_cast<const char*>(data), size));
  if (program.root()) {
    linnet::sema::Checker checker(program, diags);
    checker.checkDefinitions();
  }
  (void)diags.render();
  return 0;
}
