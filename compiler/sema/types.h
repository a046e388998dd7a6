// The checker's types: element types (dtypes), shapes made of symbolic
// dimensions and dimension packs, and the types of values, tuples, options
// and sub-blocks.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "sema/dims/expr.h"

namespace linnet::syntax {
struct BlockDecl;
}

namespace linnet::sema {

// A concrete element type: the enum compiler and runtime share (common/dtype.h).
using Scalar = linnet::DType;
using linnet::byteSize;
using linnet::isFloat;
using linnet::isInt;
using linnet::name;
// The language's dtype of that name (f32, bf16, f16, i32, i64, bool).
inline std::optional<Scalar> scalarNamed(std::string_view n) { return linnet::languageDTypeNamed(n); }

// An element type: a concrete scalar, a generic parameter (`T`), or the weak
// type of a literal or a dimension used as a value, which takes the other
// operand's type.
struct DType {
  enum Kind { Concrete, Param, WeakInt, WeakFloat, WeakBool, Error } kind = Error;
  Scalar scalar = Scalar::F32;
  std::string param;     // Param: the generic's name
  std::string paramKind;  // Param: Float, Int or DType

  static DType concrete(Scalar s) { return {Concrete, s, {}, {}}; }
  static DType generic(std::string name, std::string kind) {
    return {Param, Scalar::F32, std::move(name), std::move(kind)};
  }
  static DType weakInt() { return {WeakInt, Scalar::I64, {}, {}}; }
  static DType weakFloat() { return {WeakFloat, Scalar::F32, {}, {}}; }
  static DType error() { return {}; }

  bool isWeak() const { return kind == WeakInt || kind == WeakFloat || kind == WeakBool; }
  // What a value of this type may be used as: float-like, int-like, bool.
  bool floatLike() const;
  bool intLike() const;
  bool boolLike() const;
  bool operator==(const DType& o) const;
  std::string str() const;
};

// One entry of a shape: a dimension, or `..L`, the dimensions of a pack.
struct Dim {
  dims::Expr expr;
  std::string pack;  // non-empty: a pack spread
  bool isPack() const { return !pack.empty(); }
  static Dim of(dims::Expr e) { return {std::move(e), {}}; }
  static Dim spread(std::string p) { return {dims::Expr(), std::move(p)}; }
};
using Shape = std::vector<Dim>;

std::string str(const Shape& shape);
bool hasPack(const Shape& shape);
// The product of all dimensions, packs as `prod(L)` atoms.
dims::Expr elementCount(const Shape& shape);

struct BlockInstance;

struct Type {
  enum Kind { Error, Unit, Tensor, Tuple, Option, None, Block, BlockArray } kind = Error;
  Shape shape;              // Tensor (empty: a scalar)
  DType dtype;              // Tensor
  std::vector<Type> elems;  // Tuple; Option's element is elems[0]
  const syntax::BlockDecl* block = nullptr;  // Block, BlockArray
  std::map<std::string, dims::Expr> blockDims;       // Block: its generic arguments
  std::map<std::string, Shape> blockPacks;
  std::map<std::string, DType> blockDTypes;
  dims::Expr count;  // BlockArray

  static Type error() { return {}; }
  static Type unit() { Type t; t.kind = Unit; return t; }
  static Type tensor(Shape s, DType d) {
    Type t;
    t.kind = Tensor;
    t.shape = std::move(s);
    t.dtype = std::move(d);
    return t;
  }
  static Type scalar(DType d) { return tensor({}, std::move(d)); }
  bool isError() const;  // also true when any part is an error
  bool isScalar() const { return kind == Tensor && shape.empty(); }
  std::string str() const;
};

// What a generic's parameters are bound to at one use.
struct Bindings {
  std::map<std::string, dims::Expr> dims;
  std::map<std::string, Shape> packs;
  std::map<std::string, DType> dtypes;
  // A stable rendering, used as a memo key and in messages.
  std::string key() const;
  bool concrete() const;  // every dimension a number, no pack or dtype left generic
};

Shape substitute(const Shape& shape, const Bindings& b);
DType substitute(const DType& d, const Bindings& b);
Type substitute(const Type& t, const Bindings& b);

}  // namespace linnet::sema
