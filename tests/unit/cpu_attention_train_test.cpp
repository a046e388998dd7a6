// f32 attention for a training step
// (compiler/targets/cpu/kernels/linnet_attention_train.c) against the
// definition computed in double precision: the forward's output and row
// statistics, and the reverse from the same row statistics:
// causal, packed and arbitrary masks, a row that sees no key, a broadcast
// mask, odd sizes and strided views; the same bits on 1 and 2 threads.
// Each case runs on the build's kernels and on the portable copy.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "compiler/targets/cpu/kernels/linnet_kernels.h"

#ifdef LINNET_KERNELS_TEST_OPENMP
#include <omp.h>
#endif

#ifdef LINNET_KERNELS_TEST_PORTABLE
extern "C" void linnet_portable_mlir_ciface_linnet_kernel_attention_rows_f32(linnet_memref5*, linnet_memref4*,
                                                                             linnet_memref4*, linnet_memref5*,
                                                                             linnet_memref5*, linnet_memref5*,
                                                                             linnet_memref5*, float);
extern "C" void linnet_portable_mlir_ciface_linnet_kernel_attention_grad_f32(
    linnet_memref5*, linnet_memref4*, linnet_memref4*, linnet_memref5*, linnet_memref5*, linnet_memref5*,
    linnet_memref5*, linnet_memref5*, linnet_memref4*, linnet_memref4*, float);
#endif

namespace attention_train_test {

using GradKernel = void (*)(linnet_memref5*, linnet_memref4*, linnet_memref4*, linnet_memref5*, linnet_memref5*,
                            linnet_memref5*, linnet_memref5*, linnet_memref5*, linnet_memref4*, linnet_memref4*,
                            float);

using RowsKernel = void (*)(linnet_memref5*, linnet_memref4*, linnet_memref4*, linnet_memref5*, linnet_memref5*,
                            linnet_memref5*, linnet_memref5*, float);

struct Kernels {
  const char* name;
  RowsKernel rows;
  GradKernel grad;
};

std::vector<Kernels> kernels() {
  std::vector<Kernels> ks = {
      {"native", _mlir_ciface_linnet_kernel_attention_rows_f32, _mlir_ciface_linnet_kernel_attention_grad_f32}};
#ifdef LINNET_KERNELS_TEST_PORTABLE
  ks.push_back({"portable", linnet_portable_mlir_ciface_linnet_kernel_attention_rows_f32,
                linnet_portable_mlir_ciface_linnet_kernel_attention_grad_f32});
#endif
  return ks;
}

// A dense tensor of N axes seen through strides: inner stride `inner`,
// `pad` elements after each row of every outer axis, `offset` before.
template <class T, size_t N>
struct Strided {
  std::vector<T> data;
  std::array<int64_t, N> sizes{}, strides{};
  int64_t offset = 0;
  Strided(const std::array<int64_t, N>& s, T fill, int64_t inner = 1, int64_t pad = 0, int64_t off = 0)
      : sizes(s), offset(off) {
    int64_t stride = inner;
    for (size_t a = N; a-- > 0;) {
      strides[a] = stride;
      stride = stride * sizes[a] + pad;
    }
    data.assign(static_cast<size_t>(off + stride + 1), fill);
  }
  T& at(const std::array<int64_t, N>& i) {
    int64_t p = offset;
    for (size_t a = 0; a < N; ++a) p += i[a] * strides[a];
    return data[static_cast<size_t>(p)];
  }
};

template <class T>
linnet_memref5 ref5(Strided<T, 5>& v) {
  linnet_memref5 m{v.data.data(), v.data.data(), v.offset, {}, {}};
  for (int a = 0; a < 5; ++a) m.sizes[a] = v.sizes[a], m.strides[a] = v.strides[a];
  return m;
}
linnet_memref4 ref4(Strided<float, 4>& v) {
  linnet_memref4 m{v.data.data(), v.data.data(), v.offset, {}, {}};
  for (int a = 0; a < 4; ++a) m.sizes[a] = v.sizes[a], m.strides[a] = v.strides[a];
  return m;
}

using Visible = std::function<bool(int64_t l1, int64_t g, int64_t i, int64_t j)>;

struct Shape {
  int64_t l0, l1, g, q, k, d, e;
};

struct Case {
  Shape s;
  Strided<float, 5> q, dout, max, sum, dq, out;
  Strided<float, 4> k, v, dk, dv;
  Strided<uint8_t, 5> mask;
  float scale;

  Case(const Shape& sh, const Visible& visible, int64_t inner, int64_t pad, bool broadcastHeads, std::mt19937& rng)
      : s(sh),
        q({sh.l0, sh.l1, sh.g, sh.q, sh.d}, NAN, inner, pad, 3),
        dout({sh.l0, sh.l1, sh.g, sh.q, sh.e}, NAN, inner, pad, 1),
        max({sh.l0, sh.l1, sh.g, sh.q, 1}, NAN),
        sum({sh.l0, sh.l1, sh.g, sh.q, 1}, NAN),
        dq({sh.l0, sh.l1, sh.g, sh.q, sh.d}, NAN, inner, pad, 2),
        out({sh.l0, sh.l1, sh.g, sh.q, sh.e}, NAN, inner, pad, 6),
        k({sh.l0, sh.l1, sh.k, sh.d}, NAN, inner, pad, 5),
        v({sh.l0, sh.l1, sh.k, sh.e}, NAN, inner, pad),
        dk({sh.l0, sh.l1, sh.k, sh.d}, NAN, inner, pad, 1),
        dv({sh.l0, sh.l1, sh.k, sh.e}, NAN, inner, pad, 4),
        mask({sh.l0, sh.l1, sh.g, sh.q, sh.k}, 7),
        scale(1.0f / std::sqrt(static_cast<float>(sh.d))) {
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    each({sh.l0, sh.l1, sh.g, sh.q}, [&](int64_t a, int64_t b, int64_t g, int64_t i) {
      for (int64_t c = 0; c < sh.d; ++c) q.at({a, b, g, i, c}) = u(rng);
      for (int64_t c = 0; c < sh.e; ++c) dout.at({a, b, g, i, c}) = u(rng);
      for (int64_t j = 0; j < sh.k; ++j) mask.at({a, b, g, i, j}) = visible(b, g, i, j) ? 1 : 0;
    });
    for (int64_t a = 0; a < sh.l0; ++a)
      for (int64_t b = 0; b < sh.l1; ++b)
        for (int64_t j = 0; j < sh.k; ++j) {
          for (int64_t c = 0; c < sh.d; ++c) k.at({a, b, j, c}) = u(rng);
          for (int64_t c = 0; c < sh.e; ++c) v.at({a, b, j, c}) = u(rng);
        }
    if (broadcastHeads) {  // every head reads head 0's mask rows
      for (int64_t a = 0; a < sh.l0; ++a)
        for (int64_t b = 0; b < sh.l1; ++b)
          for (int64_t g = 0; g < sh.g; ++g)
            for (int64_t i = 0; i < sh.q; ++i)
              for (int64_t j = 0; j < sh.k; ++j) mask.at({a, b, g, i, j}) = mask.at({0, 0, 0, i, j});
      mask.strides[0] = mask.strides[1] = mask.strides[2] = 0;
    }
    statistics();
  }

  static void each(const std::array<int64_t, 4>& n, const std::function<void(int64_t, int64_t, int64_t, int64_t)>& f) {
    for (int64_t a = 0; a < n[0]; ++a)
      for (int64_t b = 0; b < n[1]; ++b)
        for (int64_t g = 0; g < n[2]; ++g)
          for (int64_t i = 0; i < n[3]; ++i) f(a, b, g, i);
  }
  // The forward's scores as the gradient's tape forms them: f32, scaled, masked.
  float score(int64_t a, int64_t b, int64_t g, int64_t i, int64_t j) {
    if (!mask.at({a, b, g, i, j})) return -3.0e38f;
    double dot = 0;
    for (int64_t c = 0; c < s.d; ++c) dot += double(q.at({a, b, g, i, c})) * k.at({a, b, j, c});
    return static_cast<float>(dot) * scale;
  }
  // The row statistics the forward saves: max, and the sum of exp(s - max) over the counted keys.
  void statistics() {
    each({s.l0, s.l1, s.g, s.q}, [&](int64_t a, int64_t b, int64_t g, int64_t i) {
      float m = -3.0e38f;
      for (int64_t j = 0; j < s.k; ++j) m = std::max(m, score(a, b, g, i, j));
      double z = 0;
      for (int64_t j = 0; j < s.k; ++j)
        if (mask.at({a, b, g, i, j}) || m == -3.0e38f) z += std::exp(m == -3.0e38f ? 0.0 : double(score(a, b, g, i, j)) - m);
      max.at({a, b, g, i, 0}) = m;
      sum.at({a, b, g, i, 0}) = static_cast<float>(z);
    });
  }

  // The forward kernel's output and statistics (into max and sum), against
  // the definition in double: ||out - want|| / ||want||, and the largest
  // relative error of max and of sum.
  std::array<double, 3> forwardErrors(RowsKernel kernel) {
    Strided<float, 5> wantMax = max, wantSum = sum;
    linnet_memref5 qm = ref5(q), mm = ref5(mask), om = ref5(out), xm = ref5(max), sm = ref5(sum);
    linnet_memref4 km = ref4(k), vm = ref4(v);
    kernel(&qm, &km, &vm, &mm, &om, &xm, &sm, scale);
    std::array<double, 3> err{};
    double num = 0, den = 0;
    each({s.l0, s.l1, s.g, s.q}, [&](int64_t a, int64_t b, int64_t g, int64_t i) {
      const float mw = wantMax.at({a, b, g, i, 0}), zw = wantSum.at({a, b, g, i, 0});
      err[1] = std::max(err[1], std::abs(double(max.at({a, b, g, i, 0})) - mw) / std::max(1.0, std::abs(double(mw))));
      err[2] = std::max(err[2], std::abs(double(sum.at({a, b, g, i, 0})) - zw) / zw);
      for (int64_t c = 0; c < s.e; ++c) {
        double want = 0;
        for (int64_t j = 0; j < s.k; ++j) {
          const bool none = mw == -3.0e38f, seen = mask.at({a, b, g, i, j});
          const double p = none ? 1.0 : seen ? std::exp(double(score(a, b, g, i, j)) - mw) : 0.0;
          want += p * v.at({a, b, j, c});
        }
        want /= zw;
        num += std::pow(out.at({a, b, g, i, c}) - want, 2);
        den += want * want;
      }
    });
    err[0] = std::sqrt(num / den);
    return err;
  }

  void run(GradKernel kernel) {
    linnet_memref5 qm = ref5(q), mm = ref5(mask), xm = ref5(max), sm = ref5(sum), om = ref5(dout), dqm = ref5(dq);
    linnet_memref4 km = ref4(k), vm = ref4(v), dkm = ref4(dk), dvm = ref4(dv);
    kernel(&qm, &km, &vm, &mm, &xm, &sm, &om, &dqm, &dkm, &dvm, scale);
  }

  // ||got - want|| / ||want|| of dq, dk and dv against the definition in double.
  std::array<double, 3> errors() {
    std::vector<double> rq, rk(size_t(s.l0 * s.l1 * s.k * s.d)), rv(size_t(s.l0 * s.l1 * s.k * s.e));
    std::vector<double> p(size_t(s.k)), dp(size_t(s.k));
    each({s.l0, s.l1, s.g, s.q}, [&](int64_t a, int64_t b, int64_t g, int64_t i) {
      const double m = max.at({a, b, g, i, 0}), z = sum.at({a, b, g, i, 0});
      const bool none = m == -3.0e38f;
      double rowDot = 0;
      for (int64_t j = 0; j < s.k; ++j) {
        const bool seen = mask.at({a, b, g, i, j});
        p[size_t(j)] = none ? 1.0 / z : seen ? std::exp(double(score(a, b, g, i, j)) - m) / z : 0.0;
        double t = 0;
        for (int64_t c = 0; c < s.e; ++c) t += double(dout.at({a, b, g, i, c})) * v.at({a, b, j, c});
        dp[size_t(j)] = t;
        rowDot += t * p[size_t(j)];
      }
      std::vector<double> row(size_t(s.d), 0.0);
      for (int64_t j = 0; j < s.k; ++j) {
        const double ds = mask.at({a, b, g, i, j}) ? p[size_t(j)] * (dp[size_t(j)] - rowDot) * scale : 0.0;
        const size_t kj = size_t(((a * s.l1 + b) * s.k + j));
        for (int64_t c = 0; c < s.d; ++c) {
          row[size_t(c)] += ds * k.at({a, b, j, c});
          rk[kj * size_t(s.d) + size_t(c)] += ds * q.at({a, b, g, i, c});
        }
        for (int64_t c = 0; c < s.e; ++c) rv[kj * size_t(s.e) + size_t(c)] += p[size_t(j)] * dout.at({a, b, g, i, c});
      }
      rq.insert(rq.end(), row.begin(), row.end());
    });
    std::array<double, 3> num{}, den{};
    size_t n = 0;
    each({s.l0, s.l1, s.g, s.q}, [&](int64_t a, int64_t b, int64_t g, int64_t i) {
      for (int64_t c = 0; c < s.d; ++c, ++n) {
        num[0] += std::pow(dq.at({a, b, g, i, c}) - rq[n], 2);
        den[0] += rq[n] * rq[n];
      }
    });
    for (int64_t a = 0; a < s.l0; ++a)
      for (int64_t b = 0; b < s.l1; ++b)
        for (int64_t j = 0; j < s.k; ++j) {
          const size_t kj = size_t(((a * s.l1 + b) * s.k + j));
          for (int64_t c = 0; c < s.d; ++c) {
            num[1] += std::pow(dk.at({a, b, j, c}) - rk[kj * size_t(s.d) + size_t(c)], 2);
            den[1] += std::pow(rk[kj * size_t(s.d) + size_t(c)], 2);
          }
          for (int64_t c = 0; c < s.e; ++c) {
            num[2] += std::pow(dv.at({a, b, j, c}) - rv[kj * size_t(s.e) + size_t(c)], 2);
            den[2] += std::pow(rv[kj * size_t(s.e) + size_t(c)], 2);
          }
        }
    std::array<double, 3> err{};
    for (int t = 0; t < 3; ++t) err[size_t(t)] = den[size_t(t)] > 0 ? std::sqrt(num[size_t(t)] / den[size_t(t)]) : std::sqrt(num[size_t(t)]);
    return err;
  }
};

void check(const Shape& s, const Visible& visible, int64_t inner = 1, int64_t pad = 0, bool broadcast = false) {
  for (const Kernels& ks : kernels()) {
    const char* name = ks.name;
    std::mt19937 rng(17);
    Case c(s, visible, inner, pad, broadcast, rng);
    {
      Case f(s, visible, inner, pad, broadcast, rng);
      const auto err = f.forwardErrors(ks.rows);
      INFO(name << " forward: out " << err[0] << " max " << err[1] << " sum " << err[2]);
      CHECK(err[0] < 1e-5);
      CHECK(err[1] < 1e-5);
      CHECK(err[2] < 1e-5);
    }
    c.run(ks.grad);
    const auto err = c.errors();
    INFO(name << ": L " << s.l0 << "x" << s.l1 << " G " << s.g << " Q " << s.q << " K " << s.k << " D " << s.d
              << " E " << s.e << " inner " << inner << " pad " << pad << ": dq " << err[0] << " dk " << err[1]
              << " dv " << err[2]);
    CHECK(err[0] < 1e-5);
    CHECK(err[1] < 1e-5);
    CHECK(err[2] < 1e-5);
  }
}

const Visible kCausal = [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i; };

// The cases stay inside the namespace: the sanitizer build compiles unit
// tests as one unity source, where other files have a `Kernels` of their own.

TEST_CASE("attention rows and grad: causal, packed segments and odd sizes", "[cpu_kernels][attention_grad]") {
  check({1, 2, 3, 40, 40, 64, 64}, kCausal);
  check({2, 1, 2, 17, 17, 5, 33}, kCausal);
  check({1, 1, 1, 1, 1, 3, 2}, kCausal);
  // Two prompts packed end to end: each sees its own earlier tokens only.
  const Visible packed = [](int64_t, int64_t, int64_t i, int64_t j) { return j <= i && (i < 13) == (j < 13); };
  check({1, 3, 3, 37, 37, 16, 16}, packed);
}

TEST_CASE("attention rows and grad: arbitrary masks and a row that sees no key", "[cpu_kernels][attention_grad]") {
  const Visible holes = [](int64_t b, int64_t g, int64_t i, int64_t j) { return ((i * 7 + j * 3 + g + b) % 5) != 0; };
  check({1, 2, 2, 21, 29, 8, 12}, holes);
  const Visible blind = [](int64_t, int64_t g, int64_t i, int64_t j) { return i != 4 && (g == 1 || j <= i); };
  check({1, 1, 2, 19, 19, 16, 16}, blind);
}

TEST_CASE("attention rows and grad: strided views and a mask broadcast over heads", "[cpu_kernels][attention_grad]") {
  check({1, 2, 3, 23, 23, 16, 8}, kCausal, /*inner=*/2, /*pad=*/3);
  check({2, 1, 4, 18, 18, 32, 32}, kCausal, 1, 0, /*broadcast=*/true);
}

TEST_CASE("attention grad: empty sizes write zeros", "[cpu_kernels][attention_grad]") {
  for (const Kernels& ks : kernels()) {
    const char* name = ks.name;
    const GradKernel kernel = ks.grad;
    std::mt19937 rng(3);
    Case c({1, 1, 2, 4, 0, 8, 8}, kCausal, 1, 0, false, rng);
    c.run(kernel);
    INFO(name);
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t d = 0; d < 8; ++d) CHECK(c.dq.at({0, 0, 1, i, d}) == 0.0f);
    Case none({1, 1, 2, 0, 5, 8, 8}, kCausal, 1, 0, false, rng);
    none.run(kernel);
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t d = 0; d < 8; ++d) CHECK((none.dk.at({0, 0, j, d}) == 0.0f && none.dv.at({0, 0, j, d}) == 0.0f));
  }
}

#ifdef LINNET_KERNELS_TEST_OPENMP
TEST_CASE("attention rows and grad: the same bits on 1 and 2 threads", "[cpu_kernels][attention_grad]") {
  for (const Kernels& ks : kernels()) {
    const char* name = ks.name;
    std::mt19937 rng(5);
    Case c({1, 3, 3, 150, 150, 64, 64}, kCausal, 1, 0, false, rng);
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
    c.forwardErrors(ks.rows);
    c.run(ks.grad);
    const auto dq = c.dq.data, dk = c.dk.data, dv = c.dv.data, out = c.out.data, max = c.max.data;
    omp_set_num_threads(2);
    c.forwardErrors(ks.rows);
    c.run(ks.grad);
    omp_set_num_threads(before);
    CHECK(std::memcmp(out.data(), c.out.data.data(), out.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(max.data(), c.max.data.data(), max.size() * sizeof(float)) == 0);
    INFO(name);
    CHECK(std::memcmp(dq.data(), c.dq.data.data(), dq.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(dk.data(), c.dk.data.data(), dk.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(dv.data(), c.dv.data.data(), dv.size() * sizeof(float)) == 0);
  }
}
#endif

}  // namespace attention_train_test
