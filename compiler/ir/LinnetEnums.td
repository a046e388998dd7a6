// The kinds of the elementwise and reduction ops, as enum attributes. The
// symbols are those of sema's UnaryKind, BinaryKind and ReduceKind (from
// syntax/operators.def and syntax/primitives.def): MLIRGen maps one onto the
// other case by case, so a kind missing here fails the build there, and
// the lowering switches over these exhaustively.
#ifndef LINNET_ENUMS_TD
#define LINNET_ENUMS_TD

include "mlir/IR/EnumAttr.td"

def Linnet_UnaryKind : I32EnumAttr<"UnaryKind", "elementwise operation of one operand", [
    I32EnumAttrCase<"Neg", 0, "neg">, I32EnumAttrCase<"Not", 1, "not">,
    I32EnumAttrCase<"Exp", 2, "exp">, I32EnumAttrCase<"Log", 3, "log">,
    I32EnumAttrCase<"Sin", 4, "sin">, I32EnumAttrCase<"Cos", 5, "cos">,
    I32EnumAttrCase<"Tanh", 6, "tanh">, I32EnumAttrCase<"Sqrt", 7, "sqrt">,
    I32EnumAttrCase<"Rsqrt", 8, "rsqrt">, I32EnumAttrCase<"Sigmoid", 9, "sigmoid">,
    I32EnumAttrCase<"Abs", 10, "abs">, I32EnumAttrCase<"Floor", 11, "floor">,
    I32EnumAttrCase<"Erf", 12, "erf">]> {
  let cppNamespace = "::linnet::ir";
}

def Linnet_BinaryKind : I32EnumAttr<"BinaryKind", "elementwise operation of two operands", [
    I32EnumAttrCase<"Or", 0, "or">, I32EnumAttrCase<"And", 1, "and">,
    I32EnumAttrCase<"BitOr", 2, "bit_or">, I32EnumAttrCase<"BitXor", 3, "bit_xor">,
    I32EnumAttrCase<"BitAnd", 4, "bit_and">, I32EnumAttrCase<"Eq", 5, "eq">,
    I32EnumAttrCase<"Ne", 6, "ne">, I32EnumAttrCase<"Lt", 7, "lt">,
    I32EnumAttrCase<"Le", 8, "le">, I32EnumAttrCase<"Gt", 9, "gt">,
    I32EnumAttrCase<"Ge", 10, "ge">, I32EnumAttrCase<"Shl", 11, "shl">,
    I32EnumAttrCase<"Shr", 12, "shr">, I32EnumAttrCase<"Add", 13, "add">,
    I32EnumAttrCase<"Sub", 14, "sub">, I32EnumAttrCase<"Mul", 15, "mul">,
    I32EnumAttrCase<"Div", 16, "div">, I32EnumAttrCase<"Rem", 17, "rem">,
    I32EnumAttrCase<"Maximum", 18, "maximum">, I32EnumAttrCase<"Minimum", 19, "minimum">,
    I32EnumAttrCase<"Pow", 20, "pow">]> {
  let cppNamespace = "::linnet::ir";
}

def Linnet_ReduceKind : I32EnumAttr<"ReduceKind", "reduction", [
    I32EnumAttrCase<"Sum", 0, "sum">, I32EnumAttrCase<"Mean", 1, "mean">,
    I32EnumAttrCase<"Max", 2, "max">, I32EnumAttrCase<"Min", 3, "min">,
    I32EnumAttrCase<"IndexOfMax", 4, "index_of_max">, I32EnumAttrCase<"Prod", 5, "prod">,
    I32EnumAttrCase<"All", 6, "all">, I32EnumAttrCase<"Any", 7, "any">]> {
  let cppNamespace = "::linnet::ir";
}

#endif  // LINNET_ENUMS_TD
