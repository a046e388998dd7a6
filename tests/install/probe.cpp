// probe PACKAGE BACKEND ENTRY: loads PACKAGE through the installed
// liblinnet.so on BACKEND, calls ENTRY with no arguments, prints its first
// result's values (run.sh).
#include <cstdio>

#include "nest/nest.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PACKAGE BACKEND ENTRY\n", argv[0]);
    return 2;
  }
  try {
    auto model = linnet::nest::load(argv[1], {.randomWeights = true, .backend = argv[2]});
    std::printf("%s:", argv[3]);
    for (double v : model.call(argv[3], {})[0].toFloats()) std::printf(" %g", v);
    std::printf("\n");
  } catch (const linnet::nest::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
