// The chat-template parser: its entry point, expected tokens and statements
// (parser_impl.h declares the class).
#include "chat/parser_impl.h"

namespace linnet::chat::detail {

namespace {

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

}  // namespace

Body parseTemplate(const std::vector<Token>& tokens, const std::string& templateName, const SourceMap& map) {
  Parser p(tokens, templateName, map);
  return p.parse();
}

// ---- expecting tokens

std::string Parser::describe(const Token& t) const {
  switch (t.type) {
    case Tok::Name: return "'" + t.text + "'";
    case Tok::Op: return "'" + t.text + "'";
    case Tok::String: return "string literal";
    case Tok::Int: return "integer literal";
    case Tok::Float: return "float literal";
    default: return tokName(t.type);
  }
}

void Parser::expectOp(const char* op, const char* context) {
  if (!isOp(op)) {
    std::string msg = std::string("expected '") + op + "'";
    if (context) msg += std::string(" ") + context;
    fail(cur().offset, msg + ", got " + describe(cur()));
  }
  next();
}

std::string Parser::expectName(const char* what) {
  if (cur().type != Tok::Name) fail(cur().offset, std::string("expected ") + what + ", got " + describe(cur()));
  std::string n = cur().text;
  next();
  return n;
}

void Parser::expectBlockEnd() {
  if (cur().type != Tok::BlockEnd)
    fail(cur().offset, "expected end of statement block '%}', got " + describe(cur()));
  next();
}

// ---- statements

Body Parser::subparse(const std::vector<std::string>& endTags) {
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

StmtPtr Parser::parseStatement() {
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
Body Parser::parseBlockBody(const std::string& tag, size_t offset, const std::vector<std::string>& endTags) {
  auto it = tagStarts_.find(offset);
  open_.push_back({tag, it == tagStarts_.end() ? offset : it->second});
  Body b = subparse(endTags);
  open_.pop_back();
  return b;
}

StmtPtr Parser::parseFor() {
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

StmtPtr Parser::parseIf() {
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

StmtPtr Parser::parseSet() {
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

StmtPtr Parser::parseMacro() {
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

StmtPtr Parser::parseWith() {
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

StmtPtr Parser::parseFilterBlock() {
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

StmtPtr Parser::parseGeneration() {
  auto s = makeStmt(StmtKind::Scope, cur().offset);
  next();
  expectBlockEnd();
  s->body = parseBlockBody("generation", s->offset, {"endgeneration"});
  next();
  expectBlockEnd();
  return s;
}

// name | ns.attr | a, b | (a, b)
Target Parser::parseAssignTarget(bool withNamespace) {
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

}  // namespace linnet::chat::detail
