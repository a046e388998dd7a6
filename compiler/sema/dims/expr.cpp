#include "sema/dims/expr.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <mutex>
#include <numeric>

namespace linnet::dims {

DimOverflow::DimOverflow(int64_t a, char op, int64_t b) {
  __int128 exact = op == '+' ? __int128(a) + b : op == '*' ? __int128(a) * b : -__int128(a);
  message = std::to_string(a) + " " + op + " " + std::to_string(b) + " is " +
            (exact < 0 ? "below " + std::to_string(INT64_MIN) + ", the smallest"
                       : "above " + std::to_string(INT64_MAX) + ", the largest") +
            " dimension value (int64)";
}

namespace {

using Factors = std::vector<Factor>;

// ---- checked integer arithmetic ------------------------------------------

int64_t addC(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw DimOverflow(a, '+', b);
  return r;
}

int64_t mulC(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw DimOverflow(a, '*', b);
  return r;
}

int64_t negC(int64_t a) { return mulC(a, -1); }

// Floor division and modulo with the divisor's sign; b != 0.
int64_t floorDivInt(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) throw DimOverflow(a, '/', b);
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floorModInt(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// ---- monomials -------------------------------------------------------------

int degree(const Factors& f) {
  int d = 0;
  for (const auto& x : f) d += x.exp;
  return d;
}

// Graded lexicographic order: higher degree first, then by the first atom
// that differs. It is a monomial order, which exactDivide relies on.
int monoCmp(const Factors& a, const Factors& b) {
  int da = degree(a), db = degree(b);
  if (da != db) return da > db ? -1 : 1;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].atom != b[i].atom) return atomLess(a[i].atom, b[i].atom) ? -1 : 1;
    if (a[i].exp != b[i].exp) return a[i].exp > b[i].exp ? -1 : 1;
  }
  return 0;  // equal degree and equal prefix: equal
}

Factors monoMul(const Factors& a, const Factors& b) {
  Factors out;
  out.reserve(a.size() + b.size());
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && atomLess(a[i].atom, b[j].atom))) {
      out.push_back(a[i++]);
    } else if (i == a.size() || atomLess(b[j].atom, a[i].atom)) {
      out.push_back(b[j++]);
    } else {
      out.push_back({a[i].atom, a[i].exp + b[j].exp});
      ++i, ++j;
    }
  }
  return out;
}

// a / b as monomials, when b divides a.
std::optional<Factors> monoDiv(const Factors& a, const Factors& b) {
  Factors out;
  size_t i = 0;
  for (const auto& fb : b) {
    while (i < a.size() && atomLess(a[i].atom, fb.atom)) out.push_back(a[i++]);
    if (i == a.size() || a[i].atom != fb.atom || a[i].exp < fb.exp) return std::nullopt;
    if (a[i].exp > fb.exp) out.push_back({fb.atom, a[i].exp - fb.exp});
    ++i;
  }
  out.insert(out.end(), a.begin() + static_cast<std::ptrdiff_t>(i), a.end());
  return out;
}

bool monoNonneg(const Factors& f) {
  return std::all_of(f.begin(), f.end(),
                     [](const Factor& x) { return x.atom->nonneg || x.exp % 2 == 0; });
}

// ---- polynomials -------------------------------------------------------------

// Sort, merge equal monomials, drop zero coefficients.
std::vector<Term> normalize(std::vector<Term> ts) {
  std::sort(ts.begin(), ts.end(),
            [](const Term& a, const Term& b) { return monoCmp(a.factors, b.factors) < 0; });
  std::vector<Term> out;
  for (auto& t : ts) {
    if (!out.empty() && monoCmp(out.back().factors, t.factors) == 0) {
      out.back().coef = addC(out.back().coef, t.coef);
      if (out.back().coef == 0) out.pop_back();
    } else if (t.coef != 0) {
      out.push_back(std::move(t));
    }
  }
  return out;
}

// Nonnegative for all values of the atoms, with no facts at all.
bool staticNonneg(const Expr& e) {
  for (const auto& t : e.terms()) {
    if (t.factors.empty() ? t.coef < 0 : (t.coef < 0 || !monoNonneg(t.factors))) return false;
  }
  return true;
}

std::optional<Term> singleTerm(const Expr& e) {
  if (e.terms().size() != 1) return std::nullopt;
  return e.terms()[0];
}

Expr termExpr(int64_t coef, Factors f) { return Expr::fromTerms({Term{coef, std::move(f)}}); }

// ---- interning -----------------------------------------------------------------

struct InternTable {
  std::mutex mu;
  std::deque<AtomNode> nodes;  // deque: stable addresses
  std::map<std::string, Atom> vars, packs;
  std::map<std::pair<Expr, Expr>, Atom> divs, mods;
};

InternTable& table() {
  static auto* t = new InternTable;  // never destroyed: atoms outlive everything
  return *t;
}

Atom internNamed(AtomNode::Kind kind, const std::string& name) {
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto& m = kind == AtomNode::Kind::Var ? t.vars : t.packs;
  if (auto it = m.find(name); it != m.end()) return it->second;
  auto id = static_cast<uint32_t>(t.nodes.size());
  Atom a = &t.nodes.emplace_back(AtomNode{kind, name, Expr(), Expr(), id, true});
  m.emplace(name, a);
  return a;
}

Atom internOp(AtomNode::Kind kind, const Expr& lhs, const Expr& rhs) {
  bool nonneg = staticNonneg(rhs) && (kind == AtomNode::Kind::Mod || staticNonneg(lhs));
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto& m = kind == AtomNode::Kind::Div ? t.divs : t.mods;
  auto key = std::make_pair(lhs, rhs);
  if (auto it = m.find(key); it != m.end()) return it->second;
  auto id = static_cast<uint32_t>(t.nodes.size());
  Atom a = &t.nodes.emplace_back(AtomNode{kind, "", lhs, rhs, id, nonneg});
  m.emplace(std::move(key), a);
  return a;
}

// ---- division helpers ----------------------------------------------------------

// The largest constant-times-monomial dividing every term of both a and b.
Term commonFactor(const Expr& a, const Expr& b) {
  int64_t g = 0;
  std::optional<Factors> common;
  for (const Expr* e : {&a, &b}) {
    for (const auto& t : e->terms()) {
      g = std::gcd(g, t.coef);
      if (!common) {
        common = t.factors;
        continue;
      }
      Factors kept;
      for (const auto& f : *common) {
        auto it = std::find_if(t.factors.begin(), t.factors.end(),
                               [&](const Factor& x) { return x.atom == f.atom; });
        if (it != t.factors.end()) kept.push_back({f.atom, std::min(f.exp, it->exp)});
      }
      common = std::move(kept);
    }
  }
  return Term{g == 0 ? 1 : g, common.value_or(Factors{})};
}

// Split a = c * W + R for a constant c > 0, truncating each coefficient, so
// that (S - 1) / 2 stays as written while (2 * S + 1) / 2 becomes S.
std::pair<Expr, Expr> splitByConstant(const Expr& a, int64_t c) {
  std::vector<Term> w, r;
  for (const auto& t : a.terms()) {
    if (int64_t q = t.coef / c) w.push_back({q, t.factors});
    if (int64_t rem = t.coef % c) r.push_back({rem, t.factors});
  }
  return {Expr::fromTerms(std::move(w)), Expr::fromTerms(std::move(r))};
}

// Reduce a modulo the monomial divisor `d`: terms that are multiples of d's
// monomial keep only the remainder of their coefficient.
Expr reduceModMonomial(const Expr& a, const Term& d) {
  std::vector<Term> out;
  for (const auto& t : a.terms()) {
    if (monoDiv(t.factors, d.factors)) {
      if (int64_t rem = t.coef % d.coef) out.push_back({rem, t.factors});
    } else {
      out.push_back(t);
    }
  }
  return Expr::fromTerms(std::move(out));
}

Expr power(const Expr& base, int exp) {
  Expr r = Expr::constant(1);
  for (int i = 0; i < exp; ++i) r = r * base;
  return r;
}

// Rebuild e with each top-level atom mapped by f (nullopt: keep the atom).
Expr mapAtoms(const Expr& e, const std::function<std::optional<Expr>(Atom)>& f) {
  std::map<Atom, std::optional<Expr>> mapped;
  bool changed = false;
  for (const auto& t : e.terms()) {
    for (const auto& x : t.factors) {
      if (mapped.count(x.atom)) continue;
      auto r = f(x.atom);
      changed |= r.has_value();
      mapped.emplace(x.atom, std::move(r));
    }
  }
  if (!changed) return e;
  Expr out;
  for (const auto& t : e.terms()) {
    Factors kept;
    Expr rest = Expr::constant(1);
    for (const auto& x : t.factors) {
      const auto& r = mapped.at(x.atom);
      if (r) rest = rest * power(*r, x.exp);
      else kept.push_back(x);
    }
    out = out + termExpr(t.coef, std::move(kept)) * rest;
  }
  return out;
}

// ---- printing --------------------------------------------------------------------

// Appends rather than `"(" + s + ")"`, which trips a false -Wrestrict in GCC 12.
std::string parenthesized(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '(';
  out += s;
  out += ')';
  return out;
}

bool isPlainAtom(const Expr& e) {
  auto a = e.asAtom();
  return a && ((*a)->kind == AtomNode::Kind::Var || (*a)->kind == AtomNode::Kind::Pack);
}

// Sums always need parentheses. Beyond that, spell out groupings readers
// might misread even where precedence makes them redundant:
// `(H / Heads) % 2`, `(B * S) % 4`, `(H % 8) / 2`.
std::string leftOperand(const Expr& e, AtomNode::Kind op) {
  bool paren = e.terms().size() > 1;
  if (op == AtomNode::Kind::Mod) paren |= !e.isConstant() && !isPlainAtom(e);
  if (auto a = e.asAtom(); a && (*a)->kind == AtomNode::Kind::Mod) paren = true;
  return paren ? parenthesized(e.str()) : e.str();
}

std::string rightOperand(const Expr& e) {
  if ((e.isConstant() && e.constantValue() >= 0) || isPlainAtom(e)) return e.str();
  return parenthesized(e.str());
}

// A term without its sign. `unary` is set when a unary minus precedes it,
// which binds tighter than `/` and so forces parentheses on a leading `a / b`.
std::string termBody(uint64_t absCoef, const Factors& fs, bool unary) {
  if (fs.empty()) return std::to_string(absCoef);
  std::vector<std::string> parts;
  if (absCoef != 1) parts.push_back(std::to_string(absCoef));
  for (const auto& f : fs) {
    for (int i = 0; i < f.exp; ++i) {
      bool first = parts.empty() && !unary;
      bool alone = first && fs.size() == 1 && f.exp == 1;
      std::string s = f.atom->str();
      bool paren = (f.atom->kind == AtomNode::Kind::Div && !first) ||
                   (f.atom->kind == AtomNode::Kind::Mod && !alone);
      parts.push_back(paren ? parenthesized(s) : s);
    }
  }
  std::string out = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) out += " * " + parts[i];
  return out;
}

}  // namespace

// ---- atoms ---------------------------------------------------------------------------

bool atomLess(Atom a, Atom b) {
  if (a->kind != b->kind) return a->kind < b->kind;
  return a->id < b->id;
}

std::string AtomNode::str() const {
  switch (kind) {
    case Kind::Var: return name;
    case Kind::Pack: return "prod(" + name + ")";
    case Kind::Div: return leftOperand(lhs, kind) + " / " + rightOperand(rhs);
    case Kind::Mod: return leftOperand(lhs, kind) + " % " + rightOperand(rhs);
  }
  return "?";
}

int compareMonomials(const std::vector<Factor>& a, const std::vector<Factor>& b) { return monoCmp(a, b); }

// ---- construction --------------------------------------------------------------------

Expr::Expr() = default;

Expr Expr::constant(int64_t v) { return termExpr(v, {}); }
Expr Expr::var(const std::string& name) { return fromAtom(internNamed(AtomNode::Kind::Var, name)); }
Expr Expr::packProduct(const std::string& pack) {
  return fromAtom(internNamed(AtomNode::Kind::Pack, pack));
}
Expr Expr::fromAtom(Atom a) { return termExpr(1, {Factor{a, 1}}); }

Expr Expr::fromTerms(std::vector<Term> ts) { return fromNormalTerms(normalize(std::move(ts))); }

Expr Expr::fromNormalTerms(std::vector<Term> ts) {
  if (ts.empty()) return Expr();
  return Expr(std::make_shared<const std::vector<Term>>(std::move(ts)));
}

const std::vector<Term>& Expr::terms() const {
  static const std::vector<Term> empty;
  return p_ ? *p_ : empty;
}

// ---- arithmetic -----------------------------------------------------------------------

// Both operands are sorted: merge them instead of sorting again.
Expr operator+(const Expr& a, const Expr& b) {
  if (a.isZero()) return b;
  if (b.isZero()) return a;
  const auto &x = a.terms(), &y = b.terms();
  std::vector<Term> out;
  out.reserve(x.size() + y.size());
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    int c = i == x.size() ? 1 : j == y.size() ? -1 : monoCmp(x[i].factors, y[j].factors);
    if (c < 0) {
      out.push_back(x[i++]);
    } else if (c > 0) {
      out.push_back(y[j++]);
    } else {
      if (int64_t sum = addC(x[i].coef, y[j].coef)) out.push_back({sum, x[i].factors});
      ++i, ++j;
    }
  }
  return Expr::fromNormalTerms(std::move(out));
}

// Scaling by a nonzero constant keeps the order.
Expr Expr::scaled(int64_t k) const {
  if (k == 0) return Expr();
  if (k == 1) return *this;
  std::vector<Term> ts = terms();
  for (auto& t : ts) t.coef = mulC(t.coef, k);
  return fromNormalTerms(std::move(ts));
}

Expr Expr::operator-() const { return scaled(-1); }

Expr operator-(const Expr& a, const Expr& b) { return a + (-b); }

Expr operator*(const Expr& a, const Expr& b) {
  if (a.isConstant()) return b.scaled(a.constantValue());
  if (b.isConstant()) return a.scaled(b.constantValue());
  std::vector<Term> ts;
  ts.reserve(a.terms().size() * b.terms().size());
  for (const auto& x : a.terms())
    for (const auto& y : b.terms()) ts.push_back({mulC(x.coef, y.coef), monoMul(x.factors, y.factors)});
  return Expr::fromTerms(std::move(ts));
}

std::optional<Expr> Expr::exactDivide(const Expr& a, const Expr& b) {
  if (b.isZero()) return std::nullopt;
  if (a.isZero()) return Expr();
  if (auto d = singleTerm(b)) {
    std::vector<Term> q;
    for (const auto& t : a.terms()) {
      auto f = monoDiv(t.factors, d->factors);
      if (!f || t.coef % d->coef != 0) return std::nullopt;
      q.push_back({t.coef / d->coef, std::move(*f)});
    }
    return fromTerms(std::move(q));
  }
  // Long division by leading terms; exact iff the remainder reaches zero.
  const Term& lead = b.terms()[0];
  Expr rem = a, quot;
  for (size_t step = 0; step < 4 * a.terms().size() + 16; ++step) {
    if (rem.isZero()) return quot;
    const Term& top = rem.terms()[0];
    auto f = monoDiv(top.factors, lead.factors);
    if (!f || top.coef % lead.coef != 0) return std::nullopt;
    Expr t = termExpr(top.coef / lead.coef, std::move(*f));
    quot = quot + t;
    rem = rem - t * b;
  }
  return std::nullopt;
}

Expr Expr::floorDiv(const Expr& a, const Expr& b) {
  if (b.isConstant()) {
    int64_t c = b.constantValue();
    if (c == 0) return fromAtom(internOp(AtomNode::Kind::Div, a, b));
    if (a.isConstant()) return constant(floorDivInt(a.constantValue(), c));
    if (c < 0) return floorDiv(-a, constant(negC(c)));  // floor(a / -c) = floor(-a / c)
  }
  if (a.isZero()) return Expr();
  if (auto q = exactDivide(a, b)) return *q;
  // floor(g*a / (g*b)) = floor(a / b): cancel common constants and atoms.
  Term common = commonFactor(a, b);
  if (common.coef != 1 || !common.factors.empty()) {
    Expr g = termExpr(common.coef, common.factors);
    return floorDiv(*exactDivide(a, g), *exactDivide(b, g));
  }
  // floor((c*W + R) / c) = W + floor(R / c)
  if (b.isConstant()) {
    auto [w, r] = splitByConstant(a, b.constantValue());
    if (!w.isZero()) return w + floorDiv(r, b);
  }
  return fromAtom(internOp(AtomNode::Kind::Div, a, b));
}

Expr Expr::mod(const Expr& a, const Expr& b) {
  if (b.isConstant()) {
    int64_t c = b.constantValue();
    if (c == 0) return fromAtom(internOp(AtomNode::Kind::Mod, a, b));
    if (a.isConstant()) return constant(floorModInt(a.constantValue(), c));
    if (c == 1 || c == -1) return Expr();
    if (c < 0) return -mod(-a, constant(negC(c)));  // a mod -c = -((-a) mod c)
  }
  if (a.isZero()) return Expr();
  if (exactDivide(a, b)) return Expr();
  // (d*W + R) mod d = R mod d for a monomial divisor d.
  if (auto d = singleTerm(b); d && d->coef > 0) {
    Expr r = reduceModMonomial(a, *d);
    if (r != a) return mod(r, b);
  }
  return fromAtom(internOp(AtomNode::Kind::Mod, a, b));
}

// ---- queries --------------------------------------------------------------------------

bool Expr::isConstant() const { return terms().empty() || (terms().size() == 1 && terms()[0].factors.empty()); }

int64_t Expr::constantValue() const { return terms().empty() ? 0 : terms()[0].coef; }

int64_t Expr::constantTerm() const {
  return !terms().empty() && terms().back().factors.empty() ? terms().back().coef : 0;
}

std::optional<Atom> Expr::asAtom() const {
  if (terms().size() != 1) return std::nullopt;
  const Term& t = terms()[0];
  if (t.coef != 1 || t.factors.size() != 1 || t.factors[0].exp != 1) return std::nullopt;
  return t.factors[0].atom;
}

std::optional<std::string> Expr::asVar() const {
  auto a = asAtom();
  if (!a || (*a)->kind != AtomNode::Kind::Var) return std::nullopt;
  return (*a)->name;
}

bool Expr::operator==(const Expr& o) const {
  if (p_ == o.p_) return true;
  const auto &x = terms(), &y = o.terms();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].coef != y[i].coef || x[i].factors != y[i].factors) return false;
  return true;
}

bool Expr::operator<(const Expr& o) const {
  if (p_ == o.p_) return false;
  const auto &x = terms(), &y = o.terms();
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (int c = monoCmp(x[i].factors, y[i].factors)) return c < 0;
    if (x[i].coef != y[i].coef) return x[i].coef < y[i].coef;
  }
  return x.size() < y.size();
}

size_t Expr::hash() const {
  size_t h = terms().size();
  auto mix = [&](uint64_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  for (const auto& t : terms()) {
    mix(static_cast<uint64_t>(t.coef));
    for (const auto& f : t.factors) mix((uint64_t{f.atom->id} << 8) ^ static_cast<uint64_t>(f.exp));
  }
  return h;
}

// ---- printing -------------------------------------------------------------------------

std::string Expr::str() const {
  if (isZero()) return "0";
  // Lead with a positive term when there is one: `1 - S`, not `-S + 1`.
  std::vector<const Term*> order;
  for (const auto& t : terms()) order.push_back(&t);
  if (order[0]->coef < 0) {
    auto pos = std::find_if(order.begin(), order.end(), [](const Term* t) { return t->coef > 0; });
    if (pos != order.end()) std::rotate(order.begin(), pos, pos + 1);
  }
  std::string out;
  for (size_t i = 0; i < order.size(); ++i) {
    const Term& t = *order[i];
    // Magnitude as unsigned: -INT64_MIN does not fit.
    uint64_t mag = t.coef < 0 ? 0 - static_cast<uint64_t>(t.coef) : static_cast<uint64_t>(t.coef);
    std::string body = termBody(mag, t.factors, i == 0 && t.coef < 0);
    if (i == 0) out = (t.coef < 0 ? "-" : "") + body;
    else out += (t.coef < 0 ? " - " : " + ") + body;
  }
  return out;
}

// ---- substitution and evaluation -----------------------------------------------------

Expr Expr::substitute(const std::map<std::string, Expr>& vars) const { return substitute(vars, {}); }

Expr Expr::substitute(const std::map<std::string, Expr>& vars,
                      const std::map<std::string, Expr>& packs) const {
  return mapAtoms(*this, [&](Atom a) -> std::optional<Expr> {
    switch (a->kind) {
      case AtomNode::Kind::Var:
        if (auto it = vars.find(a->name); it != vars.end()) return it->second;
        return std::nullopt;
      case AtomNode::Kind::Pack:
        if (auto it = packs.find(a->name); it != packs.end()) return it->second;
        return std::nullopt;
      case AtomNode::Kind::Div:
      case AtomNode::Kind::Mod: {
        Expr l = a->lhs.substitute(vars, packs), r = a->rhs.substitute(vars, packs);
        if (l == a->lhs && r == a->rhs) return std::nullopt;
        return a->kind == AtomNode::Kind::Div ? floorDiv(l, r) : mod(l, r);
      }
    }
    return std::nullopt;
  });
}

Expr Expr::substituteAtoms(const std::map<Atom, Expr>& atoms) const {
  if (atoms.empty()) return *this;
  return mapAtoms(*this, [&](Atom a) -> std::optional<Expr> {
    if (auto it = atoms.find(a); it != atoms.end()) return it->second;
    return std::nullopt;
  });
}

void Expr::collectVars(std::set<std::string>& out) const {
  for (const auto& t : terms()) {
    for (const auto& f : t.factors) {
      if (f.atom->kind == AtomNode::Kind::Var) out.insert(f.atom->name);
      f.atom->lhs.collectVars(out);
      f.atom->rhs.collectVars(out);
    }
  }
}

void Expr::collectPacks(std::set<std::string>& out) const {
  for (const auto& t : terms()) {
    for (const auto& f : t.factors) {
      if (f.atom->kind == AtomNode::Kind::Pack) out.insert(f.atom->name);
      f.atom->lhs.collectPacks(out);
      f.atom->rhs.collectPacks(out);
    }
  }
}

std::optional<int64_t> Expr::evaluate(const std::map<std::string, int64_t>& vars) const {
  return evaluate(vars, {});
}

std::optional<int64_t> Expr::evaluate(const std::map<std::string, int64_t>& vars,
                                      const std::map<std::string, int64_t>& packs) const {
  auto atomValue = [&](Atom a) -> std::optional<int64_t> {
    auto lookup = [](const auto& m, const std::string& k) -> std::optional<int64_t> {
      if (auto it = m.find(k); it != m.end()) return it->second;
      return std::nullopt;
    };
    switch (a->kind) {
      case AtomNode::Kind::Var: return lookup(vars, a->name);
      case AtomNode::Kind::Pack: return lookup(packs, a->name);
      case AtomNode::Kind::Div:
      case AtomNode::Kind::Mod: {
        auto l = a->lhs.evaluate(vars, packs), r = a->rhs.evaluate(vars, packs);
        if (!l || !r || *r == 0) return std::nullopt;
        return a->kind == AtomNode::Kind::Div ? floorDivInt(*l, *r) : floorModInt(*l, *r);
      }
    }
    return std::nullopt;
  };
  try {
    int64_t sum = 0;
    for (const auto& t : terms()) {
      int64_t v = t.coef;
      for (const auto& f : t.factors) {
        auto x = atomValue(f.atom);
        if (!x) return std::nullopt;
        for (int i = 0; i < f.exp; ++i) v = mulC(v, *x);
      }
      sum = addC(sum, v);
    }
    return sum;
  } catch (const DimOverflow&) {
    return std::nullopt;
  }
}

// ---- relations ------------------------------------------------------------------------

const char* relSymbol(Rel r) {
  switch (r) {
    case Rel::Eq: return "==";
    case Rel::Ne: return "!=";
    case Rel::Lt: return "<";
    case Rel::Le: return "<=";
    case Rel::Gt: return ">";
    case Rel::Ge: return ">=";
  }
  return "?";
}

std::string Relation::str() const { return lhs.str() + " " + relSymbol(op) + " " + rhs.str(); }

std::set<std::string> Relation::names() const {
  std::set<std::string> out;
  lhs.collectVars(out);
  rhs.collectVars(out);
  std::set<std::string> packs;
  lhs.collectPacks(packs);
  rhs.collectPacks(packs);
  for (const auto& p : packs) out.insert("..." + p);
  return out;
}

}  // namespace linnet::dims
