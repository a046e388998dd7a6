// sema::Program across packages: a card configured over the Llama card's
// sources (nest/smollm2-135m-instruct) sees its own constants and
// replacements, and the Llama card itself is unchanged.
#include <catch2/catch.hpp>

#include <string>

#include "sema/program.h"

using namespace linnet;

namespace {

struct Loaded {
  SourceManager sources;
  Diagnostics diags{sources};
  sema::Program program{sources, diags, LINNET_STDLIB_DIR};
  explicit Loaded(const std::string& card) {
    program.loadPackage(std::string(LINNET_SOURCE_DIR) + "/nest/" + card);
  }
};

}  // namespace

TEST_CASE("a card over a dependency's sources", "[sema][packages]") {
  Loaded smol("smollm2-135m-instruct");
  INFO(smol.diags.render());
  REQUIRE(smol.program.root());
  CHECK(smol.program.package().name == "smollm2");
  CHECK(smol.program.package().rootCrate == "llama");
  CHECK(smol.program.root()->name == "llama");
  REQUIRE(smol.program.package().crates.size() == 2);
  CHECK(smol.program.package().crates[1].name == "llama");
  CHECK(smol.program.packageDirs().size() == 2);
  // [constants]: the card's value replaces the source's.
  CHECK(smol.program.constantValue("llama.rope.THETA") == 100000.0);
  CHECK(smol.program.constantValue("llama.rope.FACTOR") == 8.0);  // not set: the source's
  CHECK(!smol.program.constantValue("llama.rope.tables"));        // a function, not a constant
  CHECK(!smol.program.constantValue("llama.nowhere.THETA"));
  // [replace]: where attention imports `tables`, it gets the library's plain tables.
  const sema::Module* attention = nullptr;
  for (const auto& m : smol.program.modules())
    if (m->name == "llama.attention") attention = m.get();
  REQUIRE(attention);
  const sema::Item* tables = smol.program.lookup(*attention, "tables");
  REQUIRE(tables);
  CHECK(tables->kind == sema::Item::Fn);
  CHECK(tables->name == "rotary_tables");
  CHECK(tables->module->name == "std.nn.rope");

  Loaded llama("llama-3.1-8b-instruct");
  REQUIRE(llama.program.root());
  CHECK(llama.program.constantValue("llama.rope.THETA") == 500000.0);
  for (const auto& m : llama.program.modules())
    if (m->name == "llama.attention") CHECK(llama.program.lookup(*m, "tables")->module->name == "llama.rope");
}
