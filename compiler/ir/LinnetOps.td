// The ops of the `linnet` dialect. One op per primitive of the language;
// an attribute names the variant (`kind`) where the variants lower alike.
#ifndef LINNET_OPS_TD
#define LINNET_OPS_TD

include "ir/LinnetDialect.td"
include "ir/LinnetEnums.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

def AnyRankedTensor_ : RankedTensorOf<[AnyType]>;

def Linnet_UnaryOp : Linnet_Op<"unary", [Pure]> {
  let summary = "elementwise neg, not, exp, log, sin, cos, tanh, sqrt, rsqrt, sigmoid, abs, floor";
  let arguments = (ins Linnet_UnaryKind:$kind, AnyRankedTensor_:$x);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$kind $x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Linnet_BinaryOp : Linnet_Op<"binary", [Pure]> {
  let summary = "elementwise arithmetic, comparison and logic, broadcasting";
  let description = [{
    `kind` names the operation (`add`, `eq`, `maximum`, ...: LinnetEnums.td).
    Operands have one element type (the elaborator made every conversion
    explicit); comparisons produce i1.
  }];
  let arguments = (ins Linnet_BinaryKind:$kind, AnyRankedTensor_:$lhs, AnyRankedTensor_:$rhs);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$kind $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)";
  let hasVerifier = 1;
}

def Linnet_SelectOp : Linnet_Op<"select", [Pure]> {
  let summary = "elementwise `cond ? a : b`, broadcasting";
  let arguments = (ins AnyRankedTensor_:$cond, AnyRankedTensor_:$a, AnyRankedTensor_:$b);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$cond `,` $a `,` $b attr-dict `:` type($cond) `,` type($a) `,` type($b) `->` type($result)";
}

def Linnet_CastOp : Linnet_Op<"cast", [Pure]> {
  let summary = "element type conversion (floats round to nearest even, float to int truncates)";
  let arguments = (ins AnyRankedTensor_:$x);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
}

def Linnet_MatmulOp : Linnet_Op<"matmul", [Pure]> {
  let summary = "matrix product with broadcast batch axes; `transpose_b` reads b as [.., N, K]";
  let description = [{
    Accumulates in f32 for float operands and rounds once to the result
    type. With `transpose_b`, `b` is a [.., N, K] weight read row by row:
    canonicalization gives `matmul(x, permute(w))` this form when the
    permute swaps exactly the last two axes, so the transpose is never formed.

    Two promises let a product skip work that cannot change what its user
    reads (attention's keys past the last one its mask allows; only a
    target's own product kernel takes them, see expand_attention.cpp):
    `keep_columns` (i1 `[R, N]`): result column n is the product where some
    `keep_columns[r, n]` is set, and 0 where none is. `skip_zero_terms`: a
    term whose `a` is exactly zero adds nothing, even where `b` is infinite
    or NaN.
  }];
  let arguments = (ins AnyRankedTensor_:$a, AnyRankedTensor_:$b, Optional<AnyRankedTensor_>:$keep_columns,
                       UnitAttr:$transpose_b, UnitAttr:$skip_zero_terms);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = [{
    $a `,` $b (`keep_columns` $keep_columns^ `:` type($keep_columns))? attr-dict `:` type($a) `,` type($b) `->`
    type($result)
  }];
  let hasCanonicalizer = 1;
  let hasVerifier = 1;
}

def Linnet_ReduceOp : Linnet_Op<"reduce", [Pure]> {
  let summary = "sum, mean, max, min, prod, all, any or index_of_max over `axes`";
  let arguments = (ins Linnet_ReduceKind:$kind, AnyRankedTensor_:$x, DenseI64ArrayAttr:$axes,
                       UnitAttr:$keepdims);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$kind $x attr-dict `:` type($x) `->` type($result)";
}

def Linnet_ReshapeOp : Linnet_Op<"reshape", [Pure]> {
  let summary = "same elements in row-major order, new shape";
  let arguments = (ins AnyRankedTensor_:$x);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Linnet_PermuteOp : Linnet_Op<"permute", [Pure]> {
  let summary = "axis permutation: result axis i is input axis perm[i]";
  let arguments = (ins AnyRankedTensor_:$x, DenseI64ArrayAttr:$perm);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasCanonicalizer = 1;
}

def Linnet_BroadcastOp : Linnet_Op<"broadcast", [Pure]> {
  let summary = "stretches size-1 and missing leading axes to the result shape";
  let arguments = (ins AnyRankedTensor_:$x);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
}

def Linnet_ConcatOp : Linnet_Op<"concat", [Pure]> {
  let summary = "joins tensors along `axis`";
  let arguments = (ins Variadic<AnyRankedTensor_>:$xs, I64Attr:$axis);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$xs attr-dict `:` type($xs) `->` type($result)";
}

def Linnet_SliceOp : Linnet_Op<"slice", [Pure]> {
  let summary = "x[lo:hi, k, ...]: static slices and runtime scalar indices";
  let description = [{
    One item per axis of `x`: `items[a] = -1` keeps axis `a` as the static
    slice `lo[a]:hi[a]`; `items[a] = k >= 0` drops it at the runtime index
    `indices[k]` (a rank-0 integer tensor), clamped into the axis.
  }];
  let arguments = (ins AnyRankedTensor_:$x, Variadic<AnyRankedTensor_>:$indices,
                       DenseI64ArrayAttr:$items, DenseI64ArrayAttr:$lo, DenseI64ArrayAttr:$hi);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$x (`[` $indices^ `]`)? attr-dict `:` functional-type(operands, $result)";
}

def Linnet_GatherOp : Linnet_Op<"gather", [Pure]> {
  let summary = "x[i0, i1, ...] with one integer tensor per axis of x, broadcast together";
  let description = [{
    Each index is clamped into its axis (the language defines no
    out-of-range read). The result has the broadcast shape of the indices.
    Rows of a table (`gather(table, ids)`) are this op with an iota for
    each trailing axis.
  }];
  let arguments = (ins AnyRankedTensor_:$x, Variadic<AnyRankedTensor_>:$indices);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$x `[` $indices `]` attr-dict `:` functional-type(operands, $result)";
}

def Linnet_AttentionOp : Linnet_Op<"attention", [Pure]> {
  let summary = "scaled dot-product attention of grouped query heads over keys and values";
  let description = [{
    q `[..L, G, Q, D]`, k `[..L, K, D]`, v `[..L, K, E]` of one float type
    T, `scale` a rank-0 f32 tensor, `mask` (i1) broadcasting to the scores
    `[..L, G, Q, K]`; the result is `[..L, G, Q, E]` in T. Defined as the
    ops it expands into (linnet-expand-attention): scores `q k^T` in T,
    times scale in f32, rounded to T; masked scores -3e38; softmax over
    the keys in f32; probabilities rounded to T; their product with v.
    A target may keep it instead (transforms::SharedOptions): the CPU
    target computes those ops per query row in one kernel, over the keys
    that row sees (a masked key's probability is exactly 0). Compiled code
    skips keys no query sees; that differs from the definition only where
    such a key's value is infinite or NaN, which a cache the model wrote
    never holds.
  }];
  let arguments = (ins AnyRankedTensor_:$q, AnyRankedTensor_:$k, AnyRankedTensor_:$v, AnyRankedTensor_:$scale,
                       AnyRankedTensor_:$mask);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$q `,` $k `,` $v `,` $scale `,` $mask attr-dict `:` functional-type(operands, $result)";
  let hasVerifier = 1;
}

def Linnet_AttentionRowsOp : Linnet_Op<"attention_rows", [Pure]> {
  let summary = "f32 attention with each query row's statistics, for a gradient's forward";
  let description = [{
    `linnet.attention` of f32 q, k, v (at most two leading axes) in a
    derived gradient, made only for a target that keeps it
    (`SharedOptions::targetAttentionF32`; compiler/autodiff/attention.h):
    the result `[..L, G, Q, E + 2]` holds each row's output (its first E
    values), then the maximum of its masked scores (-3e38 for a row that
    sees no key) and the sum of exp(s - max) over the keys it counts, which
    `linnet.attention_grad` reads. The CPU lowers it to one kernel call
    that never forms a `[Q, K]` square.
  }];
  let arguments = (ins AnyRankedTensor_:$q, AnyRankedTensor_:$k, AnyRankedTensor_:$v, AnyRankedTensor_:$scale,
                       AnyRankedTensor_:$mask);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$q `,` $k `,` $v `,` $scale `,` $mask attr-dict `:` functional-type(operands, $result)";
  let hasVerifier = 1;
}

def Linnet_AttentionGradOp : Linnet_Op<"attention_grad", [Pure]> {
  let summary = "the cotangents of f32 attention's q, k and v from its row statistics";
  let description = [{
    The reverse of `linnet.attention` (f32, at most two leading axes) in a
    derived gradient, made only for a target that keeps it
    (`SharedOptions::targetAttentionF32`; compiler/autodiff/attention.h):
    q `[..L, G, Q, D]`, k `[..L, K, D]`, v `[..L, K, E]`, `scale` a rank-0
    f32 tensor, `mask` (i1) broadcasting to `[..L, G, Q, K]`, the forward's
    row statistics `max` and `sum` `[..L, G, Q, 1]` (the masked scores'
    maximum and the sum of their exp(s - max)), `dout` the output's
    cotangent `[..L, G, Q, E]`. With P = exp(s - max) / sum (0 where
    masked; 1 / sum for every key of a row that sees none) and
    dS = P (dP - rowsum(dP P)) scale, 0 where masked, dP = dout vᵀ, the
    results are dq = dS k, dk = dSᵀ q and dv = Pᵀ dout. The CPU lowers it
    to one kernel call that never forms a `[Q, K]` square.
  }];
  let arguments = (ins AnyRankedTensor_:$q, AnyRankedTensor_:$k, AnyRankedTensor_:$v, AnyRankedTensor_:$scale,
                       AnyRankedTensor_:$mask, AnyRankedTensor_:$max, AnyRankedTensor_:$sum,
                       AnyRankedTensor_:$dout);
  let results = (outs AnyRankedTensor_:$dq, AnyRankedTensor_:$dk, AnyRankedTensor_:$dv);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $scale `,` $mask `,` $max `,` $sum `,` $dout attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Linnet_WritePointsOp : Linnet_Op<"write_points", [Pure]> {
  let summary = "dest with x's points written at a run-time row and position each";
  let description = [{
    x has one row; its position p along `axis` is point p, written to row
    `rows[p]` of dest at position `positions[p]` along `axis` (rank-1
    integer tensors), in order of p: the last of several points at one
    place wins; a point outside dest is dropped. Lowers to an scf.for of
    slice insertions, in place once bufferized.
  }];
  let arguments = (ins AnyRankedTensor_:$dest, AnyRankedTensor_:$x, AnyRankedTensor_:$rows,
                       AnyRankedTensor_:$positions, I64Attr:$axis);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$x `into` $dest `at` $rows `,` $positions attr-dict `:` functional-type(operands, $result)";
  let hasVerifier = 1;
}

def Linnet_WriteSliceOp : Linnet_Op<"write_slice", [Pure]> {
  let summary = "dest with x written from a runtime position along one axis";
  let description = [{
    Positions `start .. start + n` of `dest` along `axis` (n: x's extent
    there) take x's; every other dimension of x equals dest's. Positions
    that fall outside dest are dropped: no start is out of range. `start`
    is a rank-0 integer tensor, or (axis > 0) one start per row of axis 0,
    row r's at start[r]. Lowers to slice insertions, in place once
    bufferized, so a write costs what it writes.
  }];
  let arguments = (ins AnyRankedTensor_:$dest, AnyRankedTensor_:$x, AnyRankedTensor_:$start, I64Attr:$axis);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$x `into` $dest `at` $start attr-dict `:` functional-type(operands, $result)";
  let hasVerifier = 1;
}

def Linnet_IotaOp : Linnet_Op<"iota", [Pure]> {
  let summary = "0, 1, ..., n-1 along `axis` of the result, broadcast over the others";
  let arguments = (ins I64Attr:$axis);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Linnet_ConstantOp : Linnet_Op<"constant", [Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a splat literal";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$value attr-dict";
}

def Linnet_PackedMatmulOp : Linnet_Op<"packed_matmul", [Pure]> {
  let summary = "x times the transpose of a weight held in a storage format";
  let description = [{
    `x` is f32 `[.., K]`; `w` holds N rows of K elements in `format`
    (common/storage_formats.def): i8 `[N, RowBytes]` for a block format or
    f16/bf16, f32 `[N, K]` for f32. The result is f32 `[.., N]`,
    `matmul(x, permute(dequantize(w)))`: each weight dequantized exactly,
    products accumulated in f32 (linnet-pack-params makes it).

    An f32 `w` may be a stack `[B.., N, K]` with `x` `[B.., M, K]`: one
    product per matrix, result `[B.., M, N]` (linnet-gemm-products makes it
    for attention's batched products).

    `w_kn` (f32 only): `w` is `[K, N]` (or `[B.., K, N]`) as it lies, the
    result `matmul(x, w)`: a kernel packs its rows as they are instead of a
    transpose being formed in memory (a gradient's dX = dY W, dW = dYᵀ X).
  }];
  let arguments = (ins AnyRankedTensor_:$x, AnyRankedTensor_:$w, StrAttr:$format, UnitAttr:$w_kn);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$format $x `,` $w attr-dict `:` type($x) `,` type($w) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{ mlir::LogicalResult verifyStack(); mlir::LogicalResult verifyKn(); }];
}

def Linnet_PackedGatherOp : Linnet_Op<"packed_gather", [Pure]> {
  let summary = "rows of a weight held in a storage format, dequantized";
  let description = [{
    `w` is i8 `[N, RowBytes]` in `format`; `ids` an integer tensor `[..L]`;
    the result f32 `[..L, K]` is row `clamp(ids[l..], 0, N - 1)` of the
    dequantized weight (an embedding lookup).
  }];
  let arguments = (ins AnyRankedTensor_:$w, AnyRankedTensor_:$ids, StrAttr:$format);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$format $w `[` $ids `]` attr-dict `:` functional-type(operands, $result)";
  let hasVerifier = 1;
}

def Linnet_UnpackOp : Linnet_Op<"unpack", [Pure]> {
  let summary = "a weight held in a storage format, dequantized whole";
  let description = [{
    `w` is i8 `[.., N, RowBytes]` in `format`; the result f32 `[.., N, K]`.
    linnet-pack-params uses it for the reads of a packed param that no
    kernel reads in its format; it costs a full dequantization per call.
  }];
  let arguments = (ins AnyRankedTensor_:$w, StrAttr:$format);
  let results = (outs AnyRankedTensor_:$result);
  let assemblyFormat = "$format $w attr-dict `:` type($w) `->` type($result)";
  let hasVerifier = 1;
}

#endif  // LINNET_OPS_TD
