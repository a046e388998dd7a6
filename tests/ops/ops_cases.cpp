#include "ops_cases.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "sema/primitives.h"
#include "syntax/ast.h"

namespace linnet::ops {

namespace {

using Shape = std::vector<int64_t>;
using sema::Operands;
using sema::ReduceResult;
using syntax::BinaryOp;
using syntax::UnaryOp;

constexpr Scalar F32 = Scalar::F32, BF16 = Scalar::BF16, F16 = Scalar::F16, I32 = Scalar::I32,
                 I64 = Scalar::I64, Bool = Scalar::Bool;
const std::vector<Scalar> kAll = {F32, BF16, F16, I32, I64, Bool};
const std::vector<Scalar> kNumbers = {F32, BF16, F16, I32, I64};
const std::vector<Scalar> kFloats = {F32, BF16, F16};
const std::vector<Scalar> kInts = {I32, I64};

bool isF(Scalar d) { return d == F32 || d == BF16 || d == F16; }
bool isI(Scalar d) { return d == I32 || d == I64; }

std::vector<Scalar> dtypesFor(Operands o) {
  switch (o) {
    case Operands::Floats: return kFloats;
    case Operands::Numbers: return kNumbers;
    case Operands::Bools: return {Bool};
  }
  return {};
}

std::string ty(Scalar d, const Shape& s) {
  if (s.empty()) return dtypeName(d);
  return fmt::format("Tensor[{}; {}]", fmt::join(s, ", "), dtypeName(d));
}

int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape broadcast(Shape a, Shape b) {
  if (a.size() < b.size()) std::swap(a, b);
  Shape out = a;
  size_t off = a.size() - b.size();
  for (size_t k = 0; k < b.size(); ++k)
    if (a[k + off] == 1) out[k + off] = b[k];
  return out;
}

// The flat index into `in` for coordinate `coord` of the broadcast result `out`.
int64_t sourceIndex(const Shape& in, const Shape& out, const Shape& coord) {
  int64_t at = 0;
  size_t off = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) at = at * in[k] + (in[k] == 1 ? 0 : coord[k + off]);
  return at;
}

template <typename Fn>
void forEachCoord(const Shape& shape, Fn fn) {
  Shape coord(shape.size(), 0);
  for (int64_t flat = 0; flat < count(shape); ++flat) {
    fn(coord, flat);
    for (size_t k = shape.size(); k-- > 0;) {
      if (++coord[k] < shape[k]) break;
      coord[k] = 0;
    }
  }
}

// ------------------------------------------------------------------ inputs

// SplitMix64, seeded from the case name: the same inputs on every run.
struct Rng {
  uint64_t s;
  explicit Rng(const std::string& seed) : s(1469598103934665603ull) {
    for (unsigned char c : seed) s = (s ^ c) * 1099511628211ull;
  }
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53); }
  int64_t range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Values every float case starts with: zeros of both signs, small and large
// magnitudes, the f16 limit, a tiny and an f32-subnormal value, NaN and both
// infinities (each rounded to the case's dtype: 1e30 is inf in f16).
const std::vector<double> kFloatEdges = {0.0,   -0.0,   1.0,  -1.0,  0.5,   -2.5, 3.140625, 100.0,
                                         -1000.0, 65504.0, 1e30, 1e-30, 1e-40, kNaN, kInf,     -kInf};

std::vector<int64_t> intEdges(Scalar d) {
  if (d == Bool) return {0, 1};
  if (d == I32)
    return {0, 1, -1, 2, -2, 7, -7, 100, -100, 12345, -65536, 65536, INT32_MAX, INT32_MIN, INT32_MAX - 1,
            INT32_MIN + 1};
  return {0,         1,         -1,        2, -2, 7, -7, 100, -100, int64_t(1) << 40, -(int64_t(1) << 40) - 3,
          12345678901, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1};
}

// The edge values of `d`, then seeded random ones, to fill `shape`.
Values edgeFill(Scalar d, const Shape& shape, Rng& rng) {
  Values v = zeros(d, shape);
  int64_t n = v.size();
  if (isF(d)) {
    for (int64_t k = 0; k < n; ++k)
      v.f[k] = roundTo(d, k < static_cast<int64_t>(kFloatEdges.size()) ? kFloatEdges[k] : rng.uniform(-4, 4));
  } else {
    std::vector<int64_t> e = intEdges(d);
    for (int64_t k = 0; k < n; ++k)
      v.i[k] = wrapTo(d, k < static_cast<int64_t>(e.size()) ? e[k] : d == Bool ? rng.range(0, 1) : rng.range(-1000, 1000));
  }
  return v;
}

// Values whose sums and products are exact in f32 (and in bf16/f16 before
// the final rounding): quarters up to +-8. Ints: small; bools: random.
Values dyadic(Scalar d, const Shape& shape, Rng& rng) {
  Values v = zeros(d, shape);
  for (int64_t k = 0; k < v.size(); ++k) {
    if (isF(d)) v.f[k] = roundTo(d, static_cast<double>(rng.range(-32, 32)) / 4.0);
    else v.i[k] = d == Bool ? rng.range(0, 1) : rng.range(-20, 20);
  }
  return v;
}

// Full-precision values in [lo, hi] (ints: the whole range of small ones).
Values general(Scalar d, const Shape& shape, Rng& rng, double lo = -1, double hi = 1) {
  Values v = zeros(d, shape);
  for (int64_t k = 0; k < v.size(); ++k) {
    if (isF(d)) v.f[k] = roundTo(d, rng.uniform(lo, hi));
    else v.i[k] = d == Bool ? rng.range(0, 1) : rng.range(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
  }
  return v;
}

// The values moved one place to the front, so a second operand does not pair each edge value with itself.
void rotateLeft(Values& v) {
  if (v.f.size() > 1) std::rotate(v.f.begin(), v.f.begin() + 1, v.f.end());
  if (v.i.size() > 1) std::rotate(v.i.begin(), v.i.begin() + 1, v.i.end());
}

Values scalarOf(Scalar d, double v) { return isF(d) ? floats(d, {}, {v}) : ints(d, {}, {static_cast<int64_t>(v)}); }

// ------------------------------------------------------------------ tolerances

const Tolerance kExact{};
// libm's f32 functions (glibc: exp, log, sin, cos, pow within 1 ulp, tanh
// within 2) and the compositions the CPU lowering makes of them in f32
// (sigmoid = 1 / (1 + exp(-x)), rsqrt = 1 / sqrt(x)), against the reference's
// double result rounded once: 4 ulps. bf16 and f16 compute in f32 and round
// once, so the few f32 ulps can only flip that rounding: 1 ulp.
Tolerance transcendental(Scalar d) { return d == F32 ? Tolerance{4, 0} : Tolerance{1, 0}; }
// An accumulation of n full-precision values in another order (f32
// accumulators, reassociated): n ulps of the dtype at n * max|x| (the
// classic bound for any summation order).
Tolerance accumulated(Scalar d, int64_t n, double maxAbs) {
  if (d == F32) return {static_cast<double>(n), static_cast<double>(n) * maxAbs};
  return {1, static_cast<double>(n) * maxAbs};  // f32 accumulation, rounded once to bf16/f16
}

// ------------------------------------------------------------------ oracles

int bitsOf(Scalar d) { return d == I32 ? 32 : 64; }
int64_t minOf(Scalar d) { return d == I32 ? INT32_MIN : INT64_MIN; }
int64_t maxOf(Scalar d) { return d == I32 ? INT32_MAX : INT64_MAX; }

// An integer converted to a float dtype with one rounding (double would
// round first for |v| > 2^53).
double intToFloat(Scalar d, int64_t v) {
  if (v > -(int64_t(1) << 53) && v < (int64_t(1) << 53)) return roundTo(d, static_cast<double>(v));
  if (d == F32) return static_cast<double>(static_cast<float>(v));
  bool neg = v < 0;
  uint64_t a = neg ? 0ull - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int bits = 64 - __builtin_clzll(a), precision = d == BF16 ? 8 : 11;
  int shift = bits - precision;
  uint64_t q = a >> shift, rem = a & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  return roundTo(d, std::ldexp(neg ? -static_cast<double>(q) : static_cast<double>(q), shift));
}

// §7: integer arithmetic wraps, `/` truncates, `%` takes the dividend's
// sign, x / 0 and x % 0 are 0, `>>` is logical.
int64_t intBinary(BinaryOp op, Scalar d, int64_t x, int64_t y) {
  uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  int bits = bitsOf(d);
  uint64_t mask = bits == 32 ? 0xFFFFFFFFull : ~0ull;
  switch (op) {
    case BinaryOp::Add: return wrapTo(d, static_cast<int64_t>(ux + uy));
    case BinaryOp::Sub: return wrapTo(d, static_cast<int64_t>(ux - uy));
    case BinaryOp::Mul: return wrapTo(d, static_cast<int64_t>(ux * uy));
    case BinaryOp::Div:
      if (y == 0) return 0;
      if (y == -1) return wrapTo(d, static_cast<int64_t>(0ull - ux));
      return x / y;
    case BinaryOp::Rem: return y == 0 || y == -1 ? 0 : x % y;
    case BinaryOp::BitAnd: return x & y;
    case BinaryOp::BitOr: return x | y;
    case BinaryOp::BitXor: return x ^ y;
    case BinaryOp::Shl: return y < 0 || y >= bits ? 0 : wrapTo(d, static_cast<int64_t>((ux << y) & mask));
    case BinaryOp::Shr: return y < 0 || y >= bits ? 0 : wrapTo(d, static_cast<int64_t>((ux & mask) >> y));
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::Lt: return x < y;
    case BinaryOp::Le: return x <= y;
    case BinaryOp::Gt: return x > y;
    case BinaryOp::Ge: return x >= y;
    case BinaryOp::And: return x && y;
    case BinaryOp::Or: return x || y;
  }
  return 0;
}

// Floats: computed exactly (double is wide enough for + - * / to round
// once to any of the three dtypes) and rounded to the dtype; comparisons
// are IEEE's (NaN is unordered, != is true).
double floatBinary(BinaryOp op, Scalar d, double x, double y) {
  switch (op) {
    case BinaryOp::Add: return roundTo(d, x + y);
    case BinaryOp::Sub: return roundTo(d, x - y);
    case BinaryOp::Mul: return roundTo(d, x * y);
    case BinaryOp::Div: return roundTo(d, x / y);
    case BinaryOp::Eq: return x == y;
    case BinaryOp::Ne: return x != y;
    case BinaryOp::Lt: return x < y;
    case BinaryOp::Le: return x <= y;
    case BinaryOp::Gt: return x > y;
    case BinaryOp::Ge: return x >= y;
    case BinaryOp::Rem: case BinaryOp::BitAnd: case BinaryOp::BitOr: case BinaryOp::BitXor:
    case BinaryOp::Shl: case BinaryOp::Shr: case BinaryOp::And: case BinaryOp::Or: break;
  }
  return kNaN;
}

// The dtypes an operator's typing rule accepts (sema's checkBinary).
std::vector<Scalar> operandDTypes(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: case BinaryOp::Sub: case BinaryOp::Mul: case BinaryOp::Div:
    case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt: case BinaryOp::Ge:
      return kNumbers;
    case BinaryOp::Eq: case BinaryOp::Ne: return kAll;
    case BinaryOp::Rem: case BinaryOp::BitAnd: case BinaryOp::BitOr: case BinaryOp::BitXor:
    case BinaryOp::Shl: case BinaryOp::Shr:
      return kInts;
    case BinaryOp::And: case BinaryOp::Or: return {Bool};
  }
  return {};
}
bool isComparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::Eq: case BinaryOp::Ne: case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt:
    case BinaryOp::Ge: return true;
    default: return false;
  }
}
std::vector<Scalar> operandDTypes(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg: return kNumbers;
    case UnaryOp::Not: return {Bool};
  }
  return {};
}

// A function of one element of the math primitives, by spelling (a new
// row without one here still gets cases, compared with the reference only).
using FloatFn = double (*)(double);
const std::map<std::string, FloatFn> kFloatMath = {
    {"exp", [](double x) { return std::exp(x); }},
    {"log", [](double x) { return std::log(x); }},
    {"sin", [](double x) { return std::sin(x); }},
    {"cos", [](double x) { return std::cos(x); }},
    {"tanh", [](double x) { return std::tanh(x); }},
    {"sqrt", [](double x) { return std::sqrt(x); }},
    {"rsqrt", [](double x) { return 1.0 / std::sqrt(x); }},
    {"sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
    {"abs", [](double x) { return std::fabs(x); }},
    {"floor", [](double x) { return std::floor(x); }},
};
// Math primitives that are exact (correctly rounded) in f32: compared exactly.
const std::set<std::string> kExactMath = {"abs", "floor", "sqrt", "maximum", "minimum"};

// maximum and minimum propagate NaN (as the reference does and as the
// CPU's arith.maximumf does; the language says nothing of NaN there).
double floatBinaryMath(const std::string& f, double x, double y) {
  if (f == "pow") return std::pow(x, y);
  if (std::isnan(x) || std::isnan(y)) return kNaN;
  if (f == "maximum") return std::max(x, y);
  return std::min(x, y);
}

// Elementwise over broadcast operands: fn(values at one coordinate) -> one double/int64.
Values mapElements(const std::vector<Values>& xs, Scalar out, const std::function<double(const std::vector<double>&)>& fn) {
  Shape shape;
  for (const Values& x : xs) shape = broadcast(shape, x.shape);
  Values r = zeros(out, shape);
  std::vector<double> at(xs.size());
  forEachCoord(shape, [&](const Shape& coord, int64_t flat) {
    for (size_t k = 0; k < xs.size(); ++k) at[k] = xs[k].at(sourceIndex(xs[k].shape, shape, coord));
    double v = fn(at);
    if (r.isFloat()) r.f[flat] = v;
    else r.i[flat] = static_cast<int64_t>(v);
  });
  return r;
}
// The same with integers kept exact (doubles lose int64 precision).
Values mapInts(const std::vector<Values>& xs, Scalar out, const std::function<int64_t(const std::vector<int64_t>&)>& fn) {
  Shape shape;
  for (const Values& x : xs) shape = broadcast(shape, x.shape);
  Values r = zeros(out, shape);
  std::vector<int64_t> at(xs.size());
  forEachCoord(shape, [&](const Shape& coord, int64_t flat) {
    for (size_t k = 0; k < xs.size(); ++k) at[k] = xs[k].i[sourceIndex(xs[k].shape, shape, coord)];
    r.i[flat] = fn(at);
  });
  return r;
}

// ------------------------------------------------------------------ the suite

struct Builder {
  Suite suite;
  std::set<std::string> names;
  std::map<std::string, int> perFamily;

  Case& add(Case c) {
    if (!names.insert(c.name).second) throw std::logic_error("duplicate case name " + c.name);
    perFamily[c.family]++;
    suite.cases.push_back(std::move(c));
    return suite.cases.back();
  }

  static std::string litFor(Scalar d) { return isF(d) ? "0.5" : d == Bool ? "true" : "3"; }
  static double litValue(Scalar d) { return isF(d) ? 0.5 : d == Bool ? 1 : 3; }

  // ---------------------------------------------------------------- elementwise
  // One operand: edge values, a scalar (one call per edge value), rank 4.
  void unaryCases(const std::string& family, const std::string& id, Scalar d, const std::string& expr,
                  Tolerance tol, std::function<Values(const Values&)> oracle) {
    struct Layout { const char* tag; Shape shape; };
    for (const Layout& l : {Layout{"edges", {2, 12}}, Layout{"scalar", {}}, Layout{"rank4", {2, 1, 3, 2}}}) {
      Case c;
      c.name = fmt::format("{}_{}_{}", id, dtypeName(d), l.tag);
      c.family = family;
      c.dtype = d;
      c.group = "unary";
      c.params = "x: " + ty(d, l.shape);
      Rng rng(c.name);
      Values x = edgeFill(d, l.shape, rng);
      Values probe = oracle ? oracle(x) : x;
      c.result = ty(probe.dtype, l.shape);
      c.body = "return " + fmt::format(fmt::runtime(expr), "x");
      if (l.shape.empty()) {
        Values all = edgeFill(d, {isF(d) ? 16 : static_cast<int64_t>(intEdges(d).size())}, rng);
        for (int64_t k = 0; k < all.size(); k += 3)
          c.runs.push_back({isF(d) ? floats(d, {}, {all.f[k]}) : ints(d, {}, {all.i[k]})});
      } else {
        c.runs.push_back({x});
      }
      c.tol = tol;
      if (oracle) c.oracle = [oracle](const std::vector<Values>& in) { return Outputs{oracle(in[0])}; };
      add(std::move(c));
    }
  }

  // Two operands: every pair of edge values ([N, 1] with [M]), broadcasting
  // at the front and at size-1 axes, a scalar operand, a literal on either
  // side, and rank 4 against rank 4.
  void binaryCases(const std::string& family, const std::string& id, Scalar d, const std::string& expr, Scalar out,
                   Tolerance tol, std::function<Values(const Values&, const Values&)> oracle,
                   std::vector<int64_t> rhsInts = {}, const std::string& unspecified = "") {
    struct Layout { const char* tag; Shape a, b; int literal; };  // literal: 0 none, 1 right, 2 left
    std::vector<Layout> layouts = {{"pairs", {}, {}, 0}, {"bcast", {2, 3, 4}, {3, 1}, 0}, {"scalar", {5}, {}, 0},
                                   {"literal", {6}, {}, 1}, {"literal_left", {6}, {}, 2}, {"rank4", {2, 1, 3, 1}, {1, 2, 1, 4}, 0}};
    if (!unspecified.empty()) layouts = {{"pairs", {}, {}, 0}};
    for (const Layout& l : layouts) {
      Case c;
      c.name = fmt::format("{}_{}_{}", id, dtypeName(d), l.tag);
      c.family = family;
      c.dtype = d;
      c.group = "binary";
      c.unspecified = unspecified;
      Rng rng(c.name);
      Values a, b;
      if (std::string(l.tag) == "pairs") {
        Values ea = isF(d) ? floats(d, {16}, kFloatEdges) : ints(d, {static_cast<int64_t>(intEdges(d).size())}, intEdges(d));
        std::vector<int64_t> rb = rhsInts.empty() ? intEdges(d) : rhsInts;
        Values eb = isF(d) ? ea : ints(d, {static_cast<int64_t>(rb.size())}, rb);
        a = ea;
        a.shape = {ea.size(), 1};
        b = eb;
      } else {
        a = edgeFill(d, l.a, rng);
        if (!rhsInts.empty()) {
          std::vector<int64_t> pick;
          for (int64_t k = 0; k < count(l.b); ++k) pick.push_back(rhsInts[rng.range(0, static_cast<int64_t>(rhsInts.size()) - 1)]);
          b = ints(d, l.b, pick);
        } else {
          b = edgeFill(d, l.b, rng);
          // The second operand's values start elsewhere in the edge list.
          rotateLeft(b);
        }
      }
      std::string lit = rhsInts.empty() ? litFor(d) : "3";
      if (l.literal) b = scalarOf(d, rhsInts.empty() ? litValue(d) : 3);
      Shape shape = broadcast(a.shape, b.shape);
      c.params = "a: " + ty(d, a.shape);
      if (!l.literal) c.params += ", b: " + ty(d, b.shape);
      c.result = ty(out, shape);
      std::string lhs = l.literal == 2 ? lit : "a", rhs = l.literal == 1 ? lit : l.literal == 2 ? "a" : "b";
      c.body = "return " + fmt::format(fmt::runtime(expr), lhs, rhs);
      if (l.literal) c.runs.push_back({a});
      else c.runs.push_back({a, b});
      c.tol = tol;
      if (oracle) {
        Values lv = b;
        int literal = l.literal;
        c.oracle = [oracle, lv, literal](const std::vector<Values>& in) {
          if (literal == 1) return Outputs{oracle(in[0], lv)};
          if (literal == 2) return Outputs{oracle(lv, in[0])};
          return Outputs{oracle(in[0], in[1])};
        };
      }
      add(std::move(c));
    }
  }

  void binaryOperator(BinaryOp op, const char* name, const char* spelling) {
    std::string id = name;
    for (char& ch : id) ch = static_cast<char>(std::tolower(ch));
    for (Scalar d : operandDTypes(op)) {
      Scalar out = isComparison(op) || op == BinaryOp::And || op == BinaryOp::Or ? Bool : d;
      auto oracle = [op, d, out](const Values& a, const Values& b) {
        if (!isF(d)) return mapInts({a, b}, out, [&](const std::vector<int64_t>& v) { return intBinary(op, d, v[0], v[1]); });
        return mapElements({a, b}, out, [&](const std::vector<double>& v) { return floatBinary(op, d, v[0], v[1]); });
      };
      std::string expr = std::string("{} ") + spelling + " {}";
      bool shift = op == BinaryOp::Shl || op == BinaryOp::Shr;
      if (shift) {
        // Counts inside 0 .. bits - 1; the rest is unspecified (§7), in a case of its own.
        std::vector<int64_t> counts = d == I32 ? std::vector<int64_t>{0, 1, 2, 3, 5, 8, 15, 16, 24, 30, 31}
                                               : std::vector<int64_t>{0, 1, 2, 7, 31, 32, 33, 40, 62, 63};
        binaryCases(spelling, id, d, expr, out, kExact, oracle, counts);
        std::vector<int64_t> outside = {-1, -2, bitsOf(d), bitsOf(d) + 1, 100, minOf(d), maxOf(d)};
        binaryCases(spelling, id + "_out_of_range", d, expr, out, kExact, nullptr, outside,
                    "a shift count outside 0 .. bits - 1 gives an unspecified value (language.md §7)");
        continue;
      }
      binaryCases(spelling, id, d, expr, out, kExact, oracle);
      if ((op == BinaryOp::Div || op == BinaryOp::Rem) && isI(d)) {
        // A literal zero divisor: 0 by definition, also when the compiler sees it.
        Case c;
        c.name = fmt::format("{}_{}_literal_zero", id, dtypeName(d));
        c.family = spelling;
        c.dtype = d;
        c.group = "binary";
        c.params = "a: " + ty(d, {16});
        c.result = ty(d, {16});
        c.body = fmt::format("return a {} 0", spelling);
        c.runs.push_back({ints(d, {16}, intEdges(d))});
        c.oracle = [oracle, d](const std::vector<Values>& in) { return Outputs{oracle(in[0], scalarOf(d, 0))}; };
        add(std::move(c));
      }
    }
  }

  void unaryOperator(UnaryOp op, const char* name, const char* spelling) {
    std::string id = name;
    for (char& ch : id) ch = static_cast<char>(std::tolower(ch));
    for (Scalar d : operandDTypes(op)) {
      auto oracle = [op, d](const Values& x) {
        if (op == UnaryOp::Not) return mapInts({x}, Bool, [](const std::vector<int64_t>& v) -> int64_t { return !v[0]; });
        if (!isF(d))
          return mapInts({x}, d, [d](const std::vector<int64_t>& v) { return wrapTo(d, static_cast<int64_t>(0ull - static_cast<uint64_t>(v[0]))); });
        return mapElements({x}, d, [](const std::vector<double>& v) { return -v[0]; });
      };
      unaryCases(spelling, id, d, std::string(spelling) + "{}", kExact, oracle);
    }
  }

  void unaryMath(const std::string& f, Operands operands) {
    auto fn = kFloatMath.find(f);
    for (Scalar d : dtypesFor(operands)) {
      std::function<Values(const Values&)> oracle;
      if (fn != kFloatMath.end()) {
        FloatFn g = fn->second;
        oracle = [g, d, f](const Values& x) {
          if (!isF(d))  // abs of an integer: wraps at the minimum
            return mapInts({x}, d, [d](const std::vector<int64_t>& v) {
              return wrapTo(d, v[0] < 0 ? static_cast<int64_t>(0ull - static_cast<uint64_t>(v[0])) : v[0]);
            });
          return mapElements({x}, d, [g, d](const std::vector<double>& v) { return roundTo(d, g(v[0])); });
        };
      }
      unaryCases(f, f, d, f + "({})", kExactMath.count(f) ? kExact : transcendental(d), oracle);
      if (d == F32 && oracle && !kExactMath.count(f)) sweepCase(f, oracle);
    }
  }

  // 4096 values of both signs spread over magnitudes 1e-6..25: every
  // branch of an inline approximation (targets/cpu/approximate_math.h) and
  // the vector library's exp are held to the 4 ulps of a libm call.
  void sweepCase(const std::string& f, std::function<Values(const Values&)> oracle) {
    Case c;
    c.name = f + "_f32_sweep";
    c.family = f;
    c.dtype = F32;
    c.group = "unary";
    c.params = "x: " + ty(F32, {4096});
    c.result = ty(F32, {4096});
    c.body = "return " + f + "(x)";
    Rng rng(c.name);
    Values x = zeros(F32, {4096});
    for (int64_t k = 0; k < x.size(); ++k)
      x.f[k] = roundTo(F32, (k % 2 ? -1.0 : 1.0) * std::pow(10.0, rng.uniform(-6, 1.4)));
    c.runs.push_back({x});
    c.tol = transcendental(F32);
    c.oracle = [oracle](const std::vector<Values>& in) { return Outputs{oracle(in[0])}; };
    add(std::move(c));
  }

  void binaryMath(const std::string& f, Operands operands) {
    for (Scalar d : dtypesFor(operands)) {
      std::function<Values(const Values&, const Values&)> oracle;
      if (f == "maximum" || f == "minimum" || f == "pow") {
        oracle = [f, d](const Values& a, const Values& b) {
          if (!isF(d))
            return mapInts({a, b}, d, [&](const std::vector<int64_t>& v) { return f == "maximum" ? std::max(v[0], v[1]) : std::min(v[0], v[1]); });
          return mapElements({a, b}, d, [&](const std::vector<double>& v) { return roundTo(d, floatBinaryMath(f, v[0], v[1])); });
        };
      }
      binaryCases(f, f, d, f + "({}, {})", d, kExactMath.count(f) ? kExact : transcendental(d), oracle);
    }
  }

  // ---------------------------------------------------------------- reductions
  void reducer(const std::string& f, bool call, bool binderForm, Operands operands, ReduceResult result) {
    // The language defines the empty range for these (§8).
    static const std::set<std::string> kEmptyDefined = {"sum", "max", "min", "all", "any"};
    for (Scalar d : dtypesFor(operands)) {
      Scalar out = result == ReduceResult::I32 ? I32 : result == ReduceResult::Bool ? Bool : d;
      bool accumulates = f != "max" && f != "min" && f != "index_of_max" && f != "all" && f != "any";
      auto values = [&](Rng& rng, const Shape& s) {
        if (f == "prod" && isF(d)) {
          Values v = zeros(d, s);  // powers of two and small quarters: exact products
          for (auto& x : v.f) x = roundTo(d, std::ldexp(1.0, static_cast<int>(rng.range(-3, 3))) * (rng.range(0, 1) ? -1 : 1) * (1 + rng.range(0, 3) / 4.0));
          return v;
        }
        if (f == "prod" && !isF(d)) {
          Values v = zeros(d, s);
          for (auto& x : v.i) x = rng.range(-3, 3);
          return v;
        }
        return dyadic(d, s, rng);
      };
      auto base = [&](const std::string& tag) {
        Case c;
        c.name = fmt::format("{}_{}_{}", f, dtypeName(d), tag);
        c.family = f;
        c.dtype = d;
        c.group = "reduce";
        return c;
      };
      if (call) {
        struct Form { Shape shape; int axis; bool keep; };
        std::vector<Form> forms = {{{2, 3, 4}, 0, false}, {{2, 3, 4}, 1, false}, {{2, 3, 4}, 2, false},
                                   {{2, 3, 4}, 0, true},  {{2, 3, 4}, 1, true},  {{2, 3, 4}, 2, true},
                                   {{2, 3, 4}, -1, false}, {{2, 3, 4}, -2, true}, {{2, 3, 4}, -3, false},
                                   {{7}, 0, false},        {{7}, -1, true},       {{2, 3, 2, 2}, 2, false},
                                   {{2, 1, 3}, 1, false}};
        for (const Form& fm : forms) {
          int axis = fm.axis < 0 ? fm.axis + static_cast<int>(fm.shape.size()) : fm.axis;
          Shape rs = fm.shape;
          if (fm.keep) rs[axis] = 1;
          else rs.erase(rs.begin() + axis);
          Case c = base(fmt::format("{}_axis{}{}{}", fmt::join(fm.shape, "x"), fm.axis < 0 ? "m" : "", std::abs(fm.axis), fm.keep ? "_keep" : ""));
          c.params = "x: " + ty(d, fm.shape);
          c.result = ty(out, rs);
          c.body = fmt::format("return {}(x, axis = {}{})", f, fm.axis, fm.keep ? ", keepdims = true" : "");
          Rng rng(c.name);
          c.runs.push_back({values(rng, fm.shape)});
          add(std::move(c));
        }
        // An empty axis: the reduction's identity where the language gives one (§8).
        Case z = base("empty_axis");
        z.params = "x: " + ty(d, {0, 3});
        z.result = ty(out, {3});
        z.body = fmt::format("return {}(x, axis = 0)", f);
        z.runs.push_back({zeros(d, {0, 3})});
        if (!kEmptyDefined.count(f)) z.unspecified = "the language defines a reduction over an empty range for sum, max, min, all and any only (§8)";
        add(std::move(z));
        if (isF(d)) {
          // Full-precision values: the order of accumulation shows.
          Case g = base("general");
          g.params = "x: " + ty(d, {3, 16});
          g.result = ty(out, {3});
          g.body = fmt::format("return {}(x, axis = 1)", f);
          Rng rng(g.name);
          g.runs.push_back({general(d, {3, 16}, rng)});
          if (accumulates) g.tol = accumulated(d, 16, 1.0);
          add(std::move(g));
          // NaN and infinities in some rows.
          Case e = base("nonfinite");
          e.params = "x: " + ty(d, {5, 4});
          e.result = ty(out, {5});
          e.body = fmt::format("return {}(x, axis = -1)", f);
          e.runs.push_back({floats(d, {5, 4}, {1, kNaN, 2, 3, kInf, 1, 2, -1, kInf, -kInf, 0, 1, -kInf, -2, -3, -4, kNaN, kNaN, kNaN, kNaN})});
          add(std::move(e));
          // Rows long enough for a target's own row kernel (cuda: a warp per
          // row, each lane folding every 32nd element): 100, not a multiple
          // of 32; an infinity in one row, a NaN in another.
          Case r = base("long_rows");
          r.params = "x: " + ty(d, {3, 100});
          r.result = ty(out, {3, 1});
          r.body = fmt::format("return {}(x, axis = -1, keepdims = true)", f);
          Rng rowRng(r.name);
          Values rows = general(d, {3, 100}, rowRng);
          rows.f[100 + 63] = kInf;
          rows.f[200 + 37] = kNaN;
          r.runs.push_back({rows});
          if (accumulates) r.tol = accumulated(d, 100, 1.0);
          add(std::move(r));
        } else {
          // Sums that wrap.
          Case w = base("wrap");
          w.params = "x: " + ty(d, {2, 4});
          w.result = ty(out, {2});
          w.body = fmt::format("return {}(x, axis = 1)", f);
          w.runs.push_back({ints(d, {2, 4}, {maxOf(d), 1, 2, 3, minOf(d), -1, minOf(d), 5})});
          add(std::move(w));
        }
      }
      // The binder forms.
      auto binder = [&](const std::string& tag, const Shape& in, const Shape& rs, const std::string& body,
                        Values input, const std::string& unspecified = "") {
        if (!binderForm) return;
        Case c = base(tag);
        c.params = "x: " + ty(d, in);
        c.result = ty(out, rs);
        c.body = body;
        c.unspecified = unspecified;
        c.runs.push_back({std::move(input)});
        if (accumulates && isF(d) && tag == "binder_general") c.tol = accumulated(d, count(in) / (count(rs) ? count(rs) : 1), 1.0);
        add(std::move(c));
      };
      Rng rng(f + dtypeName(d));
      binder("binder_middle", {2, 3, 4}, {2, 4}, fmt::format("let y[i, k] = {}[j] (x[i, j, k])\n        return y", f),
             values(rng, {2, 3, 4}));
      binder("binder_two", {2, 3, 4}, {4}, fmt::format("let y[k] = {}[i, j] (x[i, j, k])\n        return y", f),
             values(rng, {2, 3, 4}));
      binder("binder_scalar", {5}, {}, fmt::format("return {}[i] (x[i])", f), values(rng, {5}));
      binder("binder_rank4", {2, 3, 2, 2}, {2, 2}, fmt::format("let y[i, l] = {}[j, k] (x[i, j, k, l])\n        return y", f),
             values(rng, {2, 3, 2, 2}));
      std::string pairBody = d == Bool ? "x[i, j] != x[j, i]" : "x[i, j] - x[j, i]";
      if (f == "prod" && d != Bool) pairBody = "x[i, j] * x[j, i]";
      binder("binder_expr", {3, 3}, {3}, fmt::format("let y[i] = {}[j] ({})\n        return y", f, pairBody),
             values(rng, {3, 3}));
      binder("binder_empty", {0, 3}, {3}, fmt::format("let y[k] = {}[i] (x[i, k])\n        return y", f), zeros(d, {0, 3}),
             kEmptyDefined.count(f) ? "" : "the language defines a reduction over an empty range for sum, max, min, all and any only (§8)");
      if (isI(d)) {
        // Sums and products that wrap.
        Values big = ints(d, {2, 4}, {maxOf(d), 3, 100000, 7, minOf(d), -1, 65537, 65539});
        binder("binder_wrap", {2, 4}, {2}, fmt::format("let y[i] = {}[j] (x[i, j])\n        return y", f), big);
      }
      if (isF(d)) binder("binder_general", {2, 16}, {2}, fmt::format("let y[i] = {}[j] (x[i, j])\n        return y", f), general(d, {2, 16}, rng));
    }
  }

  // ---------------------------------------------------------------- shapes
  Case shapeCase(const std::string& family, const std::string& tag, Scalar d, const std::string& group) {
    Case c;
    c.name = fmt::format("{}_{}_{}", family, dtypeName(d), tag);
    c.family = family;
    c.dtype = d;
    c.group = group;
    return c;
  }

  void reshape() {
    struct R { const char* tag; Shape from, to; };
    for (Scalar d : kAll)
      for (const R& r : {R{"r1_r3", {24}, {2, 3, 4}}, R{"r3_r2", {2, 3, 4}, {6, 4}}, R{"r3_r4", {2, 3, 4}, {4, 3, 2, 1}},
                         R{"r2_r1", {1, 24}, {24}}, R{"r4_r2", {2, 1, 3, 2}, {3, 4}}, R{"r1_r0", {1}, {}},
                         R{"r0_r2", {}, {1, 1}}}) {
        Case c = shapeCase("reshape", r.tag, d, "shape");
        c.params = "x: " + ty(d, r.from);
        c.result = ty(d, r.to);
        c.body = fmt::format("return reshape(x, [{}])", fmt::join(r.to, ", "));
        Rng rng(c.name);
        Values x = edgeFill(d, r.from, rng);
        c.runs.push_back({x});
        Shape to = r.to;
        c.oracle = [to](const std::vector<Values>& in) { Values v = in[0]; v.shape = to; return Outputs{v}; };
        add(std::move(c));
      }
    // A reshaped tensor computed from indices alone (iota, or a grid of
    // two), read by an elementwise op: the cuda target computes its elements
    // where they are read, through the reshapes (expand and collapse),
    // instead of storing it.
    for (Scalar d : {F32, I32})
      for (const R& r : {R{"r1_r3", {24}, {2, 3, 4}}, R{"r2_r1", {6, 4}, {24}}, R{"r2_r3", {6, 4}, {2, 3, 4}},
                         R{"r2_r2", {2, 12}, {4, 6}}}) {
        Case c = shapeCase("reshape_iota", r.tag, d, "shape");
        c.params = "x: " + ty(d, r.to);
        c.result = ty(d, r.to);
        std::string g = r.from.size() == 1
                            ? fmt::format("let g = iota<i64>({})", r.from[0])
                            : fmt::format("let rows = iota<i64>({})\n    let cols = iota<i64>({})\n"
                                          "    let g[i, j] = rows[i] * {} + cols[j]",
                                          r.from[0], r.from[1], r.from[1]);
        c.body = fmt::format("{}\n    return x + cast<{}>(reshape(g, [{}]))", g, d == F32 ? "f32" : "i32",
                             fmt::join(r.to, ", "));
        Rng rng(c.name);
        Values x = zeros(d, r.to);
        for (int64_t k = 0; k < x.size(); ++k) {
          if (d == F32) x.f[k] = roundTo(F32, rng.uniform(-4, 4));
          else x.i[k] = static_cast<int64_t>(rng.uniform(-100, 100));
        }
        c.runs.push_back({x});
        c.oracle = [d](const std::vector<Values>& in) {
          Values v = in[0];
          for (int64_t k = 0; k < v.size(); ++k) {  // reshapes keep row-major order: element k is k
            if (d == F32) v.f[k] = roundTo(F32, v.f[k] + static_cast<double>(k));
            else v.i[k] += k;
          }
          return Outputs{v};
        };
        add(std::move(c));
      }
  }

  void permute() {
    struct P { Shape shape; Shape perm; };
    std::vector<P> perms = {{{5}, {0}},          {{3, 4}, {1, 0}},          {{2, 3, 4}, {0, 2, 1}},
                            {{2, 3, 4}, {1, 0, 2}}, {{2, 3, 4}, {1, 2, 0}}, {{2, 3, 4}, {2, 0, 1}},
                            {{2, 3, 4}, {2, 1, 0}}, {{2, 3, 1, 4}, {3, 1, 0, 2}}, {{2, 3, 1, 4}, {0, 1, 3, 2}},
                            {{2, 3, 1, 4}, {3, 2, 1, 0}}, {{2, 3, 1, 4}, {1, 0, 2, 3}},
                            // Only axes of 1 move (a reshape), and a transpose among them.
                            {{1, 4, 1, 3}, {2, 1, 0, 3}}, {{1, 4, 1, 3}, {2, 3, 0, 1}}};
    for (Scalar d : kAll)
      for (const P& p : perms) {
        Shape rs;
        for (int64_t k : p.perm) rs.push_back(p.shape[k]);
        Case c = shapeCase("permute", fmt::format("r{}_{}", p.shape.size(), fmt::join(p.perm, "")), d, "shape");
        c.params = "x: " + ty(d, p.shape);
        c.result = ty(d, rs);
        c.body = fmt::format("return permute(x, [{}])", fmt::join(p.perm, ", "));
        Rng rng(c.name);
        c.runs.push_back({edgeFill(d, p.shape, rng)});
        Shape perm = p.perm, from = p.shape;
        c.oracle = [perm, from, rs](const std::vector<Values>& in) {
          Values out = zeros(in[0].dtype, rs);
          forEachCoord(rs, [&](const Shape& coord, int64_t flat) {
            Shape src(perm.size());
            for (size_t k = 0; k < perm.size(); ++k) src[perm[k]] = coord[k];
            int64_t at = 0;
            for (size_t k = 0; k < src.size(); ++k) at = at * from[k] + src[k];
            if (out.isFloat()) out.f[flat] = in[0].f[at];
            else out.i[flat] = in[0].i[at];
          });
          return Outputs{out};
        };
        add(std::move(c));
      }
  }

  void concat() {
    struct C { const char* tag; std::vector<Shape> parts; int axis; };
    std::vector<C> forms = {{"r1_axis0", {{3}, {4}}, 0},         {"r1_axism1", {{1}, {5}}, -1},
                            {"r2_axis0", {{1, 3}, {2, 3}}, 0},   {"r2_axis1", {{2, 3}, {2, 2}}, 1},
                            {"r2_three_axism2", {{1, 2}, {2, 2}, {3, 2}}, -2},
                            {"r3_axis0", {{1, 3, 2}, {2, 3, 2}}, 0}, {"r3_axis1", {{2, 1, 2}, {2, 3, 2}}, 1},
                            {"r3_axis2", {{2, 3, 1}, {2, 3, 3}}, 2}, {"r4_axis3", {{2, 1, 2, 1}, {2, 1, 2, 3}}, 3},
                            {"r4_axism3", {{1, 2, 2, 2}, {1, 1, 2, 2}, {1, 3, 2, 2}}, -3}};
    for (Scalar d : kAll)
      for (const C& f : forms) {
        Case c = shapeCase("concat", f.tag, d, "shape");
        std::vector<std::string> params, names;
        std::vector<Values> in;
        Rng rng(c.name);
        Shape rs = f.parts[0];
        int axis = f.axis < 0 ? f.axis + static_cast<int>(rs.size()) : f.axis;
        rs[axis] = 0;
        for (size_t k = 0; k < f.parts.size(); ++k) {
          names.push_back(fmt::format("x{}", k));
          params.push_back(fmt::format("x{}: {}", k, ty(d, f.parts[k])));
          in.push_back(edgeFill(d, f.parts[k], rng));
          if (k) rotateLeft(in[k]);
          rs[axis] += f.parts[k][axis];
        }
        c.params = fmt::format("{}", fmt::join(params, ", "));
        c.result = ty(d, rs);
        c.body = fmt::format("return concat({}, axis = {})", fmt::join(names, ", "), f.axis);
        c.runs.push_back(in);
        c.oracle = [axis, rs](const std::vector<Values>& xs) {
          Values out = zeros(xs[0].dtype, rs);
          forEachCoord(rs, [&](const Shape& coord, int64_t flat) {
            Shape src = coord;
            size_t part = 0;
            while (src[axis] >= xs[part].shape[axis]) src[axis] -= xs[part++].shape[axis];
            int64_t at = 0;
            for (size_t k = 0; k < src.size(); ++k) at = at * xs[part].shape[k] + src[k];
            if (out.isFloat()) out.f[flat] = xs[part].f[at];
            else out.i[flat] = xs[part].i[at];
          });
          return Outputs{out};
        };
        add(std::move(c));
      }
  }

  void iota() {
    for (Scalar d : kNumbers) {
      // bf16 has 8 significant bits and f16 11: past 256 and 2048 the values round (to even).
      int64_t big = d == BF16 ? 300 : d == F16 ? 2100 : 40;
      for (int64_t n : {int64_t(5), big, int64_t(0)}) {
        Case c = shapeCase("iota", fmt::format("n{}", n), d, "misc");
        c.params = "x: " + ty(d, {n});
        c.result = ty(d, {n});
        // Added to an input so the entry takes an argument of the iota's shape.
        c.body = fmt::format("return iota<{}>({}) + x", dtypeName(d), n);
        c.runs.push_back({zeros(d, {n})});
        c.oracle = [d, n](const std::vector<Values>&) {
          Values out = zeros(d, {n});
          for (int64_t k = 0; k < n; ++k) {
            if (isF(d)) out.f[k] = intToFloat(d, k);
            else out.i[k] = k;
          }
          return Outputs{out};
        };
        add(std::move(c));
      }
      Case c = shapeCase("iota", "alone", d, "misc");
      c.params = "x: " + ty(d, {});
      c.result = ty(d, {6});
      c.body = fmt::format("return iota<{}>(6)", dtypeName(d));
      c.runs.push_back({zeros(d, {})});
      c.oracle = [d](const std::vector<Values>&) { return Outputs{ints(d, {6}, {0, 1, 2, 3, 4, 5})}; };
      add(std::move(c));
    }
  }

  void fill() {
    for (Scalar d : kAll) {
      struct F { const char* tag; Shape shape; bool literal; };
      for (const F& f : {F{"r2_scalar", {2, 3}, false}, F{"r1_literal", {4}, true}, F{"r0_scalar", {}, false},
                         F{"r4_scalar", {1, 2, 1, 3}, false}}) {
        Case c = shapeCase("fill", f.tag, d, "misc");
        c.params = "v: " + ty(d, {});
        c.result = ty(d, f.shape);
        std::string value = f.literal ? litFor(d) : "v";
        c.body = fmt::format("return fill<{}>([{}], {})", dtypeName(d), fmt::join(f.shape, ", "), value);
        Rng rng(c.name);
        Values all = edgeFill(d, {isF(d) ? 16 : 2}, rng);
        for (int64_t k = 0; k < all.size(); k += f.literal ? 100 : 5)
          c.runs.push_back({isF(d) ? floats(d, {}, {all.f[k]}) : ints(d, {}, {all.i[k]})});
        Shape shape = f.shape;
        bool literal = f.literal;
        c.oracle = [d, shape, literal](const std::vector<Values>& in) {
          Values v = literal ? scalarOf(d, litValue(d)) : in[0];
          Values out = zeros(d, shape);
          if (isF(d)) std::fill(out.f.begin(), out.f.end(), v.f[0]);
          else std::fill(out.i.begin(), out.i.end(), v.i[0]);
          return Outputs{out};
        };
        add(std::move(c));
      }
    }
  }

  void cast() {
    for (Scalar from : kAll)
      for (Scalar to : kAll) {
        Case c;
        c.name = fmt::format("cast_{}_to_{}", dtypeName(from), dtypeName(to));
        c.family = "cast";
        c.dtype = from;
        c.group = "cast";
        Values x;
        if (isF(from)) {
          // Float to int truncates toward zero; outside the target's range, and NaN, the value is
          // unspecified (§11), so those inputs go only to float and bool targets.
          std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.75, -2.75, 3.140625, 100.5, -1000.25, 65504.0,
                                   1e-30, 255.0, 256.0, 257.0, 4097.0, 65519.0, 65520.0, 1e5, -2e9, 2.9e9};
          if (!isI(to)) v.insert(v.end(), {1e30, -1e30, 1e-40, kNaN, kInf, -kInf, 3.4e38, 70000.0});
          // The filter applies to the values as `from` holds them (65520 is inf in f16).
          double limit = to == I32 ? 2147483648.0 : 9.2e18;
          if (isI(to))
            v.erase(std::remove_if(v.begin(), v.end(), [&](double y) { return !(std::fabs(roundTo(from, y)) < limit); }), v.end());
          x = floats(from, {static_cast<int64_t>(v.size())}, v);
        } else if (isI(from)) {
          // Ints to floats round once to nearest even: 2^24 + 2^16 + 1 is a double-rounding trap for bf16.
          std::vector<int64_t> v = intEdges(from);
          v.insert(v.end(), {255, 256, 257, 2049, 4097, 65504, 65519, 65520, 70000, 16777217, 16842753, 33685505, -16842753});
          if (from == I64)
            v.insert(v.end(), {(int64_t(1) << 53) + 1, (int64_t(1) << 60) + (int64_t(1) << 36) + 1, 4294967296 + 7, -4294967296 - 5});
          x = ints(from, {static_cast<int64_t>(v.size())}, v);
        } else {
          x = ints(Bool, {4}, {0, 1, 1, 0});
        }
        c.params = "x: " + ty(from, x.shape);
        c.result = ty(to, x.shape);
        c.body = fmt::format("return cast<{}>(x)", dtypeName(to));
        c.runs.push_back({x});
        // Also on a rank-3 shape, and as a scalar.
        c.oracle = [from, to](const std::vector<Values>& in) {
          const Values& a = in[0];
          Values out = zeros(to, a.shape);
          for (int64_t k = 0; k < a.size(); ++k) {
            if (isF(to)) out.f[k] = isF(from) ? roundTo(to, a.f[k]) : intToFloat(to, a.i[k]);
            else if (to == Bool) out.i[k] = isF(from) ? a.f[k] != 0.0 : a.i[k] != 0;
            else out.i[k] = isF(from) ? wrapTo(to, static_cast<int64_t>(std::trunc(a.f[k]))) : wrapTo(to, a.i[k]);
          }
          return Outputs{out};
        };
        Oracle oracle = c.oracle;
        add(std::move(c));
        Case r3;
        r3.name = fmt::format("cast_{}_to_{}_r3", dtypeName(from), dtypeName(to));
        r3.family = "cast";
        r3.dtype = from;
        r3.group = "cast";
        r3.params = "x: " + ty(from, {2, 1, 3});
        r3.result = ty(to, {2, 1, 3});
        r3.body = fmt::format("return cast<{}>(x)", dtypeName(to));
        Values y = x;
        y.shape = {2, 1, 3};
        if (y.isFloat()) y.f.resize(6);
        else y.i.resize(6);
        if (x.size() < 6) y = from == Bool ? ints(Bool, {2, 1, 3}, {1, 0, 0, 1, 1, 0}) : y;
        r3.runs.push_back({y});
        r3.oracle = oracle;
        add(std::move(r3));
      }
  }

  void select() {
    for (Scalar d : kAll) {
      struct S { const char* tag; Shape c, a, b; int literal; };
      for (const S& s : {S{"bcast", {5}, {2, 5}, {5}, 0}, S{"scalar_cond", {}, {3}, {2, 3}, 0},
                         S{"size1", {2, 1}, {1, 3}, {}, 0}, S{"literal", {4}, {4}, {}, 1},
                         S{"rank4", {2, 1, 3, 1}, {1, 2, 1, 2}, {2, 2, 3, 2}, 0}}) {
        Case c = shapeCase("select", s.tag, d, "misc");
        Rng rng(c.name);
        Values cond = general(Bool, s.c, rng), a = edgeFill(d, s.a, rng), b = edgeFill(d, s.b, rng);
        std::reverse(b.f.begin(), b.f.end());
        std::reverse(b.i.begin(), b.i.end());
        if (s.literal) b = scalarOf(d, isF(d) ? 0.5 : d == Bool ? 0 : 3);
        Shape rs = broadcast(s.c, broadcast(s.a, s.literal ? Shape{} : s.b));
        c.params = "c: " + ty(Bool, s.c) + ", a: " + ty(d, s.a) + (s.literal ? "" : ", b: " + ty(d, s.b));
        c.result = ty(d, rs);
        std::string lit = isF(d) ? "0.5" : d == Bool ? "false" : "3";
        c.body = fmt::format("return select(c, a, {})", s.literal ? lit : "b");
        if (s.literal) c.runs.push_back({cond, a});
        else c.runs.push_back({cond, a, b});
        bool literal = s.literal;
        Values lv = b;
        c.oracle = [d, literal, lv](const std::vector<Values>& in) {
          Values bb = literal ? lv : in[2];
          if (!isF(d)) return Outputs{mapInts({in[0], in[1], bb}, d, [](const std::vector<int64_t>& v) { return v[0] ? v[1] : v[2]; })};
          return Outputs{mapElements({in[0], in[1], bb}, d, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; })};
        };
        add(std::move(c));
      }
    }
  }

  void gather() {
    for (Scalar d : kAll)
      for (Scalar id : kInts) {
        struct G { const char* tag; Shape table, idx; };
        for (const G& g : {G{"r2_table", {5, 3}, {10}}, G{"r1_table", {5}, {2, 5}}, G{"r3_table", {4, 2, 2}, {3}}}) {
          Case c = shapeCase("gather", fmt::format("{}_{}", g.tag, dtypeName(id)), d, "index");
          Rng rng(c.name);
          Values t = edgeFill(d, g.table, rng);
          int64_t n = g.table[0];
          // In range, at both edges, one past them, far past them, and the extremes of the index dtype.
          std::vector<int64_t> picks = {0, n - 1, -1, n, 2, -100, n + 100, minOf(id),
                                        maxOf(id), 1};
          Values idx = ints(id, g.idx, picks);
          Shape rs = g.idx;
          rs.insert(rs.end(), g.table.begin() + 1, g.table.end());
          c.params = "t: " + ty(d, g.table) + ", idx: " + ty(id, g.idx);
          c.result = ty(d, rs);
          c.body = "return gather(t, idx)";
          c.runs.push_back({t, idx});
          c.oracle = [rs](const std::vector<Values>& in) {
            const Values& t = in[0];
            const Values& ix = in[1];
            int64_t rows = t.shape[0], inner = t.size() / rows;
            Values out = zeros(t.dtype, rs);
            for (int64_t k = 0; k < ix.size(); ++k) {
              int64_t r = std::clamp<int64_t>(ix.i[k], 0, rows - 1);
              for (int64_t j = 0; j < inner; ++j) {
                if (out.isFloat()) out.f[k * inner + j] = t.f[r * inner + j];
                else out.i[k * inner + j] = t.i[r * inner + j];
              }
            }
            return Outputs{out};
          };
          add(std::move(c));
        }
      }
  }

  // write_slice(dest, x, start, axis = a): starts inside, at both edges,
  // partly and wholly outside on either side, and the extremes of the start's
  // dtype (nothing written, no overflow); one call per start.
  void writeSlice() {
    struct W { const char* tag; Shape dest, x; int axis; };
    for (Scalar d : kAll)
      for (Scalar sd : kInts)
        for (const W& w : {W{"r3_axis1", {2, 6, 4}, {2, 3, 4}, 1}, W{"r1", {5}, {2}, 0},
                           W{"r3_axis_neg1", {2, 3, 6}, {2, 3, 2}, -1}, W{"r2_whole", {3, 4}, {3, 4}, 1}})
          // Computed: the slice written is x + x, which the cuda target
          // computes in the write itself, clipped where start is outside.
          for (bool computed : {false, true}) {
          if (computed && (sd != I32 || d == Bool)) continue;
          Case c = shapeCase("write_slice", fmt::format("{}_{}{}", w.tag, dtypeName(sd), computed ? "_computed" : ""), d,
                             "index");
          Rng rng(c.name);
          Values dest = edgeFill(d, w.dest, rng), x = edgeFill(d, w.x, rng);
          Values written = x;
          for (int64_t k = 0; computed && k < x.size(); ++k) {
            if (x.isFloat()) written.f[k] = roundTo(d, 2 * x.f[k]);
            else written.i[k] = wrapTo(d, static_cast<int64_t>(static_cast<uint64_t>(x.i[k]) * 2u));  // wraps, no UB
          }
          int64_t m = w.dest[w.axis < 0 ? w.axis + w.dest.size() : w.axis];
          for (int64_t start : {int64_t{0}, int64_t{1}, m - 2, m - 1, m, int64_t{-1}, int64_t{-2}, int64_t{-100}, maxOf(sd), minOf(sd)})
            c.runs.push_back({dest, x, ints(sd, {}, {start})});
          c.params = fmt::format("dest: {}, x: {}, start: {}", ty(d, w.dest), ty(d, w.x), dtypeName(sd));
          c.result = ty(d, w.dest);
          c.body = fmt::format("return write_slice(dest, {}, start, axis = {})", computed ? "x + x" : "x", w.axis);
          int axis = w.axis < 0 ? w.axis + static_cast<int>(w.dest.size()) : w.axis;
          c.oracle = [axis, written](const std::vector<Values>& in) {
            Values out = in[0];
            const Values& x = written;
            int64_t start = in[2].i[0];
            // Element k of x, at coordinates (outer, p, inner) around the axis,
            // lands on dest position start + p when that is inside dest.
            int64_t inner = 1, n = x.shape[axis], m = out.shape[axis];
            for (size_t k = axis + 1; k < x.shape.size(); ++k) inner *= x.shape[k];
            for (int64_t k = 0; k < x.size(); ++k) {
              int64_t p = k / inner % n, outer = k / inner / n, in = k % inner;
              if (start < -p || start >= m - p) continue;
              int64_t at = (outer * m + start + p) * inner + in;
              if (out.isFloat()) out.f[at] = x.f[k];
              else out.i[at] = x.i[k];
            }
            return Outputs{out};
          };
          add(std::move(c));
          }
    // A start per row (axis 0), each row its own case of the above.
    for (Scalar d : kFloats)
      for (Scalar sd : kInts) {
        Case c = shapeCase("write_slice", fmt::format("per_row_{}", dtypeName(sd)), d, "index");
        Rng rng(c.name);
        Shape dest = {4, 2, 6, 3}, x = {4, 2, 2, 3};
        for (std::vector<int64_t> starts : {std::vector<int64_t>{0, 1, 4, 5}, {-1, 6, maxOf(sd), minOf(sd)}, {2, 2, -2, 3}})
          c.runs.push_back({edgeFill(d, dest, rng), edgeFill(d, x, rng), ints(sd, {4}, starts)});
        c.params = fmt::format("dest: {}, x: {}, start: {}", ty(d, dest), ty(d, x), ty(sd, {4}));
        c.result = ty(d, dest);
        c.body = "return write_slice(dest, x, start, axis = 2)";
        c.oracle = [](const std::vector<Values>& in) {
          Values out = in[0];
          const Values& x = in[1];
          int64_t n = x.shape[2], m = out.shape[2], inner = x.shape[3], heads = x.shape[1];
          for (int64_t k = 0; k < x.size(); ++k) {
            int64_t e = k % inner, p = k / inner % n, h = k / inner / n % heads, r = k / inner / n / heads;
            int64_t start = in[2].i[r];
            if (start < -p || start >= m - p) continue;
            out.f[((r * heads + h) * m + start + p) * inner + e] = x.f[k];
          }
          return Outputs{out};
        };
        add(std::move(c));
      }
  }

  // write_points(dest, x, rows, positions, axis = 2): points in range, past
  // both ends of either index, and two points at one place (the later wins).
  void writePoints() {
    for (Scalar d : kFloats)
      for (Scalar id : kInts) {
        Case c = shapeCase("write_points", fmt::format("r4_{}", dtypeName(id)), d, "index");
        Rng rng(c.name);
        Shape dest = {3, 2, 5, 4}, x = {1, 2, 6, 4};
        std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> sets = {
            {{0, 1, 2, 0, 1, 2}, {0, 1, 4, 3, 2, 0}},
            {{0, 0, 3, -1, 1, maxOf(id)}, {2, 2, 1, 1, minOf(id), 0}},
            {{2, 1, 0, 2, 1, 0}, {5, -1, 4, 4, 0, 1}}};
        for (const auto& [rows, positions] : sets)
          c.runs.push_back({edgeFill(d, dest, rng), edgeFill(d, x, rng), ints(id, {6}, rows), ints(id, {6}, positions)});
        c.params = fmt::format("dest: {}, x: {}, rows: {}, positions: {}", ty(d, dest), ty(d, x), ty(id, {6}),
                               ty(id, {6}));
        c.result = ty(d, dest);
        c.body = "return write_points(dest, x, rows, positions, axis = 2)";
        c.oracle = [](const std::vector<Values>& in) {
          Values out = in[0];
          const Values& x = in[1];
          for (int64_t p = 0; p < 6; ++p) {
            int64_t r = in[2].i[p], s = in[3].i[p];
            if (r < 0 || r >= 3 || s < 0 || s >= 5) continue;
            for (int64_t n = 0; n < 2; ++n)
              for (int64_t e = 0; e < 4; ++e) out.f[((r * 2 + n) * 5 + s) * 4 + e] = x.f[(n * 6 + p) * 4 + e];
          }
          return Outputs{out};
        };
        add(std::move(c));
      }
  }

  // attention(q, k, v, scale, mask): key lengths below and above the
  // compiled code's shortest prefix (64), masks that reach 1, 63, 64, 65,
  // 130 and all keys, a query row that sees nothing (the whole length, a
  // uniform softmax), and masks broadcast from [K] and [Q, K]. k200_prefill
  // has prefill's rows (G x Q = 24, more than a decode product's), whose
  // products cuda leaves to the library, its key prefix chosen on the
  // host. k200_pos makes its mask from a position argument. Against the
  // reference: f32 accumulation and exp in f32 against double.
  // Values of `d` uniform on [-1, 1].
  static Values uniformValues(Rng& rng, Scalar d, const Shape& shape) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    std::vector<double> v(n);
    for (double& x : v) x = rng.uniform(-1, 1);
    return floats(d, shape, v);
  }

  void attention() {
    struct A { const char* tag; int64_t G, Q, K; bool rowMask, blindRow; };
    for (Scalar d : kFloats)
      for (const A& a : {A{"k16", 2, 1, 16, false, false}, A{"k200", 2, 1, 200, false, false},
                         A{"k200_rows", 1, 3, 200, true, true}, A{"k200_prefill", 2, 12, 200, true, false}}) {
        const int64_t D = 8, E = 4;
        Case c = shapeCase("attention", a.tag, d, "matmul");
        Rng rng(c.name);
        auto values = [&](Shape shape) { return uniformValues(rng, d, shape); };
        Shape maskShape = a.rowMask ? Shape{a.Q, a.K} : Shape{a.K};
        // Each reach r: the first r keys seen (by every row, or by row i of
        // Q the first r - (Q - 1 - i), at least 1: the last row sees the most;
        // with blindRow, row 1 none).
        std::vector<int64_t> reaches = {1, 63, 64, 65, 130, a.K};
        for (int64_t reach : reaches) {
          if (reach > a.K) continue;
          std::vector<int64_t> m;
          for (int64_t i = 0; i < (a.rowMask ? a.Q : 1); ++i)
            for (int64_t j = 0; j < a.K; ++j) m.push_back(a.blindRow && i == 1 ? 0 : j < std::max<int64_t>(1, reach - (a.Q - 1 - i)));
          c.runs.push_back({values({1, 2, a.G, a.Q, D}), values({1, 2, a.K, D}), values({1, 2, a.K, E}),
                            floats(F32, {}, {0.35355339}), ints(Bool, maskShape, m)});
        }
        c.params = fmt::format("q: {}, k: {}, v: {}, scale: f32, mask: {}", ty(d, {1, 2, a.G, a.Q, D}),
                               ty(d, {1, 2, a.K, D}), ty(d, {1, 2, a.K, E}), ty(Bool, maskShape));
        c.result = ty(d, {1, 2, a.G, a.Q, E});
        c.body = "return attention(q, k, v, scale, mask)";
        c.tol = d == F32 ? Tolerance{static_cast<double>(a.K + D + 16), 1.0} : Tolerance{8, 1.0};
        add(std::move(c));
      }
    // Decode's mask made in the entry from a position, `key <= p`: a
    // generator, which cuda's scores kernel computes where it reads it.
    // k300_pos_e32 has value rows of 32 (a warp of value elements), which
    // cuda runs as split-KV kernels (split_attention.h): positions in the
    // first split of 8 keys, at a split's edge, in the second and third
    // chunk of 128, and -1 (no key seen: every probability 1/300).
    struct P { const char* tag; int64_t K, E; std::vector<int64_t> positions; };
    for (Scalar d : kFloats)
      for (const P& a : {P{"k200_pos", 200, 4, {0, 62, 63, 64, 129, 199}},
                         P{"k300_pos_e32", 300, 32, {-1, 0, 7, 8, 130, 255, 299}}}) {
      const int64_t G = 2, K = a.K, D = 8, E = a.E;
      Case c = shapeCase("attention", a.tag, d, "matmul");
      Rng rng(c.name);
      auto values = [&](Shape shape) { return uniformValues(rng, d, shape); };
      for (int64_t p : a.positions)
        c.runs.push_back({values({1, 2, G, 1, D}), values({1, 2, K, D}), values({1, 2, K, E}),
                          floats(F32, {}, {0.35355339}), ints(I64, {}, {p})});
      c.params = fmt::format("q: {}, k: {}, v: {}, scale: f32, p: i64", ty(d, {1, 2, G, 1, D}), ty(d, {1, 2, K, D}),
                             ty(d, {1, 2, K, E}));
      c.result = ty(d, {1, 2, G, 1, E});
      c.body = fmt::format("let keys = iota<i64>({})\n    let mask[j] = keys[j] <= p\n"
                           "    return attention(q, k, v, scale, mask)",
                           K);
      c.tol = d == F32 ? Tolerance{static_cast<double>(K + D + 16), 1.0} : Tolerance{8, 1.0};
      add(std::move(c));
    }
  }

  // A window of keys that starts past 0 (a sliding window's mask): groups
  // of keys whose first is unseen and later ones are not, which a kernel
  // skipping a group of keys by its first would get wrong.
  void attentionWindows() {
    for (Scalar d : kFloats) {
      const int64_t G = 2, K = 200, D = 8, E = 4;
      Case c = shapeCase("attention", "k200_window", d, "matmul");
      Rng rng(c.name);
      auto values = [&](Shape shape) { return uniformValues(rng, d, shape); };
      for (auto [lo, hi] : {std::pair<int64_t, int64_t>{70, 131}, {1, 2}, {143, 200}}) {
        std::vector<int64_t> m(K);
        for (int64_t j = 0; j < K; ++j) m[j] = lo <= j && j < hi;
        c.runs.push_back({values({1, 2, G, 1, D}), values({1, 2, K, D}), values({1, 2, K, E}),
                          floats(F32, {}, {0.35355339}), ints(Bool, {K}, m)});
      }
      c.params = fmt::format("q: {}, k: {}, v: {}, scale: f32, mask: {}", ty(d, {1, 2, G, 1, D}), ty(d, {1, 2, K, D}),
                             ty(d, {1, 2, K, E}), ty(Bool, {K}));
      c.result = ty(d, {1, 2, G, 1, E});
      c.body = "return attention(q, k, v, scale, mask)";
      c.tol = d == F32 ? Tolerance{static_cast<double>(K + D + 16), 1.0} : Tolerance{8, 1.0};
      add(std::move(c));
    }
  }

  void matmul() {
    struct M { const char* tag; Shape a, w; Shape perm; };
    std::vector<M> forms = {{"plain", {3, 4}, {4, 5}, {}},
                            {"vector", {4}, {4, 5}, {}},
                            {"rows_r3", {2, 3, 4}, {4, 5}, {}},
                            {"rows_r4", {2, 2, 3, 4}, {4, 5}, {}},
                            {"batched", {2, 3, 4}, {2, 4, 5}, {}},
                            {"batch_bcast", {2, 1, 3, 4}, {3, 4, 5}, {}},
                            {"batch_bcast_a", {3, 4}, {2, 4, 5}, {}},
                            {"permuted", {3, 4}, {5, 4}, {1, 0}},
                            {"permuted_rows_r3", {2, 3, 4}, {5, 4}, {1, 0}},
                            {"permuted_batched", {2, 3, 4}, {2, 5, 4}, {0, 2, 1}},
                            {"permuted_r4", {2, 2, 3, 4}, {2, 2, 5, 4}, {0, 1, 3, 2}},
                            {"long_k", {2, 64}, {64, 3}, {}},
                            // Decode-shaped products a target may give its own kernel
                            // (cuda: a warp per output, 16-byte loads, a tail of single loads).
                            {"permuted_long_k", {2, 296}, {5, 296}, {1, 0}},
                            {"permuted_vector_k100", {100}, {7, 100}, {1, 0}},
                            {"permuted_rows_r3_long_k", {2, 2, 264}, {3, 264}, {1, 0}},
                            {"permuted_batched_long_k", {2, 3, 128}, {2, 5, 128}, {0, 2, 1}},
                            {"permuted_r4_long_k", {2, 2, 4, 72}, {2, 2, 9, 72}, {0, 1, 3, 2}},
                            // Long reductions with b read as [.., K, N] (cuda splits K).
                            {"long_k_split", {2, 300}, {300, 5}, {}},
                            {"vector_long_k_split", {300}, {300, 4}, {}},
                            {"batched_long_k_split", {2, 3, 260}, {2, 260, 6}, {}},
                            // Prefill-shaped: more than 8 rows (cuda: a library's GEMM, cuBLASLt).
                            {"prefill_rows", {20, 12}, {12, 6}, {}},
                            {"permuted_rows_9", {9, 24}, {5, 24}, {1, 0}},
                            {"permuted_prefill_rows_r3", {2, 9, 40}, {7, 40}, {1, 0}},
                            {"batched_prefill", {2, 16, 12}, {2, 12, 5}, {}},
                            {"permuted_batched_prefill", {2, 17, 8}, {2, 6, 8}, {0, 2, 1}},
                            {"permuted_r4_prefill", {2, 2, 16, 8}, {2, 2, 5, 8}, {0, 1, 3, 2}}};
    for (Scalar d : kFloats)
      for (const M& m : forms)
        for (bool exact : {true, false}) {
          Case c = shapeCase("matmul", std::string(m.tag) + (exact ? "" : "_general"), d, "matmul");
          Rng rng(c.name);
          Values a = exact ? dyadic(d, m.a, rng) : general(d, m.a, rng);
          Values w = exact ? dyadic(d, m.w, rng) : general(d, m.w, rng);
          Shape wt = m.w;  // w as matmul sees it
          if (!m.perm.empty()) {
            Shape p;
            for (int64_t k : m.perm) p.push_back(m.w[k]);
            wt = p;
          }
          Shape rs;
          int64_t K = m.a.back();
          if (wt.size() == 2) {
            rs.assign(m.a.begin(), m.a.end() - 1);
          } else {
            rs = broadcast(Shape(m.a.begin(), m.a.end() - 2), Shape(wt.begin(), wt.end() - 2));
            rs.push_back(m.a[m.a.size() - 2]);
          }
          rs.push_back(wt.back());
          c.params = "a: " + ty(d, m.a) + ", w: " + ty(d, m.w);
          c.result = ty(d, rs);
          c.body = m.perm.empty() ? "return matmul(a, w)" : fmt::format("return matmul(a, permute(w, [{}]))", fmt::join(m.perm, ", "));
          c.runs.push_back({a, w});
          // Quarters up to 8: every product and sum is exact in f32, so any order gives the same result.
          if (!exact) c.tol = accumulated(d, K, 1.0);
          add(std::move(c));
        }
  }

  void options() {
    for (Scalar d : kAll) {
      Case c = shapeCase("some", "unwrap", d, "misc");
      c.params = "x: " + ty(d, {3}) + ", fallback: " + ty(d, {3});
      c.result = ty(d, {3});
      c.body = "return unwrap_or(some(x), fallback)";
      Rng rng(c.name);
      c.runs.push_back({edgeFill(d, {3}, rng), general(d, {3}, rng)});
      c.oracle = [](const std::vector<Values>& in) { return Outputs{in[0]}; };
      add(std::move(c));

      Case n = shapeCase("unwrap_or", "none_and_some", d, "misc");
      std::string helper = fmt::format("pick_{}", dtypeName(d));
      n.helpers = fmt::format("fn {}(o: Option<{}>, fallback: {}) -> {} {{\n    return unwrap_or(o, fallback)\n}}\n", helper,
                              ty(d, {3}), ty(d, {3}), ty(d, {3}));
      n.params = "x: " + ty(d, {3}) + ", fallback: " + ty(d, {3});
      n.result = fmt::format("({}, {})", ty(d, {3}), ty(d, {3}));
      n.body = fmt::format("return ({}(none, fallback), {}(some(x), fallback))", helper, helper);
      n.runs.push_back({edgeFill(d, {3}, rng), general(d, {3}, rng)});
      n.oracle = [](const std::vector<Values>& in) { return Outputs{in[1], in[0]}; };
      add(std::move(n));
    }
  }

  // On one device every collective is the identity and shard_index() is 0 (§11).
  void shards(const std::string& f) {
    if (f == "shard_index") {
      Case c;
      c.name = "shard_index_i64";
      c.family = f;
      c.dtype = I64;
      c.group = "misc";
      c.params = "x: " + ty(I64, {3});
      c.result = ty(I64, {3});
      c.body = "return x + shard_index()";
      c.runs.push_back({ints(I64, {3}, {1, -2, 3})});
      c.oracle = [](const std::vector<Values>& in) { return Outputs{in[0]}; };
      add(std::move(c));
      return;
    }
    for (Scalar d : kAll) {
      if (f == "shard_sum" && d == Bool) continue;
      Case c = shapeCase(f, "r2", d, "misc");
      c.params = "x: " + ty(d, {2, 3});
      bool concat = f == "shard_concat";
      c.result = ty(d, {2, 3});
      c.body = concat ? "return shard_concat<1>(x, axis = -1)" : fmt::format("return {}(x)", f);
      Rng rng(c.name);
      c.runs.push_back({edgeFill(d, {2, 3}, rng)});
      c.oracle = [](const std::vector<Values>& in) { return Outputs{in[0]}; };
      add(std::move(c));
    }
  }

  // ---------------------------------------------------------------- language forms
  // Index comprehensions (§8): transposes, diagonals, outer products, rank 4.
  // A reduction over rows with the elementwise work around it, as a norm and
  // a softmax write it (cuda: one warp kernel computes the square where it
  // reads it, and the scale or the exp and divide after the butterfly):
  // rows of 100 (not a multiple of 32) under one, two and three leading axes,
  // and past a lane's whole groups, the few columns left in one iteration,
  // those past the row masked: 2 rows of 2100 (groups of 64 and 32 columns
  // a lane, for a kernel of few rows) and 80 of 1000 (groups of 16).
  void rowChains() {
    struct R { const char* tag; Shape x; };
    for (Scalar d : kFloats)
      for (const R& r : {R{"rows", {3, 100}}, R{"rank3", {2, 3, 100}}, R{"rank4", {2, 1, 3, 100}},
                         R{"long", {2, 2100}}, R{"many", {80, 1000}}}) {
        Shape w = {r.x.back()};
        Case norm = shapeCase("row_chain", std::string("rms_norm_") + r.tag, d, "reduce");
        norm.params = "x: " + ty(d, r.x) + ", w: " + ty(d, w);
        norm.result = ty(d, r.x);
        norm.body = fmt::format(
            "let wide = cast<f32>(x)\n        let variance = mean(wide * wide, axis = -1, keepdims = true)\n"
            "        return w * cast<{}>(wide * rsqrt(variance + 1.0e-5))",
            dtypeName(d));
        Rng rng(norm.name);
        norm.runs.push_back({general(d, r.x, rng), general(d, w, rng)});
        norm.tol = d == F32 ? Tolerance{static_cast<double>(r.x.back() + 8), 1.0} : Tolerance{2, 1.0};
        add(std::move(norm));

        Case soft = shapeCase("row_chain", std::string("softmax_") + r.tag, d, "reduce");
        soft.params = "x: " + ty(d, r.x);
        soft.result = ty(F32, r.x);
        soft.body =
            "let wide = cast<f32>(x)\n        let e = exp(wide - max(wide, axis = -1, keepdims = true))\n"
            "        return e / sum(e, axis = -1, keepdims = true)";
        Rng srng(soft.name);
        soft.runs.push_back({general(d, r.x, srng)});
        // Counted at a typical probability (1 / the row's length): a row's
        // sum off by a few terms moves every probability by more.
        soft.tol = Tolerance{static_cast<double>(r.x.back() + 8), 1.0 / static_cast<double>(r.x.back())};
        add(std::move(soft));
      }
  }

  // Decode-shaped products read by an elementwise op (cuda: the product's
  // warp computes the op as it stores, product_epilogues.h): a residual, a
  // broadcast bias, the product read twice, SwiGLU's silu(gate) * up over
  // two products of one x (one warp per column of both), and a transposed
  // read, which is not at the product's own element and stays apart.
  // Dyadic values where every sum is exact; SwiGLU's are general.
  void productEpilogues() {
    struct E { const char* tag; std::vector<std::pair<std::string, Shape>> params; Shape result; std::string body; bool exact; };
    for (Scalar d : kFloats) {
      const std::string t = dtypeName(d);
      const std::string swiglu =
          "let g = matmul(a, permute(wg, [1, 0]))\n        let u = matmul(a, permute(wu, [1, 0]))\n"
          "        let wide = cast<f32>(g)\n        return cast<" + t + ">(wide * sigmoid(wide)) * u";
      std::vector<E> forms = {
          {"residual", {{"a", {1, 296}}, {"w", {5, 296}}, {"r", {1, 5}}}, {1, 5},
           "return r + matmul(a, permute(w, [1, 0]))", true},
          {"bias_rows_r3", {{"a", {2, 2, 264}}, {"w", {3, 264}}, {"bias", {3}}}, {2, 2, 3},
           "return matmul(a, permute(w, [1, 0])) - bias", true},
          {"squared", {{"a", {1, 100}}, {"w", {7, 100}}}, {1, 7},
           "let y = matmul(a, permute(w, [1, 0]))\n        return y * y", true},
          {"swiglu", {{"a", {1, 296}}, {"wg", {6, 296}}, {"wu", {6, 296}}}, {1, 6}, swiglu, false},
          {"swiglu_rows", {{"a", {3, 264}}, {"wg", {5, 264}}, {"wu", {5, 264}}}, {3, 5}, swiglu, false},
          {"transposed", {{"a", {2, 100}}, {"w", {5, 100}}, {"r", {5, 2}}}, {5, 2},
           "return permute(matmul(a, permute(w, [1, 0])), [1, 0]) + r", true},
      };
      for (const E& e : forms) {
        Case c = shapeCase("product_epilogue", e.tag, d, "matmul");
        Rng rng(c.name);
        std::vector<std::string> ps;
        std::vector<Values> in;
        for (const auto& [name, shape] : e.params) {
          ps.push_back(name + ": " + ty(d, shape));
          in.push_back(e.exact ? dyadic(d, shape, rng) : general(d, shape, rng));
        }
        c.params = fmt::format("{}", fmt::join(ps, ", "));
        c.result = ty(d, e.result);
        c.body = e.body;
        c.runs.push_back(in);
        int64_t k = e.params.front().second.back();
        if (!e.exact) c.tol = d == F32 ? Tolerance{static_cast<double>(k + 8), 1.0} : Tolerance{2, 1.0};
        add(std::move(c));
      }
    }
  }

  void comprehensions() {
    for (Scalar d : kAll) {
      struct F { const char* tag; std::vector<std::pair<std::string, Shape>> params; Shape result; std::string body; };
      std::string scale = d == Bool ? "!x[j, i]" : "x[j, i] * x[j, i]";
      std::string outer = d == Bool ? "a[i] && b[j]" : "a[i] - b[j]";
      std::vector<F> forms = {
          {"transpose", {{"x", {3, 4}}}, {4, 3}, "let y[i, j] = x[j, i]\n        return y"},
          {"diagonal", {{"x", {4, 4}}}, {4}, "let y[i] = x[i, i]\n        return y"},
          {"body", {{"x", {3, 4}}}, {4, 3}, "let y[i, j] = " + scale + "\n        return y"},
          {"outer", {{"a", {3}}, {"b", {4}}}, {3, 4}, "let y[i, j] = " + outer + "\n        return y"},
          {"static_index", {{"x", {3, 4}}}, {4}, "let y[j] = x[2, j]\n        return y"},
          {"rank4", {{"x", {2, 3, 1, 2}}}, {2, 1, 3, 2}, "let y[a, b, c, e] = x[e, c, b, a]\n        return y"},
          {"with_iota", {{"x", {3, 4}}}, {3, 4},
           d == Bool ? "let y[i, j] = x[i, j] == (iota<i32>(3)[i] < 2)\n        return y"
                     : fmt::format("let y[i, j] = x[i, j] + cast<{}>(iota<i32>(3)[i])\n        return y", dtypeName(d))},
      };
      for (const F& f : forms) {
        Case c = shapeCase("comprehension", f.tag, d, "misc");
        std::vector<std::string> ps;
        std::vector<Values> in;
        Rng rng(c.name);
        for (const auto& [name, shape] : f.params) {
          ps.push_back(name + ": " + ty(d, shape));
          in.push_back(edgeFill(d, shape, rng));
        }
        c.params = fmt::format("{}", fmt::join(ps, ", "));
        c.result = ty(d, f.result);
        c.body = f.body;
        c.runs.push_back(in);
        add(std::move(c));
      }
    }
  }

  // Subscripts (§7): static slices and indices of every rank, run-time
  // scalar indices at and past both edges (clamped), gathers in comprehensions.
  void subscripts() {
    for (Scalar d : kAll) {
      struct S { const char* tag; Shape shape; std::string sub; Shape result; };
      for (const S& s : {S{"r1_slice", {6}, "1:4", {3}}, S{"r2_slice", {3, 4}, "1:3, :", {2, 4}},
                         S{"r2_index", {3, 4}, ":, 3", {3}}, S{"r3_mixed", {2, 3, 4}, "1, 0:2, 1:4", {2, 3}},
                         S{"r4_slice", {2, 3, 2, 4}, ":, 1:3, 1, 2:4", {2, 2, 2}}, S{"r2_point", {3, 4}, "2, 1", {}},
                         S{"r2_empty", {3, 4}, "1:1, :", {0, 4}}}) {
        Case c = shapeCase("slice", s.tag, d, "index");
        c.params = "x: " + ty(d, s.shape);
        c.result = ty(d, s.result);
        c.body = fmt::format("return x[{}]", s.sub);
        Rng rng(c.name);
        c.runs.push_back({edgeFill(d, s.shape, rng)});
        add(std::move(c));
      }
      for (Scalar id : kInts) {
        std::vector<int64_t> picks = {0, 3, 4, -1, 5, 100, minOf(id), maxOf(id)};
        // A run-time scalar index, alone and beside a slice.
        struct R { const char* tag; std::string sub; Shape result; };
        for (const R& r : {R{"row", "pos, :", {4}}, R{"point", "pos, 2", {}}, R{"column", ":, pos", {5}}}) {
          Case c = shapeCase("runtime_index", fmt::format("{}_{}", r.tag, dtypeName(id)), d, "index");
          c.params = "x: " + ty(d, {5, 4}) + ", pos: " + dtypeName(id);
          c.result = ty(d, r.result);
          c.body = fmt::format("return x[{}]", r.sub);
          Rng rng(c.name);
          Values x = edgeFill(d, {5, 4}, rng);
          for (int64_t p : picks) c.runs.push_back({x, ints(id, {}, {p})});
          add(std::move(c));
        }
        // Gathers inside comprehensions: one axis, two axes, and a computed index.
        struct G { const char* tag; std::string params, body; Shape result; };
        std::string t = ty(id, {8});
        for (const G& g : {G{"rows", "idx: " + t, "let y[k, j] = x[idx[k], j]\n        return y", {8, 4}},
                           G{"points", "idx: " + t + ", idx2: " + t, "let y[k] = x[idx[k], idx2[k]]\n        return y", {8}},
                           G{"computed", "idx: " + t, "let y[k] = x[idx[k] + 1, idx[k] % 4]\n        return y", {8}}}) {
          Case c = shapeCase("comprehension_gather", fmt::format("{}_{}", g.tag, dtypeName(id)), d, "index");
          c.params = "x: " + ty(d, {5, 4}) + ", " + g.params;
          c.result = ty(d, g.result);
          c.body = g.body;
          Rng rng(c.name);
          std::vector<int64_t> safe = picks;
          if (std::string(g.tag) == "computed") safe = {0, 3, 4, -1, 5, 100, -7, 2};  // + 1 must not wrap
          c.runs.push_back({edgeFill(d, {5, 4}, rng), ints(id, {8}, safe)});
          if (std::string(g.tag) == "points") {
            std::vector<int64_t> other(picks.rbegin(), picks.rend());
            c.runs.back().push_back(ints(id, {8}, other));
          }
          add(std::move(c));
        }
      }
    }
  }
};

}  // namespace

const char* dtypeName(Scalar s) {
  switch (s) {
    case Scalar::F32: return "f32";
    case Scalar::BF16: return "bf16";
    case Scalar::F16: return "f16";
    case Scalar::I32: return "i32";
    case Scalar::I64: return "i64";
    case Scalar::Bool: return "bool";
    case Scalar::F64: case Scalar::I8: case Scalar::U8: case Scalar::I16: break;  // storage types only
  }
  return "?";
}

std::string entryText(const Case& c) {
  return fmt::format("    pub entry {}({}) -> {} {{\n        {}\n    }}\n", c.name, c.params, c.result, c.body);
}

Suite generateSuite() {
  Builder b;
  // Operators: every row of syntax/operators.def, by its typing rule.
#define BINARY_OP(Name, Spelling, Precedence) b.binaryOperator(BinaryOp::Name, #Name, Spelling);
#define UNARY_OP(Name, Spelling) b.unaryOperator(UnaryOp::Name, #Name, Spelling);
#include "syntax/operators.def"

  // Primitives: every row of syntax/primitives.def. The classes get cases by
  // their typing rule; each PRIMITIVE row needs a generator below (or a
  // reason in kSkipped), else the suite fails for it.
  std::map<std::string, std::function<void()>> generators = {
      {"reshape", [&] { b.reshape(); }},     {"permute", [&] { b.permute(); }},
      {"concat", [&] { b.concat(); }},       {"iota", [&] { b.iota(); }},
      {"fill", [&] { b.fill(); }},           {"cast", [&] { b.cast(); }},
      {"select", [&] { b.select(); }},       {"gather", [&] { b.gather(); }},
      {"write_slice", [&] { b.writeSlice(); }}, {"attention", [&] { b.attention(); b.attentionWindows(); }},
      {"write_points", [&] { b.writePoints(); }},
      {"matmul", [&] { b.matmul(); }},       {"some", [&] { b.options(); }},
      {"unwrap_or", [] {}},  // with `some`
      {"shard_sum", [&] { b.shards("shard_sum"); }},     {"shard_max", [&] { b.shards("shard_max"); }},
      {"shard_shared", [&] { b.shards("shard_shared"); }}, {"shard_concat", [&] { b.shards("shard_concat"); }},
      {"shard_index", [&] { b.shards("shard_index"); }},
  };
  static const std::map<std::string, std::string> kSkipped = {};
  std::vector<std::string> primitives;
#define UNARY_MATH(Name, spelling, Ops) primitives.push_back(spelling), b.unaryMath(spelling, Operands::Ops);
#define BINARY_MATH(Name, spelling, Ops) primitives.push_back(spelling), b.binaryMath(spelling, Operands::Ops);
#define REDUCER(Name, spelling, Call, Binder, Ops, Result) \
  primitives.push_back(spelling), b.reducer(spelling, Call, Binder, Operands::Ops, ReduceResult::Result);
#define PRIMITIVE(Name, spelling)                                                                        \
  primitives.push_back(spelling);                                                                        \
  if (auto g = generators.find(spelling); g != generators.end()) g->second();                            \
  else if (auto s = kSkipped.find(spelling); s != kSkipped.end()) b.suite.skipped.push_back(*s);         \
  else b.suite.missing.push_back(fmt::format("primitive `{}` (syntax/primitives.def) has no case generator " \
                                             "in tests/ops/ops_cases.cpp and no reason to be skipped", spelling));
#include "syntax/primitives.def"

  // A generator for a row that no longer exists is as wrong as a row without one.
  for (const auto& [name, g] : generators)
    if (std::find(primitives.begin(), primitives.end(), name) == primitives.end())
      b.suite.missing.push_back(fmt::format("tests/ops generates cases for `{}`, which is not in syntax/primitives.def", name));
  // Every row that is not skipped must have cases.
  for (const std::string& p : primitives)
    if (!b.perFamily.count(p) && !kSkipped.count(p))
      b.suite.missing.push_back(fmt::format("primitive `{}` has no cases", p));

  b.comprehensions();
  b.subscripts();
  b.rowChains();
  b.productEpilogues();
  return std::move(b.suite);
}

}  // namespace linnet::ops
