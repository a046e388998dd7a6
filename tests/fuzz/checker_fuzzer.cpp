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
#include "sema/stdlib.h"

namespace {

std::shared_ptr<const linnet::sema::Stdlib> stdlib() {
  static const std::shared_ptr<const linnet::sema::Stdlib> lib = [] {
    std::string errors;
    auto loaded = linnet::sema::Stdlib::load(LINNET_STDLIB_DIR, errors);
    if (!loaded) {
      std::fprintf(stderr, "checker_fuzzer: the standard library does not check:\n%s", errors.c_str());
      std::abort();
    }
    return loaded;
  }();
  return lib;
}

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
