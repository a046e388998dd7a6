#include "sema/types.h"

#include <fmt/format.h>

#include "syntax/ast.h"

namespace linnet::sema {

bool DType::floatLike() const {
  switch (kind) {
    case Concrete: return isFloat(scalar);
    case Param: return paramKind == "Float";
    case WeakFloat: case WeakInt: return true;  // an integer literal may stand for a float
    default: return false;
  }
}
bool DType::intLike() const {
  switch (kind) {
    case Concrete: return isInt(scalar);
    case Param: return paramKind == "Int";
    case WeakInt: return true;
    default: return false;
  }
}
bool DType::boolLike() const {
  return (kind == Concrete && scalar == Scalar::Bool) || kind == WeakBool;
}

bool DType::operator==(const DType& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Concrete: return scalar == o.scalar;
    case Param: return param == o.param;
    default: return true;
  }
}

std::string DType::str() const {
  switch (kind) {
    case Concrete: return name(scalar);
    case Param: return param;
    case WeakInt: return "integer literal";
    case WeakFloat: return "float literal";
    case WeakBool: return "bool";
    case Error: return "<error>";
  }
  return "?";
}

std::string str(const Shape& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += shape[i].isPack() ? ".." + shape[i].pack : shape[i].expr.str();
  }
  return out;
}

bool hasPack(const Shape& shape) {
  for (const Dim& d : shape)
    if (d.isPack()) return true;
  return false;
}

dims::Expr elementCount(const Shape& shape) {
  dims::Expr count = dims::Expr::constant(1);
  for (const Dim& d : shape)
    count = count * (d.isPack() ? dims::Expr::packProduct(d.pack) : d.expr);
  return count;
}

bool Type::isError() const {
  switch (kind) {
    case Error: return true;
    case Tensor: return dtype.kind == DType::Error;
    case Tuple: case Option:
      for (const Type& e : elems)
        if (e.isError()) return true;
      return false;
    default: return false;
  }
}

std::string Type::str() const {
  switch (kind) {
    case Error: return "<error>";
    case Unit: return "()";
    case None: return "none";
    case Tensor:
      if (shape.empty() && dtype.kind != DType::Param) return dtype.str();
      return fmt::format("Tensor[{}; {}]", sema::str(shape), dtype.str());
    case Tuple: {
      std::string out = "(";
      for (size_t i = 0; i < elems.size(); ++i) out += (i ? ", " : "") + elems[i].str();
      return out + ")";
    }
    case Option: return "Option<" + elems[0].str() + ">";
    case Block: case BlockArray: {
      std::string args;
      for (const auto& g : block->generics) {
        const std::string& n = g.name.name;
        std::string v;
        if (auto it = blockDims.find(n); it != blockDims.end()) v = it->second.str();
        else if (auto it = blockDTypes.find(n); it != blockDTypes.end()) v = it->second.str();
        else if (auto it = blockPacks.find(n); it != blockPacks.end()) v = "[" + sema::str(it->second) + "]";
        args += (args.empty() ? "" : ", ") + v;
      }
      std::string one = fmt::format("{}<{}>", block->name.name, args);
      return kind == Block ? one : fmt::format("[{}; {}]", one, count.str());
    }
  }
  return "?";
}

std::string Bindings::key() const {
  std::string out;
  for (const auto& [n, e] : this->dims) out += n + "=" + e.str() + ";";
  for (const auto& [n, s] : packs) out += n + "=[" + str(s) + "];";
  for (const auto& [n, d] : dtypes) out += n + "=" + d.str() + ";";
  return out;
}

bool Bindings::concrete() const {
  for (const auto& [n, e] : this->dims)
    if (!e.isConstant()) return false;
  for (const auto& [n, s] : packs)
    for (const Dim& d : s)
      if (d.isPack() || !d.expr.isConstant()) return false;
  for (const auto& [n, d] : dtypes)
    if (d.kind != DType::Concrete) return false;
  return true;
}

Shape substitute(const Shape& shape, const Bindings& b) {
  Shape out;
  for (const Dim& d : shape) {
    if (d.isPack()) {
      auto it = b.packs.find(d.pack);
      if (it == b.packs.end()) {
        out.push_back(d);
      } else {
        out.insert(out.end(), it->second.begin(), it->second.end());
      }
    } else {
      out.push_back(Dim::of(d.expr.substitute(b.dims)));
    }
  }
  return out;
}

DType substitute(const DType& d, const Bindings& b) {
  if (d.kind != DType::Param) return d;
  auto it = b.dtypes.find(d.param);
  return it == b.dtypes.end() ? d : it->second;
}

Type substitute(const Type& t, const Bindings& b) {
  Type out = t;
  switch (t.kind) {
    case Type::Tensor:
      out.shape = substitute(t.shape, b);
      out.dtype = substitute(t.dtype, b);
      break;
    case Type::Tuple: case Type::Option:
      for (Type& e : out.elems) e = substitute(e, b);
      break;
    case Type::Block: case Type::BlockArray:
      for (auto& [n, e] : out.blockDims) e = e.substitute(b.dims);
      for (auto& [n, s] : out.blockPacks) s = substitute(s, b);
      for (auto& [n, d] : out.blockDTypes) d = substitute(d, b);
      out.count = t.count.substitute(b.dims);
      break;
    default:
      break;
  }
  return out;
}

}  // namespace linnet::sema
