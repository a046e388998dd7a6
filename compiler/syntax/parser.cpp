#include "syntax/parser.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include "syntax/lexer.h"

namespace linnet::syntax {
namespace {

// Thrown to abandon the current statement or item after a diagnostic.
struct ParseFailure {};

// The reductions with a binder form (`sum[i] ...`), from the table of primitives.
bool isReductionName(std::string_view name) {
#define REDUCER(Name, spelling, Call, Binder, Operands, Result) \
  if (Binder && name == spelling) return true;
#include "syntax/primitives.def"
  return false;
}

class Parser {
 public:
  Parser(const SourceManager& sources, uint32_t file, Diagnostics& diags)
      : sources_(sources), file_(file), diags_(diags), tokens_(lex(sources, file, diags)) {}

  std::unique_ptr<ModuleAst> run() {
    auto module = std::make_unique<ModuleAst>();
    module->file = file_;
    if (at(TokenKind::KwModule)) {
      try {
        advance();
        module->name = parseDottedPath();
      } catch (ParseFailure&) {
        skipToItem();
      }
    } else {
      try {
        fail(tok().range, "a file starts with its module's name, as in `module llama.attention`");
      } catch (ParseFailure&) {
      }
    }
    while (!at(TokenKind::EndOfFile)) {
      size_t before = pos_;
      try {
        parseItem(*module);
      } catch (ParseFailure&) {
        skipToItem();
      }
      if (pos_ == before) advance();  // always make progress
    }
    return module;
  }

 private:
  // ------------------------------------------------------------ token access
  const Token& tok() const { return tokens_[pos_]; }
  const Token& peekTok(size_t ahead) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  bool at(TokenKind k) const { return tok().kind == k; }
  Token advance() {
    Token t = tok();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    prevEnd_ = t.range.end;
    return t;
  }
  bool accept(TokenKind k) {
    if (!at(k)) return false;
    advance();
    return true;
  }
  SourceRange from(SourceRange start) const { return {file_, start.begin, prevEnd_}; }

  [[noreturn]] void fail(SourceRange range, std::string message) {
    // The lexer has already reported an Error token: one mistake, one message.
    if (speculating_ == 0 && tok().kind != TokenKind::Error) diags_.error(range, std::move(message));
    throw ParseFailure{};
  }
  std::string describe(const Token& t) const {
    if (t.kind == TokenKind::EndOfFile) return "end of file";
    return fmt::format("`{}`", t.text);
  }
  Token expect(TokenKind k, std::string_view context) {
    if (!at(k))
      fail(tok().range,
           fmt::format("expected `{}` {}, found {}", spelling(k), context, describe(tok())));
    return advance();
  }
  Ident expectIdent(std::string_view context) {
    if (!at(TokenKind::Identifier))
      fail(tok().range, fmt::format("expected {}, found {}", context, describe(tok())));
    Token t = advance();
    return {std::string(t.text), t.range};
  }

  // ------------------------------------------------------------- recovery
  // Skips to a token that can start an item, stepping over braced bodies.
  void skipToItem() {
    depth_ = 0;
    int depth = 0;
    while (!at(TokenKind::EndOfFile)) {
      TokenKind k = tok().kind;
      if (depth == 0 && tok().afterNewline &&
          (k == TokenKind::KwPub || k == TokenKind::KwBlock || k == TokenKind::KwFn ||
           k == TokenKind::KwUse || k == TokenKind::KwConst || k == TokenKind::KwEntry))
        return;
      if (k == TokenKind::LBrace) ++depth;
      if (k == TokenKind::RBrace && --depth <= 0) {
        advance();
        if (depth < 0) depth = 0;
        continue;
      }
      advance();
    }
  }
  // Skips the rest of a statement: to the next line at this depth or to `}`.
  void skipToStatement() {
    depth_ = 0;
    int depth = 0;
    bool first = true;
    while (!at(TokenKind::EndOfFile)) {
      TokenKind k = tok().kind;
      if (depth == 0 && !first && tok().afterNewline) return;
      if (depth == 0 && k == TokenKind::RBrace) return;
      if (k == TokenKind::LBrace || k == TokenKind::LParen || k == TokenKind::LBracket) ++depth;
      if ((k == TokenKind::RBrace || k == TokenKind::RParen || k == TokenKind::RBracket) &&
          depth > 0)
        --depth;
      advance();
      first = false;
    }
  }

  // ------------------------------------------------------------------ items
  Ident parseDottedPath() {
    Ident first = expectIdent("a module name");
    std::string full = first.name;
    SourceRange range = first.range;
    while (at(TokenKind::Dot)) {
      advance();
      Ident part = expectIdent("a module name after `.`");
      full += "." + part.name;
      range = SourceRange::merge(range, part.range);
    }
    return {full, range};
  }

  void parseItem(ModuleAst& module) {
    SourceRange start = tok().range;
    if (at(TokenKind::KwUse)) {
      module.uses.push_back(parseUse());
      return;
    }
    if (at(TokenKind::KwModule))
      fail(tok().range, "`module` must be the first declaration of a file");
    bool isPub = accept(TokenKind::KwPub);
    if (at(TokenKind::KwBlock)) {
      module.blocks.push_back(parseBlock(start, isPub));
    } else if (at(TokenKind::KwFn) || at(TokenKind::KwEntry)) {
      auto fn = parseFn(start, isPub);
      if (fn->isEntry)
        fail(fn->name.range, fmt::format("entry `{}` must be declared inside a block",
                                         fn->name.name));
      module.fns.push_back(std::move(fn));
    } else if (at(TokenKind::KwConst)) {
      module.consts.push_back(parseConst(start, isPub));
    } else {
      fail(tok().range, fmt::format("expected `block`, `fn`, `const` or `use` at the top of a "
                                    "module, found {}",
                                    describe(tok())));
    }
  }

  UseDecl parseUse() {
    UseDecl use;
    SourceRange start = expect(TokenKind::KwUse, "").range;
    use.path.push_back(expectIdent("a module path after `use`"));
    while (accept(TokenKind::Dot)) use.path.push_back(expectIdent("a module name after `.`"));
    expect(TokenKind::ColonColon, "after the module path of `use` (as in `use std.nn.linear::{Linear}`)");
    expect(TokenKind::LBrace, "around the imported names (as in `use std.nn.linear::{Linear}`)");
    while (!at(TokenKind::RBrace)) {
      use.names.push_back(expectIdent("a name to import"));
      if (!accept(TokenKind::Comma)) break;
    }
    expect(TokenKind::RBrace, "to close the imported names");
    use.range = from(start);
    return use;
  }

  std::vector<GenericParam> parseGenericParams() {
    std::vector<GenericParam> params;
    if (!accept(TokenKind::Less)) return params;
    Nested nested(nesting_);
    while (!at(TokenKind::Greater)) {
      GenericParam p;
      p.name = expectIdent("a generic parameter name");
      expect(TokenKind::Colon, "after a generic parameter's name (as in `H: Dim`)");
      p.kind = expectIdent("a generic kind (`Dim`, `Dims`, `Float`, `Int` or `DType`)");
      if (accept(TokenKind::Equal)) p.defaultValue = parseExpr(/*noGreater=*/true);
      params.push_back(std::move(p));
      if (!accept(TokenKind::Comma)) break;
    }
    expect(TokenKind::Greater, "to close the generic parameters");
    return params;
  }

  std::vector<ExprPtr> parseWhere() {
    std::vector<ExprPtr> facts;
    if (!accept(TokenKind::KwWhere)) return facts;
    Nested nested(nesting_);
    do {
      if (at(TokenKind::LBrace)) break;  // trailing comma
      facts.push_back(parseExpr());
    } while (accept(TokenKind::Comma));
    return facts;
  }

  std::unique_ptr<BlockDecl> parseBlock(SourceRange start, bool isPub) {
    auto block = std::make_unique<BlockDecl>();
    block->isPub = isPub;
    expect(TokenKind::KwBlock, "");
    block->name = expectIdent("a block name");
    block->generics = parseGenericParams();
    block->where = parseWhere();
    expect(TokenKind::LBrace, "to open the block's body");
    while (!at(TokenKind::RBrace) && !at(TokenKind::EndOfFile)) {
      size_t before = pos_;
      try {
        parseMember(*block);
      } catch (ParseFailure&) {
        skipToMember();
      }
      if (pos_ == before) advance();
    }
    expect(TokenKind::RBrace, "to close the block");
    block->range = from(start);
    return block;
  }

  void skipToMember() {
    depth_ = 0;
    int depth = 0;
    while (!at(TokenKind::EndOfFile)) {
      TokenKind k = tok().kind;
      if (depth == 0 && k == TokenKind::RBrace) return;
      if (depth == 0 && tok().afterNewline &&
          (k == TokenKind::KwPub || k == TokenKind::KwFn || k == TokenKind::KwEntry ||
           k == TokenKind::KwSub || k == TokenKind::KwState || k == TokenKind::KwParam))
        return;
      if (k == TokenKind::LBrace) ++depth;
      if (k == TokenKind::RBrace) --depth;
      advance();
    }
  }

  void parseMember(BlockDecl& block) {
    SourceRange start = tok().range;
    MemberKind kind;
    if (accept(TokenKind::KwSub)) {
      kind = MemberKind::Sub;
    } else if (accept(TokenKind::KwState)) {
      kind = MemberKind::State;
    } else if (accept(TokenKind::KwParam)) {
      kind = MemberKind::Param;
    } else {
      bool isPub = accept(TokenKind::KwPub);
      if (!at(TokenKind::KwFn) && !at(TokenKind::KwEntry))
        fail(tok().range, fmt::format("expected `sub`, `state`, `param`, `fn` or `entry` in a "
                                      "block, found {}",
                                      describe(tok())));
      block.fns.push_back(parseFn(start, isPub));
      return;
    }
    MemberDecl member;
    member.kind = kind;
    member.name = expectIdent("a member name");
    expect(TokenKind::Colon, "after the member's name");
    member.type = parseType();
    member.range = from(start);
    block.members.push_back(std::move(member));
  }

  std::unique_ptr<FnDecl> parseFn(SourceRange start, bool isPub) {
    auto fn = std::make_unique<FnDecl>();
    fn->isPub = isPub;
    if (accept(TokenKind::KwEntry)) {
      fn->isEntry = true;
      accept(TokenKind::KwFn);
    } else {
      expect(TokenKind::KwFn, "");
    }
    fn->name = expectIdent("a function name");
    fn->generics = parseGenericParams();
    expect(TokenKind::LParen, "to open the parameter list");
    while (!at(TokenKind::RParen)) {
      ParamDecl p;
      p.name = expectIdent("a parameter name");
      expect(TokenKind::Colon, "after the parameter's name");
      p.type = parseType();
      fn->params.push_back(std::move(p));
      if (!accept(TokenKind::Comma)) break;
    }
    expect(TokenKind::RParen, "to close the parameter list");
    if (accept(TokenKind::Arrow)) fn->result = parseType();
    fn->where = parseWhere();
    fn->body = parseBody();
    fn->range = from(start);
    return fn;
  }

  std::unique_ptr<ConstDecl> parseConst(SourceRange start, bool isPub) {
    auto c = std::make_unique<ConstDecl>();
    c->isPub = isPub;
    expect(TokenKind::KwConst, "");
    c->name = expectIdent("a constant name");
    expect(TokenKind::Colon, "after the constant's name (constants are typed: `const X: f32 = 1.0`)");
    c->type = parseType();
    expect(TokenKind::Equal, "before the constant's value");
    c->value = parseExpr();
    c->range = from(start);
    return c;
  }

  // ------------------------------------------------------------------ types
  TypeExprPtr parseType() {
    if (++depth_ > kMaxDepth) fail(tok().range, fmt::format("type nests too deeply: more than {} levels", kMaxDepth));
    Nested nested(nesting_);
    auto type = std::make_unique<TypeExpr>();
    SourceRange start = tok().range;
    if (at(TokenKind::LParen)) {
      advance();
      type->kind = TypeKind::Tuple;
      while (!at(TokenKind::RParen)) {
        type->elems.push_back(parseType());
        if (!accept(TokenKind::Comma)) break;
      }
      expect(TokenKind::RParen, "to close the tuple type");
    } else if (at(TokenKind::LBracket)) {
      advance();
      type->kind = TypeKind::Array;
      type->elem = parseType();
      expect(TokenKind::Semicolon, "between an array's element type and its length");
      type->count = parseExpr();
      expect(TokenKind::RBracket, "to close the array type");
    } else {
      Ident name = expectIdent("a type");
      if (name.name == "Tensor") {
        type->kind = TypeKind::Tensor;
        type->name = name;
        expect(TokenKind::LBracket, "after `Tensor` (as in `Tensor[B, S; f32]`)");
        while (!at(TokenKind::Semicolon) && !at(TokenKind::RBracket)) {
          type->dims.push_back(parseExpr());
          if (!accept(TokenKind::Comma)) break;
        }
        expect(TokenKind::Semicolon, "before a tensor's element type (as in `Tensor[B, S; f32]`)");
        type->elem = parseType();
        expect(TokenKind::RBracket, "to close the tensor type");
      } else if (name.name == "Option") {
        type->kind = TypeKind::Option;
        type->name = name;
        expect(TokenKind::Less, "after `Option`");
        type->elem = parseType();
        expect(TokenKind::Greater, "to close `Option<...>`");
      } else {
        type->kind = TypeKind::Named;
        type->name = name;
        if (at(TokenKind::Less)) {
          advance();
          type->hasGenerics = true;
          type->generics = parseGenericArgs();
        }
      }
    }
    type->range = from(start);
    --depth_;
    return type;
  }

  // After `<`: arguments up to and including `>`.
  std::vector<ExprPtr> parseGenericArgs() {
    Nested nested(nesting_);
    std::vector<ExprPtr> args;
    while (!at(TokenKind::Greater)) {
      args.push_back(parseExpr(/*noGreater=*/true));
      if (!accept(TokenKind::Comma)) break;
    }
    expect(TokenKind::Greater, "to close the generic arguments");
    return args;
  }

  // ------------------------------------------------------------- statements
  StmtList parseBody() {
    SourceRange open = expect(TokenKind::LBrace, "to open a body").range;
    StmtList body;
    while (!at(TokenKind::RBrace) && !at(TokenKind::EndOfFile)) {
      size_t before = pos_;
      TokenKind k = tok().kind;
      if (tok().afterNewline && (k == TokenKind::KwPub || k == TokenKind::KwFn ||
                                 k == TokenKind::KwBlock || k == TokenKind::KwUse ||
                                 k == TokenKind::KwConst || k == TokenKind::KwEntry)) {
        LineCol lc = sources_.file(file_).lineCol(open.begin);
        fail(tok().range, fmt::format("expected `}}` to close the body opened at line {}, before "
                                      "this `{}`",
                                      lc.line, tok().text));
      }
      try {
        body.push_back(parseStmt());
        if (!at(TokenKind::RBrace) && !tok().afterNewline && !at(TokenKind::EndOfFile))
          fail(tok().range, fmt::format("expected a line break after the statement, found {}",
                                        describe(tok())));
      } catch (ParseFailure&) {
        skipToStatement();
      }
      if (pos_ == before) advance();
    }
    expect(TokenKind::RBrace, "to close the body");
    return body;
  }

  StmtPtr parseStmt() {
    SourceRange start = tok().range;
    switch (tok().kind) {
      case TokenKind::KwLet:
        return parseLet();
      case TokenKind::KwVar: {
        advance();
        auto s = std::make_unique<VarStmt>(start);
        s->name = expectIdent("a variable name after `var`");
        if (accept(TokenKind::Colon)) s->type = parseType();
        expect(TokenKind::Equal, "after the variable (a `var` needs an initial value)");
        s->value = parseExpr();
        s->range = from(start);
        return s;
      }
      case TokenKind::KwReturn: {
        advance();
        auto s = std::make_unique<ReturnStmt>(start);
        if (!at(TokenKind::RBrace) && !tok().afterNewline) s->value = parseExpr();
        s->range = from(start);
        return s;
      }
      case TokenKind::KwStatic: {
        advance();
        expect(TokenKind::KwFor, "after `static`");
        auto s = std::make_unique<StaticForStmt>(start);
        s->var = expectIdent("a loop variable");
        expect(TokenKind::KwIn, "after the loop variable");
        ExprPtr first = parseExpr();
        if (accept(TokenKind::DotDot)) {
          s->lo = std::move(first);
          s->hi = parseExpr();
        } else {
          s->iterable = std::move(first);
        }
        s->body = parseBody();
        s->range = from(start);
        return s;
      }
      case TokenKind::KwWhile: {
        advance();
        auto s = std::make_unique<WhileStmt>(start);
        s->cond = parseExpr();
        s->body = parseBody();
        s->range = from(start);
        return s;
      }
      case TokenKind::KwFor:
        fail(tok().range, "a loop over a range or a sub-block array is written `static for`");
      default:
        break;
    }
    if (at(TokenKind::Identifier) && peekTok(1).kind == TokenKind::Equal) {
      auto s = std::make_unique<AssignStmt>(start);
      Token name = advance();
      s->target = {std::string(name.text), name.range};
      advance();
      s->value = parseExpr();
      s->range = from(start);
      return s;
    }
    ExprPtr e = parseExpr();
    return std::make_unique<ExprStmt>(from(start), std::move(e));
  }

  StmtPtr parseLet() {
    SourceRange start = advance().range;
    if (accept(TokenKind::LParen)) {
      auto s = std::make_unique<LetTupleStmt>(start);
      while (!at(TokenKind::RParen)) {
        s->names.push_back(expectIdent("a name in the tuple pattern"));
        if (!accept(TokenKind::Comma)) break;
      }
      expect(TokenKind::RParen, "to close the tuple pattern");
      expect(TokenKind::Equal, "after the tuple pattern");
      s->value = parseExpr();
      s->range = from(start);
      return s;
    }
    Ident name = expectIdent("a name after `let`");
    if (accept(TokenKind::LBracket)) {
      auto s = std::make_unique<ComprehensionStmt>(start);
      s->name = name;
      while (!at(TokenKind::RBracket)) {
        s->indices.push_back(expectIdent("an index name (as in `let y[i, j] = ...`)"));
        if (!accept(TokenKind::Comma)) break;
      }
      expect(TokenKind::RBracket, "to close the comprehension's indices");
      expect(TokenKind::Equal, "after the comprehension's indices");
      s->body = parseExpr();
      s->range = from(start);
      return s;
    }
    auto s = std::make_unique<LetStmt>(start);
    s->name = name;
    if (accept(TokenKind::Colon)) s->type = parseType();
    expect(TokenKind::Equal, "after the name (a `let` needs a value)");
    s->value = parseExpr();
    s->range = from(start);
    return s;
  }

  // ------------------------------------------------------------ expressions
  // The binary operator at the cursor, if any. `>` `>` written together is a
  // shift and `>` `=` is `>=`; in generic arguments a `>` closes the list.
  std::optional<std::pair<BinaryOp, int>> currentBinary(bool noGreater) const {
    if (lineEnds()) return std::nullopt;  // an operator on the next line starts nothing here
    auto op = [](BinaryOp o) -> std::optional<std::pair<BinaryOp, int>> {
      switch (o) {
#define BINARY_OP(Name, Spelling, Precedence) \
  case BinaryOp::Name:                        \
    return std::make_pair(o, Precedence);
#include "syntax/operators.def"
      }
      return std::nullopt;
    };
    switch (tok().kind) {
      case TokenKind::PipePipe: return op(BinaryOp::Or);
      case TokenKind::AmpAmp: return op(BinaryOp::And);
      case TokenKind::Pipe: return op(BinaryOp::BitOr);
      case TokenKind::Caret: return op(BinaryOp::BitXor);
      case TokenKind::Amp: return op(BinaryOp::BitAnd);
      case TokenKind::EqualEqual: return op(BinaryOp::Eq);
      case TokenKind::BangEqual: return op(BinaryOp::Ne);
      case TokenKind::Less: return op(BinaryOp::Lt);
      case TokenKind::LessEqual: return op(BinaryOp::Le);
      case TokenKind::LessLess: return op(BinaryOp::Shl);
      case TokenKind::Plus: return op(BinaryOp::Add);
      case TokenKind::Minus: return op(BinaryOp::Sub);
      case TokenKind::Star: return op(BinaryOp::Mul);
      case TokenKind::Slash: return op(BinaryOp::Div);
      case TokenKind::Percent: return op(BinaryOp::Rem);
      case TokenKind::Greater: {
        if (noGreater) return std::nullopt;
        const Token& next = peekTok(1);
        if (!next.afterSpace && next.kind == TokenKind::Greater) return op(BinaryOp::Shr);
        if (!next.afterSpace && next.kind == TokenKind::Equal) return op(BinaryOp::Ge);
        return op(BinaryOp::Gt);
      }
      default:
        return std::nullopt;
    }
  }

  ExprPtr parseExpr(bool noGreater = false, int minPrecedence = 1) {
    if (++depth_ > kMaxDepth) fail(tok().range, fmt::format("expression nests too deeply: more than {} levels; name inner parts with `let`", kMaxDepth));
    ExprPtr lhs = parseUnary(noGreater);
    while (true) {
      auto op = currentBinary(noGreater);
      if (!op || op->second < minPrecedence) break;
      advance();
      if (op->first == BinaryOp::Shr || op->first == BinaryOp::Ge) advance();
      ExprPtr rhs = parseExpr(noGreater, op->second + 1);
      SourceRange range = SourceRange::merge(lhs->range, rhs->range);
      lhs = std::make_unique<BinaryExpr>(range, op->first, std::move(lhs), std::move(rhs));
    }
    --depth_;
    return lhs;
  }

  ExprPtr parseUnary(bool noGreater) {
    SourceRange start = tok().range;
    if (at(TokenKind::Minus) || at(TokenKind::Bang)) {
      UnaryOp op = at(TokenKind::Minus) ? UnaryOp::Neg : UnaryOp::Not;
      advance();
      // `-9223372036854775808` is the smallest i64, a literal of its own.
      if (op == UnaryOp::Neg && at(TokenKind::IntLiteral)) {
        Token t = advance();
        uint64_t v = intValue(t, static_cast<uint64_t>(INT64_MAX) + 1);
        return std::make_unique<IntLiteralExpr>(from(start), static_cast<int64_t>(0 - v));
      }
      if (++depth_ > kMaxDepth) fail(tok().range, fmt::format("expression nests too deeply: more than {} levels; name inner parts with `let`", kMaxDepth));
      ExprPtr operand = parseUnary(noGreater);
      --depth_;
      // Fold `-3.0` into a literal so constants print as written.
      if (op == UnaryOp::Neg && operand->kind == ExprKind::FloatLiteral) {
        auto* lit = static_cast<FloatLiteralExpr*>(operand.get());
        return std::make_unique<FloatLiteralExpr>(from(start), -lit->value);
      }
      return std::make_unique<UnaryExpr>(from(start), op, std::move(operand));
    }
    return parsePostfix(parsePrimary(noGreater), noGreater);
  }

  ExprPtr parsePrimary(bool noGreater) {
    SourceRange start = tok().range;
    switch (tok().kind) {
      case TokenKind::IntLiteral: {
        Token t = advance();
        uint64_t v = intValue(t, static_cast<uint64_t>(INT64_MAX));
        return std::make_unique<IntLiteralExpr>(t.range, static_cast<int64_t>(v));
      }
      case TokenKind::FloatLiteral: {
        Token t = advance();
        std::string digits;
        for (char c : t.text)
          if (c != '_') digits += c;
        return std::make_unique<FloatLiteralExpr>(t.range, std::strtod(digits.c_str(), nullptr));
      }
      case TokenKind::KwTrue:
      case TokenKind::KwFalse: {
        bool v = at(TokenKind::KwTrue);
        return std::make_unique<BoolLiteralExpr>(advance().range, v);
      }
      case TokenKind::Identifier: {
        Token t = advance();
        return std::make_unique<NameExpr>(t.range, std::string(t.text));
      }
      case TokenKind::DotDot: {
        advance();
        Ident pack = expectIdent("a dimension pack after `..`");
        return std::make_unique<SpreadExpr>(from(start), pack);
      }
      case TokenKind::LParen: {
        advance();
        Nested nested(nesting_);
        ExprPtr first = parseExpr();
        if (accept(TokenKind::RParen)) {  // grouping: the range covers the parentheses
          first->range = from(start);
          return first;
        }
        auto tuple = std::make_unique<TupleExpr>(start);
        tuple->elems.push_back(std::move(first));
        while (accept(TokenKind::Comma)) {
          if (at(TokenKind::RParen)) break;
          tuple->elems.push_back(parseExpr());
        }
        expect(TokenKind::RParen, "to close the tuple");
        tuple->range = from(start);
        return tuple;
      }
      case TokenKind::LBracket: {
        advance();
        Nested nested(nesting_);
        auto list = std::make_unique<ListExpr>(start);
        while (!at(TokenKind::RBracket)) {
          list->elems.push_back(parseExpr());
          if (!accept(TokenKind::Comma)) break;
        }
        expect(TokenKind::RBracket, "to close the list");
        list->range = from(start);
        return list;
      }
      default:
        fail(tok().range, fmt::format("expected an expression, found {}", describe(tok())));
    }
  }

  // The value of an integer literal token: decimal, or hexadecimal after
  // `0x`; `_` separates digits. Values above `limit` are errors.
  uint64_t intValue(const Token& t, uint64_t limit) {
    std::string digits;
    for (char c : t.text)
      if (c != '_') digits += c;
    bool hex = digits.size() > 1 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X');
    std::string body = hex ? digits.substr(2) : digits;
    if (body.empty()) fail(t.range, fmt::format("malformed number `{}`", t.text));
    errno = 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(body.c_str(), &end, hex ? 16 : 10);
    if (end != body.c_str() + body.size())
      fail(t.range, fmt::format("malformed number `{}`", t.text));
    if (errno == ERANGE || v > limit)
      fail(t.range, fmt::format("integer literal `{}` does not fit in 64 bits", t.text));
    return v;
  }

  // Tries `<args>(` after a callee; on success the cursor is at `(`.
  bool tryGenericArgs(std::vector<ExprPtr>& out) {
    size_t save = pos_;
    uint32_t saveEnd = prevEnd_;
    int saveDepth = depth_;
    ++speculating_;
    try {
      advance();  // `<`
      auto args = parseGenericArgs();
      --speculating_;
      if (at(TokenKind::LParen) && !tok().afterNewline) {
        out = std::move(args);
        return true;
      }
    } catch (ParseFailure&) {
      --speculating_;
    }
    pos_ = save;
    prevEnd_ = saveEnd;
    depth_ = saveDepth;
    return false;
  }

  ExprPtr parsePostfix(ExprPtr e, bool noGreater) {
    while (true) {
      SourceRange start = e->range;
      if (at(TokenKind::Dot)) {
        advance();
        Ident member = expectIdent("a member name after `.`");
        e = std::make_unique<MemberExpr>(from(start), std::move(e), member);
        continue;
      }
      bool callable = e->kind == ExprKind::Name || e->kind == ExprKind::Member;
      std::vector<ExprPtr> generics;
      bool hasGenerics = false;
      if (callable && at(TokenKind::Less) && !lineEnds() && tryGenericArgs(generics))
        hasGenerics = true;
      if (at(TokenKind::LParen) && (!tok().afterNewline || hasGenerics)) {
        e = parseCall(std::move(e), hasGenerics, std::move(generics));
        continue;
      }
      if (at(TokenKind::LBracket) && !tok().afterNewline) {
        e = parseIndex(std::move(e));
        continue;
      }
      return e;
    }
  }

  ExprPtr parseCall(ExprPtr callee, bool hasGenerics, std::vector<ExprPtr> generics) {
    SourceRange start = callee->range;
    expect(TokenKind::LParen, "");
    Nested nested(nesting_);
    // `all[b] (body)`: the index on a reduction's name holds its binders.
    if (!hasGenerics && callee->kind == ExprKind::Index) {
      auto* index = static_cast<IndexExpr*>(callee.get());
      if (index->base->kind == ExprKind::Name &&
          isReductionName(static_cast<NameExpr*>(index->base.get())->name)) {
        auto reduce = std::make_unique<ReduceExpr>(start);
        auto* base = static_cast<NameExpr*>(index->base.get());
        reduce->op = {base->name, base->range};
        for (IndexItem& item : index->items) {
          if (item.kind != IndexItem::Single || item.index->kind != ExprKind::Name)
            fail(item.range, fmt::format("the binders of `{}[...]` must be plain names",
                                         base->name));
          auto* n = static_cast<NameExpr*>(item.index.get());
          reduce->binders.push_back({n->name, n->range});
        }
        reduce->body = parseExpr();
        expect(TokenKind::RParen, "to close the reduction's body");
        reduce->range = from(start);
        return reduce;
      }
    }
    auto call = std::make_unique<CallExpr>(start);
    call->callee = std::move(callee);
    call->hasGenerics = hasGenerics;
    call->generics = std::move(generics);
    bool sawNamed = false;
    while (!at(TokenKind::RParen)) {
      Argument arg;
      if (at(TokenKind::Identifier) && peekTok(1).kind == TokenKind::Equal) {
        Token n = advance();
        advance();
        arg.name = {std::string(n.text), n.range};
        sawNamed = true;
      } else if (sawNamed) {
        fail(tok().range, "positional arguments must come before named ones");
      }
      arg.value = parseExpr();
      call->args.push_back(std::move(arg));
      if (!accept(TokenKind::Comma)) break;
    }
    expect(TokenKind::RParen, "to close the argument list");
    call->range = from(start);
    return call;
  }

  ExprPtr parseIndex(ExprPtr base) {
    SourceRange start = base->range;
    auto index = std::make_unique<IndexExpr>(start, std::move(base));
    advance();  // `[`
    Nested nested(nesting_);
    while (!at(TokenKind::RBracket)) {
      IndexItem item;
      SourceRange itemStart = tok().range;
      if (at(TokenKind::Colon)) {
        advance();
        item.kind = IndexItem::Slice;
        if (!at(TokenKind::Comma) && !at(TokenKind::RBracket)) item.hi = parseExpr();
      } else {
        ExprPtr first = parseExpr();
        if (accept(TokenKind::Colon)) {
          item.kind = IndexItem::Slice;
          item.lo = std::move(first);
          if (!at(TokenKind::Comma) && !at(TokenKind::RBracket)) item.hi = parseExpr();
        } else {
          item.index = std::move(first);
        }
      }
      item.range = from(itemStart);
      index->items.push_back(std::move(item));
      if (!accept(TokenKind::Comma)) break;
    }
    expect(TokenKind::RBracket, "to close the subscript");
    index->range = from(start);
    return index;
  }

  static constexpr int kMaxDepth = 256;
  const SourceManager& sources_;
  uint32_t file_;
  Diagnostics& diags_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  uint32_t prevEnd_ = 0;
  int speculating_ = 0;
  int depth_ = 0;
  int nesting_ = 0;  // open ( [ < around the cursor: line breaks do not end anything there

  // Counts one level of ( [ < for as long as it lives, also when a failure unwinds.
  struct Nested {
    explicit Nested(int& n) : n_(n) { ++n_; }
    ~Nested() { --n_; }
    int& n_;
  };
  // Does a line break before the cursor end the expression here?
  bool lineEnds() const { return nesting_ == 0 && tok().afterNewline; }
};

}  // namespace

std::unique_ptr<ModuleAst> parseFile(const SourceManager& sources, uint32_t file,
                                     Diagnostics& diags) {
  return Parser(sources, file, diags).run();
}

}  // namespace linnet::syntax
