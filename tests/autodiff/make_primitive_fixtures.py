"""Writes tests/data/autodiff/primitives/: torch autograd's gradient of one
small Linnet entry per differentiable primitive and operator, for
tests/autodiff/primitive_torch_test.cpp (ctest `autodiff_primitives_torch`).

    .cache/torch-venv/bin/python tests/autodiff/make_primitive_fixtures.py

Each case is a Linnet entry (written into the package
tests/data/autodiff/primitives/, block `Ops`) and the same function written
with torch ops. Inputs are seeded and multiples of 2^-10 (exact in f32, so
it does not matter whether an argument is rounded to its dtype; short in
JSON); the gradient is of sum(value * cotangent) for a seeded cotangent, or
of the value itself when it has one element (the entry's gradient then
takes no cotangent). Everything is float64: the test runs the entry on the
reference backend with WideFloats (f32 evaluated in float64, never rounded).

Where the language picks among torch's choices, the torch side follows the
language (docs/language.md §7-§11): a run-time index is clamped,
`max`/`min` along an axis are torch's amax/amin (ties share the cotangent),
`attention` is its definition written out. Float casts are the identity in
float64 (WideFloats does not round to bf16), so the torch side of a cast
between float dtypes is the identity.

Not differentiable, so no case: `prod` and `%` (the compiler refuses their
gradient; `%` takes integers only), `write_slice`, `write_points` (refused),
`index_of_max`, `all`, `any`, `shard_index` (integer or bool results).

Writes cases.json (every case's inputs, cotangent, torch's value and
gradients), src/lib.linnet (the entries), linnet.toml and nest.toml.
"""
import json
import os
import zlib

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "autodiff", "primitives")
MASKED = -3.0e38  # what `attention` gives a masked score (docs/language.md §11)

torch.set_default_dtype(torch.float64)


class Input:
    """One argument: its name, Linnet dtype, shape and values (a list, or a
    (lo, hi) range drawn from the case's generator)."""

    def __init__(self, name, dtype, shape, values):
        self.name, self.dtype, self.shape, self.values = name, dtype, list(shape), values

    def linnet_type(self):
        if not self.shape:
            return self.dtype
        return "Tensor[{}; {}]".format(", ".join(map(str, self.shape)), self.dtype)

    def draw(self, rng):
        n = int(np.prod(self.shape)) if self.shape else 1
        if isinstance(self.values, tuple):
            lo, hi = self.values
            v = np.round(rng.uniform(lo, hi, n) * 1024) / 1024
        else:
            v = np.asarray(self.values, dtype=np.float64).reshape(-1)
            assert v.size == n, (self.name, v.size, n)
        return v

    def torch_value(self, flat):
        if self.dtype in ("f32", "bf16", "f16"):
            return torch.tensor(flat, dtype=torch.float64).reshape(self.shape).requires_grad_()
        if self.dtype == "bool":
            return torch.tensor(flat != 0).reshape(self.shape)
        return torch.tensor(flat.astype(np.int64)).reshape(self.shape)

    def is_float(self):
        return self.dtype in ("f32", "bf16", "f16")


CASES = []


def case(name, covers, inputs, result, body, fn, tweak=None):
    """`covers`: the keys of the primitives, operators and forms the case
    exercises (the test's list of expected keys); `fn` computes the value
    from torch tensors; `tweak(values)` may overwrite drawn values (ties,
    zeros) before they are used."""
    CASES.append(dict(name=name, covers=covers, inputs=inputs, result=result, body=body, fn=fn, tweak=tweak))


def f32(name, shape, values=(-2.0, 2.0)):
    return Input(name, "f32", shape, values)


def ints(name, dtype, shape, values):
    return Input(name, dtype, shape, values)


POSITIVE = (0.25, 3.0)

# ---- Elementwise math primitives (x: [2, 3]) ----
UNARY = {
    "exp": (torch.exp, (-2.0, 2.0)),
    "log": (torch.log, POSITIVE),
    "sin": (torch.sin, (-3.0, 3.0)),
    "cos": (torch.cos, (-3.0, 3.0)),
    "tanh": (torch.tanh, (-2.0, 2.0)),
    "sqrt": (torch.sqrt, POSITIVE),
    "rsqrt": (torch.rsqrt, POSITIVE),
    "sigmoid": (torch.sigmoid, (-3.0, 3.0)),
    "erf": (torch.erf, (-2.0, 2.0)),
}
for op, (fn, rng) in UNARY.items():
    case(f"unary_{op}", [op], [f32("x", [2, 3], rng)], "Tensor[2, 3; f32]", f"return {op}(x)", fn)


def zeros_at(name, *flat):
    def tweak(v):
        for k in flat:
            v[name][k] = 0.0
    return tweak


# abs at 0: torch's derivative there is sign(0) = 0, the compiler's too.
case("unary_abs", ["abs"], [f32("x", [2, 3])], "Tensor[2, 3; f32]", "return abs(x)", torch.abs,
     tweak=zeros_at("x", 1, 4))
# floor's derivative is 0: only the other factor's cotangent reaches x.
case("unary_floor", ["floor", "*"], [f32("x", [2, 3], (-3.0, 3.0))], "Tensor[2, 3; f32]",
     "return floor(x) * x", lambda x: torch.floor(x) * x)
case("unary_chain", ["exp", "sin", "tanh", "*"], [f32("x", [2, 3])], "Tensor[2, 3; f32]",
     "return exp(sin(x)) * tanh(x)", lambda x: torch.exp(torch.sin(x)) * torch.tanh(x))

# ---- Operators ----
case("op_neg", ["unary -"], [f32("x", [2, 3])], "Tensor[2, 3; f32]", "return -x", lambda x: -x)
for op, spelled, fn in [("add", "+", torch.add), ("sub", "-", torch.sub), ("mul", "*", torch.mul)]:
    case(f"op_{op}", [spelled], [f32("a", [2, 3]), f32("b", [2, 3])], "Tensor[2, 3; f32]",
         f"return a {spelled} b", fn)
DIVISOR = (0.5, 2.0)
case("op_div", ["/"], [f32("a", [2, 3]), f32("b", [2, 3], DIVISOR)], "Tensor[2, 3; f32]", "return a / b",
     torch.div)
# The same operand on both sides: its two cotangents add.
case("op_square", ["*"], [f32("x", [2, 3])], "Tensor[2, 3; f32]", "return x * x - x", lambda x: x * x - x)
case("op_literals", ["*", "/", "+", "-"], [f32("x", [2, 3], DIVISOR)], "Tensor[2, 3; f32]",
     "return 2.0 * x - 1.5 / x + x / 4.0 - 1.0", lambda x: 2.0 * x - 1.5 / x + x / 4.0 - 1.0)

# ---- Broadcasting in binary operations: the cotangent summed back ----
case("bcast_add_row", ["+", "broadcast"], [f32("a", [3, 4]), f32("b", [4])], "Tensor[3, 4; f32]",
     "return a + b", torch.add)
case("bcast_sub_outer", ["-", "broadcast"], [f32("a", [3, 1]), f32("b", [1, 4])], "Tensor[3, 4; f32]",
     "return a - b", torch.sub)
case("bcast_mul_scalar", ["*", "broadcast"], [f32("x", [3, 4]), f32("s", [])], "Tensor[3, 4; f32]",
     "return x * s", torch.mul)
case("bcast_div_ranks", ["/", "broadcast"], [f32("a", [4]), f32("b", [2, 3, 1], DIVISOR)],
     "Tensor[2, 3, 4; f32]", "return a / b", torch.div)
case("bcast_mul_middle", ["*", "broadcast"], [f32("a", [2, 1, 4]), f32("b", [3, 1])], "Tensor[2, 3, 4; f32]",
     "return a * b", torch.mul)


# ---- maximum / minimum (ties share the cotangent evenly, as torch's) ----
def tie(src, dst, *flat):
    def tweak(v):
        for k in flat:
            v[dst][k] = v[src][k]
    return tweak


case("binary_maximum", ["maximum"], [f32("a", [2, 3]), f32("b", [2, 3])], "Tensor[2, 3; f32]",
     "return maximum(a, b)", torch.maximum, tweak=tie("a", "b", 0, 4))
case("binary_minimum", ["minimum"], [f32("a", [2, 3]), f32("b", [2, 3])], "Tensor[2, 3; f32]",
     "return minimum(a, b)", torch.minimum, tweak=tie("a", "b", 1, 5))
# relu with an exact 0 (a tie with the literal)
case("binary_maximum_literal", ["maximum", "broadcast"], [f32("x", [2, 3])], "Tensor[2, 3; f32]",
     "return maximum(x, 0.0)", lambda x: torch.maximum(x, torch.zeros(())), tweak=zeros_at("x", 2))


def bcast_tie(v):
    v["a"][5] = v["b"][1]  # a[1, 1] = b[1]
    v["a"][2] = v["b"][2]  # a[0, 2] = b[2]


case("binary_minimum_bcast", ["minimum", "broadcast"], [f32("a", [2, 3]), f32("b", [3])], "Tensor[2, 3; f32]",
     "return minimum(a, b)", torch.minimum, tweak=bcast_tie)

# ---- pow (torch's masks where the exponent is 0, and the base 0) ----
case("binary_pow", ["pow"], [f32("a", [2, 3], (0.25, 2.0)), f32("b", [2, 3])], "Tensor[2, 3; f32]",
     "return pow(a, b)", torch.pow)
case("binary_pow_zero_base", ["pow"], [f32("a", [2, 3], [0.0, 0.0, 2.0, 0.5, 0.0, 1.5]),
                                f32("b", [2, 3], [2.0, 0.0, 0.0, 3.0, 1.0, -1.5])],
     "Tensor[2, 3; f32]", "return pow(a, b)", torch.pow)
case("binary_pow_literal_exponent", ["pow", "broadcast"], [f32("x", [2, 3])], "Tensor[2, 3; f32]",
     "return pow(x, 3.0)", lambda x: torch.pow(x, 3.0))
case("binary_pow_literal_base", ["pow", "broadcast"], [f32("x", [2, 3])], "Tensor[2, 3; f32]",
     "return pow(2.0, x)", lambda x: torch.pow(2.0, x))


# ---- Reductions: call form with an axis, and the binder form ----
def row_ties(v):
    # x [3, 4] (drawn in (-2, 2)): row 0's maximum twice (columns 0 and
    # 3), row 2's minimum twice (columns 0 and 2), column 1's maximum twice
    # (rows 1 and 2), column 3's minimum twice (rows 1 and 2).
    x = v["x"]
    x[0], x[3] = 2.5, 2.5
    x[8], x[10] = -2.5, -2.5
    x[5], x[9] = 2.25, 2.25
    x[7], x[11] = -2.25, -2.25


X34 = [f32("x", [3, 4])]
case("sum_axis0", ["sum"], X34, "Tensor[4; f32]", "return sum(x, axis = 0)", lambda x: x.sum(0))
case("sum_keepdims", ["sum"], X34, "Tensor[3, 1; f32]", "return sum(x, axis = -1, keepdims = true)",
     lambda x: x.sum(-1, keepdim=True))
case("mean_axis1", ["mean"], [f32("x", [2, 3, 4])], "Tensor[2, 4; f32]", "return mean(x, axis = 1)",
     lambda x: x.mean(1))
case("mean_keepdims", ["mean", "-", "broadcast"], X34, "Tensor[3, 4; f32]",
     "return x - mean(x, axis = 1, keepdims = true)", lambda x: x - x.mean(1, keepdim=True))
case("max_axis1", ["max"], X34, "Tensor[3; f32]", "return max(x, axis = 1)", lambda x: torch.amax(x, 1),
     tweak=row_ties)
case("max_axis0_keepdims", ["max"], X34, "Tensor[1, 4; f32]", "return max(x, axis = 0, keepdims = true)",
     lambda x: torch.amax(x, 0, keepdim=True), tweak=row_ties)
case("min_axis_neg1", ["min"], X34, "Tensor[3; f32]", "return min(x, axis = -1)", lambda x: torch.amin(x, -1),
     tweak=row_ties)
case("min_axis0", ["min"], X34, "Tensor[4; f32]", "return min(x, axis = 0)", lambda x: torch.amin(x, 0),
     tweak=row_ties)
case("max_axis1_3d_keepdims", ["max"], [f32("x", [2, 3, 4])], "Tensor[2, 1, 4; f32]",
     "return max(x, axis = 1, keepdims = true)", lambda x: torch.amax(x, 1, keepdim=True),
     tweak=lambda v: v["x"].__setitem__([1, 5, 16, 20], 2.5))
case("sum_binder_two_vars", ["sum[]"], [f32("x", [2, 3, 4])], "Tensor[2; f32]",
     "let y[i] = sum[j, k] (x[i, j, k] * x[i, j, k])\n        return y", lambda x: (x * x).sum((1, 2)))
case("max_binder_product", ["max[]", "*", "broadcast"], [f32("x", [3, 4]), f32("w", [4])], "Tensor[3; f32]",
     "let y[i] = max[j] (x[i, j] * w[j])\n        return y", lambda x, w: torch.amax(x * w, 1),
     tweak=lambda v: (v["x"].__setitem__([0, 2], [1.0, 2.0]), v["w"].__setitem__([0, 2], [2.0, 1.0])))
case("sum_binder", ["sum[]"], X34, "Tensor[3; f32]", "let y[i] = sum[j] (x[i, j] * x[i, j])\n        return y",
     lambda x: (x * x).sum(1))
case("sum_binder_matvec", ["sum[]"], [f32("w", [3, 4]), f32("x", [4])], "Tensor[3; f32]",
     "let y[o] = sum[i] (w[o, i] * x[i])\n        return y", lambda w, x: (w * x).sum(1))
# A value of one element: its gradient takes no cotangent.
case("sum_binder_total", ["sum[]"], [f32("x", [3, 4]), f32("w", [3, 4])], "f32",
     "return sum[i, j] (x[i, j] * w[i, j])", lambda x, w: (x * w).sum())
case("max_binder", ["max[]"], X34, "Tensor[3; f32]", "let y[i] = max[j] (x[i, j])\n        return y",
     lambda x: torch.amax(x, 1), tweak=row_ties)
case("min_binder", ["min[]"], X34, "Tensor[4; f32]", "let y[j] = min[i] (x[i, j])\n        return y",
     lambda x: torch.amin(x, 0), tweak=row_ties)
case("max_min_binder_spread", ["max[]", "min[]"], X34, "Tensor[3; f32]",
     "let y[i] = max[j] (x[i, j]) - min[j] (x[i, j])\n        return y",
     lambda x: torch.amax(x, 1) - torch.amin(x, 1), tweak=row_ties)

# ---- Shape ----
case("shape_reshape", ["reshape"], [f32("x", [2, 6])], "Tensor[3, 2, 2; f32]", "return reshape(x, [3, 2, 2])",
     lambda x: x.reshape(3, 2, 2))
case("shape_reshape_sin", ["reshape", "sin"], [f32("x", [4, 3])], "Tensor[2, 6; f32]",
     "return sin(reshape(x, [2, 6]))", lambda x: torch.sin(x.reshape(2, 6)))
case("shape_permute", ["permute"], [f32("x", [2, 3, 4])], "Tensor[4, 2, 3; f32]", "return permute(x, [2, 0, 1])",
     lambda x: x.permute(2, 0, 1))
case("shape_permute_mul", ["permute", "*"], [f32("x", [3, 4]), f32("w", [4, 3])], "Tensor[4, 3; f32]",
     "return permute(x, [1, 0]) * w", lambda x, w: x.permute(1, 0) * w)
case("shape_concat_axis1", ["concat"], [f32("a", [2, 3]), f32("b", [2, 2])], "Tensor[2, 5; f32]",
     "return concat(a, b, axis = -1)", lambda a, b: torch.cat([a, b], 1))
# `a` twice: both of its slices' cotangents add.
case("shape_concat_three", ["concat"], [f32("a", [2, 3]), f32("b", [1, 3])], "Tensor[5, 3; f32]",
     "return concat(a, b, a * a, axis = 0)", lambda a, b: torch.cat([a, b, a * a], 0))
case("slice_static", ["slice"], [f32("x", [4, 3])], "Tensor[2, 3; f32]", "return x[1:3, :]",
     lambda x: x[1:3, :])
case("slice_static_index", ["slice"], [f32("x", [4, 3])], "Tensor[4; f32]", "return x[:, 2] * x[:, 0]",
     lambda x: x[:, 2] * x[:, 0])
case("slice_runtime_index", ["slice"], [f32("x", [4, 3]), ints("k", "i64", [], [2])], "Tensor[3; f32]",
     "return x[k, :]", lambda x, k: x[k.clamp(0, 3), :])
# An index past the end is clamped (docs/language.md §7).
case("slice_runtime_index_clamped", ["slice"], [f32("x", [4, 3]), ints("k", "i32", [], [9])],
     "Tensor[3; f32]", "return x[k, :] + x[1, :]",
     lambda x, k: x[k.clamp(0, 3), :] + x[1, :])

case("slice_mixed", ["slice"], [f32("x", [3, 4, 5]), ints("k", "i64", [], [1])], "Tensor[1, 2; f32]",
     "return x[1:2, k, 1:3] * x[0:1, 3, 0:2]", lambda x, k: x[1:2, k, 1:3] * x[0:1, 3, 0:2])

# ---- cast ----
case("cast_f32", ["cast"], [f32("x", [2, 3])], "Tensor[2, 3; f32]", "return cast<f32>(x) * x",
     lambda x: x * x)
# f32 -> bf16 -> f32 and through f16: not rounded under WideFloats, so the
# identity in float64, and its gradient the cotangent cast back.
case("cast_floats", ["cast"], [f32("x", [2, 3])], "Tensor[2, 3; f32]",
     "return cast<f32>(cast<bf16>(x)) + cast<f32>(cast<f16>(x * x))", lambda x: x + x * x)
case("cast_from_ints", ["cast", "*"], [f32("x", [2, 3]), ints("n", "i32", [2, 3], [3, -1, 0, 7, 2, -4])],
     "Tensor[2, 3; f32]", "return cast<f32>(n) * x", lambda x, n: n.to(torch.float64) * x)
case("cast_from_bool", ["cast", "*"], [f32("x", [2, 3])], "Tensor[2, 3; f32]",
     "return cast<f32>(x > 0.0) * x", lambda x: (x > 0).to(torch.float64) * x)

# ---- select ----
case("select_gt", ["select"], [f32("a", [2, 3]), f32("b", [2, 3])], "Tensor[2, 3; f32]",
     "return select(a > b, a * b, b)", lambda a, b: torch.where(a > b, a * b, b))
case("select_broadcast", ["select", "broadcast"],
     [ints("c", "bool", [3, 1], [1, 0, 1]), f32("a", [3, 4]), f32("b", [4])], "Tensor[3, 4; f32]",
     "return select(c, a, b)", lambda c, a, b: torch.where(c, a, b))
# The condition wider than both branches: each branch's cotangent summed back.
case("select_wide_condition", ["select", "broadcast"],
     [ints("c", "bool", [3, 4], [1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1]), f32("a", [4]), f32("b", [])],
     "Tensor[3, 4; f32]", "return select(c, a, b)", lambda c, a, b: torch.where(c, a, b))
case("select_literal", ["select"], [f32("x", [2, 3])], "Tensor[2, 3; f32]",
     "return select(x > 0.0, x, 0.5 * x)", lambda x: torch.where(x > 0, x, 0.5 * x))

# ---- gather (a scatter-add back: repeated ids add their cotangents) ----
case("gather_rows", ["gather"], [f32("table", [5, 3]), ints("ids", "i32", [7], [1, 3, 1, 0, 1, 4, 3])],
     "Tensor[7, 3; f32]", "return gather(table, ids)", lambda t, i: t[i.clamp(0, 4)])
case("gather_2d_ids", ["gather"], [f32("table", [4, 2, 3]), ints("ids", "i64", [2, 3], [2, 0, 2, 2, 3, 0])],
     "Tensor[2, 3, 2, 3; f32]", "return gather(table, ids)", lambda t, i: t[i.clamp(0, 3)])
# Out-of-range ids are clamped to the first and last row.
case("gather_clamped", ["gather"], [f32("table", [4, 2]), ints("ids", "i64", [5], [-3, 9, 3, 0, 2])],
     "Tensor[5, 2; f32]", "return gather(table, ids) * gather(table, ids)",
     lambda t, i: t[i.clamp(0, 3)] * t[i.clamp(0, 3)])
# Indexing by tensors of indices in a comprehension (ExprKind::Gather).
case("index_pick", ["index"], [f32("x", [4, 5]), ints("t", "i64", [4], [2, 2, 0, 4])], "Tensor[4; f32]",
     "let y[p] = x[p, t[p]]\n        return y", lambda x, t: x[torch.arange(4), t])
case("index_rows", ["index"], [f32("table", [4, 3]), ints("ids", "i32", [6], [3, 1, 3, 3, 0, 1])],
     "Tensor[6, 3; f32]", "let y[p, d] = table[ids[p], d]\n        return y", lambda t, i: t[i])
case("index_two", ["index"],
     [f32("x", [3, 4]), ints("a", "i64", [6], [0, 2, 0, 1, 2, 5]), ints("b", "i64", [6], [3, 1, 3, 0, 1, -1])],
     "Tensor[6; f32]", "let y[p] = x[a[p], b[p]]\n        return y",
     lambda x, a, b: x[a.clamp(0, 2), b.clamp(0, 3)])
case("index_three", ["index"],
     [f32("x", [2, 3, 4]), ints("a", "i32", [5], [1, 0, 1, 1, 0]), ints("b", "i32", [5], [2, 2, 2, 0, 1]),
      ints("c", "i32", [5], [3, 0, 3, 1, 2])],
     "Tensor[5; f32]", "let y[p] = x[a[p], b[p], c[p]]\n        return y", lambda x, a, b, c: x[a, b, c])
case("index_computed", ["index"], [f32("table", [7]), ints("ids", "i64", [5], [0, 2, 1, 2, 3])],
     "Tensor[5; f32]", "let y[p] = table[ids[p] * 2 + 1]\n        return y",
     lambda t, i: t[(i * 2 + 1).clamp(0, 6)])

case("gather_scalar_id", ["gather"], [f32("table", [5, 3]), ints("k", "i64", [], [3])], "Tensor[3; f32]",
     "return gather(table, k) * gather(table, k)", lambda t, k: t[k] * t[k])
case("gather_vector_table", ["gather"], [f32("table", [4]), ints("ids", "i32", [2, 3], [3, 3, 0, 1, 3, 2])],
     "Tensor[2, 3; f32]", "return gather(table, ids)", lambda t, i: t[i])
# A plain variable on one axis and a gathered index on another.
case("index_outer", ["index"], [f32("x", [4, 5]), ints("t", "i64", [3], [1, 4, 1])], "Tensor[4, 3; f32]",
     "let y[p, q] = x[p, t[q]]\n        return y", lambda x, t: x[:, t])
# The last valid position of each row (the language's own example, §7).
case("index_last", ["index"], [f32("x", [2, 3, 4]), ints("lengths", "i32", [2], [3, 1])], "Tensor[2, 4; f32]",
     "let last[b, h] = x[b, cast<i64>(lengths[b]) - 1, h]\n        return last",
     lambda x, n: x[torch.arange(2), (n - 1).clamp(0, 2), :])

# Comprehensions that move or combine values without an index tensor.
case("comprehension_transpose", ["comprehension"], [f32("x", [3, 4])], "Tensor[4, 3; f32]",
     "let y[i, j] = x[j, i] * x[j, i]\n        return y", lambda x: (x * x).T)
case("comprehension_outer", ["comprehension", "*"], [f32("a", [3]), f32("b", [4])], "Tensor[3, 4; f32]",
     "let y[i, j] = a[i] * b[j] + a[i]\n        return y", lambda a, b: a[:, None] * b[None, :] + a[:, None])

# ---- matmul ----
case("matmul_2d", ["matmul"], [f32("a", [3, 4]), f32("w", [4, 5])], "Tensor[3, 5; f32]", "return matmul(a, w)",
     torch.matmul)
case("matmul_leading", ["matmul"], [f32("a", [2, 3, 4]), f32("w", [4, 5])], "Tensor[2, 3, 5; f32]",
     "return matmul(a, w)", torch.matmul)
case("matmul_vector", ["matmul"], [f32("a", [4]), f32("w", [4, 5])], "Tensor[5; f32]",
     "return matmul(a, w)", torch.matmul)
case("matmul_transposed", ["matmul", "permute"], [f32("a", [3, 4]), f32("w", [5, 4])], "Tensor[3, 5; f32]",
     "return matmul(a, permute(w, [1, 0]))", lambda a, w: a @ w.T)
case("matmul_gram", ["matmul", "permute"], [f32("a", [3, 4])], "Tensor[3, 3; f32]",
     "return matmul(a, permute(a, [1, 0]))", lambda a: a @ a.T)
case("matmul_batched", ["matmul_batched"], [f32("a", [2, 3, 4]), f32("b", [2, 4, 5])], "Tensor[2, 3, 5; f32]",
     "return matmul(a, b)", torch.matmul)
case("matmul_batched_bcast", ["matmul_batched", "broadcast"], [f32("a", [2, 3, 4]), f32("b", [1, 4, 5])],
     "Tensor[2, 3, 5; f32]", "return matmul(a, b)", torch.matmul)
case("matmul_matrix_batch", ["matmul_batched", "broadcast"], [f32("a", [3, 4]), f32("b", [2, 4, 5])],
     "Tensor[2, 3, 5; f32]", "return matmul(a, b)", torch.matmul)
case("matmul_batched_4d", ["matmul_batched", "broadcast"], [f32("a", [2, 1, 3, 2]), f32("b", [3, 2, 4])],
     "Tensor[2, 3, 3, 4; f32]", "return matmul(a, b)", torch.matmul)


# ---- attention (its definition, docs/language.md §11) ----
def attention(q, k, v, scale, mask):
    lead = k.shape[:-2]
    G, Q, d = q.shape[-3:]
    K, e = k.shape[-2], v.shape[-1]
    s = q.reshape(*lead, G * Q, d) @ k.transpose(-1, -2)
    s = (s * scale).reshape(*lead, G, Q, K)
    s = torch.where(mask, s, torch.tensor(MASKED))
    p = torch.softmax(s, -1)
    return (p.reshape(*lead, G * Q, K) @ v).reshape(*lead, G, Q, e)


# Two key/value heads (the leading axis), each shared by G = 2 query
# heads; a causal mask aligned to the end of the keys, and query 0 sees no
# key (a uniform softmax: its cotangent reaches v only). The scale is an
# argument, so it has a gradient too.
CAUSAL_BLIND = [0, 0, 0, 0, 0,
                1, 1, 1, 1, 0,
                1, 1, 1, 1, 1]
case("attention_gqa", ["attention"],
     [f32("q", [2, 2, 3, 4]), f32("k", [2, 5, 4]), f32("v", [2, 5, 3]), f32("scale", [], [0.5]),
      ints("mask", "bool", [3, 5], CAUSAL_BLIND)],
     "Tensor[2, 2, 3, 3; f32]", "return attention(q, k, v, scale, mask)", attention)
# Two leading axes, one query head per key/value head, a literal scale and a
# mask of keys made in the entry from a position (a decode step's).
case("attention_decode_mask", ["attention", "broadcast"],
     [f32("q", [1, 2, 1, 2, 4]), f32("k", [1, 2, 6, 4]), f32("v", [1, 2, 6, 4]), ints("p", "i64", [], [3])],
     "Tensor[1, 2, 1, 2, 4; f32]",
     "let keys = iota<i64>(6)\n        let mask[j] = keys[j] <= p\n"
     "        return attention(q, k, v, 0.375, mask)",
     lambda q, k, v, p: attention(q, k, v, 0.375, torch.arange(6) <= p))
# q, k and v from one input (self-attention): the three cotangents add.
case("attention_self", ["attention", "reshape"], [f32("x", [3, 4])], "Tensor[1, 3, 4; f32]",
     "let h = reshape(x, [1, 1, 3, 4])\n        let kv = reshape(x, [1, 3, 4])\n"
     "        let mask[i, j] = iota<i64>(3)[j] <= iota<i64>(3)[i]\n"
     "        return reshape(attention(h, kv, kv, 0.5, mask), [1, 3, 4])",
     lambda x: attention(x.reshape(1, 1, 3, 4), x.reshape(1, 3, 4), x.reshape(1, 3, 4), 0.5,
                         torch.arange(3)[None, :] <= torch.arange(3)[:, None]).reshape(1, 3, 4))

# Batch and key/value head as leading axes, a mask per head and query
# (an argument, broadcast over nothing) with one row that sees no key.
MASK_FULL = [1, 1, 0, 0, 1, 0, 1, 1,
             0, 0, 0, 0, 1, 1, 1, 1,
             1, 0, 0, 0, 0, 1, 1, 0,
             1, 1, 1, 1, 0, 0, 1, 0]
case("attention_full_mask", ["attention"],
     [f32("q", [2, 1, 2, 2, 3]), f32("k", [2, 1, 4, 3]), f32("v", [2, 1, 4, 2]),
      ints("mask", "bool", [2, 1, 2, 2, 4], MASK_FULL)],
     "Tensor[2, 1, 2, 2, 2; f32]", "return attention(q, k, v, 0.75, mask)",
     lambda q, k, v, m: attention(q, k, v, 0.75, m))

# ---- fill, iota, options and the collectives (the identity on one device) ----
case("fill_scalar", ["fill", "broadcast"], [f32("s", []), f32("x", [2, 3])], "Tensor[2, 3; f32]",
     "return fill<f32>([2, 3], s) * x", lambda s, x: s.expand(2, 3) * x)
case("iota_constant", ["iota", "cast"], [f32("x", [3])], "Tensor[3; f32]",
     "return cast<f32>(iota<i64>(3)) * x", lambda x: torch.arange(3).to(torch.float64) * x)
case("options", ["some", "unwrap_or"], [f32("x", [2, 3]), f32("y", [2, 3])], "Tensor[2, 3; f32]",
     "return unwrap_or(some(x * y), y)", lambda x, y: x * y)
case("collectives", ["shard_sum", "shard_max", "shard_shared", "shard_concat"], [f32("x", [2, 3])],
     "Tensor[2, 3; f32]", "return shard_sum(x) * shard_max(x) + shard_concat<1>(shard_shared(x), axis = 0)",
     lambda x: x * x + x)

# ---- Compositions a model's loss is made of ----
case("log_softmax_pick", ["max", "exp", "log", "sum", "index", "sum[]", "unary -"],
     [f32("x", [3, 5]), ints("t", "i64", [3], [4, 0, 4]), f32("w", [3], [1.0, 0.0, 0.5])], "f32",
     "let m = max(x, axis = -1, keepdims = true)\n"
     "        let lse = log(sum(exp(x - m), axis = -1, keepdims = true)) + m\n"
     "        let lp = x - lse\n"
     "        let picked[p] = lp[p, t[p]]\n"
     "        return -sum[p] (picked[p] * w[p])",
     lambda x, t, w: -(torch.log_softmax(x, -1)[torch.arange(3), t] * w).sum())
case("rms_norm", ["mean", "rsqrt", "*", "+", "broadcast"], [f32("x", [3, 4]), f32("w", [4])],
     "Tensor[3, 4; f32]", "return x * rsqrt(mean(x * x, axis = -1, keepdims = true) + 0.25) * w",
     lambda x, w: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 0.25) * w)


def check_attention_against_sdpa():
    """The written-out definition is torch's own attention where no query
    row is fully masked (torch's gives NaN there, ours a uniform row)."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(s, generator=g) for s in ([2, 2, 3, 4], [2, 5, 4], [2, 5, 3]))
    mask = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    ours = attention(q, k, v, 0.5, mask)
    theirs = F.scaled_dot_product_attention(q.reshape(1, 4, 3, 4), k.reshape(1, 2, 5, 4), v.reshape(1, 2, 5, 3),
                                            attn_mask=mask, scale=0.5, enable_gqa=True)
    assert torch.allclose(ours.reshape(1, 4, 3, 3), theirs, rtol=0, atol=1e-12), "attention != torch's SDPA"


def run(c):
    rng = np.random.default_rng(zlib.crc32(c["name"].encode()))
    values = {i.name: i.draw(rng) for i in c["inputs"]}
    if c["tweak"]:
        c["tweak"](values)
    tensors = [i.torch_value(values[i.name]) for i in c["inputs"]]
    value = c["fn"](*tensors)
    cotangent = None
    if value.numel() == 1:
        value.sum().backward()
    else:
        cotangent = np.round(rng.uniform(-1.0, 1.0, value.numel()) * 1024) / 1024
        (value * torch.tensor(cotangent).reshape(value.shape)).sum().backward()
    grads = {}
    for i, t in zip(c["inputs"], tensors):
        if i.is_float():
            g = t.grad if t.grad is not None else torch.zeros_like(t)
            grads[i.name] = g.detach().reshape(-1).tolist()
    listed = lambda v: [float(x) for x in v] if v is not None else None
    return {
        "name": c["name"],
        "covers": c["covers"],
        "inputs": [{"name": i.name, "dtype": i.dtype, "shape": i.shape,
                    "values": listed(values[i.name]) if i.is_float() else [int(x) for x in values[i.name]]}
                   for i in c["inputs"]],
        "value": {"shape": list(value.shape), "values": value.detach().reshape(-1).tolist()},
        "cotangent": listed(cotangent),
        "grads": grads,
    }


def linnet_source():
    lines = ["// Generated by tests/autodiff/make_primitive_fixtures.py: one entry per case,",
             "// each also written with torch ops there.",
             "module autodiff_primitives", "", "pub block Ops {"]
    for c in CASES:
        params = ", ".join(f"{i.name}: {i.linnet_type()}" for i in c["inputs"])
        lines.append(f"    pub entry {c['name']}({params}) -> {c['result']} {{")
        lines.append(f"        {c['body']}")
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    check_attention_against_sdpa()
    names = [c["name"] for c in CASES]
    assert len(set(names)) == len(names), "case names repeat"
    rows = [run(c) for c in CASES]
    body = ",\n".join(json.dumps(r, separators=(",", ":")) for r in rows)
    header = json.dumps({"generator": "tests/autodiff/make_primitive_fixtures.py", "torch": torch.__version__})
    write(os.path.join(OUT, "cases.json"), header[:-1] + ',"cases":[\n' + body + "\n]}\n")
    write(os.path.join(OUT, "src", "lib.linnet"), linnet_source())
    write(os.path.join(OUT, "linnet.toml"),
          '[package]\nname = "autodiff_primitives"\nversion = "0.1.0"\nlanguage = "0.1"\n')
    write(os.path.join(OUT, "nest.toml"),
          "# Generated by tests/autodiff/make_primitive_fixtures.py.\n"
          '[source]\npath = "src/lib.linnet"\nroot = "Ops"\n')
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(OUT) for f in fs)
    print(f"{len(rows)} cases, {size} bytes under {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
