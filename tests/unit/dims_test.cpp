// Unit tests for the symbolic dimension algebra (compiler/sema/dims).
//
// Atoms print in creation order within a process, so tests that check the
// order of printed factors create their atoms in the expected order first.
#include <catch2/catch.hpp>

#include <chrono>

#include "sema/dims/facts.h"

using namespace linnet::dims;

namespace {

Expr v(const std::string& name) { return Expr::var(name); }
Expr c(int64_t value) { return Expr::constant(value); }
Expr div(const Expr& a, const Expr& b) { return Expr::floorDiv(a, b); }
Expr mod(const Expr& a, const Expr& b) { return Expr::mod(a, b); }
Relation rel(const Expr& a, Rel op, const Expr& b) { return {a, op, b}; }

std::string fmt_join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

// The where clause of the sharded attention card.
Facts cardFacts() {
  Expr shards = v("Shards"), heads = v("Heads"), kv = v("KvHeads"), h = v("H");
  Facts f;
  f.add(rel(shards, Rel::Gt, c(0)));
  f.add(rel(mod(heads, shards), Rel::Eq, c(0)));
  f.add(rel(mod(kv, shards), Rel::Eq, c(0)));
  f.add(rel(div(kv, shards), Rel::Gt, c(0)));
  f.add(rel(mod(div(heads, shards), div(kv, shards)), Rel::Eq, c(0)));
  f.add(rel(heads, Rel::Gt, c(0)));
  f.add(rel(kv, Rel::Gt, c(0)));
  f.add(rel(mod(h, heads), Rel::Eq, c(0)));
  f.add(rel(mod(heads, kv), Rel::Eq, c(0)));
  f.add(rel(mod(div(h, heads), c(2)), Rel::Eq, c(0)));
  f.add(rel(v("MaxSeq"), Rel::Gt, c(0)));
  f.add(rel(v("Batch"), Rel::Gt, c(0)));
  return f;
}

}  // namespace

// ---- normal forms ------------------------------------------------------------------

TEST_CASE("printing follows the order atoms were introduced", "[dims][print]") {
  Expr p = v("P"), batch = v("Batch"), b = v("B"), s = v("S"), n = v("N");
  Expr l = Expr::packProduct("L");
  CHECK((p + batch).str() == "P + Batch");
  CHECK((b * s).str() == "B * S");
  CHECK((s * b).str() == "B * S");
  CHECK((s - c(1)).str() == "S - 1");
  CHECK((c(2) * batch).str() == "2 * Batch");
  CHECK((n * l).str() == "prod(L) * N");
  CHECK((c(1) - s).str() == "1 - S");
  CHECK((-s).str() == "-S");
  CHECK(Expr().str() == "0");
  CHECK(c(-3).str() == "-3");
  CHECK((s * s * b).str() == "B * S * S");
}

TEST_CASE("printing uses minimal parentheses around / and %", "[dims][print]") {
  Expr heads = v("Heads"), shards = v("Shards"), h = v("H"), s = v("S");
  Expr perShard = div(heads, shards);
  Expr headDim = div(h, heads);
  CHECK(perShard.str() == "Heads / Shards");
  CHECK((perShard * headDim).str() == "Heads / Shards * (H / Heads)");
  CHECK((c(2) * headDim).str() == "2 * (H / Heads)");
  CHECK((-headDim).str() == "-(H / Heads)");
  CHECK((s - headDim).str() == "S - H / Heads");
  CHECK(div(h, perShard).str() == "H / (Heads / Shards)");
  CHECK(div(h + v("Extra"), c(2) * heads).str() == "(H + Extra) / (2 * Heads)");
  CHECK(mod(h, heads).str() == "H % Heads");
  CHECK((s * mod(h, heads)).str() == "S * (H % Heads)");
  CHECK(mod(headDim, c(2)).str() == "(H / Heads) % 2");
  CHECK(mod(h * v("Extra"), c(4)).str() == "(H * Extra) % 4");
  CHECK(div(mod(h, c(8)), c(3)).str() == "(H % 8) / 3");
  CHECK(div(div(h, heads), shards).str() == "H / Heads / Shards");
  CHECK(div(h * v("Extra"), c(3)).str() == "H * Extra / 3");
}

TEST_CASE("addition and multiplication are commutative and distribute", "[dims][normal]") {
  Expr a = v("a"), b = v("b"), x = v("x");
  CHECK(a + b == b + a);
  CHECK(a * b == b * a);
  CHECK((a + b) * x == a * x + b * x);
  CHECK((a + b) * (a - b) == a * a - b * b);
  CHECK((a + b) * (a + b) == a * a + c(2) * a * b + b * b);
  CHECK(a + b != a * b);
}

TEST_CASE("cancellation and constant folding", "[dims][normal]") {
  Expr s = v("S");
  CHECK((s + c(1)) - c(1) == s);
  CHECK(c(2) * (s - c(1)) + c(2) == c(2) * s);
  CHECK((s - s).isZero());
  CHECK(c(3) * c(4) + c(1) == c(13));
  CHECK((c(3) * c(4)).isConstant());
  CHECK((c(3) * c(4)).constantValue() == 12);
  CHECK_FALSE(s.isConstant());
  CHECK(Expr() == c(0));
}

TEST_CASE("asVar and asAtom recognise single atoms", "[dims][normal]") {
  CHECK(v("H").asVar() == std::optional<std::string>("H"));
  CHECK_FALSE((c(2) * v("H")).asVar());
  CHECK_FALSE((v("H") + c(1)).asVar());
  CHECK_FALSE(Expr::packProduct("L").asVar());
  CHECK(Expr::packProduct("L").asAtom());
  CHECK_FALSE(c(1).asVar());
}

TEST_CASE("the total order and hash agree with equality", "[dims][normal]") {
  Expr a = v("a"), b = v("b");
  std::map<Expr, int> m;
  m[a + b] = 1;
  m[b + a] = 2;
  m[a * b] = 3;
  CHECK(m.size() == 2);
  CHECK(m[a + b] == 2);
  CHECK((a + b).hash() == (b + a).hash());
  CHECK(((a < b) != (b < a)));
  CHECK_FALSE(a < a);
}

// ---- division and modulo -------------------------------------------------------------

TEST_CASE("constant division and modulo fold with floor semantics", "[dims][div]") {
  CHECK(div(c(7), c(2)) == c(3));
  CHECK(div(c(-7), c(2)) == c(-4));
  CHECK(mod(c(7), c(2)) == c(1));
  CHECK(mod(c(-7), c(2)) == c(1));
  CHECK(mod(c(6), c(3)) == c(0));
}

TEST_CASE("exact symbolic division", "[dims][div]") {
  Expr n = v("N"), d = v("D"), b = v("B"), x = v("x");
  CHECK(div(n * d, n) == d);
  CHECK(div(c(2) * b, c(2)) == b);
  CHECK(div(c(4) * b + c(6), c(2)) == c(2) * b + c(3));
  CHECK(div(x, c(1)) == x);
  CHECK(div(c(0), x) == c(0));
  CHECK(div(x * x + x, x + c(1)) == x);  // polynomial quotient
  CHECK(div(n * d + n, n) == d + c(1));
}

TEST_CASE("division splits off multiples of a constant divisor", "[dims][div]") {
  Expr s = v("S"), t = v("T");
  CHECK(div(c(2) * s + c(1), c(2)) == s);
  CHECK(div(c(2) * s + c(3), c(2)) == s + c(1));
  CHECK(div(c(4) * s + c(2), c(4)) == s);        // common factor, then split
  CHECK(div(c(4) * s, c(2) * t) == div(c(2) * s, t));
  CHECK(div(s - c(1), c(2)).str() == "(S - 1) / 2");  // stays as written
}

TEST_CASE("exact modulo is zero, other cases reduce", "[dims][div]") {
  Expr n = v("N"), d = v("D"), s = v("S"), x = v("x");
  CHECK(mod(n * d, n).isZero());
  CHECK(mod(c(2) * s, c(2)).isZero());
  CHECK(mod(x, c(1)).isZero());
  CHECK(mod(c(0), x).isZero());
  CHECK(mod(c(3) * s, c(2)) == mod(s, c(2)));
  CHECK(mod(c(2) * s + c(3), c(2)) == c(1));
  CHECK_FALSE(mod(s, n).isZero());
}

TEST_CASE("division by constant zero stays symbolic", "[dims][div]") {
  Expr zero = div(v("x"), c(0));
  CHECK_FALSE(zero.isConstant());
  CHECK(zero.str() == "x / 0");
  CHECK_FALSE(zero.evaluate({{"x", 3}}));
  CHECK_FALSE(div(c(5), c(0)).isConstant());
  CHECK_FALSE(mod(c(5), c(0)).evaluate({}));
}

// ---- substitution and evaluation ------------------------------------------------------

TEST_CASE("substitution is simultaneous and renormalizes", "[dims][subst]") {
  Expr heads = v("Heads"), shards = v("Shards"), h = v("H");
  Expr n = v("N"), d = v("D");
  Expr perShard = div(heads, shards), headDim = div(h, heads);
  Expr out = (n * d).substitute({{"N", perShard}, {"D", headDim}});
  CHECK(out.str() == "Heads / Shards * (H / Heads)");
  CHECK(out == perShard * headDim);

  Expr a = v("a"), b = v("b");
  CHECK((a - b).substitute({{"a", b}, {"b", a}}) == b - a);  // a swap, not a chain
  CHECK((a + c(1)).substitute({{"a", c(-1)}}).isZero());
  CHECK(div(a * b, a).substitute({{"b", c(6)}}) == c(6));
  CHECK(div(a, b).substitute({{"a", c(2) * b}}) == c(2));
}

TEST_CASE("pack products substitute and evaluate separately", "[dims][subst]") {
  Expr l = Expr::packProduct("L"), n = v("N");
  Expr e = l * n;
  CHECK(e.substitute({{"L", c(100)}}) == e);  // a variable named L is not the pack
  CHECK(e.substitute({}, {{"L", c(6)}}) == c(6) * n);
  CHECK_FALSE(e.evaluate({{"N", 2}}));
  CHECK(e.evaluate({{"N", 2}}, {{"L", 6}}) == 12);
}

TEST_CASE("evaluation with numbers", "[dims][eval]") {
  Expr heads = v("Heads"), shards = v("Shards"), h = v("H");
  Expr e = div(heads, shards) * div(h, heads) + mod(h, c(5)) - c(1);
  std::map<std::string, int64_t> env{{"Heads", 32}, {"Shards", 4}, {"H", 4096}};
  CHECK(e.evaluate(env) == 8 * 128 + 1 - 1);
  CHECK_FALSE(e.evaluate({{"Heads", 32}}));                     // missing variable
  CHECK_FALSE(e.evaluate({{"Heads", 32}, {"Shards", 0}, {"H", 1}}));  // division by zero
  CHECK(div(v("x") - c(7), c(2)).evaluate({{"x", 0}}) == -4);
}

TEST_CASE("collectVars looks inside / and % but not at packs", "[dims][subst]") {
  std::set<std::string> vars, packs;
  Expr e = div(v("H"), v("Heads")) * Expr::packProduct("L") + mod(v("Q"), c(3));
  e.collectVars(vars);
  e.collectPacks(packs);
  CHECK(vars == std::set<std::string>{"H", "Heads", "Q"});
  CHECK(packs == std::set<std::string>{"L"});
}

TEST_CASE("relations print infix", "[dims][print]") {
  CHECK(rel(mod(v("H"), v("Heads")), Rel::Eq, c(0)).str() == "H % Heads == 0");
  CHECK(rel(v("Heads"), Rel::Gt, c(0)).str() == "Heads > 0");
  CHECK(rel(v("Heads"), Rel::Ne, v("Shards")).str() == "Heads != Shards");
}

// ---- divisibility facts ------------------------------------------------------------------

TEST_CASE("division is exact under a divisibility fact", "[dims][facts]") {
  Expr vocab = v("Vocab"), shards = v("Shards");
  Facts none;
  Facts known;
  known.add(rel(mod(vocab, shards), Rel::Eq, c(0)));

  SECTION("(Vocab / Shards) * Shards == Vocab needs the fact") {
    Relation goal = rel(div(vocab, shards) * shards, Rel::Eq, vocab);
    CHECK(known.prove(goal));
    CHECK_FALSE(none.prove(goal));
  }
  SECTION("simplify cancels inside larger polynomials") {
    CHECK(known.simplify(div(vocab, shards) * shards) == vocab);
    CHECK(known.simplify(div(vocab, shards) * shards * c(3) + c(1)) == c(3) * vocab + c(1));
    CHECK(known.simplify(div(vocab, shards) * shards * v("B")) == vocab * v("B"));
    CHECK(none.simplify(div(vocab, shards) * shards) == div(vocab, shards) * shards);
  }
  SECTION("the modulo itself simplifies to zero") {
    CHECK(known.simplify(mod(vocab, shards)).isZero());
    CHECK(known.prove(rel(mod(vocab, shards), Rel::Eq, c(0))));
    CHECK_FALSE(none.prove(rel(mod(vocab, shards), Rel::Eq, c(0))));
  }
  SECTION("multiples of the dividend divide too") {
    CHECK(known.prove(rel(mod(c(2) * vocab, shards), Rel::Eq, c(0))));
    CHECK(known.simplify(div(c(2) * vocab, shards)) == c(2) * div(vocab, shards));
  }
  SECTION("a partial multiple keeps the rest") {
    Expr e = div(vocab, shards) * (c(2) * shards + c(1));
    CHECK(known.simplify(e) == c(2) * vocab + div(vocab, shards));
  }
}

TEST_CASE("divisibility is transitive", "[dims][facts]") {
  Expr a = v("A"), b = v("B"), cc = v("C");
  Facts f;
  f.add(rel(mod(a, b), Rel::Eq, c(0)));
  f.add(rel(mod(b, cc), Rel::Eq, c(0)));
  CHECK(f.prove(rel(mod(a, cc), Rel::Eq, c(0))));
  CHECK(f.simplify(div(a, cc) * cc) == a);
  CHECK_FALSE(f.prove(rel(mod(cc, a), Rel::Eq, c(0))));
  CHECK_FALSE(f.prove(rel(mod(b, a), Rel::Eq, c(0))));
}

TEST_CASE("a multiple of P is divisible by P without facts", "[dims][facts]") {
  Facts none;
  Expr p = v("P") + c(1), k = v("K");
  CHECK(none.prove(rel(mod(p * k, p), Rel::Eq, c(0))));
  CHECK(none.prove(rel(mod(c(6) * k, c(3)), Rel::Eq, c(0))));
  CHECK_FALSE(none.prove(rel(mod(c(6) * k + c(1), c(3)), Rel::Eq, c(0))));
}

// ---- the card's where clause ----------------------------------------------------------------

TEST_CASE("the card's where clause proves what the card needs", "[dims][card]") {
  Facts f = cardFacts();
  Expr shards = v("Shards"), heads = v("Heads"), kv = v("KvHeads"), h = v("H");
  Expr batch = v("Batch"), maxSeq = v("MaxSeq"), p = v("P");

  SECTION("divisibility facts, as given and derived") {
    CHECK(f.prove(rel(mod(div(heads, shards), div(kv, shards)), Rel::Eq, c(0))));
    CHECK(f.prove(rel(mod(h, heads), Rel::Eq, c(0))));
    CHECK(f.prove(rel(mod(h, kv), Rel::Eq, c(0))));      // H by Heads by KvHeads
    CHECK(f.prove(rel(mod(h, shards), Rel::Eq, c(0))));  // ... by Shards
    CHECK_FALSE(f.prove(rel(mod(kv, heads), Rel::Eq, c(0))));
  }
  SECTION("orderings") {
    CHECK(f.prove(rel(batch, Rel::Ge, c(1))));
    CHECK(f.prove(rel(maxSeq - c(1), Rel::Lt, maxSeq)));
    CHECK(f.prove(rel(p + batch, Rel::Ge, p)));
    CHECK(f.prove(rel(p + batch, Rel::Gt, p)));
    CHECK(f.prove(rel(batch * maxSeq, Rel::Ge, c(1))));
    CHECK_FALSE(f.prove(rel(batch, Rel::Ge, c(2))));
    CHECK_FALSE(f.prove(rel(p, Rel::Gt, c(0))));
  }
  SECTION("positivity of quotients") {
    CHECK(f.provePositive(div(kv, shards)));
    CHECK(f.provePositive(div(heads, shards)));  // Shards divides Heads > 0
    CHECK(f.provePositive(div(div(heads, shards), div(kv, shards))));
    CHECK_FALSE(f.provePositive(div(h, heads)));  // H may be 0
    CHECK(f.proveNonnegative(div(h, heads)));
  }
  SECTION("shapes reassemble") {
    CHECK(f.prove(rel(div(heads, shards) * shards, Rel::Eq, heads)));
    CHECK(f.prove(rel(div(h, heads) * heads, Rel::Eq, h)));
    CHECK(f.prove(rel(div(div(h, heads), c(2)) * c(2), Rel::Eq, div(h, heads))));
    Expr groups = div(div(heads, shards), div(kv, shards));
    CHECK(f.prove(rel(groups * div(kv, shards), Rel::Eq, div(heads, shards))));
    CHECK(f.prove(rel(groups * div(kv, shards) * shards, Rel::Eq, heads)));
  }
}

TEST_CASE("nothing is provable without its fact", "[dims][facts]") {
  Facts none;
  Expr h = v("H"), heads = v("Heads"), kv = v("KvHeads"), s = v("S");
  CHECK_FALSE(none.prove(rel(mod(h, heads), Rel::Eq, c(0))));
  CHECK_FALSE(none.prove(rel(s - c(1), Rel::Ge, c(0))));
  CHECK_FALSE(none.prove(rel(mod(heads, kv), Rel::Eq, c(0))));
  CHECK_FALSE(none.provePositive(s));
  CHECK(none.prove(rel(s, Rel::Ge, c(0))));  // dimensions are never negative
  CHECK_FALSE(none.prove(rel(s, Rel::Eq, h)));

  Facts other;
  other.add(rel(mod(kv, heads), Rel::Eq, c(0)));  // the wrong way round
  CHECK_FALSE(other.prove(rel(mod(heads, kv), Rel::Eq, c(0))));
}

// ---- comparisons ---------------------------------------------------------------------------

TEST_CASE("constants compare exactly", "[dims][compare]") {
  Facts none;
  CHECK(none.prove(rel(c(3), Rel::Lt, c(5))));
  CHECK_FALSE(none.prove(rel(c(5), Rel::Lt, c(3))));
  CHECK(none.prove(rel(c(3), Rel::Le, c(3))));
  CHECK_FALSE(none.prove(rel(c(3), Rel::Lt, c(3))));
  CHECK(none.prove(rel(c(4), Rel::Ne, c(3))));
  CHECK_FALSE(none.prove(rel(c(4), Rel::Ne, c(4))));
  CHECK(none.prove(rel(mod(c(7), c(2)), Rel::Eq, c(1))));
  CHECK(none.prove(rel(div(c(12), c(4)), Rel::Gt, c(2))));
}

TEST_CASE("facts combine: scaled, chained and multiplied", "[dims][compare]") {
  Expr b = v("B"), s = v("S"), n = v("N"), m = v("M"), x = v("X");
  Facts f;
  f.add(rel(b, Rel::Gt, c(0)));
  f.add(rel(s, Rel::Ge, c(1)));
  f.add(rel(n, Rel::Gt, m));
  f.add(rel(m, Rel::Gt, c(2)));
  CHECK(f.prove(rel(b * s - c(1), Rel::Ge, c(0))));
  CHECK(f.prove(rel(c(2) * b, Rel::Ge, c(2))));
  CHECK(f.prove(rel(n, Rel::Ge, c(4))));        // N > M > 2
  CHECK_FALSE(f.prove(rel(n, Rel::Ge, c(5))));
  CHECK(f.prove(rel(n - m, Rel::Gt, c(0))));
  CHECK(f.prove(rel(n * x, Rel::Ge, m * x)));   // a fact times an atom
  CHECK(f.prove(rel(n + b, Rel::Gt, m + c(1))));  // two facts added
  CHECK_FALSE(f.prove(rel(m, Rel::Gt, n)));
}

TEST_CASE("flattened indices stay in bounds", "[dims][compare]") {
  Expr i = v("fi"), j = v("fj"), k = v("fk"), n = v("FN"), m = v("FM"), kk = v("FK");
  Facts f;
  f.add(rel(i, Rel::Lt, n));
  f.add(rel(j, Rel::Lt, m));
  f.add(rel(k, Rel::Lt, kk));
  CHECK(f.prove(rel(i * m + j, Rel::Lt, n * m)));
  CHECK(f.prove(rel((i * m + j) * kk + k, Rel::Lt, n * m * kk)));
  CHECK_FALSE(f.prove(rel(i * m + j + c(1), Rel::Lt, n * m)));
  CHECK_FALSE(f.prove(rel(i * kk + j, Rel::Lt, n * m)));
}

TEST_CASE("facts are only multiplied by nonnegative atoms", "[dims][compare]") {
  Expr n = v("N"), m = v("M"), s = v("S");
  Facts f;
  f.add(rel(n, Rel::Ge, m));
  CHECK(f.prove(rel(n * s, Rel::Ge, m * s)));
  Expr maybeNegative = div(s - c(1), c(2));  // -1 when S = 0
  CHECK(f.prove(rel(n * maybeNegative * maybeNegative, Rel::Ge, m * maybeNegative * maybeNegative)));
  CHECK_FALSE(f.prove(rel(n * maybeNegative, Rel::Ge, m * maybeNegative)));
  CHECK_FALSE(f.prove(rel(maybeNegative, Rel::Ge, c(0))));
}

TEST_CASE("floor division and modulo have bounds", "[dims][compare]") {
  Expr n = v("N"), s = v("S"), q = v("Q");
  Facts f;
  f.add(rel(n, Rel::Ge, c(2)));
  f.add(rel(q, Rel::Gt, c(0)));
  CHECK(f.prove(rel(div(n, c(2)), Rel::Ge, c(1))));
  CHECK_FALSE(f.prove(rel(div(n, c(3)), Rel::Ge, c(1))));
  CHECK(f.prove(rel(div(s, c(2)), Rel::Le, s)));
  CHECK(f.prove(rel(mod(s, c(4)), Rel::Lt, c(4))));
  CHECK(f.prove(rel(mod(s, q), Rel::Lt, q)));
  CHECK(f.prove(rel(mod(s, q), Rel::Ge, c(0))));
  CHECK(f.prove(rel(div(s, q) * q, Rel::Le, s)));
  CHECK_FALSE(f.prove(rel(mod(s, v("Z")), Rel::Lt, v("Z"))));  // Z may be 0
}

TEST_CASE("equalities in facts", "[dims][compare]") {
  Expr a = v("A"), b = v("B"), h = v("H"), heads = v("Heads"), d = v("Dh");
  SECTION("two inequalities make an equality") {
    Facts f;
    f.add(rel(a, Rel::Ge, b));
    f.add(rel(b, Rel::Ge, a));
    CHECK(f.prove(rel(a, Rel::Eq, b)));
    CHECK(f.prove(rel(c(2) * a, Rel::Eq, c(2) * b)));
  }
  SECTION("an equality is used both ways") {
    Facts f;
    f.add(rel(a, Rel::Eq, b + c(1)));
    CHECK(f.prove(rel(a, Rel::Gt, b)));
    CHECK(f.prove(rel(a - b, Rel::Eq, c(1))));
    CHECK(f.prove(rel(a, Rel::Ne, b)));
    CHECK_FALSE(f.prove(rel(a, Rel::Eq, b)));
  }
  SECTION("an equality defines a variable") {
    Facts f;
    f.add(rel(mod(h, heads), Rel::Eq, c(0)));
    f.add(rel(d, Rel::Eq, div(h, heads)));
    CHECK(f.prove(rel(d * heads, Rel::Eq, h)));
    CHECK(f.prove(rel(d * heads * c(2), Rel::Eq, c(2) * h)));
  }
  SECTION("a disequality fact proves itself") {
    Facts f;
    f.add(rel(a, Rel::Ne, b));
    CHECK(f.prove(rel(b, Rel::Ne, a)));
    CHECK_FALSE(f.prove(rel(a, Rel::Gt, b)));
  }
}

TEST_CASE("a positive quotient is just an inequality over its atom", "[dims][facts]") {
  Expr kv = v("KvHeads"), shards = v("Shards");
  Facts f;
  f.add(rel(div(kv, shards), Rel::Gt, c(0)));
  CHECK(f.prove(rel(div(kv, shards), Rel::Ge, c(1))));
  CHECK(f.prove(rel(div(kv, shards) * c(3), Rel::Ge, c(3))));
  CHECK_FALSE(f.provePositive(kv));  // not derived: Shards could be 0
}

TEST_CASE("describe lists the facts as given, in order", "[dims][facts]") {
  Facts f;
  f.add(rel(v("Shards"), Rel::Gt, c(0)));
  f.add(rel(mod(v("Heads"), v("Shards")), Rel::Eq, c(0)));
  CHECK(f.describe() == std::vector<std::string>{"Shards > 0", "Heads % Shards == 0"});
}

TEST_CASE("copies of Facts extend independently", "[dims][facts]") {
  Facts outer;
  outer.add(rel(v("X"), Rel::Gt, c(0)));
  CHECK(outer.provePositive(v("X")));  // builds the caches, shared by the copy
  Facts inner = outer;
  inner.add(rel(v("Y"), Rel::Gt, c(0)));
  CHECK(inner.provePositive(v("X") * v("Y")));
  CHECK_FALSE(outer.provePositive(v("Y")));
  CHECK(outer.describe().size() == 1);
  CHECK(inner.describe().size() == 2);
}

// Speed is measured in bench/, not asserted here; this checks that many
// proofs over fresh scopes (no memo carried over) all come out right.
TEST_CASE("many proofs over fresh scopes of the card's facts", "[dims][facts]") {
  Facts f = cardFacts();
  Expr heads = v("Heads"), shards = v("Shards"), kv = v("KvHeads"), h = v("H"), batch = v("Batch");
  int proven = 0;
  for (int i = 0; i < 200; ++i) {
    Facts scope = f;
    scope.add(rel(v("I"), Rel::Lt, batch));
    proven += scope.prove(rel(div(heads, shards) * shards, Rel::Eq, heads));
    proven += scope.prove(rel(v("I") + c(i % 7), Rel::Lt, batch + c(i % 7)));
    proven += scope.prove(rel(batch * c(i + 1), Rel::Ge, c(i + 1)));
    proven += scope.prove(rel(mod(h, kv), Rel::Eq, c(0)));
    proven += !scope.prove(rel(v("I"), Rel::Gt, c(i)));  // not provable: the slow path
  }
  CHECK(proven == 5 * 200);
}

// ---- randomized soundness ------------------------------------------------------------------

namespace {

// A tiny deterministic generator of expressions, with a reference evaluator
// independent of the normal form.
struct RandomExprs {
  uint64_t state = 0x2545F4914F6CDD1DULL;
  std::vector<std::string> names{"ra", "rb", "rc"};

  uint64_t next() {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return state;
  }
  int pick(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }

  struct Node {
    char op;  // 'c' constant, 'v' variable, or + - * / %
    int64_t value = 0;
    std::string name;
    std::shared_ptr<Node> l, r;
  };
  using NodeP = std::shared_ptr<Node>;

  NodeP gen(int depth) {
    if (depth == 0 || pick(3) == 0) {
      auto n = std::make_shared<Node>();
      if (pick(2)) n->op = 'c', n->value = pick(7) - 2;
      else n->op = 'v', n->name = names[static_cast<size_t>(pick(3))];
      return n;
    }
    auto n = std::make_shared<Node>();
    n->op = "+-*/%"[pick(5)];
    n->l = gen(depth - 1);
    n->r = gen(depth - 1);
    return n;
  }

  static Expr build(const NodeP& n) {
    switch (n->op) {
      case 'c': return Expr::constant(n->value);
      case 'v': return Expr::var(n->name);
      case '+': return build(n->l) + build(n->r);
      case '-': return build(n->l) - build(n->r);
      case '*': return build(n->l) * build(n->r);
      case '/': return Expr::floorDiv(build(n->l), build(n->r));
      default: return Expr::mod(build(n->l), build(n->r));
    }
  }

  static std::optional<int64_t> eval(const NodeP& n, const std::map<std::string, int64_t>& env) {
    if (n->op == 'c') return n->value;
    if (n->op == 'v') return env.at(n->name);
    auto l = eval(n->l, env), r = eval(n->r, env);
    if (!l || !r) return std::nullopt;
    switch (n->op) {
      case '+': return *l + *r;
      case '-': return *l - *r;
      case '*': return *l * *r;
      default: {
        if (*r == 0) return std::nullopt;
        int64_t q = *l / *r;
        if (*l % *r != 0 && ((*l < 0) != (*r < 0))) --q;
        return n->op == '/' ? q : *l - *r * q;
      }
    }
  }
};

std::vector<std::map<std::string, int64_t>> grid() {
  std::vector<std::map<std::string, int64_t>> out;
  for (int64_t a = 0; a <= 6; ++a)
    for (int64_t b = 0; b <= 6; ++b)
      for (int64_t cc = 0; cc <= 6; ++cc) out.push_back({{"ra", a}, {"rb", b}, {"rc", cc}});
  return out;
}

bool holds(Rel op, int64_t l, int64_t r) {
  switch (op) {
    case Rel::Eq: return l == r;
    case Rel::Ne: return l != r;
    case Rel::Lt: return l < r;
    case Rel::Le: return l <= r;
    case Rel::Gt: return l > r;
    case Rel::Ge: return l >= r;
  }
  return false;
}

// Whether r holds at env; nullopt where it is undefined (division by zero).
std::optional<bool> holdsAt(const Relation& r, const std::map<std::string, int64_t>& env) {
  auto l = r.lhs.evaluate(env), rr = r.rhs.evaluate(env);
  if (!l || !rr) return std::nullopt;
  return holds(r.op, *l, *rr);
}

}  // namespace

TEST_CASE("normal forms evaluate like the expressions they came from", "[dims][random]") {
  RandomExprs gen;
  auto points = grid();
  int compared = 0;
  for (int i = 0; i < 400; ++i) {
    auto tree = gen.gen(3);
    Expr e = RandomExprs::build(tree);
    for (size_t p = 0; p < points.size(); p += 7) {
      auto want = RandomExprs::eval(tree, points[p]);
      if (!want) continue;  // the normal form may define what the source left undefined
      auto got = e.evaluate(points[p]);
      INFO(e.str());
      REQUIRE(got == want);
      ++compared;
    }
  }
  CHECK(compared > 5000);
}

TEST_CASE("proofs and simplifications hold at every point satisfying the facts", "[dims][random]") {
  RandomExprs gen;
  auto points = grid();
  const Rel rels[] = {Rel::Eq, Rel::Ne, Rel::Lt, Rel::Le, Rel::Gt, Rel::Ge};
  auto randomRelation = [&](int depth) {
    return Relation{RandomExprs::build(gen.gen(depth)), rels[gen.pick(6)], RandomExprs::build(gen.gen(depth))};
  };
  int proven = 0;
  for (int i = 0; i < 600; ++i) {
    Facts facts;
    int nFacts = 1 + gen.pick(3);
    for (int k = 0; k < nFacts; ++k) facts.add(randomRelation(1 + gen.pick(2)));
    if (gen.pick(2)) facts.add({Expr::mod(Expr::var("ra"), Expr::var("rb")), Rel::Eq, Expr::constant(0)});
    Relation goal = randomRelation(2);
    Expr e = RandomExprs::build(gen.gen(2));
    bool ok = facts.prove(goal);
    proven += ok;
    Expr simplified = facts.simplify(e);
    for (const auto& env : points) {
      bool satisfied = std::all_of(facts.relations().begin(), facts.relations().end(),
                                   [&](const Relation& r) { return holdsAt(r, env) == std::optional<bool>(true); });
      if (!satisfied) continue;
      INFO("facts: " << fmt_join(facts.describe()) << "  goal: " << goal.str() << "  e: " << e.str());
      if (ok && holdsAt(goal, env)) REQUIRE(*holdsAt(goal, env));
      auto before = e.evaluate(env), after = simplified.evaluate(env);
      if (before) REQUIRE(after == before);
    }
  }
  CHECK(proven > 50);
}

TEST_CASE("a divisibility fact keeps the defining bounds of its quotient", "[dims][facts]") {
  // With `D % 2 == 0`, `2 * (D / 2)` simplifies to `D`; `D / 2 <= D` must
  // still be provable (rope's halves `x[..., 0:D / 2]`, `x[..., D / 2:D]`).
  Expr D = Expr::var("D");
  Expr half = Expr::floorDiv(D, Expr::constant(2));
  Facts facts;
  facts.add({Expr::mod(D, Expr::constant(2)), Rel::Eq, Expr::constant(0)});
  CHECK(facts.prove({half, Rel::Le, D}));
  CHECK(facts.prove({half + half, Rel::Eq, D}));
  CHECK_FALSE(facts.prove({half, Rel::Ge, D}));
}
