// Each primitive's ONNX form, in one place: the elementwise kinds
// (onnxUnary, onnxBinary), the reductions (emitReduce) and every other
// tensor expression kind (emit's switch). The semantics are the
// reference backend's (targets/reference/tensor.cpp): indices clamped into
// their axis, writes outside a tensor dropped, attention's scores rounded
// to the operands' dtype and masked with sema::kAttentionMasked.
#include "export/onnx/onnx_emitters.h"

#include <fmt/format.h>

#include <numeric>

namespace linnet::exporter::onnx_export {

namespace {

using elab::Expr;
using elab::ExprKind;
using sema::BinaryKind;
using sema::ReduceKind;
using sema::UnaryKind;

const elab::TensorType& typeOf(const Expr& e) { return e.type.tensor; }

// ---------------------------------------------------------------- elementwise
// The ONNX op of an elementwise kind, or nullptr: Rsqrt and Ne are two nodes
// (see emitUnary / emitBinary).
const char* onnxUnary(UnaryKind k) {
  switch (k) {
    case UnaryKind::Neg: return "Neg";
    case UnaryKind::Not: return "Not";
    case UnaryKind::Exp: return "Exp";
    case UnaryKind::Log: return "Log";
    case UnaryKind::Sin: return "Sin";
    case UnaryKind::Cos: return "Cos";
    case UnaryKind::Tanh: return "Tanh";
    case UnaryKind::Sqrt: return "Sqrt";
    case UnaryKind::Rsqrt: return "Sqrt";  // then Reciprocal
    case UnaryKind::Sigmoid: return "Sigmoid";
    case UnaryKind::Abs: return "Abs";
    case UnaryKind::Floor: return "Floor";
    case UnaryKind::Erf: return "Erf";
  }
  return nullptr;
}

// Binary kinds on numbers; bools take onnxLogical.
const char* onnxBinary(BinaryKind k, DType operands) {
  const bool boolean = operands == DType::Bool;
  switch (k) {
    case BinaryKind::Or: return "Or";
    case BinaryKind::And: return "And";
    // BitwiseAnd/Or/Xor are opset 18; on bools they are the logical ops.
    case BinaryKind::BitOr: return boolean ? "Or" : nullptr;
    case BinaryKind::BitXor: return boolean ? "Xor" : nullptr;
    case BinaryKind::BitAnd: return boolean ? "And" : nullptr;
    case BinaryKind::Eq: return "Equal";
    case BinaryKind::Ne: return "Equal";  // then Not
    case BinaryKind::Lt: return boolean ? nullptr : "Less";
    case BinaryKind::Le: return boolean ? nullptr : "LessOrEqual";
    case BinaryKind::Gt: return boolean ? nullptr : "Greater";
    case BinaryKind::Ge: return boolean ? nullptr : "GreaterOrEqual";
    case BinaryKind::Shl: case BinaryKind::Shr: return nullptr;  // BitShift is unsigned only
    case BinaryKind::Add: return boolean ? nullptr : "Add";
    case BinaryKind::Sub: return boolean ? nullptr : "Sub";
    case BinaryKind::Mul: return boolean ? nullptr : "Mul";
    // Integers: Linnet's division and remainder by zero are 0 (emitBinary guards them).
    case BinaryKind::Div: return boolean ? nullptr : "Div";
    case BinaryKind::Rem: return boolean ? nullptr : "Mod";
    case BinaryKind::Maximum: return boolean ? nullptr : "Max";
    case BinaryKind::Minimum: return boolean ? nullptr : "Min";
    case BinaryKind::Pow: return "Pow";
  }
  return nullptr;
}

std::string emitUnary(GraphBuilder& g, const Expr& e, const std::string& x) {
  std::string y = g.op(onnxUnary(e.unary), {x});
  if (e.unary == UnaryKind::Rsqrt) y = g.op("Reciprocal", {y});
  return y;
}

// Integer `x / y` and `x % y` as the reference computes them: 0 where y is
// 0 (and `x % -1` is 0), truncating toward zero otherwise. (INT64_MIN / -1,
// which Linnet defines as INT64_MIN, overflows in ONNX Runtime.)
std::string emitIntegerDivision(GraphBuilder& g, const Expr& e, const std::string& x, const std::string& y) {
  const DType dt = typeOf(*e.operand(0)).dtype;
  std::string zero = g.integerScalar(dt, 0), one = g.integerScalar(dt, 1);
  std::string undefined = g.op("Equal", {y, zero});
  if (e.binary == BinaryKind::Rem) undefined = g.op("Or", {undefined, g.op("Equal", {y, g.integerScalar(dt, -1)})});
  std::string safe = g.op("Where", {undefined, one, y});
  std::string z = e.binary == BinaryKind::Div
                      ? g.op("Div", {x, safe})
                      : g.opWith("Mod", {x, safe}, {}, [](onnx::NodeProto& n) { setInt(n, "fmod", 1); });
  return g.op("Where", {undefined, zero, z});
}

std::string emitBinary(GraphBuilder& g, const Expr& e, const std::string& x, const std::string& y) {
  const bool integer = !isFloat(typeOf(*e.operand(0)).dtype);
  if (integer && (e.binary == BinaryKind::Div || e.binary == BinaryKind::Rem)) return emitIntegerDivision(g, e, x, y);
  if (e.binary == BinaryKind::Rem)  // floats: C's fmod, the sign of x
    return g.opWith("Mod", {x, y}, {}, [](onnx::NodeProto& n) { setInt(n, "fmod", 1); });
  std::string z = g.op(onnxBinary(e.binary, typeOf(*e.operand(0)).dtype), {x, y});
  if (e.binary == BinaryKind::Ne) z = g.op("Not", {z});
  return z;
}

// ---------------------------------------------------------------- reductions
// An axis reduction keeps or drops one axis; a binder reduction drops its
// leading axes (as reference::Model::Impl::reduce decides).
std::string emitReduce(GraphBuilder& g, const Expr& e, const std::string& x) {
  std::vector<int64_t> axes;
  bool keep = false;
  const bool axisForm = e.ints.size() == 1 && e.reduce != ReduceKind::Prod && e.reduce != ReduceKind::All &&
                        e.reduce != ReduceKind::Any;
  if (axisForm) {
    axes = {e.ints[0]};
    keep = e.flag;
  } else {
    axes.resize(e.ints.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  auto withAxes = [&](const char* op, const std::string& in) {
    return g.opWith(op, {in}, {}, [&](onnx::NodeProto& n) {
      setInts(n, "axes", axes);
      setInt(n, "keepdims", keep);
    });
  };
  switch (e.reduce) {
    case ReduceKind::Sum:  // axes are an input from opset 13
      return g.opWith("ReduceSum", {x, g.int64s(axes)}, {}, [&](onnx::NodeProto& n) { setInt(n, "keepdims", keep); });
    case ReduceKind::Mean: return withAxes("ReduceMean", x);
    case ReduceKind::Max: return withAxes("ReduceMax", x);
    case ReduceKind::Min: return withAxes("ReduceMin", x);
    case ReduceKind::Prod: return withAxes("ReduceProd", x);
    case ReduceKind::IndexOfMax: {  // the first maximum, as i32
      std::string i = g.opWith("ArgMax", {x}, {}, [&](onnx::NodeProto& n) {
        setInt(n, "axis", axes[0]);
        setInt(n, "keepdims", keep);
      });
      return g.opWith("Cast", {i}, {}, [&](onnx::NodeProto& n) { setInt(n, "to", onnxElementType(DType::I32)); });
    }
    case ReduceKind::All: case ReduceKind::Any: {
      std::string i = g.opWith("Cast", {x}, {}, [&](onnx::NodeProto& n) { setInt(n, "to", onnxElementType(DType::I32)); });
      std::string r = withAxes(e.reduce == ReduceKind::All ? "ReduceMin" : "ReduceMax", i);
      return g.opWith("Cast", {r}, {}, [&](onnx::NodeProto& n) { setInt(n, "to", onnxElementType(DType::Bool)); });
    }
  }
  throw std::logic_error("reduce kind out of range");
}

// ---------------------------------------------------------------- helpers
std::string cast(GraphBuilder& g, const std::string& x, DType from, DType to) {
  if (from == to) return x;
  return g.opWith("Cast", {x}, {}, [&](onnx::NodeProto& n) { setInt(n, "to", onnxElementType(to)); });
}

std::string reshape(GraphBuilder& g, const std::string& x, const std::vector<int64_t>& shape) {
  return g.op("Reshape", {x, g.int64s(shape)});
}

// 0, 1, ..., n - 1 as i64 [n].
std::string arange(GraphBuilder& g, int64_t n) {
  return g.op("Range", {g.int64Scalar(0), g.int64Scalar(n), g.int64Scalar(1)});
}

// An integer index (any integer dtype, any shape) as i64 clamped into [0, n - 1].
std::string clampedIndex(GraphBuilder& g, const std::string& i, DType dtype, int64_t n) {
  std::string x = cast(g, i, dtype, DType::I64);
  x = g.op("Max", {x, g.int64Scalar(0)});
  return g.op("Min", {x, g.int64Scalar(std::max<int64_t>(n - 1, 0))});
}

std::vector<int64_t> broadcastShapes(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  if (a.size() < b.size()) a.insert(a.begin(), b.size() - a.size(), 1);
  for (size_t k = 0; k < b.size(); ++k) {
    int64_t& d = a[a.size() - b.size() + k];
    if (d == 1) d = b[k];
  }
  return a;
}

// `attention(q, k, v, scale, mask)` as reference/attention.cpp computes it.
std::string emitAttention(GraphBuilder& g, const Expr& e, const std::vector<std::string>& o) {
  const elab::TensorType &q = typeOf(*e.operand(0)), &k = typeOf(*e.operand(1)), &v = typeOf(*e.operand(2));
  const int r = k.rank();  // k: [..L, K, D]; q: [..L, G, Q, D]
  std::vector<int64_t> lead(k.shape.begin(), k.shape.end() - 2);
  const int64_t G = q.shape[r - 2], Q = q.shape[r - 1], D = q.shape[r], K = k.shape[r - 2], E = v.shape[r - 1];
  auto with = [&](std::vector<int64_t> tail) {
    std::vector<int64_t> s = lead;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  std::vector<int64_t> swap(r);
  std::iota(swap.begin(), swap.end(), 0);
  std::swap(swap[r - 2], swap[r - 1]);
  std::string kt = g.opWith("Transpose", {o[1]}, {}, [&](onnx::NodeProto& n) { setInts(n, "perm", swap); });
  std::string scores = g.op("MatMul", {reshape(g, o[0], with({G * Q, D})), kt}, "scores");
  // Scaled in f32, rounded to the operands' dtype, widened again.
  scores = g.op("Mul", {cast(g, scores, q.dtype, DType::F32), o[3]});
  scores = cast(g, cast(g, scores, DType::F32, q.dtype), q.dtype, DType::F32);
  scores = reshape(g, scores, with({G, Q, K}));
  scores = g.op("Where", {o[4], scores, g.scalar(DType::F32, sema::kAttentionMasked)});
  std::string probs = g.opWith("Softmax", {scores}, "probs", [&](onnx::NodeProto& n) { setInt(n, "axis", -1); });
  probs = reshape(g, cast(g, probs, DType::F32, q.dtype), with({G * Q, K}));
  return reshape(g, g.op("MatMul", {probs, o[2]}), with({G, Q, E}));
}

// `x[items]`: the static slices in one Slice, then each scalar index (clamped)
// a Gather that drops its axis, the last axis first so the others keep
// their numbers.
std::string emitSlice(GraphBuilder& g, const Expr& e, const std::vector<std::string>& o) {
  const elab::TensorType& x = typeOf(*e.operand(0));
  std::vector<int64_t> starts, ends, axes;
  for (size_t k = 0; k < e.items.size(); ++k) {
    const elab::SliceItem& it = e.items[k];
    if (it.slice && (it.lo != 0 || it.hi != x.shape[k])) {
      starts.push_back(it.lo);
      ends.push_back(it.hi);
      axes.push_back(static_cast<int64_t>(k));
    }
  }
  std::string y = o[0];
  if (!axes.empty()) y = g.op("Slice", {y, g.int64s(starts), g.int64s(ends), g.int64s(axes)});
  for (size_t k = e.items.size(); k-- > 0;) {
    const elab::SliceItem& it = e.items[k];
    if (it.slice) continue;
    std::string i = clampedIndex(g, o[it.index], typeOf(*e.operand(it.index)).dtype, x.shape[k]);
    y = g.opWith("Gather", {y, i}, {}, [&](onnx::NodeProto& n) { setInt(n, "axis", static_cast<int64_t>(k)); });
  }
  if (y == o[0]) y = g.op("Identity", {y});
  return y;
}

// x at one integer tensor per leading axis, broadcast together: GatherND on
// the clamped indices stacked along a new last axis.
std::string emitGather(GraphBuilder& g, const Expr& e, const std::vector<std::string>& o) {
  const elab::TensorType& x = typeOf(*e.operand(0));
  std::vector<int64_t> shape;
  for (size_t k = 1; k < e.operands.size(); ++k) shape = broadcastShapes(shape, typeOf(*e.operand(k)).shape);
  std::vector<std::string> parts;
  for (size_t k = 1; k < e.operands.size(); ++k) {
    std::string i = clampedIndex(g, o[k], typeOf(*e.operand(k)).dtype, x.shape[k - 1]);
    i = g.op("Expand", {i, g.int64s(shape)});
    parts.push_back(g.op("Unsqueeze", {i, g.int64s({static_cast<int64_t>(shape.size())})}));
  }
  std::string indices = parts.size() == 1 ? parts[0] : g.opWith("Concat", parts, {}, [&](onnx::NodeProto& n) {
    setInt(n, "axis", static_cast<int64_t>(shape.size()));
  });
  return g.op("GatherND", {o[0], indices});
}

// `write_slice(dest, x, start, axis)`: every position p of dest's axis takes
// x's position p - start where that lies inside x (start a scalar, or one
// per row of axis 0), else keeps dest's: a GatherElements and a Where, so
// writes past the end are dropped as the language says.
std::string emitWriteSlice(GraphBuilder& g, const Expr& e, const std::vector<std::string>& o) {
  const elab::TensorType &dest = typeOf(*e.operand(0)), &x = typeOf(*e.operand(1)), &start = typeOf(*e.operand(2));
  const int64_t axis = e.ints[0], m = dest.shape[axis], len = x.shape[axis];
  const int rank = dest.rank();
  std::vector<int64_t> line(rank, 1);
  line[axis] = m;
  std::string p = reshape(g, arange(g, m), line);
  std::string s = cast(g, o[2], start.dtype, DType::I64);
  if (start.rank() == 1) {  // one start per row of axis 0
    std::vector<int64_t> rows(rank, 1);
    rows[0] = start.shape[0];
    s = reshape(g, s, rows);
  }
  std::string j = g.op("Sub", {p, s});
  std::string inside = g.op("And", {g.op("GreaterOrEqual", {j, g.int64Scalar(0)}), g.op("Less", {j, g.int64Scalar(len)})});
  std::string shape = g.int64s(dest.shape);
  inside = g.op("Expand", {inside, shape});
  // x's extent along the axis may differ from dest's (GatherElements allows
  // it there); the other axes are dest's (refusal() checks).
  std::string from = g.op("Min", {g.op("Max", {j, g.int64Scalar(0)}), g.int64Scalar(std::max<int64_t>(len - 1, 0))});
  from = g.op("Expand", {from, shape});
  const std::string& xs = o[1];
  std::string taken = g.opWith("GatherElements", {xs, from}, {}, [&](onnx::NodeProto& n) { setInt(n, "axis", axis); });
  return g.op("Where", {inside, taken, o[0]});
}

}  // namespace

std::string primitiveName(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Unary: return sema::name(e.unary);
    case ExprKind::Binary: return sema::name(e.binary);
    case ExprKind::Reduce: return sema::name(e.reduce);
    case ExprKind::Select: return "select";
    case ExprKind::Cast: return "cast";
    case ExprKind::Broadcast: return "broadcast";
    case ExprKind::Reshape: return "reshape";
    case ExprKind::Permute: return "permute";
    case ExprKind::Concat: return "concat";
    case ExprKind::Iota: return "iota";
    case ExprKind::Matmul: return "matmul";
    case ExprKind::GatherRows: return "gather";
    case ExprKind::ScatterRows: return "a row lookup's cotangent";
    case ExprKind::AttentionRows: return "attention with its row statistics";
    case ExprKind::AttentionGrad: return "attention's cotangents";
    case ExprKind::Slice: return "an index";
    case ExprKind::Gather: return "an index by tensors";
    case ExprKind::Attention: return "attention";
    case ExprKind::WritePoints: return "write_points";
    case ExprKind::WriteSlice: return "write_slice";
    case ExprKind::Constant: return "a literal";
    default: return "an expression";
  }
}

std::optional<std::string> refusal(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Unary:
      if (e.unary == UnaryKind::Neg && typeOf(e).dtype == DType::Bool) return "`neg` of bools has no ONNX form";
      return std::nullopt;
    case ExprKind::Binary:
      if (!onnxBinary(e.binary, typeOf(*e.operand(0)).dtype))
        return fmt::format("`{}` on {} has no ONNX form in opset {} (integer division and remainder define "
                           "division by zero, bitwise ops on integers and shifts need newer or unsigned ops)",
                           sema::name(e.binary), name(typeOf(*e.operand(0)).dtype), kOpset);
      return std::nullopt;
    case ExprKind::WriteSlice: {
      const elab::TensorType &dest = typeOf(*e.operand(0)), &x = typeOf(*e.operand(1));
      for (int k = 0; k < dest.rank(); ++k)
        if (k != e.ints[0] && (x.rank() != dest.rank() || x.shape[k] != dest.shape[k]))
          return fmt::format("`write_slice` of {} into {}: only a slice that matches the destination but along "
                             "the axis is exported", x.str(), dest.str());
      return std::nullopt;
    }
    case ExprKind::WritePoints:
      return "`write_points` (a scatter into rows and positions that drops points outside) is not exported to "
             "ONNX yet";
    case ExprKind::ScatterRows: return "a derived gradient's scatter of rows is not exported to ONNX";
    case ExprKind::AttentionRows: case ExprKind::AttentionGrad:
      return "a derived gradient's attention kernels are not exported to ONNX";
    default: return std::nullopt;
  }
}

std::string emit(GraphBuilder& g, const Expr& e, const std::vector<std::string>& o) {
  const elab::TensorType& type = typeOf(e);
  switch (e.kind) {
    case ExprKind::Constant:
      return isFloat(type.dtype) ? g.scalar(type.dtype, e.number) : g.integerScalar(type.dtype, e.integer);
    case ExprKind::Unary: return emitUnary(g, e, o[0]);
    case ExprKind::Binary: return emitBinary(g, e, o[0], o[1]);
    case ExprKind::Select: return g.op("Where", {o[0], o[1], o[2]});
    case ExprKind::Cast: return cast(g, o[0], typeOf(*e.operand(0)).dtype, type.dtype);
    case ExprKind::Broadcast: return g.op("Expand", {o[0], g.int64s(type.shape)});
    case ExprKind::Reshape: return reshape(g, o[0], type.shape);
    case ExprKind::Permute:
      return g.opWith("Transpose", {o[0]}, {}, [&](onnx::NodeProto& n) { setInts(n, "perm", e.ints); });
    case ExprKind::Concat:
      return g.opWith("Concat", o, {}, [&](onnx::NodeProto& n) { setInt(n, "axis", e.ints[0]); });
    case ExprKind::Iota: {  // a Range (its length a constant the dynamic axes can compute), stretched
      const int axis = static_cast<int>(e.ints[0]);
      std::vector<int64_t> line(type.shape.size(), 1);
      line[axis] = type.shape[axis];
      std::string values = cast(g, arange(g, type.shape[axis]), DType::I64, type.dtype);
      return g.op("Expand", {reshape(g, values, line), g.int64s(type.shape)});
    }
    case ExprKind::Matmul: return g.op("MatMul", {o[0], o[1]});
    case ExprKind::Reduce: return emitReduce(g, e, o[0]);
    case ExprKind::GatherRows: {
      const elab::TensorType& table = typeOf(*e.operand(0));
      std::string ids = clampedIndex(g, o[1], typeOf(*e.operand(1)).dtype, table.shape[0]);
      return g.opWith("Gather", {o[0], ids}, {}, [&](onnx::NodeProto& n) { setInt(n, "axis", 0); });
    }
    case ExprKind::Slice: return emitSlice(g, e, o);
    case ExprKind::Gather: return emitGather(g, e, o);
    case ExprKind::Attention: return emitAttention(g, e, o);
    case ExprKind::WriteSlice: return emitWriteSlice(g, e, o);
    case ExprKind::WritePoints: case ExprKind::ScatterRows: case ExprKind::AttentionRows: case ExprKind::AttentionGrad:
    case ExprKind::Local: case ExprKind::Self: case ExprKind::Sub: case ExprKind::Element: case ExprKind::Param:
    case ExprKind::State:
    case ExprKind::Call: case ExprKind::Tuple: case ExprKind::Some: case ExprKind::None: case ExprKind::Unwrap:
      break;
  }
  throw std::logic_error(fmt::format("internal: no ONNX emitter for {}", primitiveName(e)));
}

}  // namespace linnet::exporter::onnx_export
