#!/usr/bin/env python3
"""Where the coefficients of the CPU target's inline tanh come from
(compiler/targets/cpu/approximate_math.cpp, kTanhOddTerms): tanh(x) =
x + x^3 P(x^2) for |x| < 0.625, P of degree 5, fitted by least squares in
relative error on Chebyshev nodes of t = x^2 (close to minimax). Prints the
coefficients as f32 values, lowest first, and the largest error of that
form evaluated in f32 with fused multiply-adds (emulated in float64, one
rounding per step) over 3M points, in ulps of the correctly rounded result.
Needs numpy (.cache/torch-venv has it):
  .cache/torch-venv/bin/python tests/ops/fit_tanh_polynomial.py"""
import numpy as np

BOUND, DEGREE = 0.625, 5


def fit():
    n = 4000
    k = np.arange(n)
    t = (BOUND * BOUND) / 2 * (1 - np.cos(np.pi * (k + 0.5) / n))
    x = np.sqrt(t)
    target = (np.tanh(x) - x) / x**3
    a = np.vstack([t**j for j in range(DEGREE + 1)]).T
    w = np.maximum(t, 1e-12)  # an error d in P is t*d relative to tanh
    c, *_ = np.linalg.lstsq(a * w[:, None], target * w, rcond=None)
    return [float(np.float32(v)) for v in c]


def in_f32(x, c):
    x = x.astype(np.float32)
    t = (x * x).astype(np.float32)
    p = np.float32(c[-1])
    for cc in c[-2::-1]:
        p = (np.float64(p) * t + np.float64(np.float32(cc))).astype(np.float32)  # fma: one rounding
    xt = (x * t).astype(np.float32)
    return (np.float64(xt) * p + np.float64(x)).astype(np.float32)


def main():
    c = fit()
    r = np.random.default_rng(1)
    xs = np.concatenate([r.uniform(0, BOUND, 2_000_000),
                         np.exp(r.uniform(np.log(1e-8), np.log(BOUND), 1_000_000))]).astype(np.float32)
    exact = np.tanh(xs.astype(np.float64))
    ulps = np.abs(in_f32(xs, c) - exact) / np.spacing(exact.astype(np.float32)).astype(np.float64)
    print("coefficients, lowest first:", ", ".join(repr(v) for v in c))
    print(f"largest error below {BOUND}: {ulps.max():.2f} ulps")


if __name__ == "__main__":
    main()
