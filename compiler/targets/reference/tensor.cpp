#include "targets/reference/tensor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "elaborate/generics.h"

namespace linnet::reference {

int64_t Tensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string Tensor::describe() const {
  return fmt::format("Tensor[{}; {}]", fmt::join(shape, ", "), sema::name(dtype));
}

Tensor Tensor::zeros(Scalar dtype, std::vector<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (t.isFloat()) t.f.assign(t.size(), 0.0);
  else t.i.assign(t.size(), 0);
  return t;
}

Tensor Tensor::scalarF(Scalar dtype, double v, bool weak) {
  Tensor t = zeros(dtype, {});
  t.f[0] = roundTo(dtype, v);
  t.weak = weak;
  return t;
}

Tensor Tensor::scalarI(Scalar dtype, int64_t v, bool weak) {
  Tensor t = zeros(dtype, {});
  t.i[0] = wrapTo(dtype, v);
  t.weak = weak;
  return t;
}

namespace {

// The nearest value of a binary format with `precision` significand bits
// (the leading one included) and normal exponents emin..emax, subnormals
// below, ties to even, as a double: one rounding from the double (bf16 is
// not rounded through f32 first, which would round twice: 2^24 + 2^16 + 1
// is nearest 2^24 + 2^17 in bf16, but its f32 value 2^24 + 2^16 is a tie
// that goes to 2^24).
double roundToFormat(double v, int precision, int emin, int emax) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  double a = std::fabs(v);
  int exp;
  std::frexp(a, &exp);                                 // a = m * 2^exp, m in [0.5, 1)
  int e = std::max(exp - 1, emin);                     // the binade, clamped to the subnormal range
  double quantum = std::ldexp(1.0, e - (precision - 1));  // spacing of the format's values there
  double r = std::nearbyint(a / quantum) * quantum;    // ties to even
  if (r > std::ldexp(2.0 - std::ldexp(1.0, 1 - precision), emax)) r = INFINITY;
  return std::copysign(r, v);
}

// An integer as the nearest value of a float dtype, rounded once (a double
// holds every integer below 2^53 exactly; past it the conversion to double
// would round first).
double intToFloat(Scalar dtype, int64_t v) {
  constexpr int64_t kExact = int64_t(1) << 53;
  if (v > -kExact && v < kExact) return roundTo(dtype, static_cast<double>(v));
  if (dtype == Scalar::F32) return static_cast<double>(static_cast<float>(v));
  // bf16 and f16: round the magnitude to `precision` bits in integers.
  int precision = dtype == Scalar::BF16 ? 8 : 11;
  uint64_t a = v < 0 ? 0ull - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  int shift = 64 - __builtin_clzll(a) - precision;
  uint64_t q = a >> shift, rest = a & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
  if (rest > half || (rest == half && (q & 1))) ++q;
  double r = std::ldexp(static_cast<double>(q), shift);
  return roundTo(dtype, v < 0 ? -r : r);  // f16 overflows to infinity
}

}  // namespace

namespace {
thread_local int wideFloats = 0;  // WideFloats alive on this thread
}  // namespace

WideFloats::WideFloats() { ++wideFloats; }
WideFloats::~WideFloats() { --wideFloats; }

double roundTo(Scalar dtype, double v) {
  if (wideFloats) return v;
  switch (dtype) {
    case Scalar::F32: return static_cast<double>(static_cast<float>(v));
    case Scalar::F16: return roundToFormat(v, 11, -14, 15);
    case Scalar::BF16: return roundToFormat(v, 8, -126, 127);
    default: return v;
  }
}

int64_t wrapTo(Scalar dtype, int64_t v) {
  switch (dtype) {
    case Scalar::I32: return static_cast<int32_t>(static_cast<uint32_t>(v));
    case Scalar::Bool: return v != 0;
    default: return v;
  }
}

std::vector<int64_t> broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  if (auto out = elab::broadcast(a, b)) return *out;
  throw EvalError(fmt::format("cannot broadcast [{}] with [{}]", fmt::join(a, ", "), fmt::join(b, ", ")));
}

int64_t broadcastIndex(const std::vector<int64_t>& shape, const std::vector<int64_t>& outShape,
                       const std::vector<int64_t>& coord) {
  int64_t index = 0;
  size_t offset = outShape.size() - shape.size();
  for (size_t k = 0; k < shape.size(); ++k) {
    int64_t c = shape[k] == 1 ? 0 : coord[k + offset];
    index = index * shape[k] + c;
  }
  return index;
}

namespace {

// Calls fn(coord, flat) for every coordinate of `shape`, in row-major order.
template <typename Fn>
void forEach(const std::vector<int64_t>& shape, Fn fn) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  std::vector<int64_t> coord(shape.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    fn(coord, flat);
    for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
      if (++coord[k] < shape[k]) break;
      coord[k] = 0;
    }
  }
}

// Walks an output shape in row-major order, keeping each input's flat
// offset under broadcasting (stride 0 along a broadcast axis), so that no
// coordinate is recomputed per element.
class Walker {
 public:
  Walker(const std::vector<int64_t>& out, std::vector<const std::vector<int64_t>*> inputs)
      : out_(out), strides_(inputs.size(), std::vector<int64_t>(out.size(), 0)) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const auto& in = *inputs[i];
      size_t offset = out.size() - in.size();
      int64_t stride = 1;
      for (size_t k = in.size(); k-- > 0;) {
        if (in[k] != 1) strides_[i][k + offset] = stride;
        stride *= in[k];
      }
    }
  }
  template <typename Fn>
  void run(Fn fn) {
    int64_t total = 1;
    for (int64_t d : out_) total *= d;
    if (total == 0) return;
    size_t n = strides_.size();
    std::vector<int64_t> coord(out_.size(), 0), off(n, 0);
    for (int64_t flat = 0; flat < total; ++flat) {
      fn(flat, off.data());
      for (size_t k = out_.size(); k-- > 0;) {
        for (size_t i = 0; i < n; ++i) off[i] += strides_[i][k];
        if (++coord[k] < out_[k]) break;
        for (size_t i = 0; i < n; ++i) off[i] -= strides_[i][k] * out_[k];
        coord[k] = 0;
      }
    }
  }

 private:
  std::vector<int64_t> out_;
  std::vector<std::vector<int64_t>> strides_;
};

using sema::BinaryKind;
using sema::ReduceKind;
using sema::UnaryKind;

template <typename T>
bool compare(BinaryKind op, T x, T y) {
  switch (op) {
    case BinaryKind::Eq: return x == y;
    case BinaryKind::Ne: return x != y;
    case BinaryKind::Lt: return x < y;
    case BinaryKind::Le: return x <= y;
    case BinaryKind::Gt: return x > y;
    default: return x >= y;
  }
}

double floatOp(UnaryKind op, double x) {
  switch (op) {
    case UnaryKind::Neg: return -x;
    case UnaryKind::Exp: return std::exp(x);
    case UnaryKind::Log: return std::log(x);
    case UnaryKind::Sin: return std::sin(x);
    case UnaryKind::Cos: return std::cos(x);
    case UnaryKind::Tanh: return std::tanh(x);
    case UnaryKind::Sqrt: return std::sqrt(x);
    case UnaryKind::Rsqrt: return 1.0 / std::sqrt(x);
    case UnaryKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case UnaryKind::Abs: return std::fabs(x);
    case UnaryKind::Floor: return std::floor(x);
    case UnaryKind::Erf: return std::erf(x);
    case UnaryKind::Not: break;
  }
  throw EvalError(fmt::format("`{}` of a float tensor", sema::name(op)));
}

// The lowest and highest values of an integer dtype: the identities of max and min.
int64_t lowestInt(Scalar dtype) { return dtype == Scalar::I32 ? INT32_MIN : dtype == Scalar::Bool ? 0 : INT64_MIN; }
int64_t highestInt(Scalar dtype) { return dtype == Scalar::I32 ? INT32_MAX : dtype == Scalar::Bool ? 1 : INT64_MAX; }

}  // namespace

Scalar joinDType(const Tensor& a, const Tensor& b, bool& weak) {
  weak = a.weak && b.weak;
  if (a.weak && !b.weak) return b.dtype;
  if (b.weak && !a.weak) return a.dtype;
  if (a.weak && b.weak) return a.isFloat() ? a.dtype : b.dtype;
  if (a.dtype != b.dtype)
    throw EvalError(fmt::format("element types {} and {} differ", sema::name(a.dtype),
                                sema::name(b.dtype)));
  return a.dtype;
}

Tensor cast(const Tensor& x, Scalar to) {
  Tensor out = Tensor::zeros(to, x.shape);
  for (int64_t k = 0; k < x.size(); ++k) {
    if (out.isFloat()) {
      out.f[k] = x.isFloat() ? roundTo(to, x.f[k]) : intToFloat(to, x.i[k]);
    } else if (x.isFloat()) {
      double v = x.f[k];
      out.i[k] = to == Scalar::Bool ? v != 0.0
                 : std::isfinite(v) && std::fabs(v) < 9.2e18 ? wrapTo(to, static_cast<int64_t>(v))
                                                             : 0;
    } else {
      out.i[k] = wrapTo(to, x.i[k]);
    }
  }
  return out;
}

Tensor unary(UnaryKind op, const Tensor& x) {
  Tensor out = x;
  if (op == UnaryKind::Not) {
    for (auto& v : out.i) v = !v;
    return out;
  }
  if (x.isFloat()) {
    for (auto& v : out.f) v = roundTo(x.dtype, floatOp(op, v));
    return out;
  }
  if (x.weak && op != UnaryKind::Neg && op != UnaryKind::Abs) {  // a literal integer under exp, say
    out = cast(x, Scalar::F32);
    out.weak = true;
    return unary(op, out);
  }
  for (auto& v : out.i) {
    if (op == UnaryKind::Neg) v = wrapTo(x.dtype, static_cast<int64_t>(0ull - static_cast<uint64_t>(v)));
    else if (op == UnaryKind::Abs) v = wrapTo(x.dtype, v < 0 ? static_cast<int64_t>(0ull - static_cast<uint64_t>(v)) : v);
    else throw EvalError(fmt::format("`{}` of an integer tensor", sema::name(op)));
  }
  return out;
}

Tensor binary(BinaryKind op, const Tensor& a0, const Tensor& b0) {
  bool compareOp = sema::isComparison(op);
  bool logical = sema::isLogical(op);
  bool weak = false;
  Scalar dt = logical ? Scalar::Bool : joinDType(a0, b0, weak);
  const Tensor a = a0.dtype == dt || logical ? a0 : cast(a0, dt);
  const Tensor b = b0.dtype == dt || logical ? b0 : cast(b0, dt);
  std::vector<int64_t> shape = broadcastShapes(a.shape, b.shape);
  Scalar outType = compareOp || logical ? Scalar::Bool : dt;
  Tensor out = Tensor::zeros(outType, shape);
  out.weak = weak && !compareOp && !logical;
  Walker walk(shape, {&a.shape, &b.shape});
  if (logical) {
    walk.run([&](int64_t flat, const int64_t* off) {
      out.i[flat] = op == BinaryKind::And ? (a.i[off[0]] && b.i[off[1]]) : (a.i[off[0]] || b.i[off[1]]);
    });
  } else if (sema::isFloat(dt)) {
    walk.run([&](int64_t flat, const int64_t* off) {
      double x = a.f[off[0]], y = b.f[off[1]];
      if (compareOp) {
        out.i[flat] = compare(op, x, y);
        return;
      }
      double r;
      switch (op) {
        case BinaryKind::Add: r = x + y; break;
        case BinaryKind::Sub: r = x - y; break;
        case BinaryKind::Mul: r = x * y; break;
        case BinaryKind::Div: r = x / y; break;
        case BinaryKind::Maximum: r = std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); break;
        case BinaryKind::Minimum: r = std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); break;
        case BinaryKind::Pow: r = std::pow(x, y); break;
        default: throw EvalError(fmt::format("`{}` of float tensors", sema::name(op)));
      }
      out.f[flat] = roundTo(dt, r);
    });
  } else {
    int bits = dt == Scalar::I32 ? 32 : 64;
    uint64_t mask = bits == 32 ? 0xFFFFFFFFull : ~0ull;
    walk.run([&](int64_t flat, const int64_t* off) {
      int64_t x = a.i[off[0]], y = b.i[off[1]];
      if (compareOp) {
        out.i[flat] = compare(op, x, y);
        return;
      }
      uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
      int64_t r;
      switch (op) {
        case BinaryKind::Add: r = static_cast<int64_t>(ux + uy); break;
        case BinaryKind::Sub: r = static_cast<int64_t>(ux - uy); break;
        case BinaryKind::Mul: r = static_cast<int64_t>(ux * uy); break;
        case BinaryKind::Div: r = y == 0 ? 0 : (x == INT64_MIN && y == -1) ? x : x / y; break;
        case BinaryKind::Rem: r = y == 0 || y == -1 ? 0 : x % y; break;
        case BinaryKind::BitAnd: r = x & y; break;
        case BinaryKind::BitOr: r = x | y; break;
        case BinaryKind::BitXor: r = x ^ y; break;
        case BinaryKind::Shl: r = y < 0 || y >= bits ? 0 : static_cast<int64_t>((ux << y) & mask); break;
        case BinaryKind::Shr: r = y < 0 || y >= bits ? 0 : static_cast<int64_t>((ux & mask) >> y); break;
        case BinaryKind::Maximum: r = std::max(x, y); break;
        case BinaryKind::Minimum: r = std::min(x, y); break;
        default: throw EvalError(fmt::format("`{}` of integer tensors", sema::name(op)));
      }
      out.i[flat] = wrapTo(dt, r);
    });
  }
  return out;
}

Tensor broadcastTo(const Tensor& x, const std::vector<int64_t>& shape) {
  if (x.shape == shape) return x;
  Tensor out = Tensor::zeros(x.dtype, shape);
  out.weak = x.weak;
  Walker(shape, {&x.shape}).run([&](int64_t flat, const int64_t* off) {
    if (x.isFloat()) out.f[flat] = x.f[off[0]];
    else out.i[flat] = x.i[off[0]];
  });
  return out;
}

Tensor select(const Tensor& c, const Tensor& a0, const Tensor& b0) {
  bool weak = false;
  Scalar dt = joinDType(a0, b0, weak);
  Tensor a = a0.dtype == dt ? a0 : cast(a0, dt);
  Tensor b = b0.dtype == dt ? b0 : cast(b0, dt);
  std::vector<int64_t> shape = broadcastShapes(c.shape, broadcastShapes(a.shape, b.shape));
  Tensor out = Tensor::zeros(dt, shape);
  out.weak = weak;
  Walker(shape, {&c.shape, &a.shape, &b.shape}).run([&](int64_t flat, const int64_t* off) {
    bool take = c.i[off[0]] != 0;
    if (out.isFloat()) out.f[flat] = take ? a.f[off[1]] : b.f[off[2]];
    else out.i[flat] = take ? a.i[off[1]] : b.i[off[2]];
  });
  return out;
}

Tensor reshape(const Tensor& x, std::vector<int64_t> shape) {
  Tensor out = x;
  out.shape = std::move(shape);
  if (out.size() != x.size()) throw EvalError("reshape changes the element count");
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& perm) {
  std::vector<int64_t> shape(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) shape[k] = x.shape[perm[k]];
  Tensor out = Tensor::zeros(x.dtype, shape);
  std::vector<int64_t> src(perm.size());
  forEach(shape, [&](const std::vector<int64_t>& coord, int64_t flat) {
    for (size_t k = 0; k < perm.size(); ++k) src[perm[k]] = coord[k];
    int64_t s = 0;
    for (size_t k = 0; k < src.size(); ++k) s = s * x.shape[k] + src[k];
    if (x.isFloat()) out.f[flat] = x.f[s];
    else out.i[flat] = x.i[s];
  });
  return out;
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  std::vector<int64_t> shape = xs[0].shape;
  shape[axis] = 0;
  for (const Tensor& x : xs) shape[axis] += x.shape[axis];
  Tensor out = Tensor::zeros(xs[0].dtype, shape);
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= shape[k];
  for (size_t k = axis + 1; k < shape.size(); ++k) inner *= shape[k];
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& x0 : xs) {
      Tensor x = x0.dtype == out.dtype ? x0 : cast(x0, out.dtype);
      int64_t chunk = x.shape[axis] * inner;
      for (int64_t k = 0; k < chunk; ++k, ++at) {
        if (out.isFloat()) out.f[at] = x.f[o * chunk + k];
        else out.i[at] = x.i[o * chunk + k];
      }
    }
  }
  return out;
}

Tensor iota(Scalar dtype, int64_t n) {
  Tensor out = Tensor::zeros(dtype, {n});
  for (int64_t k = 0; k < n; ++k) {
    if (out.isFloat()) out.f[k] = roundTo(dtype, static_cast<double>(k));
    else out.i[k] = wrapTo(dtype, k);
  }
  return out;
}

Tensor fill(Scalar dtype, std::vector<int64_t> shape, const Tensor& value) {
  Tensor v = cast(value, dtype);
  Tensor out = Tensor::zeros(dtype, std::move(shape));
  if (out.isFloat()) std::fill(out.f.begin(), out.f.end(), v.f[0]);
  else std::fill(out.i.begin(), out.i.end(), v.i[0]);
  return out;
}

Tensor reduceAxis(ReduceKind op, const Tensor& x, int axis, bool keepdims) {
  switch (op) {
    case ReduceKind::Sum: case ReduceKind::Mean: case ReduceKind::Max: case ReduceKind::Min:
    case ReduceKind::IndexOfMax: break;
    case ReduceKind::Prod: case ReduceKind::All: case ReduceKind::Any:
      throw EvalError(fmt::format("`{}` over an axis", sema::name(op)));
  }
  bool isMax = op == ReduceKind::Max, isMin = op == ReduceKind::Min;
  bool argmax = op == ReduceKind::IndexOfMax;
  std::vector<int64_t> shape = x.shape;
  int64_t n = shape[axis];
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= shape[k];
  for (size_t k = axis + 1; k < shape.size(); ++k) inner *= shape[k];
  if (keepdims) shape[axis] = 1;
  else shape.erase(shape.begin() + axis);
  Scalar dt = argmax ? Scalar::I32 : x.dtype;
  Tensor out = Tensor::zeros(dt, shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      double acc = isMax ? -INFINITY : isMin ? INFINITY : 0.0;
      int64_t iacc = isMax ? lowestInt(x.dtype) : isMin ? highestInt(x.dtype) : 0;
      int64_t best = 0;
      double bestV = -INFINITY;
      for (int64_t k = 0; k < n; ++k) {
        int64_t at = (o * n + k) * inner + in;
        double v = x.asDouble(at);
        if (argmax) {
          if (k == 0 || v > bestV || (std::isnan(v) && !std::isnan(bestV))) bestV = v, best = k;
        } else if (x.isFloat()) {
          acc = isMax ? std::max(acc, v) : isMin ? std::min(acc, v) : acc + v;
        } else {
          int64_t w = x.i[at];
          iacc = isMax ? std::max(iacc, w) : isMin ? std::min(iacc, w)
                                           : static_cast<int64_t>(static_cast<uint64_t>(iacc) + static_cast<uint64_t>(w));
        }
      }
      int64_t dst = o * inner + in;
      if (argmax) out.i[dst] = best;
      else if (x.isFloat()) out.f[dst] = roundTo(dt, op == ReduceKind::Mean ? acc / static_cast<double>(n) : acc);
      else out.i[dst] = wrapTo(dt, iacc);
    }
  }
  return out;
}

Tensor reduceLeading(ReduceKind op, const Tensor& x, int count) {
  Tensor flat = x;
  int64_t lead = 1;
  for (int k = 0; k < count; ++k) lead *= x.shape[k];
  std::vector<int64_t> rest(x.shape.begin() + count, x.shape.end());
  std::vector<int64_t> shape = {lead};
  shape.insert(shape.end(), rest.begin(), rest.end());
  flat.shape = shape;
  // all and any over bools are min and max.
  ReduceKind base = op == ReduceKind::All ? ReduceKind::Min : op == ReduceKind::Any ? ReduceKind::Max : op;
  if (lead == 0) {  // an empty range: the identity of the reduction
    Tensor out = Tensor::zeros(x.dtype, rest);
    for (int64_t k = 0; k < out.size(); ++k) {
      bool isMax = base == ReduceKind::Max, isMin = base == ReduceKind::Min;
      if (out.isFloat()) out.f[k] = isMax ? -INFINITY : isMin ? INFINITY : base == ReduceKind::Prod ? 1.0 : 0.0;
      else out.i[k] = op == ReduceKind::All ? 1 : op == ReduceKind::Any ? 0 : isMax ? lowestInt(out.dtype)
                      : isMin ? highestInt(out.dtype) : base == ReduceKind::Prod ? 1 : 0;
    }
    return out;
  }
  if (base == ReduceKind::Prod) {
    Tensor out = Tensor::zeros(x.dtype, rest);
    int64_t inner = out.size();
    for (int64_t k = 0; k < inner; ++k) {
      if (out.isFloat()) {
        double p = 1.0;
        for (int64_t l = 0; l < lead; ++l) p *= x.f[l * inner + k];
        out.f[k] = roundTo(out.dtype, p);
      } else {  // integers wrap (two's complement), as every integer operation does
        uint64_t p = 1;
        for (int64_t l = 0; l < lead; ++l) p *= static_cast<uint64_t>(x.i[l * inner + k]);
        out.i[k] = wrapTo(out.dtype, static_cast<int64_t>(p));
      }
    }
    return out;
  }
  // A sum over bf16/f16 accumulates in f32 and rounds once.
  return reduceAxis(base, flat, 0, false);
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  const auto& p = a.shape;
  const auto& q = b.shape;
  int64_t K = p.back();
  int64_t N = q.back();
  if (q.size() == 2) {
    std::vector<int64_t> shape(p.begin(), p.end() - 1);
    shape.push_back(N);
    Tensor out = Tensor::zeros(a.dtype, shape);
    int64_t rows = 1;  // not a.size() / K: K may be 0
    for (size_t d = 0; d + 1 < p.size(); ++d) rows *= p[d];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += a.f[r * K + k] * b.f[k * N + n];
        out.f[r * N + n] = roundTo(a.dtype, acc);
      }
    return out;
  }
  int64_t M = p.size() >= 2 ? p[p.size() - 2] : 1;
  std::vector<int64_t> batchA(p.begin(), p.end() - std::min<size_t>(2, p.size()));
  if (p.size() < 2) batchA.clear();
  std::vector<int64_t> batchB(q.begin(), q.end() - 2);
  std::vector<int64_t> batch = broadcastShapes(batchA, batchB);
  std::vector<int64_t> shape = batch;
  shape.push_back(M);
  shape.push_back(N);
  Tensor out = Tensor::zeros(a.dtype, shape);
  forEach(batch, [&](const std::vector<int64_t>& coord, int64_t flat) {
    int64_t ia = broadcastIndex(batchA, batch, coord);
    int64_t ib = broadcastIndex(batchB, batch, coord);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += a.f[(ia * M + m) * K + k] * b.f[(ib * K + k) * N + n];
        out.f[(flat * M + m) * N + n] = roundTo(a.dtype, acc);
      }
  });
  return out;
}

Tensor matmulTransposed(const Tensor& a, const Tensor& w) {
  int64_t K = a.shape.back();
  int64_t N = w.shape[0];
  std::vector<int64_t> shape(a.shape.begin(), a.shape.end() - 1);
  shape.push_back(N);
  Tensor out = Tensor::zeros(a.dtype, shape);
  int64_t rows = K == 0 ? 0 : a.size() / K;
  for (int64_t r = 0; r < rows; ++r) {
    const double* x = a.f.data() + r * K;
    for (int64_t n = 0; n < N; ++n) {
      const double* y = w.f.data() + n * K;
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += x[k] * y[k];
      out.f[r * N + n] = roundTo(a.dtype, acc);
    }
  }
  return out;
}

Tensor gather(const Tensor& table, const Tensor& indices) {
  int64_t rows = table.shape[0];
  int64_t inner = rows == 0 ? 0 : table.size() / rows;
  std::vector<int64_t> shape = indices.shape;
  shape.insert(shape.end(), table.shape.begin() + 1, table.shape.end());
  Tensor out = Tensor::zeros(table.dtype, shape);
  for (int64_t k = 0; k < indices.size(); ++k) {
    int64_t r = std::clamp<int64_t>(indices.i[k], 0, std::max<int64_t>(rows - 1, 0));
    for (int64_t j = 0; j < inner; ++j) {
      if (out.isFloat()) out.f[k * inner + j] = table.f[r * inner + j];
      else out.i[k * inner + j] = table.i[r * inner + j];
    }
  }
  return out;
}

Tensor scatterRows(const Tensor& indices, const Tensor& rows, const std::vector<int64_t>& shape) {
  Tensor out = Tensor::zeros(rows.dtype, shape);
  const int64_t v = shape.at(0), inner = v == 0 ? 0 : out.size() / v;
  for (int64_t k = 0; k < indices.size() && v > 0; ++k) {
    const int64_t r = std::clamp<int64_t>(indices.i[k], 0, v - 1);
    for (int64_t j = 0; j < inner; ++j) out.f[r * inner + j] += rows.f[k * inner + j];
  }
  for (double& x : out.f) x = roundTo(out.dtype, x);
  return out;
}

Tensor advancedIndex(const Tensor& x, const std::vector<Tensor>& idx) {
  std::vector<int64_t> shape;
  for (const Tensor& t : idx) shape = broadcastShapes(shape, t.shape);
  Tensor out = Tensor::zeros(x.dtype, shape);
  std::vector<const std::vector<int64_t>*> shapes;
  for (const Tensor& t : idx) shapes.push_back(&t.shape);
  Walker(shape, shapes).run([&](int64_t flat, const int64_t* off) {
    int64_t at = 0;
    for (size_t k = 0; k < idx.size(); ++k) {
      int64_t v = idx[k].asInt(off[k]);
      v = std::clamp<int64_t>(v, 0, std::max<int64_t>(x.shape[k] - 1, 0));
      at = at * x.shape[k] + v;
    }
    if (x.isFloat()) out.f[flat] = x.f[at];
    else out.i[flat] = x.i[at];
  });
  return out;
}

Tensor basicIndex(const Tensor& x, const std::vector<BasicItem>& items) {
  std::vector<int64_t> shape;
  for (const BasicItem& it : items)
    if (it.slice) shape.push_back(it.hi - it.lo);
  Tensor out = Tensor::zeros(x.dtype, shape);
  std::vector<int64_t> src(items.size());
  forEach(shape, [&](const std::vector<int64_t>& coord, int64_t flat) {
    size_t c = 0;
    int64_t at = 0;
    for (size_t k = 0; k < items.size(); ++k) {
      int64_t v = items[k].slice ? items[k].lo + coord[c++] : items[k].index;
      at = at * x.shape[k] + v;
    }
    if (x.isFloat()) out.f[flat] = x.f[at];
    else out.i[flat] = x.i[at];
  });
  return out;
}

Tensor writePoints(const Tensor& dest, const Tensor& x, const Tensor& rows, const Tensor& positions, int axis) {
  Tensor out = dest;
  int64_t points = x.shape[axis], b = dest.shape[0], m = dest.shape[axis];
  // x as [1, outer, points, inner]; dest as [b, outer, m, inner].
  int64_t outer = 1, inner = 1;
  for (int k = 1; k < axis; ++k) outer *= x.shape[k];
  for (size_t k = axis + 1; k < x.shape.size(); ++k) inner *= x.shape[k];
  for (int64_t p = 0; p < points; ++p) {
    int64_t r = rows.asInt(p), s = positions.asInt(p);
    if (r < 0 || r >= b || s < 0 || s >= m) continue;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t from = (o * points + p) * inner + i, to = ((r * outer + o) * m + s) * inner + i;
        if (out.isFloat()) out.f[to] = x.f[from];
        else out.i[to] = x.i[from];
      }
  }
  return out;
}

Tensor writeSlice(const Tensor& dest, const Tensor& x, const Tensor& starts, int axis) {
  Tensor out = dest;
  int64_t m = dest.shape[axis];
  forEach(x.shape, [&](const std::vector<int64_t>& coord, int64_t flat) {
    int64_t start = starts.asInt(starts.rank() == 0 ? 0 : coord[0]);
    // Position coord[axis] of x lands at start + coord[axis], if inside dest.
    if (start < -coord[axis] || start >= m - coord[axis]) return;
    int64_t at = 0;
    for (size_t k = 0; k < coord.size(); ++k)
      at = at * dest.shape[k] + (static_cast<int>(k) == axis ? start + coord[k] : coord[k]);
    if (out.isFloat()) out.f[at] = x.f[flat];
    else out.i[at] = x.i[flat];
  });
  return out;
}

}  // namespace linnet::reference
