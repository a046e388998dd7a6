// `linnetc explain`'s parts: Facts::usedBy (a minimal set of facts that
// proves a goal) and the checker's recording of obligations with origins.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "sema/checker.h"
#include "sema/dims/facts.h"
#include "sema/explain.h"
#include "sema/program.h"

using namespace linnet;
using dims::Expr;
using dims::Facts;
using dims::Rel;

namespace {

Expr var(const std::string& name) { return Expr::var(name); }
Expr constant(int64_t value) { return Expr::constant(value); }

Facts shardFacts() {
  Facts f;
  f.add({var("Shards"), Rel::Gt, constant(0)});                                   // 0
  f.add({Expr::mod(var("Heads"), var("Shards")), Rel::Eq, constant(0)});            // 1
  f.add({Expr::mod(var("KvHeads"), var("Shards")), Rel::Eq, constant(0)});          // 2
  f.add({Expr::mod(var("Heads"), var("KvHeads")), Rel::Eq, constant(0)});           // 3
  f.add({var("KvHeads"), Rel::Gt, constant(0)});                                  // 4
  f.add({var("N"), Rel::Ge, var("M")});                                      // 5
  f.add({var("M"), Rel::Ge, constant(2)});                                        // 6
  return f;
}

}  // namespace

TEST_CASE("usedBy: a fact that states the goal is kept over a chain that implies it") {
  auto used = shardFacts().usedBy({Expr::mod(var("Heads"), var("Shards")), Rel::Eq, constant(0)});
  REQUIRE(used);
  CHECK(*used == std::vector<size_t>{1});
}

TEST_CASE("usedBy: the divisibility fact a cancellation needs") {
  Expr product = Expr::floorDiv(var("Heads"), var("KvHeads")) * var("KvHeads");
  auto used = shardFacts().usedBy({product, Rel::Eq, var("Heads")});
  REQUIRE(used);
  CHECK(*used == std::vector<size_t>{3});
}

TEST_CASE("usedBy: two facts chained, none of the unrelated ones") {
  auto used = shardFacts().usedBy({var("N"), Rel::Ge, constant(2)});
  REQUIRE(used);
  CHECK(*used == std::vector<size_t>{5, 6});
}

TEST_CASE("usedBy: no fact for what holds of every nonnegative dimension; nullopt when unproven") {
  auto none = shardFacts().usedBy({var("H") * var("Heads"), Rel::Ge, constant(0)});
  REQUIRE(none);
  CHECK(none->empty());
  CHECK_FALSE(shardFacts().usedBy({var("H"), Rel::Gt, constant(0)}));
}

TEST_CASE("the checker records obligations, proven and not, with the facts' origins") {
  const char* source = R"(module user

pub fn split<N: Dim, Heads: Dim>(x: Tensor[N; f32]) -> Tensor[Heads, N / Heads; f32]
where Heads > 0, N % Heads == 0 {
    return reshape(x, [Heads, N / Heads])
}

pub fn bad<N: Dim, Heads: Dim>(x: Tensor[N; f32]) -> Tensor[Heads, N / Heads; f32]
where Heads > 0 {
    return reshape(x, [Heads, N / Heads])
}
)";
  SourceManager sources;
  Diagnostics diags(sources);
  sema::Program program(sources, diags, LINNET_STDLIB_DIR);
  program.loadSource("user.linnet", source);
  REQUIRE(program.root());
  sema::Explainer explainer;
  sema::Checker checker(program, diags);
  checker.setExplainer(&explainer);
  checker.checkDefinitions();
  explainer.attachDiagnostics(diags.all());
  CHECK(diags.errorCount() == 1);

  auto reshapeIn = [&](const std::string& fn) -> const sema::Obligation* {
    for (const auto& o : explainer.obligations())
      if (o.definition == "fn `" + fn + "`" && o.requirement.rfind("reshape from", 0) == 0) return &o;
    return nullptr;
  };
  const sema::Obligation* good = reshapeIn("split");
  REQUIRE(good);
  CHECK(good->proven);
  CHECK(good->obligation == "N == Heads * (N / Heads)");
  CHECK(good->simplified == "N == N");
  REQUIRE(good->because.size() == 1);
  CHECK(good->because[0].fact == "N % Heads == 0");
  CHECK(good->because[0].origin.what == "where clause of fn `split`");
  CHECK(sources.file(good->because[0].origin.at.file).lineCol(good->because[0].origin.at.begin).line == 4);

  const sema::Obligation* bad = reshapeIn("bad");
  REQUIRE(bad);
  CHECK_FALSE(bad->proven);
  CHECK(bad->message.rfind("cannot prove `N == Heads * (N / Heads)`", 0) == 0);
  CHECK(bad->missing == "`N % Heads == 0`, from which it follows");
  REQUIRE(bad->closest.size() == 1);
  CHECK(bad->closest[0].fact == "Heads > 0");
}

TEST_CASE("without an explainer the checker records nothing and reports the same") {
  const char* source = R"(module user
pub fn f<N: Dim>(x: Tensor[N; f32]) -> Tensor[N + 1; f32] {
    return x[0:N + 1]
}
)";
  auto run = [&](bool explaining) {
    SourceManager sources;
    Diagnostics diags(sources);
    sema::Program program(sources, diags, LINNET_STDLIB_DIR);
    program.loadSource("user.linnet", source);
    sema::Explainer explainer;
    sema::Checker checker(program, diags);
    if (explaining) checker.setExplainer(&explainer);
    checker.checkDefinitions();
    return std::make_pair(diags.render(), explainer.obligations().size());
  };
  auto [plain, none] = run(false);
  auto [explained, some] = run(true);
  CHECK(plain == explained);
  CHECK(none == 0);
  CHECK(some > 0);
}
