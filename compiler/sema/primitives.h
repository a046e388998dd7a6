// The primitives of the language (syntax/primitives.def) and the elementwise
// kinds the backends compute: the operators of syntax/operators.def and the
// math primitives, as one enum each. Backends switch over these
// exhaustively (-Werror=switch), so a new row is reported wherever it
// still lacks a kernel or a lowering.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "syntax/ast.h"

namespace linnet::sema {

// What the `attention` primitive makes of a masked score (std.nn.attention's
// MASKED): finite, so a query that sees no key gets a uniform softmax, not
// NaN. Every backend and lowering of the primitive uses this one value.
inline constexpr double kAttentionMasked = -3.0e38;

enum class Primitive : uint8_t {
#define PRIMITIVE(Name, spelling) Name,
#include "syntax/primitives.def"
};

enum class PrimitiveClass : uint8_t { UnaryMath, BinaryMath, Reducer, Other };
// What a math primitive or reduction accepts.
enum class Operands : uint8_t { Floats, Numbers, Bools };
// A reduction's result dtype.
enum class ReduceResult : uint8_t { Same, I32, Bool };

struct PrimitiveInfo {
  const char* spelling;
  PrimitiveClass cls;
  Operands operands;     // UnaryMath, BinaryMath, Reducer
  bool call;             // callable by name (every row but the binder-only reducers)
  bool binder;           // Reducer: has the binder form `f[i] body`
  ReduceResult result;   // Reducer
};

const PrimitiveInfo& info(Primitive p);
inline const char* spelling(Primitive p) { return info(p).spelling; }
// A primitive called by name (`exp(x)`, `sum(x, axis = -1)`); nullopt for other names.
std::optional<Primitive> primitiveCalled(std::string_view name);
// A binder reduction (`sum[i] ...`, `all[i] ...`).
std::optional<Primitive> reducerNamed(std::string_view name);

// Elementwise operations of one operand: `-x`, `!x` and the unary math primitives.
enum class UnaryKind : uint8_t {
#define UNARY_OP(Name, Spelling) Name,
#include "syntax/operators.def"
#define UNARY_MATH(Name, spelling, Operands) Name,
#include "syntax/primitives.def"
};
// Elementwise operations of two operands: the binary operators and the
// binary math primitives.
enum class BinaryKind : uint8_t {
#define BINARY_OP(Name, Spelling, Precedence) Name,
#include "syntax/operators.def"
#define BINARY_MATH(Name, spelling, Operands) Name,
#include "syntax/primitives.def"
};
// Reductions, over an axis or over binders.
enum class ReduceKind : uint8_t {
#define REDUCER(Name, spelling, Call, Binder, Operands, Result) Name,
#include "syntax/primitives.def"
};

UnaryKind unaryKind(syntax::UnaryOp op);
BinaryKind binaryKind(syntax::BinaryOp op);
// The kind of a UnaryMath, BinaryMath or Reducer primitive.
UnaryKind unaryKind(Primitive p);
BinaryKind binaryKind(Primitive p);
ReduceKind reduceKind(Primitive p);

// Lower-case names, as the `linnet` dialect prints the kinds (`add`, `exp`, `index_of_max`).
const char* name(UnaryKind k);
const char* name(BinaryKind k);
const char* name(ReduceKind k);

bool isComparison(BinaryKind k);  // == != < <= > >=
bool isLogical(BinaryKind k);     // && ||

}  // namespace linnet::sema
