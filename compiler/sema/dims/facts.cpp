#include "sema/dims/facts.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>

namespace linnet::dims {

namespace {

using Factors = std::vector<Factor>;
using Kind = AtomNode::Kind;

constexpr size_t kMaxDivFacts = 128;   // bound on the transitive closure
constexpr size_t kMaxProductFacts = 24;  // facts multiplied pairwise
constexpr int kMaxCancelRounds = 8;
constexpr int kSolveBudget = 2000;     // solve() calls per inequality goal
constexpr int kSearchNodes = 24;       // partial combinations tried per goal
constexpr int kSearchDepth = 3;        // facts subtracted before the last one
constexpr size_t kBranching = 6;       // first steps tried per partial combination

// Runs f; dimension arithmetic that leaves int64 just means one fact or
// candidate fewer, never a wrong answer.
template <class F>
void unlessOverflow(F&& f) {
  try {
    f();
  } catch (const DimOverflow&) {
  }
}

// ---- divisibility knowledge --------------------------------------------------

// Rewrites available to the simplifier: variable definitions taken from
// equalities (prover only) and divisibility facts.
struct Knowledge {
  std::map<std::string, Expr> defs;
  std::vector<std::pair<Expr, Expr>> divs;  // .first is divisible by .second
  mutable std::map<Atom, Expr> memo;        // simplified `/` and `%` atoms
};

// `a` divides `b` as polynomials.
bool dividesPoly(const Expr& a, const Expr& b) { return a == b || Expr::exactDivide(b, a).has_value(); }

bool divisible(const Knowledge& k, const Expr& p, const Expr& q) {
  if (Expr::mod(p, q).isZero()) return true;
  // A multiple of a known multiple of a multiple of q.
  for (const auto& [a, b] : k.divs)
    if (dividesPoly(a, p) && dividesPoly(q, b)) return true;
  return false;
}

// Transitivity: if B divides A and D divides C, and C divides B, then D divides A.
std::vector<std::pair<Expr, Expr>> closeDivs(std::vector<std::pair<Expr, Expr>> divs) {
  for (bool changed = true; changed && divs.size() < kMaxDivFacts;) {
    changed = false;
    for (size_t i = 0; i < divs.size() && divs.size() < kMaxDivFacts; ++i) {
      for (size_t j = 0; j < divs.size() && divs.size() < kMaxDivFacts; ++j) {
        if (i == j || !dividesPoly(divs[j].first, divs[i].second)) continue;
        std::pair<Expr, Expr> derived{divs[i].first, divs[j].second};
        if (std::find(divs.begin(), divs.end(), derived) != divs.end()) continue;
        divs.push_back(std::move(derived));
        changed = true;
      }
    }
  }
  return divs;
}

// ---- simplification ------------------------------------------------------------

std::vector<Atom> topAtoms(const Expr& e, Kind kind) {
  std::vector<Atom> out;
  for (const auto& t : e.terms())
    for (const auto& f : t.factors)
      if (f.atom->kind == kind && std::find(out.begin(), out.end(), f.atom) == out.end()) out.push_back(f.atom);
  return out;
}

// e = atom * X + rest, X taking one power of the atom out of each term.
std::pair<Expr, Expr> splitByAtom(const Expr& e, Atom atom) {
  std::vector<Term> x, rest;
  for (const auto& t : e.terms()) {
    auto it = std::find_if(t.factors.begin(), t.factors.end(), [&](const Factor& f) { return f.atom == atom; });
    if (it == t.factors.end()) {
      rest.push_back(t);
      continue;
    }
    Term reduced = t;
    auto& f = reduced.factors[static_cast<size_t>(it - t.factors.begin())];
    if (--f.exp == 0) reduced.factors.erase(reduced.factors.begin() + (it - t.factors.begin()));
    x.push_back(std::move(reduced));
  }
  return {Expr::fromTerms(std::move(x)), Expr::fromTerms(std::move(rest))};
}

// x = q * Z + R, taking into Z whatever part of x is a polynomial multiple of q.
std::pair<Expr, Expr> splitMultiples(const Expr& x, const Expr& q) {
  if (q.terms().size() != 1) {
    if (auto z = Expr::exactDivide(x, q)) return {*z, Expr()};
    return {Expr(), x};
  }
  Expr z, r;
  for (const auto& t : x.terms()) {
    Expr te = Expr::fromTerms({t});
    if (auto zt = Expr::exactDivide(te, q)) z = z + *zt;
    else r = r + te;
  }
  return {z, r};
}

// With q dividing p: (p / q) * q * Z -> p * Z, anywhere in e. Newer atoms go
// first: an atom is always newer than those inside it, and cancelling the
// outer division first, in ((A / B) / (C / B)) * (C / B) * B, leaves
// (A / B) * B to cancel next.
Expr cancelDivisions(const Knowledge& k, Expr e) {
  for (int round = 0; round < kMaxCancelRounds; ++round) {
    bool changed = false;
    auto atoms = topAtoms(e, Kind::Div);
    std::sort(atoms.begin(), atoms.end(), [](Atom a, Atom b) { return a->id > b->id; });
    for (Atom d : atoms) {
      if (!divisible(k, d->lhs, d->rhs)) continue;
      auto [x, rest] = splitByAtom(e, d);
      auto [z, r] = splitMultiples(x, d->rhs);
      if (z.isZero()) continue;
      e = rest + Expr::fromAtom(d) * r + d->lhs * z;
      changed = true;
      break;
    }
    if (!changed) break;
  }
  return e;
}

Expr simplifyWith(const Knowledge& k, const Expr& e);

// A `/` or `%` atom whose operands are already simplified.
Expr applyDivisibility(const Knowledge& k, Atom a) {
  if (a->kind == Kind::Mod) return divisible(k, a->lhs, a->rhs) ? Expr() : Expr::fromAtom(a);
  // (A * Z) / Q = (A / Q) * Z when Q divides A.
  for (const auto& [big, small] : k.divs) {
    if (small != a->rhs || big == a->lhs) continue;
    if (auto z = Expr::exactDivide(a->lhs, big)) return Expr::floorDiv(big, small) * *z;
  }
  return Expr::fromAtom(a);
}

Expr simplifyAtom(const Knowledge& k, Atom a) {
  if (auto it = k.memo.find(a); it != k.memo.end()) return it->second;
  Expr p = simplifyWith(k, a->lhs), q = simplifyWith(k, a->rhs);
  Expr r = a->kind == Kind::Div ? Expr::floorDiv(p, q) : Expr::mod(p, q);
  if (auto b = r.asAtom(); b && (*b)->kind == a->kind) r = applyDivisibility(k, *b);
  k.memo.emplace(a, r);
  return r;
}

Expr simplifyWith(const Knowledge& k, const Expr& e) {
  std::map<Atom, Expr> repl;
  for (Kind kind : {Kind::Div, Kind::Mod}) {
    for (Atom a : topAtoms(e, kind)) {
      Expr s = simplifyAtom(k, a);
      if (s.asAtom() != a) repl.emplace(a, std::move(s));
    }
  }
  Expr out = e.substituteAtoms(repl);
  return k.divs.empty() ? out : cancelDivisions(k, out);
}

// ---- equalities as definitions -----------------------------------------------------

// From `coef * v + rest == 0` with coef = +-1 and v nowhere in rest, the
// definition v := -coef * rest. Picks the latest-introduced such variable.
std::optional<std::pair<std::string, Expr>> definitionFrom(const Expr& e) {
  std::optional<Atom> best;
  int64_t bestCoef = 0;
  for (const auto& t : e.terms()) {
    if (t.factors.size() != 1 || t.factors[0].exp != 1 || (t.coef != 1 && t.coef != -1)) continue;
    Atom a = t.factors[0].atom;
    if (a->kind != Kind::Var || (best && atomLess(a, *best))) continue;
    std::set<std::string> others;
    (e - Expr::constant(t.coef) * Expr::fromAtom(a)).collectVars(others);
    if (others.count(a->name)) continue;
    best = a;
    bestCoef = t.coef;
  }
  if (!best) return std::nullopt;
  Expr rest = e - Expr::constant(bestCoef) * Expr::fromAtom(*best);
  return std::make_pair((*best)->name, Expr::constant(-bestCoef) * rest);
}

std::map<std::string, Expr> definitionsFrom(const std::vector<Expr>& eqs) {
  std::map<std::string, Expr> defs;
  for (const Expr& raw : eqs) {
    auto def = definitionFrom(raw.substitute(defs));
    if (!def) continue;
    std::map<std::string, Expr> one{*def};
    for (auto& [name, value] : defs) value = value.substitute(one);
    defs.insert(std::move(*def));
  }
  return defs;
}

// ---- the linear search ---------------------------------------------------------------

// A rational bound on the multiplier k, compared exactly.
struct Bound {
  __int128 num = 0, den = 1;  // den > 0
  bool strict = false;
};

int cmpBound(const Bound& a, const Bound& b) {
  __int128 l = a.num * b.den, r = b.num * a.den;
  return l < r ? -1 : l > r ? 1 : 0;
}

// Proof obligation `d + s > 0` with s >= 1. Since d is integer valued,
// `d >= 0` is the same as `d + 1 > 0`; the slack lets rational combinations
// of facts such as 2 * D - 1 >= 0 prove D >= 1.
struct Goal {
  Expr d;
  int64_t s;
};

// a is a constant multiple of b.
bool proportional(const Expr& a, const Expr& b) {
  if (a.isZero() || b.isZero()) return a.isZero() && b.isZero();
  int64_t ca = a.terms()[0].coef, cb = b.terms()[0].coef;
  return a * Expr::constant(cb) == b * Expr::constant(ca);
}

template <class F>
void forEachMonomial(const Expr& a, const Expr& b, F&& f) {
  const auto &x = a.terms(), &y = b.terms();
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    int c = i == x.size() ? 1 : j == y.size() ? -1 : compareMonomials(x[i].factors, y[j].factors);
    if (c < 0) f(x[i].factors, x[i].coef, int64_t{0}), ++i;
    else if (c > 0) f(y[j].factors, int64_t{0}, y[j].coef), ++j;
    else f(x[i].factors, x[i].coef, y[j].coef), ++i, ++j;
  }
}

// The coefficient of monomial f in e (0 when absent).
int64_t coefficientOf(const Expr& e, const Factors& f) {
  for (const auto& t : e.terms())
    if (compareMonomials(t.factors, f) == 0) return t.coef;
  return 0;
}

// A term that keeps a goal from being trivially positive, and the sign a
// fact's term on the same monomial needs in order to help cancel it.
struct BadTerm {
  Factors mono;
  bool wantNegative;
};

struct MonoLess {
  bool operator()(const Factors& a, const Factors& b) const { return compareMonomials(a, b) < 0; }
};

// Candidate facts `c >= 0`, indexed by monomial so that a goal finds the few
// that share a problematic term with it without scanning them all.
class Candidates {
public:
  void add(const Expr& c) {
    if (!seen_.insert(c).second) return;
    for (const auto& t : c.terms()) index_[t.factors].push_back({items_.size(), t.coef});
    items_.push_back(c);
  }
  const std::vector<Expr>& items() const { return items_; }

  // Indices of the candidates with a term of the wanted sign on some bad
  // monomial, in ascending order.
  std::vector<size_t> relevantTo(const std::vector<BadTerm>& bad) const {
    std::vector<size_t> out;
    for (const auto& b : bad) {
      auto it = index_.find(b.mono);
      if (it == index_.end()) continue;
      for (auto [i, coef] : it->second)
        if ((coef < 0) == b.wantNegative) out.push_back(i);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // Candidates with a term on exactly this monomial, and that term's coefficient.
  const std::vector<std::pair<size_t, int64_t>>* withMonomial(const Factors& mono) const {
    auto it = index_.find(mono);
    return it == index_.end() ? nullptr : &it->second;
  }

private:
  std::vector<Expr> items_;
  std::set<Expr> seen_;
  std::map<Factors, std::vector<std::pair<size_t, int64_t>>, MonoLess> index_;
};

}  // namespace

// ---- derived state -----------------------------------------------------------------------

struct Facts::Derived {
  Knowledge plain;                    // divisibility only: what simplify() uses
  std::optional<Knowledge> withDefs;  // plus definitions, when there are any
  std::vector<Expr> ge;               // canonical e >= 0 (equalities give both signs)
  std::vector<Expr> eqs, nes;         // canonical e == 0, e != 0
  std::map<Atom, int64_t> lower;      // atoms >= lower >= 1, read off the facts
  Candidates shifted;                 // ge over shifted atoms, trivial ones dropped
  std::optional<Candidates> products; // pairwise products of those, built on demand
  std::map<Expr, bool> geMemo;
  std::map<Atom, int64_t> opLower;
  std::map<Atom, bool> nonnegMemo;
  int budget = 0;  // solve() calls left in the current search
  int nodes = 0;   // partial combinations left in the current search

  explicit Derived(const std::vector<Relation>& given);

  const Knowledge& full() const { return withDefs ? *withDefs : plain; }
  Expr canon(const Expr& e) const {
    return simplifyWith(full(), withDefs ? e.substitute(withDefs->defs) : e);
  }

  // -- bounds on atoms
  int64_t lowerOf(Atom a);
  std::optional<int64_t> lowerBound(const Expr& e);
  bool atomNonneg(Atom a);
  bool monoNonneg(const Factors& f);
  Expr shift(const Expr& e);
  void readLowerBounds();
  bool raiseLower(Atom a, int64_t v);
  int64_t monoLower(const Factors& f) const;

  // -- proving
  bool proveGe(const Expr& d);
  bool proveEq(const Expr& d);
  bool proveNe(const Expr& d);
  bool search(const Goal& g, const Expr& canonical);
  bool explore(const Goal& g, const Candidates& own, int depth);
  bool trivial(const Goal& g);
  std::vector<BadTerm> badTerms(const Goal& g);
  bool solve(const Goal& g, const Expr& c);
  bool solveWithAny(const Goal& g, const std::vector<BadTerm>& bad, const Candidates& cands);
  Candidates atomFacts(const Expr& d);
  Candidates monomialTimesFacts(const std::vector<BadTerm>& bad);
  const Candidates& productFacts();
};

Facts::Derived::Derived(const std::vector<Relation>& given) {
  std::vector<Expr> rawGe, rawEq, rawNe;
  std::vector<std::pair<Expr, Expr>> rawDivs;
  for (const auto& r : given) {
    unlessOverflow([&] {
      Expr d = r.lhs - r.rhs;
      switch (r.op) {
        case Rel::Ge: rawGe.push_back(d); break;
        case Rel::Gt: rawGe.push_back(d - Expr::constant(1)); break;
        case Rel::Le: rawGe.push_back(-d); break;
        case Rel::Lt: rawGe.push_back(-d - Expr::constant(1)); break;
        case Rel::Ne: rawNe.push_back(d); break;
        case Rel::Eq: {
          rawEq.push_back(d);
          // c * (P % Q) == 0 says Q divides P.
          if (d.terms().size() == 1 && d.terms()[0].factors.size() == 1) {
            const Factor& f = d.terms()[0].factors[0];
            if (f.atom->kind == Kind::Mod && f.exp == 1) rawDivs.emplace_back(f.atom->lhs, f.atom->rhs);
          }
          break;
        }
      }
    });
  }
  unlessOverflow([&] { plain.divs = closeDivs(rawDivs); });
  std::map<std::string, Expr> defs;
  unlessOverflow([&] { defs = definitionsFrom(rawEq); });
  if (!defs.empty()) {
    withDefs.emplace();
    unlessOverflow([&] {
      std::vector<std::pair<Expr, Expr>> divs;
      for (auto& [p, q] : rawDivs) divs.emplace_back(p.substitute(defs), q.substitute(defs));
      withDefs->divs = closeDivs(std::move(divs));
    });
    withDefs->defs = std::move(defs);
  }
  auto addGe = [&](const Expr& e) {
    if (!e.isZero() && std::find(ge.begin(), ge.end(), e) == ge.end()) ge.push_back(e);
  };
  for (const auto& e : rawGe) unlessOverflow([&] { addGe(canon(e)); });
  for (const auto& e : rawEq) {
    unlessOverflow([&] {
      Expr c = canon(e);
      if (c.isZero()) return;
      eqs.push_back(c);
      addGe(c);
      addGe(-c);
    });
  }
  for (const auto& e : rawNe) unlessOverflow([&] { nes.push_back(canon(e)); });
  readLowerBounds();
  for (const auto& g : ge) {
    unlessOverflow([&] {
      Expr s = shift(g);
      if (!trivial({s, 1})) shifted.add(s);
    });
  }
}

// ---- bounds on atoms ---------------------------------------------------------------------

bool Facts::Derived::raiseLower(Atom a, int64_t v) {
  auto [it, fresh] = lower.emplace(a, v);
  if (fresh) return true;
  if (it->second >= v) return false;
  it->second = v;
  return true;
}

// A lower bound of a monomial of nonnegative atoms (0 when none is known).
int64_t Facts::Derived::monoLower(const Factors& f) const {
  __int128 v = 1;
  for (const auto& x : f) {
    auto it = lower.find(x.atom);
    if (it == lower.end()) return 0;
    for (int i = 0; i < x.exp && v < (__int128{1} << 62); ++i) v *= it->second;
  }
  return static_cast<int64_t>(std::min<__int128>(v, __int128{1} << 62));
}

// Facts `c * m - sum(n_i * m_i) + k >= 0` with a single positive monomial m
// bound m from below; m >= 1 then bounds each of its atoms.
void Facts::Derived::readLowerBounds() {
  auto plainNonneg = [&](const Factors& f) {
    return std::all_of(f.begin(), f.end(), [&](const Factor& x) { return x.atom->nonneg || x.exp % 2 == 0; });
  };
  for (int round = 0; round < 4; ++round) {
    bool changed = false;
    for (const Expr& g : ge) {
      if (g.terms().empty()) continue;
      const Term* pos = nullptr;
      __int128 need = -__int128{g.constantTerm()};
      bool usable = true;
      for (const auto& t : g.terms()) {
        if (t.factors.empty()) continue;
        if (t.coef > 0 && pos) usable = false;
        if (t.coef > 0) pos = &t;
        else if (!plainNonneg(t.factors)) usable = false;
        else need += -__int128{t.coef} * monoLower(t.factors);
      }
      if (!usable || !pos || !plainNonneg(pos->factors)) continue;
      __int128 bound = need > 0 ? (need + pos->coef - 1) / pos->coef : 0;
      if (bound < 1) continue;
      int64_t b = static_cast<int64_t>(std::min<__int128>(bound, __int128{1} << 62));
      if (pos->factors.size() == 1 && pos->factors[0].exp == 1) {
        changed |= raiseLower(pos->factors[0].atom, b);
      } else {
        for (const auto& f : pos->factors) changed |= raiseLower(f.atom, 1);
      }
    }
    if (!changed) break;
  }
}

// P / Q >= 1 when Q >= 1 and either Q divides P >= 1, or P >= Q.
int64_t Facts::Derived::lowerOf(Atom a) {
  if (auto it = lower.find(a); it != lower.end()) return it->second;
  if (a->kind != Kind::Div) return 0;
  if (auto it = opLower.find(a); it != opLower.end()) return it->second;
  int64_t v = 0;
  if (lowerBound(a->rhs).value_or(0) >= 1) {
    if ((divisible(full(), a->lhs, a->rhs) && lowerBound(a->lhs).value_or(0) >= 1) ||
        lowerBound(a->lhs - a->rhs).value_or(-1) >= 0)
      v = 1;
  }
  opLower.emplace(a, v);
  return v;
}

// Replace each atom x known to be >= L >= 1 by x + L; afterwards the atom
// stands for x - L >= 0.
Expr Facts::Derived::shift(const Expr& e) {
  std::map<Atom, Expr> m;
  for (const auto& t : e.terms())
    for (const auto& f : t.factors)
      if (int64_t l = lowerOf(f.atom); l >= 1) m.emplace(f.atom, Expr::fromAtom(f.atom) + Expr::constant(l));
  return e.substituteAtoms(m);
}

// The constant term, when every other term is visibly nonnegative.
std::optional<int64_t> Facts::Derived::lowerBound(const Expr& e) {
  Expr s = shift(e);
  for (const auto& t : s.terms())
    if (!t.factors.empty() && (t.coef < 0 || !monoNonneg(t.factors))) return std::nullopt;
  return s.constantTerm();
}

bool Facts::Derived::atomNonneg(Atom a) {
  if (a->nonneg || lowerOf(a) >= 1) return true;
  if (auto it = nonnegMemo.find(a); it != nonnegMemo.end()) return it->second;
  bool v = a->kind == Kind::Mod ? lowerBound(a->rhs).value_or(-1) >= 0
         : a->kind == Kind::Div ? lowerBound(a->lhs).value_or(-1) >= 0 && lowerBound(a->rhs).value_or(-1) >= 0
                                : false;
  nonnegMemo.emplace(a, v);
  return v;
}

bool Facts::Derived::monoNonneg(const Factors& f) {
  return std::all_of(f.begin(), f.end(), [&](const Factor& x) { return x.exp % 2 == 0 || atomNonneg(x.atom); });
}

// ---- the search ------------------------------------------------------------------------------

bool Facts::Derived::trivial(const Goal& g) {
  if (g.d.constantTerm() + __int128{g.s} <= 0) return false;
  for (const auto& t : g.d.terms())
    if (!t.factors.empty() && (t.coef < 0 || !monoNonneg(t.factors))) return false;
  return true;
}

// The terms of g that stop it from being trivially positive.
std::vector<BadTerm> Facts::Derived::badTerms(const Goal& g) {
  std::vector<BadTerm> out;
  if (g.d.constantTerm() + __int128{g.s} <= 0) out.push_back({{}, true});
  for (const auto& t : g.d.terms()) {
    if (t.factors.empty()) continue;
    if (!monoNonneg(t.factors)) out.push_back({t.factors, t.coef < 0});
    else if (t.coef < 0) out.push_back({t.factors, true});
  }
  return out;
}

// Is there a k >= 0 making g.d + g.s - k * c trivially positive? Each
// monomial bounds k; the bounds must leave room.
bool Facts::Derived::solve(const Goal& g, const Expr& c) {
  Bound lo;
  std::optional<Bound> hi;
  bool ok = true;
  auto atMost = [&](Bound b) {
    if (!hi || cmpBound(b, *hi) < 0) hi = b;
    else if (cmpBound(b, *hi) == 0) hi->strict |= b.strict;
  };
  auto atLeast = [&](Bound b) {
    if (cmpBound(b, lo) > 0) lo = b;
    else if (cmpBound(b, lo) == 0) lo.strict |= b.strict;
  };
  forEachMonomial(g.d, c, [&](const Factors& f, int64_t dm, int64_t cm) {
    if (!ok) return;
    enum { Pos, Nonneg, Zero } need = f.empty() ? Pos : monoNonneg(f) ? Nonneg : Zero;
    __int128 a = f.empty() ? dm + __int128{g.s} : dm;  // need a - k * cm (> | >= | ==) 0
    if (cm == 0) {
      ok = need == Pos ? a > 0 : need == Nonneg ? a >= 0 : a == 0;
      return;
    }
    Bound b{cm > 0 ? a : -a, cm > 0 ? cm : -__int128{cm}, need == Pos};
    if (need == Zero) atMost(b), atLeast(b);
    else if (cm > 0) atMost(b);
    else atLeast(b);
  });
  if (!ok) return false;
  if (!hi) return true;
  int order = cmpBound(lo, *hi);
  return order < 0 || (order == 0 && !lo.strict && !hi->strict);
}

// Definitions of the `/` and `%` atoms of d as inequalities:
// Q * (P / Q) <= P < Q * (P / Q) + Q, and P % Q < Q, P % Q <= P.
Candidates Facts::Derived::atomFacts(const Expr& d) {
  Candidates out;
  // Each defining bound is offered as written too: a divisibility fact
  // simplifies `D - 2 * (D / 2)` to 0, which would lose `D / 2 <= D`.
  auto add = [&](const Expr& e) {
    for (const Expr& form : {canon(e), e}) {
      Expr s = shift(form);
      if (!trivial({s, 1})) out.add(s);
    }
  };
  Expr one = Expr::constant(1);
  for (Atom a : topAtoms(d, Kind::Div)) {
    if (lowerBound(a->rhs).value_or(0) < 1) continue;
    Expr x = Expr::fromAtom(a);
    add(a->lhs - a->rhs * x);
    add(a->rhs * x + a->rhs - one - a->lhs);
  }
  for (Atom a : topAtoms(d, Kind::Mod)) {
    if (lowerBound(a->rhs).value_or(0) < 1) continue;
    Expr x = Expr::fromAtom(a);
    add(a->rhs - one - x);
    if (lowerBound(a->lhs).value_or(-1) >= 0) add(a->lhs - x);
  }
  return out;
}

// The proper divisors of a monomial other than 1, as (divisor, quotient).
std::vector<std::pair<Factors, Factors>> splitsOf(const Factors& m) {
  std::vector<std::pair<Factors, Factors>> out{{{}, {}}};
  for (const auto& f : m) {
    std::vector<std::pair<Factors, Factors>> next;
    for (const auto& [d, q] : out) {
      for (int e = 0; e <= f.exp; ++e) {
        auto d2 = d, q2 = q;
        if (e > 0) d2.push_back({f.atom, e});
        if (e < f.exp) q2.push_back({f.atom, f.exp - e});
        next.emplace_back(std::move(d2), std::move(q2));
      }
    }
    out = std::move(next);
  }
  std::erase_if(out, [](const auto& s) { return s.first.empty() || s.second.empty(); });
  return out;
}

// Facts multiplied by a nonnegative monomial r that lands one of their
// terms t on a bad monomial m = r * t: from A >= B prove A * D >= B * D.
Candidates Facts::Derived::monomialTimesFacts(const std::vector<BadTerm>& bad) {
  Candidates out;
  for (const auto& b : bad) {
    for (const auto& [t, r] : splitsOf(b.mono)) {
      const auto* hits = shifted.withMonomial(t);
      if (!hits || !monoNonneg(r)) continue;
      Expr multiplier = Expr::fromTerms({Term{1, r}});
      // Also by the multiplier before shifting, (x + L) for x: with facts
      // i < N, j < M that is M * (N - i - 1) in i * M + j < N * M.
      Expr whole = shift(multiplier);
      for (auto [idx, coef] : *hits) {
        if ((coef < 0) != b.wantNegative) continue;
        out.add(shifted.items()[idx] * multiplier);
        if (whole != multiplier) out.add(shifted.items()[idx] * whole);
      }
    }
  }
  return out;
}

const Candidates& Facts::Derived::productFacts() {
  if (!products) {
    products.emplace();
    const auto& fs = shifted.items();
    size_t n = std::min(fs.size(), kMaxProductFacts);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = i; j < n; ++j) unlessOverflow([&] { products->add(fs[i] * fs[j]); });
  }
  return *products;
}

bool Facts::Derived::solveWithAny(const Goal& g, const std::vector<BadTerm>& bad, const Candidates& cands) {
  for (size_t i : cands.relevantTo(bad)) {
    if (budget == 0) return false;
    --budget;
    if (solve(g, cands.items()[i])) return true;
  }
  return false;
}

// Is g.d + g.s a nonnegative combination of a few candidate facts plus
// something trivially positive?
bool Facts::Derived::search(const Goal& g, const Expr& canonical) {
  budget = kSolveBudget;
  nodes = kSearchNodes;
  return explore(g, atomFacts(canonical), kSearchDepth);
}

// Finish with one candidate if some scaling of it works; otherwise cancel
// the highest bad term exactly with a candidate and explore the rest. A
// candidate must have a term of the right sign on every bad term it is to
// fix, so looking only at candidates for that one term loses nothing.
bool Facts::Derived::explore(const Goal& g, const Candidates& own, int depth) {
  auto bad = badTerms(g);
  if (bad.empty()) return true;
  if (--nodes < 0) return false;
  auto focus = std::find_if(bad.begin(), bad.end(), [](const BadTerm& b) { return !b.mono.empty(); });
  if (focus == bad.end()) focus = bad.begin();  // only the constant is short
  std::vector<BadTerm> focusOnly{*focus};
  // Multiplied facts only help with nonlinear terms; building them costs.
  bool nonlinear = focus->mono.size() > 1 || (!focus->mono.empty() && focus->mono[0].exp > 1);
  static const Candidates none;
  Candidates scaled = nonlinear ? monomialTimesFacts(focusOnly) : Candidates();
  const Candidates* sets[] = {&shifted, &own, &scaled, nonlinear ? &productFacts() : &none};
  for (const Candidates* set : sets)
    if (solveWithAny(g, focusOnly, *set)) return true;
  if (depth == 0 || focus->mono.empty()) return false;
  int64_t dm = coefficientOf(g.d, focus->mono);
  size_t tried = 0;
  for (const Candidates* set : sets) {
    for (size_t i : set->relevantTo(focusOnly)) {
      if (tried++ == kBranching) return false;
      const Expr& c = set->items()[i];
      int64_t cm = coefficientOf(c, focus->mono);
      if (dm == INT64_MIN || cm == INT64_MIN) continue;
      // dm and cm have the same sign: subtract (dm / cm) * c, scaled to integers.
      int64_t gcd = std::gcd(dm, cm), p = std::abs(dm) / gcd, q = std::abs(cm) / gcd;
      Goal rest{g.d.scaled(q) - c.scaled(p), 0};
      if (__builtin_mul_overflow(q, g.s, &rest.s)) continue;
      if (explore(rest, own, depth - 1)) return true;
    }
  }
  return false;
}

bool Facts::Derived::proveGe(const Expr& d) {
  if (auto it = geMemo.find(d); it != geMemo.end()) return it->second;
  bool r;
  try {
    r = search({shift(d), 1}, d);
  } catch (const DimOverflow&) {
    r = false;
  }
  geMemo.emplace(d, r);
  return r;
}

bool Facts::Derived::proveEq(const Expr& d) {
  if (d.isZero()) return true;
  if (std::any_of(eqs.begin(), eqs.end(), [&](const Expr& e) { return proportional(d, e); })) return true;
  return proveGe(d) && proveGe(-d);
}

bool Facts::Derived::proveNe(const Expr& d) {
  if (std::any_of(nes.begin(), nes.end(), [&](const Expr& e) { return proportional(d, e); })) return true;
  Expr one = Expr::constant(1);
  return proveGe(d - one) || proveGe(-d - one);
}

// ---- Facts -------------------------------------------------------------------------------------

Facts::Derived& Facts::derived() const {
  if (!derived_) derived_ = std::make_shared<Derived>(given_);
  return *derived_;
}

void Facts::add(const Relation& r) {
  given_.push_back(r);
  derived_.reset();
}

bool Facts::prove(const Relation& goal) const {
  try {
    Derived& d = derived();
    Expr diff = d.canon(goal.lhs - goal.rhs);
    Expr one = Expr::constant(1);
    switch (goal.op) {
      case Rel::Eq: return d.proveEq(diff);
      case Rel::Ne: return d.proveNe(diff);
      case Rel::Ge: return d.proveGe(diff);
      case Rel::Gt: return d.proveGe(diff - one);
      case Rel::Le: return d.proveGe(-diff);
      case Rel::Lt: return d.proveGe(-diff - one);
    }
  } catch (const DimOverflow&) {
  }
  return false;
}

Expr Facts::simplify(const Expr& e) const {
  try {
    return simplifyWith(derived().plain, e);
  } catch (const DimOverflow&) {
    return e;
  }
}

std::optional<std::vector<size_t>> Facts::usedBy(const Relation& goal) const {
  if (!prove(goal)) return std::nullopt;
  auto provenFrom = [&](const std::vector<size_t>& keep) {
    Facts subset;
    for (size_t i : keep) subset.add(given_[i]);
    return subset.prove(goal);
  };
  std::vector<size_t> keep;
  if (provenFrom(keep)) return keep;
  // Start from the facts connected to the goal through shared dimensions,
  // when they suffice: a where clause of twenty facts usually has a few that
  // mention the goal's dimensions at all, and each drop costs a proof.
  std::set<std::string> names = goal.names();
  std::vector<bool> linked(given_.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < given_.size(); ++i) {
      if (linked[i]) continue;
      auto mine = given_[i].names();
      bool shares = mine.empty() || std::any_of(mine.begin(), mine.end(), [&](const std::string& n) {
        return names.count(n) > 0;
      });
      if (!shares) continue;
      linked[i] = changed = true;
      names.insert(mine.begin(), mine.end());
    }
  }
  for (size_t i = 0; i < given_.size(); ++i)
    if (linked[i]) keep.push_back(i);
  if (keep.size() == given_.size() || !provenFrom(keep)) {
    keep.resize(given_.size());
    std::iota(keep.begin(), keep.end(), size_t{0});
  }
  // Later facts are tried first, and a fact that states the goal itself
  // last: where several sets suffice, the one left is the plainest.
  std::string stated = goal.str();
  std::vector<size_t> order(keep.rbegin(), keep.rend());
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return given_[i].str() != stated; });
  for (size_t drop : order) {
    std::vector<size_t> trial;
    for (size_t i : keep)
      if (i != drop) trial.push_back(i);
    if (provenFrom(trial)) keep = std::move(trial);
  }
  return keep;
}

std::vector<std::string> Facts::describe() const {
  std::vector<std::string> out;
  for (const auto& r : given_) out.push_back(r.str());
  return out;
}

}  // namespace linnet::dims
