#include "sema/primitives.h"

#include <array>
#include <stdexcept>

namespace linnet::sema {

namespace {

constexpr PrimitiveInfo kInfo[] = {
#define UNARY_MATH(Name, spelling, Ops) \
  {spelling, PrimitiveClass::UnaryMath, Operands::Ops, true, false, ReduceResult::Same},
#define BINARY_MATH(Name, spelling, Ops) \
  {spelling, PrimitiveClass::BinaryMath, Operands::Ops, true, false, ReduceResult::Same},
#define REDUCER(Name, spelling, Call, Binder, Ops, Result) \
  {spelling, PrimitiveClass::Reducer, Operands::Ops, Call, Binder, ReduceResult::Result},
#define PRIMITIVE(Name, spelling) \
  {spelling, PrimitiveClass::Other, Operands::Numbers, true, false, ReduceResult::Same},
#include "syntax/primitives.def"
};

std::optional<Primitive> find(std::string_view name) {
  for (size_t i = 0; i < std::size(kInfo); ++i)
    if (name == kInfo[i].spelling) return static_cast<Primitive>(i);
  return std::nullopt;
}

[[noreturn]] void notOfClass(Primitive p, const char* what) {
  throw std::logic_error(std::string("primitive `") + spelling(p) + "` is not " + what);
}

}  // namespace

const PrimitiveInfo& info(Primitive p) { return kInfo[static_cast<size_t>(p)]; }

std::optional<Primitive> primitiveCalled(std::string_view name) {
  auto p = find(name);
  if (p && !info(*p).call) return std::nullopt;
  return p;
}

std::optional<Primitive> reducerNamed(std::string_view name) {
  auto p = find(name);
  if (p && !info(*p).binder) return std::nullopt;
  return p;
}

UnaryKind unaryKind(syntax::UnaryOp op) {
  switch (op) {
#define UNARY_OP(Name, Spelling) \
  case syntax::UnaryOp::Name:    \
    return UnaryKind::Name;
#include "syntax/operators.def"
  }
  throw std::logic_error("unary operator out of range");
}

BinaryKind binaryKind(syntax::BinaryOp op) {
  switch (op) {
#define BINARY_OP(Name, Spelling, Precedence) \
  case syntax::BinaryOp::Name:                \
    return BinaryKind::Name;
#include "syntax/operators.def"
  }
  throw std::logic_error("binary operator out of range");
}

UnaryKind unaryKind(Primitive p) {
  switch (p) {
#define UNARY_MATH(Name, spelling, Operands) \
  case Primitive::Name:                      \
    return UnaryKind::Name;
#include "syntax/primitives.def"
    default: notOfClass(p, "a unary math primitive");
  }
}

BinaryKind binaryKind(Primitive p) {
  switch (p) {
#define BINARY_MATH(Name, spelling, Operands) \
  case Primitive::Name:                       \
    return BinaryKind::Name;
#include "syntax/primitives.def"
    default: notOfClass(p, "a binary math primitive");
  }
}

ReduceKind reduceKind(Primitive p) {
  switch (p) {
#define REDUCER(Name, spelling, Call, Binder, Operands, Result) \
  case Primitive::Name:                                 \
    return ReduceKind::Name;
#include "syntax/primitives.def"
    default: notOfClass(p, "a reduction");
  }
}

const char* name(UnaryKind k) {
  switch (k) {
    case UnaryKind::Neg: return "neg";
    case UnaryKind::Not: return "not";
#define UNARY_MATH(Name, spelling, Operands) \
  case UnaryKind::Name:                      \
    return spelling;
#include "syntax/primitives.def"
  }
  throw std::logic_error("unary kind out of range");
}

const char* name(BinaryKind k) {
  switch (k) {
    case BinaryKind::Or: return "or";
    case BinaryKind::And: return "and";
    case BinaryKind::BitOr: return "bit_or";
    case BinaryKind::BitXor: return "bit_xor";
    case BinaryKind::BitAnd: return "bit_and";
    case BinaryKind::Eq: return "eq";
    case BinaryKind::Ne: return "ne";
    case BinaryKind::Lt: return "lt";
    case BinaryKind::Le: return "le";
    case BinaryKind::Gt: return "gt";
    case BinaryKind::Ge: return "ge";
    case BinaryKind::Shl: return "shl";
    case BinaryKind::Shr: return "shr";
    case BinaryKind::Add: return "add";
    case BinaryKind::Sub: return "sub";
    case BinaryKind::Mul: return "mul";
    case BinaryKind::Div: return "div";
    case BinaryKind::Rem: return "rem";
#define BINARY_MATH(Name, spelling, Operands) \
  case BinaryKind::Name:                      \
    return spelling;
#include "syntax/primitives.def"
  }
  throw std::logic_error("binary kind out of range");
}

const char* name(ReduceKind k) {
  switch (k) {
#define REDUCER(Name, spelling, Call, Binder, Operands, Result) \
  case ReduceKind::Name:                                \
    return spelling;
#include "syntax/primitives.def"
  }
  throw std::logic_error("reduce kind out of range");
}

bool isComparison(BinaryKind k) {
  return k == BinaryKind::Eq || k == BinaryKind::Ne || k == BinaryKind::Lt ||
         k == BinaryKind::Le || k == BinaryKind::Gt || k == BinaryKind::Ge;
}

bool isLogical(BinaryKind k) { return k == BinaryKind::Or || k == BinaryKind::And; }

}  // namespace linnet::sema
