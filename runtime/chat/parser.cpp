#include "chat/parser.h"

#include <algorithm>
#include <unordered_map>

#include "chat/errors.h"

namespace linnet::chat::detail {

namespace {

ExprPtr makeExpr(ExprKind k, size_t offset) {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->offset = offset;
  return e;
}

StmtPtr makeStmt(StmtKind k, size_t offset) {
  auto s = std::make_unique<Stmt>();
  s->kind = k;
  s->offset = offset;
  return s;
}

std::string joinQuoted(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

class Parser {
 public:
  Parser(const std::vector<Token>& toks, const std::string& name, const SourceMap& map)
      : t_(toks), name_(name), map_(map) {}

  Body parse() {
    Body body = subparse({});
    return body;
  }

 private:
  struct OpenBlock {
    std::string tag;
    size_t offset;
  };

  const std::vector<Token>& t_;
  const std::string& name_;
  const SourceMap& map_;
  size_t i_ = 0;
  size_t depth_ = 0;
  int loopDepth_ = 0;
  std::vector<OpenBlock> open_;
  std::unordered_map<size_t, size_t> tagStarts_;  // statement name offset -> its '{%' offset

  struct DepthGuard {
    Parser& p;
    DepthGuard(Parser& parser, size_t offset) : p(parser) {
      if (++p.depth_ > kMaxParseDepth) p.fail(offset, "template nested too deeply (more than " +
                                                          std::to_string(kMaxParseDepth) + " levels)");
    }
    ~DepthGuard() { --p.depth_; }
  };

  [[noreturn]] void fail(size_t offset, const std::string& msg) const {
    size_t line, col;
    map_.location(offset, line, col);
    throw TemplateSyntaxError(name_, line, col, msg);
  }

  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool isOp(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
  bool isName(const char* n) const { return cur().type == Tok::Name && cur().text == n; }
  bool skipOp(const char* op) {
    if (!isOp(op)) return false;
    next();
    return true;
  }
  bool skipName(const char* n) {
    if (!isName(n)) return false;
    next();
    return true;
  }

  std::string describe(const Token& t) const {
    switch (t.type) {
      case Tok::Name: return "'" + t.text + "'";
      case Tok::Op: return "'" + t.text + "'";
      case Tok::String: return "string literal";
      case Tok::Int: return "integer literal";
      case Tok::Float: return "float literal";
      default: return tokName(t.type);
    }
  }

  void expectOp(const char* op, const char* context = nullptr) {
    if (!isOp(op)) {
      std::string msg = std::string("expected '") + op + "'";
      if (context) msg += std::string(" ") + context;
      fail(cur().offset, msg + ", got " + describe(cur()));
    }
    next();
  }

  std::string expectName(const char* what) {
    if (cur().type != Tok::Name) fail(cur().offset, std::string("expected ") + what + ", got " + describe(cur()));
    std::string n = cur().text;
    next();
    return n;
  }

  void expectBlockEnd() {
    if (cur().type != Tok::BlockEnd)
      fail(cur().offset, "expected end of statement block '%}', got " + describe(cur()));
    next();
  }

  // ---- statements -------------------------------------------------------

  Body subparse(const std::vector<std::string>& endTags) {
    Body body;
    while (true) {
      const Token& tok = cur();
      switch (tok.type) {
        case Tok::Data: {
          auto s = makeStmt(StmtKind::Data, tok.offset);
          s->text = tok.text;
          body.push_back(std::move(s));
          next();
          break;
        }
        case Tok::VarBegin: {
          size_t off = tok.offset;
          next();
          auto s = makeStmt(StmtKind::Print, off);
          s->expr = parseTuple(true, {}, false);
          if (cur().type != Tok::VarEnd)
            fail(cur().offset, "expected end of print statement '}}', got " + describe(cur()));
          next();
          body.push_back(std::move(s));
          break;
        }
        case Tok::BlockBegin: {
          const size_t tagStart = tok.offset;
          next();
          tagStarts_[cur().offset] = tagStart;
          if (cur().type == Tok::Name &&
              std::find(endTags.begin(), endTags.end(), cur().text) != endTags.end())
            return body;
          body.push_back(parseStatement());
          break;
        }
        case Tok::Eof: {
          if (!endTags.empty()) {
            const OpenBlock& ob = open_.back();
            size_t line, col;
            map_.location(ob.offset, line, col);
            fail(tok.offset, "unexpected end of template: expected " + joinQuoted(endTags) + " to close the '" +
                                 ob.tag + "' block opened at line " + std::to_string(line) + ", column " +
                                 std::to_string(col));
          }
          return body;
        }
        default: fail(tok.offset, "unexpected " + describe(tok));
      }
    }
  }

  StmtPtr parseStatement() {
    const Token& tok = cur();
    if (tok.type != Tok::Name) fail(tok.offset, "expected a statement name after '{%', got " + describe(tok));
    DepthGuard g(*this, tok.offset);
    const std::string n = tok.text;
    if (n == "for") return parseFor();
    if (n == "if") return parseIf();
    if (n == "set") return parseSet();
    if (n == "macro") return parseMacro();
    if (n == "with") return parseWith();
    if (n == "filter") return parseFilterBlock();
    if (n == "generation") return parseGeneration();
    if (n == "break" || n == "continue") {
      if (loopDepth_ == 0) fail(tok.offset, "'" + n + "' outside of a loop");
      auto s = makeStmt(n == "break" ? StmtKind::Break : StmtKind::Continue, tok.offset);
      next();
      expectBlockEnd();
      return s;
    }
    if (n == "block" || n == "extends" || n == "include" || n == "import" || n == "from" || n == "call" ||
        n == "do" || n == "autoescape" || n == "trans")
      fail(tok.offset, "the '" + n + "' tag is not supported by this engine");
    std::string msg = "unknown tag '" + n + "'";
    if (!open_.empty()) msg += " (the innermost open block is '" + open_.back().tag + "')";
    fail(tok.offset, msg);
  }

  // The body of a block whose tag name is at `offset`; errors about an
  // unclosed block point at the block's '{%'.
  Body parseBlockBody(const std::string& tag, size_t offset, const std::vector<std::string>& endTags) {
    auto it = tagStarts_.find(offset);
    open_.push_back({tag, it == tagStarts_.end() ? offset : it->second});
    Body b = subparse(endTags);
    open_.pop_back();
    return b;
  }

  StmtPtr parseFor() {
    auto s = makeStmt(StmtKind::For, cur().offset);
    next();
    s->target = parseAssignTarget(false);
    if (!skipName("in")) fail(cur().offset, "expected 'in' in for loop, got " + describe(cur()));
    s->expr = parseTuple(false, {"recursive"}, false);
    if (skipName("if")) s->filter = parseExpression(true);
    if (isName("recursive")) fail(cur().offset, "recursive for loops are not supported by this engine");
    expectBlockEnd();
    ++loopDepth_;
    s->body = parseBlockBody("for", s->offset, {"endfor", "else"});
    --loopDepth_;
    if (skipName("else")) {
      expectBlockEnd();
      s->elseBody = parseBlockBody("for", s->offset, {"endfor"});
    }
    next();  // endfor
    expectBlockEnd();
    return s;
  }

  StmtPtr parseIf() {
    auto s = makeStmt(StmtKind::If, cur().offset);
    next();
    while (true) {
      ExprPtr cond = parseTuple(false, {}, false);
      expectBlockEnd();
      Body body = parseBlockBody("if", s->offset, {"elif", "else", "endif"});
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (skipName("elif")) continue;
      if (skipName("else")) {
        expectBlockEnd();
        s->elseBody = parseBlockBody("if", s->offset, {"endif"});
      }
      break;
    }
    next();  // endif
    expectBlockEnd();
    return s;
  }

  StmtPtr parseSet() {
    size_t off = cur().offset;
    next();
    Target target = parseAssignTarget(true);
    if (skipOp("=")) {
      auto s = makeStmt(StmtKind::Set, off);
      s->target = std::move(target);
      s->expr = parseTuple(true, {}, false);
      expectBlockEnd();
      return s;
    }
    if (target.kind == Target::Kind::Tuple) fail(cur().offset, "expected '=' after a tuple target in 'set'");
    auto s = makeStmt(StmtKind::SetBlock, off);
    s->target = std::move(target);
    if (isOp("|")) s->expr = parseFilterChain(nullptr);
    expectBlockEnd();
    s->body = parseBlockBody("set", off, {"endset"});
    next();  // endset
    expectBlockEnd();
    return s;
  }

  StmtPtr parseMacro() {
    auto s = makeStmt(StmtKind::Macro, cur().offset);
    next();
    s->name = expectName("a macro name");
    expectOp("(", "after the macro name");
    while (!isOp(")")) {
      if (!s->params.empty()) expectOp(",", "between macro parameters");
      if (isOp(")")) break;
      MacroParam p;
      p.name = expectName("a parameter name");
      if (skipOp("=")) p.defaultValue = parseExpression(true);
      else if (!s->params.empty() && s->params.back().defaultValue)
        fail(cur().offset, "non-default argument follows default argument");
      s->params.push_back(std::move(p));
    }
    next();  // )
    expectBlockEnd();
    int savedLoop = loopDepth_;
    loopDepth_ = 0;
    s->body = parseBlockBody("macro", s->offset, {"endmacro"});
    loopDepth_ = savedLoop;
    next();  // endmacro
    expectBlockEnd();
    return s;
  }

  StmtPtr parseWith() {
    auto s = makeStmt(StmtKind::With, cur().offset);
    next();
    while (cur().type != Tok::BlockEnd) {
      if (!s->withTargets.empty()) expectOp(",", "between 'with' assignments");
      s->withTargets.push_back(parseAssignTarget(false));
      expectOp("=", "in 'with'");
      s->withValues.push_back(parseExpression(true));
    }
    expectBlockEnd();
    s->body = parseBlockBody("with", s->offset, {"endwith"});
    next();
    expectBlockEnd();
    return s;
  }

  StmtPtr parseFilterBlock() {
    auto s = makeStmt(StmtKind::FilterBlock, cur().offset);
    next();
    if (cur().type != Tok::Name) fail(cur().offset, "expected a filter name, got " + describe(cur()));
    s->expr = parseFilterChain(nullptr, /*leadingPipe=*/false);
    expectBlockEnd();
    s->body = parseBlockBody("filter", s->offset, {"endfilter"});
    next();
    expectBlockEnd();
    return s;
  }

  StmtPtr parseGeneration() {
    auto s = makeStmt(StmtKind::Scope, cur().offset);
    next();
    expectBlockEnd();
    s->body = parseBlockBody("generation", s->offset, {"endgeneration"});
    next();
    expectBlockEnd();
    return s;
  }

  // name | ns.attr | a, b | (a, b)
  Target parseAssignTarget(bool withNamespace) {
    Target t;
    t.offset = cur().offset;
    if (withNamespace && cur().type == Tok::Name && peek().type == Tok::Op && peek().text == ".") {
      t.kind = Target::Kind::NsAttr;
      t.name = cur().text;
      next();
      next();
      t.attr = expectName("an attribute name");
      return t;
    }
    std::vector<Target> items;
    bool tuple = false;
    while (true) {
      Target one;
      one.offset = cur().offset;
      if (skipOp("(")) {
        one = parseAssignTarget(false);
        expectOp(")", "to close the target");
      } else {
        one.name = expectName("a variable name");
        if (one.name == "true" || one.name == "false" || one.name == "none" || one.name == "True" ||
            one.name == "False" || one.name == "None")
          fail(one.offset, "cannot assign to '" + one.name + "'");
      }
      items.push_back(std::move(one));
      if (isOp(",")) {
        tuple = true;
        next();
        if (cur().type != Tok::Name && !isOp("(")) break;
        continue;
      }
      break;
    }
    if (!tuple) return std::move(items[0]);
    t.kind = Target::Kind::Tuple;
    t.items = std::move(items);
    return t;
  }

  // ---- expressions ------------------------------------------------------

  bool isTupleEnd(const std::vector<std::string>& extraEnd) const {
    const Token& t = cur();
    if (t.type == Tok::VarEnd || t.type == Tok::BlockEnd || t.type == Tok::Eof) return true;
    if (t.type == Tok::Op && t.text == ")") return true;
    if (t.type == Tok::Name && std::find(extraEnd.begin(), extraEnd.end(), t.text) != extraEnd.end()) return true;
    return false;
  }

  ExprPtr parseTuple(bool withCond, const std::vector<std::string>& extraEnd, bool explicitParens) {
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

  ExprPtr parseExpression(bool withCond) {
    DepthGuard g(*this, cur().offset);
    return withCond ? parseCondExpr() : parseOr();
  }

  ExprPtr parseCondExpr() {
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

  ExprPtr parseOr() {
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

  ExprPtr parseAnd() {
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

  ExprPtr parseNot() {
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

  ExprPtr parseCompare() {
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

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, size_t off) {
    auto e = makeExpr(ExprKind::Binary, off);
    e->name = op;
    e->a = std::move(l);
    e->b = std::move(r);
    return e;
  }

  ExprPtr parseMath1() {
    ExprPtr left = parseConcat();
    while (isOp("+") || isOp("-")) {
      std::string op = cur().text;
      size_t off = cur().offset;
      next();
      left = binary(op, std::move(left), parseConcat(), off);
    }
    return left;
  }

  ExprPtr parseConcat() {
    ExprPtr left = parseMath2();
    while (isOp("~")) {
      size_t off = cur().offset;
      next();
      left = binary("~", std::move(left), parseMath2(), off);
    }
    return left;
  }

  ExprPtr parseMath2() {
    ExprPtr left = parsePow();
    while (isOp("*") || isOp("/") || isOp("//") || isOp("%")) {
      std::string op = cur().text;
      size_t off = cur().offset;
      next();
      left = binary(op, std::move(left), parsePow(), off);
    }
    return left;
  }

  ExprPtr parsePow() {
    ExprPtr left = parseUnary(true);
    while (isOp("**")) {
      size_t off = cur().offset;
      next();
      left = binary("**", std::move(left), parseUnary(true), off);
    }
    return left;
  }

  ExprPtr parseUnary(bool withFilter) {
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

  ExprPtr parsePrimary() {
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

  ExprPtr parseList() {
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

  ExprPtr parseDict() {
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

  ExprPtr parsePostfix(ExprPtr node) {
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

  ExprPtr parseFilterExpr(ExprPtr node) {
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

  ExprPtr parseSubscript(ExprPtr node) {
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
  ExprPtr parseSubscribed(bool& isSlice) {
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

  void parseCallArgs(Expr& e) {
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

  ExprPtr parseCall(ExprPtr node) {
    auto e = makeExpr(ExprKind::Call, cur().offset);
    e->a = std::move(node);
    parseCallArgs(*e);
    return e;
  }

  std::string parseDottedName(const char* what) {
    std::string n = expectName(what);
    while (isOp(".") && peek().type == Tok::Name) {
      next();
      n += "." + cur().text;
      next();
    }
    return n;
  }

  ExprPtr parseFilter(ExprPtr node) {
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
  ExprPtr parseFilterChain(ExprPtr input, bool leadingPipe = true) {
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

  ExprPtr parseTest(ExprPtr node) {
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
};

}  // namespace

Body parseTemplate(const std::vector<Token>& tokens, const std::string& templateName, const SourceMap& map) {
  Parser p(tokens, templateName, map);
  return p.parse();
}

}  // namespace linnet::chat::detail

namespace linnet::chat::detail {

namespace {

// One frame's name events, in jinja2's visiting order.
class FrameScan {
 public:
  struct Event {
    std::string name;
    bool store;
    bool conditional;  // inside an if statement of this frame
  };
  std::vector<Event> events;
  std::vector<std::pair<Stmt*, bool>> children;  // child frames: (statement, isElseBody)

  void body(Body& b, bool cond) {
    for (auto& s : b) stmt(*s, cond);
  }

  void target(const Target& t, bool cond) {
    switch (t.kind) {
      case Target::Kind::Name: events.push_back({t.name, true, cond}); break;
      case Target::Kind::Tuple:
        for (const auto& x : t.items) target(x, cond);
        break;
      case Target::Kind::NsAttr: events.push_back({t.name, false, cond}); break;
    }
  }

  void expr(const Expr* e, bool cond) {
    if (!e) return;
    if (e->kind == ExprKind::Name) events.push_back({e->name, false, cond});
    expr(e->a.get(), cond);
    expr(e->b.get(), cond);
    expr(e->c.get(), cond);
    for (const auto& c : e->children) expr(c.get(), cond);
    for (const auto& kv : e->kwargs) expr(kv.second.get(), cond);
  }

  void stmt(Stmt& s, bool cond) {
    switch (s.kind) {
      case StmtKind::Data:
      case StmtKind::Break:
      case StmtKind::Continue: return;
      case StmtKind::Print: expr(s.expr.get(), cond); return;
      case StmtKind::If:
        for (auto& br : s.branches) {
          expr(br.first.get(), true);
          body(br.second, true);
        }
        body(s.elseBody, true);
        return;
      case StmtKind::For:
        expr(s.expr.get(), cond);
        children.emplace_back(&s, false);
        if (!s.elseBody.empty()) children.emplace_back(&s, true);
        return;
      case StmtKind::Set:
        expr(s.expr.get(), cond);
        target(s.target, cond);
        return;
      case StmtKind::SetBlock:
        target(s.target, cond);
        children.emplace_back(&s, false);
        return;
      case StmtKind::Macro:
        events.push_back({s.name, true, cond});
        children.emplace_back(&s, false);
        return;
      case StmtKind::With:
        for (auto& v : s.withValues) expr(v.get(), cond);
        children.emplace_back(&s, false);
        return;
      case StmtKind::FilterBlock:
        expr(s.expr.get(), cond);
        children.emplace_back(&s, false);
        return;
      case StmtKind::Scope: children.emplace_back(&s, false); return;
    }
  }
};

struct FrameRefs {
  std::vector<std::string> names;
  const FrameRefs* parent;
  bool has(const std::string& n) const {
    for (const FrameRefs* f = this; f; f = f->parent)
      if (std::find(f->names.begin(), f->names.end(), n) != f->names.end()) return true;
    return false;
  }
};

// Analyzes one frame whose own stores come first in `preStores` (loop
// targets, macro parameters, with targets) followed by `b`.
std::vector<std::string> analyzeFrame(const std::vector<std::string>& preStores, Body& b, const FrameRefs* parent) {
  FrameScan scan;
  for (const auto& n : preStores) scan.events.push_back({n, true, false});
  scan.body(b, false);
  FrameRefs refs{{}, parent};
  std::vector<std::string> undefinedInit;
  for (const auto& ev : scan.events) {
    if (std::find(refs.names.begin(), refs.names.end(), ev.name) != refs.names.end()) continue;
    // The first event for this name in the frame.
    if (ev.store && !ev.conditional && !(parent && parent->has(ev.name))) undefinedInit.push_back(ev.name);
    refs.names.push_back(ev.name);
  }
  for (auto& [child, isElse] : scan.children) {
    Stmt& s = *child;
    std::vector<std::string> pre;
    auto addTarget = [&](const Target& t, auto&& self) -> void {
      if (t.kind == Target::Kind::Name) pre.push_back(t.name);
      if (t.kind == Target::Kind::Tuple)
        for (const auto& x : t.items) self(x, self);
    };
    switch (s.kind) {
      case StmtKind::For:
        if (isElse) {
          s.elseUndefined = analyzeFrame({}, s.elseBody, &refs);
        } else {
          addTarget(s.target, addTarget);
          pre.push_back("loop");
          s.bodyUndefined = analyzeFrame(pre, s.body, &refs);
        }
        break;
      case StmtKind::Macro:
        for (const auto& p : s.params) pre.push_back(p.name);
        s.bodyUndefined = analyzeFrame(pre, s.body, &refs);
        break;
      case StmtKind::With:
        for (const auto& t : s.withTargets) addTarget(t, addTarget);
        s.bodyUndefined = analyzeFrame(pre, s.body, &refs);
        break;
      default: s.bodyUndefined = analyzeFrame({}, s.body, &refs); break;
    }
  }
  return undefinedInit;
}

}  // namespace

std::vector<std::string> analyzeScopes(Body& root) { return analyzeFrame({}, root, nullptr); }

}  // namespace linnet::chat::detail
