// The chat-template parser (internal header): recursive descent over the
// lexer's tokens. parser.cpp: the token helpers and statements;
// parser_expressions.cpp: expressions; scope_analysis.cpp: analyzeScopes().
#pragma once

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/ast.h"
#include "chat/errors.h"
#include "chat/lexer.h"
#include "chat/parser.h"

namespace linnet::chat::detail {

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

  // ---- expecting tokens (parser.cpp)
  std::string describe(const Token& t) const;
  void expectOp(const char* op, const char* context = nullptr);
  std::string expectName(const char* what);
  void expectBlockEnd();

  // ---- statements (parser.cpp)
  Body subparse(const std::vector<std::string>& endTags);
  StmtPtr parseStatement();
  // The body of a block whose tag name is at `offset`; errors about an
  // unclosed block point at the block's '{%'.
  Body parseBlockBody(const std::string& tag, size_t offset, const std::vector<std::string>& endTags);
  StmtPtr parseFor();
  StmtPtr parseIf();
  StmtPtr parseSet();
  StmtPtr parseMacro();
  StmtPtr parseWith();
  StmtPtr parseFilterBlock();
  StmtPtr parseGeneration();
  // name | ns.attr | a, b | (a, b)
  Target parseAssignTarget(bool withNamespace);

  // ---- expressions (parser_expressions.cpp)
  bool isTupleEnd(const std::vector<std::string>& extraEnd) const;
  ExprPtr parseTuple(bool withCond, const std::vector<std::string>& extraEnd, bool explicitParens);
  ExprPtr parseExpression(bool withCond);
  ExprPtr parseCondExpr();
  ExprPtr parseOr();
  ExprPtr parseAnd();
  ExprPtr parseNot();
  ExprPtr parseCompare();
  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, size_t off);
  ExprPtr parseMath1();
  ExprPtr parseConcat();
  ExprPtr parseMath2();
  ExprPtr parsePow();
  ExprPtr parseUnary(bool withFilter);
  ExprPtr parsePrimary();
  ExprPtr parseList();
  ExprPtr parseDict();
  ExprPtr parsePostfix(ExprPtr node);
  ExprPtr parseFilterExpr(ExprPtr node);
  ExprPtr parseSubscript(ExprPtr node);
  // An index expression or a slice (returned as a Slice node without its object).
  ExprPtr parseSubscribed(bool& isSlice);
  void parseCallArgs(Expr& e);
  ExprPtr parseCall(ExprPtr node);
  std::string parseDottedName(const char* what);
  ExprPtr parseFilter(ExprPtr node);
  // For {% set x | f %} and {% filter f | g %}: a chain of filters whose
  // innermost input is null (the block's rendered body).
  ExprPtr parseFilterChain(ExprPtr input, bool leadingPipe = true);
  ExprPtr parseTest(ExprPtr node);
};

}  // namespace linnet::chat::detail
