// The standard library loaded and checked once per fuzzing process
// (sema::Stdlib), for the targets that check Linnet source: fuzzed programs
// can import and call it without paying for it on each input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "sema/stdlib.h"

inline std::shared_ptr<const linnet::sema::Stdlib> fuzzStdlib(const char* target) {
  static const std::shared_ptr<const linnet::sema::Stdlib> lib = [target] {
    std::string errors;
    auto loaded = linnet::sema::Stdlib::load(LINNET_STDLIB_DIR, errors);
    if (!loaded) {
      std::fprintf(stderr, "%s: the standard library does not check:\n%s", target, errors.c_str());
      std::abort();
    }
    return loaded;
  }();
  return lib;
}
