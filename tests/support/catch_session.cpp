// Catch2's implementation, compiled once for every test executable (it is
// the slowest file of the test build: about a minute per copy here).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.h"

namespace linnet::test {
int runCatchSession(int argc, char** argv) { return Catch::Session().run(argc, argv); }
}  // namespace linnet::test
