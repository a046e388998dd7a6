// Symbolic dimension expressions: integer polynomials over interned atoms.
//
// An atom is a dimension variable (`H`), the product of a dimension pack
// (`prod(L)`), or an opaque floor division / modulo of two normalized
// expressions. Every Expr is kept in one canonical normal form, so structural
// equality is semantic equality for everything the normalizer understands.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace linnet::dims {

struct AtomNode;
// Atoms are interned for the life of the process: equal atoms share one node,
// so comparing atoms is comparing pointers.
using Atom = const AtomNode*;

// Atom order: by kind (packs, variables, divisions, modulos), then by creation
// order. Creation order keeps printed products in the order the program
// introduced their parts (`Heads / Shards * (H / Heads)`, `P + Batch`). It is
// deterministic for a given sequence of calls, but printed order within a
// sum or product depends on which atoms the process created first.
bool atomLess(Atom a, Atom b);

struct Factor {
  Atom atom;
  int exp;  // >= 1
  bool operator==(const Factor&) const = default;
};

// The canonical monomial order (graded lexicographic over atomLess): negative
// when `a` comes first. Terms of an Expr are sorted by it.
int compareMonomials(const std::vector<Factor>& a, const std::vector<Factor>& b);

// coef * product of factors; factors sorted by atomLess, no atom repeated.
// No factors means a constant term.
struct Term {
  int64_t coef;
  std::vector<Factor> factors;
};

// Thrown by Expr arithmetic when a coefficient leaves int64. Facts never
// throws it: an overflowing fact is dropped, an overflowing goal unproven.
// what() names the operation and its values: "1099511627776 * 1099511627776
// is above 9223372036854775807, the largest dimension value (int64)".
struct DimOverflow : std::exception {
  DimOverflow(int64_t a, char op, int64_t b);
  const char* what() const noexcept override { return message.c_str(); }
  std::string message;
};

class Expr {
public:
  Expr();  // the constant 0
  static Expr constant(int64_t v);
  static Expr var(const std::string& name);
  static Expr packProduct(const std::string& pack);  // prints as `prod(L)`

  friend Expr operator+(const Expr&, const Expr&);
  friend Expr operator-(const Expr&, const Expr&);
  friend Expr operator*(const Expr&, const Expr&);
  Expr operator-() const;
  Expr scaled(int64_t k) const;  // k * this; cheaper than multiplying

  // Floor division and modulo (result has the divisor's sign). Fold what can
  // be folded; a constant zero divisor stays symbolic for the caller to report.
  // Exact quotients divide out ((N * D) / N -> D, (2 * S + 1) / 2 -> S) and
  // common factors cancel, so a result may be defined where the original
  // divided by zero: check divisors before normalizing.
  static Expr floorDiv(const Expr& a, const Expr& b);
  static Expr mod(const Expr& a, const Expr& b);

  bool isConstant() const;
  int64_t constantValue() const;  // precondition: isConstant()
  bool isZero() const { return terms().empty(); }
  std::optional<std::string> asVar() const;  // set when exactly one variable
  std::optional<Atom> asAtom() const;        // set when exactly one atom (coef 1, exp 1)

  bool operator==(const Expr&) const;
  bool operator!=(const Expr& o) const { return !(*this == o); }
  bool operator<(const Expr&) const;  // a total order (for maps)
  size_t hash() const;

  std::string str() const;  // readable infix with minimal parentheses

  // Simultaneous substitution of variables; the result is renormalized.
  Expr substitute(const std::map<std::string, Expr>& vars) const;
  // Same, also replacing `prod(L)` by packProducts[L].
  Expr substitute(const std::map<std::string, Expr>& vars,
                  const std::map<std::string, Expr>& packProducts) const;
  // Replace top-level atoms (not those nested inside / and %).
  Expr substituteAtoms(const std::map<Atom, Expr>& atoms) const;

  void collectVars(std::set<std::string>& out) const;
  void collectPacks(std::set<std::string>& out) const;
  // nullopt when a variable is missing, on division by zero or on overflow.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& vars) const;
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& vars,
                                  const std::map<std::string, int64_t>& packProducts) const;

  // The polynomial itself: terms in canonical order (highest degree first,
  // the constant term last).
  const std::vector<Term>& terms() const;
  static Expr fromAtom(Atom a);
  static Expr fromTerms(std::vector<Term> terms);  // normalizes
  int64_t constantTerm() const;

  // Exact polynomial quotient a / b when b divides a in the polynomial ring.
  static std::optional<Expr> exactDivide(const Expr& a, const Expr& b);

private:
  explicit Expr(std::shared_ptr<const std::vector<Term>> p) : p_(std::move(p)) {}
  static Expr fromNormalTerms(std::vector<Term> terms);  // already sorted and merged
  std::shared_ptr<const std::vector<Term>> p_;  // null for 0
};

struct AtomNode {
  enum class Kind { Pack, Var, Div, Mod };
  Kind kind;
  std::string name;  // Var, Pack
  Expr lhs, rhs;     // Div, Mod
  uint32_t id;       // creation order
  bool nonneg;       // >= 0 without any facts (every operand of / and % is)
  std::string str() const;
};

enum class Rel { Eq, Ne, Lt, Le, Gt, Ge };
const char* relSymbol(Rel r);

struct Relation {
  Expr lhs;
  Rel op;
  Expr rhs;
  std::string str() const;  // "H % Heads == 0"
  // The dimensions it mentions: variables, and packs as "...L".
  std::set<std::string> names() const;
};

}  // namespace linnet::dims
