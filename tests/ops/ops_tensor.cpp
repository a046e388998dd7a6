#include "ops_tensor.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace linnet::ops {

int64_t Values::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool Values::isFloat() const { return dtype == Scalar::F32 || dtype == Scalar::BF16 || dtype == Scalar::F16; }

namespace {

struct Format {
  int precision;  // significand bits, the implicit one included
  int emin;       // exponent of the smallest normal
  int emax;       // exponent of the largest finite
};

Format formatOf(Scalar dtype) {
  switch (dtype) {
    case Scalar::BF16: return {8, -126, 127};
    case Scalar::F16: return {11, -14, 15};
    default: return {24, -126, 127};
  }
}

// Round to nearest, ties to even, into a binary format, from a double.
double roundToFormat(double v, Format fm) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  double a = std::fabs(v);
  int exp;
  std::frexp(a, &exp);  // a = m * 2^exp, m in [0.5, 1)
  int e = std::max(exp - 1, fm.emin);
  double quantum = std::ldexp(1.0, e - (fm.precision - 1));
  double r = std::nearbyint(a / quantum) * quantum;  // a / quantum is exact: a power of two
  double largest = std::ldexp(2.0 - std::ldexp(1.0, 1 - fm.precision), fm.emax);
  if (r > largest) r = INFINITY;
  return std::copysign(r, v);
}

}  // namespace

double roundTo(Scalar dtype, double v) {
  switch (dtype) {
    case Scalar::F32: return static_cast<double>(static_cast<float>(v));
    case Scalar::BF16: case Scalar::F16: return roundToFormat(v, formatOf(dtype));
    default: return v;
  }
}

int64_t wrapTo(Scalar dtype, int64_t v) {
  switch (dtype) {
    case Scalar::I32: return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
    case Scalar::Bool: return v != 0;
    default: return v;
  }
}

double ulpOf(Scalar dtype, double m) {
  Format fm = formatOf(dtype);
  m = std::max(std::fabs(m), std::ldexp(1.0, fm.emin));
  int exp;
  std::frexp(m, &exp);
  return std::ldexp(1.0, exp - 1 - (fm.precision - 1));
}

Values zeros(Scalar dtype, std::vector<int64_t> shape) {
  Values v;
  v.dtype = dtype;
  v.shape = std::move(shape);
  if (v.isFloat()) v.f.assign(v.size(), 0.0);
  else v.i.assign(v.size(), 0);
  return v;
}

Values floats(Scalar dtype, std::vector<int64_t> shape, const std::vector<double>& x) {
  Values v = zeros(dtype, std::move(shape));
  for (int64_t k = 0; k < v.size(); ++k) {
    double d = x[k % x.size()];
    if (v.isFloat()) v.f[k] = roundTo(dtype, d);
    else v.i[k] = wrapTo(dtype, static_cast<int64_t>(d));
  }
  return v;
}

Values ints(Scalar dtype, std::vector<int64_t> shape, const std::vector<int64_t>& x) {
  Values v = zeros(dtype, std::move(shape));
  for (int64_t k = 0; k < v.size(); ++k) {
    int64_t d = x[k % x.size()];
    if (v.isFloat()) v.f[k] = roundTo(dtype, static_cast<double>(d));
    else v.i[k] = wrapTo(dtype, d);
  }
  return v;
}

// ---- the two conversions to adapt when nest::Tensor changes.
// Values are exactly representable in their dtype, so the conversions are exact.
nest::Tensor toTensor(const Values& v) {
  return v.isFloat() ? nest::Tensor::fromFloats(v.dtype, v.shape, v.f) : nest::Tensor::fromInts(v.dtype, v.shape, v.i);
}

Values fromTensor(const nest::Tensor& t) {
  Values v;
  v.dtype = t.dtype;
  v.shape = t.shape;
  if (v.isFloat()) v.f = t.toFloats();
  else v.i = t.toInts();
  return v;
}
// ----

std::vector<nest::Tensor> toTensors(const std::vector<Values>& v) {
  std::vector<nest::Tensor> out;
  for (const Values& x : v) out.push_back(toTensor(x));
  return out;
}

std::string typeName(const Values& v) {
  const char* dt = v.dtype == Scalar::F32 ? "f32" : v.dtype == Scalar::BF16 ? "bf16" : v.dtype == Scalar::F16 ? "f16"
                   : v.dtype == Scalar::I32 ? "i32" : v.dtype == Scalar::I64 ? "i64" : "bool";
  if (v.shape.empty()) return dt;
  return fmt::format("Tensor[{}; {}]", fmt::join(v.shape, ", "), dt);
}

namespace {

std::string element(const Values& v, int64_t k) {
  if (v.dtype == Scalar::Bool) return v.i[k] ? "true" : "false";
  if (!v.isFloat()) return std::to_string(v.i[k]);
  double x = v.f[k];
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return fmt::format("{}", x);  // shortest round-trip form
}

}  // namespace

std::string format(const Values& v, size_t limit) {
  std::vector<std::string> items;
  for (int64_t k = 0; k < v.size() && items.size() < limit; ++k) items.push_back(element(v, k));
  if (static_cast<size_t>(v.size()) > limit) items.push_back(fmt::format("... ({} in all)", v.size()));
  return fmt::format("{} [{}]", typeName(v), fmt::join(items, ", "));
}

std::string compare(const Values& want, const Values& got, const Tolerance& tol) {
  if (want.dtype != got.dtype || want.shape != got.shape)
    return fmt::format("expected {}, got {}", typeName(want), typeName(got));
  std::vector<std::string> bad;
  int64_t count = 0;
  for (int64_t k = 0; k < want.size(); ++k) {
    bool ok;
    std::string allowed;
    if (!want.isFloat()) {
      ok = want.i[k] == got.i[k];
    } else {
      double w = want.f[k], g = got.f[k];
      if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g)) ok = w == g;
      else {
        double limit = tol.ulps * ulpOf(want.dtype, std::max(std::fabs(w), tol.floor));
        ok = std::fabs(w - g) <= limit;
        if (tol.ulps > 0) allowed = fmt::format(" (off by {:.3g} ulp; {} allowed)",
                                                std::fabs(w - g) / ulpOf(want.dtype, std::max(std::fabs(w), tol.floor)),
                                                tol.ulps);
      }
    }
    if (!ok) {
      ++count;
      if (bad.size() < 6) bad.push_back(fmt::format("[{}] expected {}, got {}{}", k, element(want, k), element(got, k), allowed));
    }
  }
  if (bad.empty()) return "";
  return fmt::format("{} of {} elements differ: {}", count, want.size(), fmt::join(bad, "; "));
}

}  // namespace linnet::ops
