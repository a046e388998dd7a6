// The chat-template parser's expressions: tuples, conditionals, the operator
// precedence levels, primaries, subscripts and slices, calls, filters and tests.
#include "chat/parser_impl.h"

namespace linnet::chat::detail {

namespace {

ExprPtr makeExpr(ExprKind k, size_t offset) {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->offset = offset;
  return e;
}

}  // namespace

bool Parser::isTupleEnd(const std::vector<std::string>& extraEnd) const {
  const Token& t = cur();
  if (t.type == Tok::VarEnd || t.type == Tok::BlockEnd || t.type == Tok::Eof) return true;
  if (t.type == Tok::Op && t.text == ")") return true;
  if (t.type == Tok::Name && std::find(extraEnd.begin(), extraEnd.end(), t.text) != extraEnd.end()) return true;
  return false;
}

ExprPtr Parser::parseTuple(bool withCond, const std::vector<std::string>& extraEnd, bool explicitParens) {
  size_t off = cur().offset;
  std::vector<ExprPtr> items;
  bool isTuple = false;
  while (true) {
    if (!items.empty()) expectOp(",");
    if (isTupleEnd(extraEnd)) break;
    items.push_back(withCond ? parseExpression(true) : parseOr());
    if (isOp(",")) {
      isTuple = true;
    } else {
      break;
    }
  }
  if (!isTuple) {
    if (items.size() == 1) return std::move(items[0]);
    if (!explicitParens) fail(cur().offset, "expected an expression, got " + describe(cur()));
  }
  auto e = makeExpr(ExprKind::Tuple, off);
  e->children = std::move(items);
  return e;
}

ExprPtr Parser::parseExpression(bool withCond) {
  DepthGuard g(*this, cur().offset);
  return withCond ? parseCondExpr() : parseOr();
}

ExprPtr Parser::parseCondExpr() {
  size_t off = cur().offset;
  ExprPtr e1 = parseOr();
  while (skipName("if")) {
    ExprPtr e2 = parseOr();
    ExprPtr e3;
    if (skipName("else")) {
      DepthGuard g(*this, cur().offset);
      e3 = parseCondExpr();
    }
    auto c = makeExpr(ExprKind::CondExpr, off);
    c->a = std::move(e2);
    c->b = std::move(e1);
    c->c = std::move(e3);
    e1 = std::move(c);
  }
  return e1;
}

ExprPtr Parser::parseOr() {
  ExprPtr left = parseAnd();
  while (isName("or")) {
    size_t off = cur().offset;
    next();
    auto e = makeExpr(ExprKind::Or, off);
    e->a = std::move(left);
    e->b = parseAnd();
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parseAnd() {
  ExprPtr left = parseNot();
  while (isName("and")) {
    size_t off = cur().offset;
    next();
    auto e = makeExpr(ExprKind::And, off);
    e->a = std::move(left);
    e->b = parseNot();
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parseNot() {
  if (isName("not")) {
    size_t off = cur().offset;
    DepthGuard g(*this, off);
    next();
    auto e = makeExpr(ExprKind::Not, off);
    e->a = parseNot();
    return e;
  }
  return parseCompare();
}

ExprPtr Parser::parseCompare() {
  size_t off = cur().offset;
  ExprPtr first = parseMath1();
  std::vector<std::string> ops;
  std::vector<ExprPtr> operands;
  while (true) {
    const Token& t = cur();
    if (t.type == Tok::Op &&
        (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=")) {
      ops.push_back(t.text);
      next();
    } else if (isName("in")) {
      ops.push_back("in");
      next();
    } else if (isName("not") && peek().type == Tok::Name && peek().text == "in") {
      ops.push_back("notin");
      next();
      next();
    } else {
      break;
    }
    operands.push_back(parseMath1());
  }
  if (ops.empty()) return first;
  auto e = makeExpr(ExprKind::Compare, off);
  e->a = std::move(first);
  e->ops = std::move(ops);
  e->children = std::move(operands);
  return e;
}

ExprPtr Parser::binary(const std::string& op, ExprPtr l, ExprPtr r, size_t off) {
  auto e = makeExpr(ExprKind::Binary, off);
  e->name = op;
  e->a = std::move(l);
  e->b = std::move(r);
  return e;
}

ExprPtr Parser::parseMath1() {
  ExprPtr left = parseConcat();
  while (isOp("+") || isOp("-")) {
    std::string op = cur().text;
    size_t off = cur().offset;
    next();
    left = binary(op, std::move(left), parseConcat(), off);
  }
  return left;
}

ExprPtr Parser::parseConcat() {
  ExprPtr left = parseMath2();
  while (isOp("~")) {
    size_t off = cur().offset;
    next();
    left = binary("~", std::move(left), parseMath2(), off);
  }
  return left;
}

ExprPtr Parser::parseMath2() {
  ExprPtr left = parsePow();
  while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
    std::string op = cur().text;
    size_t off = cur().offset;
    next();
    left = binary(op, std::move(left), parsePow(), off);
  }
  return left;
}

ExprPtr Parser::parsePow() {
  ExprPtr left = parseUnary(true);
  while (isOp("**")) {
    size_t off = cur().offset;
    next();
    left = binary("**", std::move(left), parseUnary(true), off);
  }
  return left;
}

ExprPtr Parser::parseUnary(bool withFilter) {
  size_t off = cur().offset;
  DepthGuard g(*this, off);
  ExprPtr node;
  if (isOp("-") || isOp("+")) {
    std::string op = cur().text;
    next();
    node = makeExpr(ExprKind::Unary, off);
    node->name = op;
    node->a = parseUnary(false);
  } else {
    node = parsePrimary();
  }
  node = parsePostfix(std::move(node));
  if (withFilter) node = parseFilterExpr(std::move(node));
  return node;
}

ExprPtr Parser::parsePrimary() {
  const Token& t = cur();
  size_t off = t.offset;
  switch (t.type) {
    case Tok::Name: {
      auto e = makeExpr(ExprKind::Const, off);
      if (t.text == "true" || t.text == "True") {
        e->value = Value::boolean(true);
      } else if (t.text == "false" || t.text == "False") {
        e->value = Value::boolean(false);
      } else if (t.text == "none" || t.text == "None") {
        e->value = Value::none();
      } else {
        e->kind = ExprKind::Name;
        e->name = t.text;
      }
      next();
      return e;
    }
    case Tok::String: {
      std::string s;
      while (cur().type == Tok::String) {
        s += cur().text;
        next();
      }
      auto e = makeExpr(ExprKind::Const, off);
      e->value = Value::string(std::move(s));
      return e;
    }
    case Tok::Int: {
      auto e = makeExpr(ExprKind::Const, off);
      e->value = Value::integer(t.ival);
      next();
      return e;
    }
    case Tok::Float: {
      auto e = makeExpr(ExprKind::Const, off);
      e->value = Value::floating(t.fval);
      next();
      return e;
    }
    case Tok::Op: {
      if (t.text == "(") {
        next();
        ExprPtr e = parseTuple(true, {}, true);
        expectOp(")", "to close the parenthesis");
        return e;
      }
      if (t.text == "[") return parseList();
      if (t.text == "{") return parseDict();
      break;
    }
    default: break;
  }
  fail(off, "expected an expression, got " + describe(t));
}

ExprPtr Parser::parseList() {
  auto e = makeExpr(ExprKind::List, cur().offset);
  next();
  while (!isOp("]")) {
    if (!e->children.empty()) expectOp(",", "between list items");
    if (isOp("]")) break;
    e->children.push_back(parseExpression(true));
  }
  next();
  return e;
}

ExprPtr Parser::parseDict() {
  auto e = makeExpr(ExprKind::Dict, cur().offset);
  next();
  while (!isOp("}")) {
    if (!e->children.empty()) expectOp(",", "between dict items");
    if (isOp("}")) break;
    e->children.push_back(parseExpression(true));
    expectOp(":", "after a dict key");
    e->children.push_back(parseExpression(true));
  }
  next();
  return e;
}

ExprPtr Parser::parsePostfix(ExprPtr node) {
  while (true) {
    if (isOp(".") || isOp("[")) {
      node = parseSubscript(std::move(node));
    } else if (isOp("(")) {
      node = parseCall(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parseFilterExpr(ExprPtr node) {
  while (true) {
    if (isOp("|")) {
      node = parseFilter(std::move(node));
    } else if (isName("is")) {
      node = parseTest(std::move(node));
    } else if (isOp("(")) {
      node = parseCall(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parseSubscript(ExprPtr node) {
  size_t off = cur().offset;
  if (skipOp(".")) {
    if (cur().type == Tok::Name) {
      auto e = makeExpr(ExprKind::Getattr, off);
      e->a = std::move(node);
      e->name = cur().text;
      next();
      return e;
    }
    if (cur().type == Tok::Int) {
      auto e = makeExpr(ExprKind::Getitem, off);
      e->a = std::move(node);
      e->b = makeExpr(ExprKind::Const, cur().offset);
      e->b->value = Value::integer(cur().ival);
      next();
      return e;
    }
    fail(cur().offset, "expected an attribute name after '.', got " + describe(cur()));
  }
  next();  // [
  std::vector<ExprPtr> args;
  size_t slices = 0;
  while (!isOp("]")) {
    if (!args.empty()) expectOp(",", "between subscripts");
    if (isOp("]")) break;
    bool isSlice = false;
    args.push_back(parseSubscribed(isSlice));
    if (isSlice) ++slices;
  }
  next();  // ]  (x[] indexes with an empty tuple, as in jinja2)
  if (args.size() == 1 && slices == 1) {
    args[0]->a = std::move(node);
    return std::move(args[0]);
  }
  if (slices) fail(off, "multi-dimensional slicing is not supported");
  auto e = makeExpr(ExprKind::Getitem, off);
  e->a = std::move(node);
  if (args.size() == 1) {
    e->b = std::move(args[0]);
  } else {
    auto t = makeExpr(ExprKind::Tuple, off);
    t->children = std::move(args);
    e->b = std::move(t);
  }
  return e;
}

// An index expression or a slice (returned as a Slice node without its object).
ExprPtr Parser::parseSubscribed(bool& isSlice) {
  isSlice = false;
  size_t off = cur().offset;
  std::vector<ExprPtr> parts;
  if (skipOp(":")) {
    parts.push_back(nullptr);
  } else {
    ExprPtr node = parseExpression(true);
    if (!isOp(":")) return node;
    next();
    parts.push_back(std::move(node));
  }
  if (isOp(":") || isOp("]") || isOp(",")) {
    parts.push_back(nullptr);
  } else {
    parts.push_back(parseExpression(true));
  }
  if (skipOp(":")) {
    if (isOp("]") || isOp(","))
      parts.push_back(nullptr);
    else
      parts.push_back(parseExpression(true));
  } else {
    parts.push_back(nullptr);
  }
  auto e = makeExpr(ExprKind::Slice, off);
  e->children = std::move(parts);
  isSlice = true;
  return e;
}

void Parser::parseCallArgs(Expr& e) {
  expectOp("(");
  while (!isOp(")")) {
    if (!e.children.empty() || !e.kwargs.empty()) expectOp(",", "between arguments");
    if (isOp(")")) break;
    if (isOp("*") || isOp("**")) fail(cur().offset, "*args and **kwargs in calls are not supported by this engine");
    if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
      std::string key = cur().text;
      next();
      next();
      e.kwargs.emplace_back(key, parseExpression(true));
    } else {
      if (!e.kwargs.empty()) fail(cur().offset, "positional argument follows keyword argument");
      e.children.push_back(parseExpression(true));
    }
  }
  next();  // )
}

ExprPtr Parser::parseCall(ExprPtr node) {
  auto e = makeExpr(ExprKind::Call, cur().offset);
  e->a = std::move(node);
  parseCallArgs(*e);
  return e;
}

std::string Parser::parseDottedName(const char* what) {
  std::string n = expectName(what);
  while (isOp(".") && peek().type == Tok::Name) {
    next();
    n += "." + cur().text;
    next();
  }
  return n;
}

ExprPtr Parser::parseFilter(ExprPtr node) {
  size_t off = cur().offset;
  next();  // |
  auto e = makeExpr(ExprKind::Filter, off);
  e->a = std::move(node);
  e->name = parseDottedName("a filter name");
  if (isOp("(")) parseCallArgs(*e);
  return e;
}

// For {% set x | f %} and {% filter f | g %}: a chain of filters whose
// innermost input is null (the block's rendered body).
ExprPtr Parser::parseFilterChain(ExprPtr input, bool leadingPipe) {
  ExprPtr node = std::move(input);
  bool first = true;
  while (isOp("|") || (first && !leadingPipe)) {
    size_t off = cur().offset;
    if (isOp("|")) next();
    first = false;
    auto e = makeExpr(ExprKind::Filter, off);
    e->a = std::move(node);
    e->name = parseDottedName("a filter name");
    if (isOp("(")) parseCallArgs(*e);
    node = std::move(e);
  }
  return node;
}

ExprPtr Parser::parseTest(ExprPtr node) {
  size_t off = cur().offset;
  next();  // is
  auto e = makeExpr(ExprKind::Test, off);
  e->a = std::move(node);
  e->negated = skipName("not");
  e->name = parseDottedName("a test name");
  const Token& t = cur();
  if (isOp("(")) {
    parseCallArgs(*e);
  } else if ((t.type == Tok::Name || t.type == Tok::String || t.type == Tok::Int || t.type == Tok::Float ||
              (t.type == Tok::Op && (t.text == "(" || t.text == "[" || t.text == "{"))) &&
             !(t.type == Tok::Name && (t.text == "else" || t.text == "or" || t.text == "and"))) {
    if (t.type == Tok::Name && t.text == "is") fail(t.offset, "you cannot chain multiple tests with 'is'");
    DepthGuard g(*this, t.offset);
    ExprPtr arg = parsePrimary();
    arg = parsePostfix(std::move(arg));
    e->children.push_back(std::move(arg));
  }
  return e;
}

}  // namespace linnet::chat::detail
