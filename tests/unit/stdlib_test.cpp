// sema::Stdlib: the standard library checked once and shared by Programs must
// give each program exactly what loading it from disk gives.
#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "sema/checker.h"
#include "sema/program.h"
#include "sema/stdlib.h"

using namespace linnet;

namespace {

// A package that uses the library: one call well typed, one not, and a
// private item imported, whose note quotes the library's file.
const char* kSource = R"(module user
use std.nn.decoding::{argmax}
use std.nn.linear::{Linear}
use std.nn.attention::{pool_mask}

fn good<B: Dim, V: Dim>(x: Tensor[B, V; f32]) -> Tensor[B; i32] {
    return argmax(x)
}

fn bad<B: Dim, V: Dim>(x: Tensor[B, V, V; f32]) -> Tensor[B; i32] {
    return argmax(x)
}
)";

std::string check(sema::Program& program, Diagnostics& diags) {
  program.loadSource("user.linnet", kSource);
  if (program.root()) {
    sema::Checker checker(program, diags);
    checker.checkDefinitions();
  }
  return diags.render();
}

std::string checkFromDisk() {
  SourceManager sources;
  Diagnostics diags(sources);
  sema::Program program(sources, diags, LINNET_STDLIB_DIR);
  return check(program, diags);
}

}  // namespace

TEST_CASE("a shared Stdlib gives the diagnostics loading from disk gives") {
  std::string errors;
  auto lib = sema::Stdlib::load(LINNET_STDLIB_DIR, errors);
  REQUIRE(lib);
  CHECK(errors.empty());
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(std::string(LINNET_STDLIB_DIR) + "/std"))
    files += e.path().extension() == ".linnet";
  CHECK(lib->moduleCount() == files);

  std::string expected = checkFromDisk();
  INFO(expected);
  REQUIRE(expected.find("argmax") != std::string::npos);
  REQUIRE(expected.find("attention.linnet") != std::string::npos);  // a note in the library
  for (int run = 0; run < 2; ++run) {  // the library stays as it was after a use
    SourceManager sources;
    Diagnostics diags(sources);
    sema::Program program(sources, diags, lib);
    CHECK(check(program, diags) == expected);
    CHECK(program.modules().size() == 1);  // only the package's own module
    const sema::Item* linear = program.lookup(*program.root(), "Linear");
    REQUIRE(linear);
    CHECK(program.moduleOf(linear->block) == linear->module);
  }
}

TEST_CASE("a shared Stdlib needs an empty SourceManager") {
  std::string errors;
  auto lib = sema::Stdlib::load(LINNET_STDLIB_DIR, errors);
  REQUIRE(lib);
  SourceManager sources;
  sources.add("other.linnet", "module other\n");
  Diagnostics diags(sources);
  CHECK_THROWS_AS(sema::Program(sources, diags, lib), std::invalid_argument);
}

TEST_CASE("Stdlib::load names a folder without a standard library") {
  std::string errors;
  CHECK_FALSE(sema::Stdlib::load(LINNET_SOURCE_DIR "/tests", errors));
  CHECK(errors.find("no standard library") != std::string::npos);
}
