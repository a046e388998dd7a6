#include "syntax/ast_printer.h"

#include <fmt/format.h>

namespace linnet::syntax {

namespace {

const char* kindName(ExprKind k) {
  switch (k) {
#define EXPR(Name) \
  case ExprKind::Name: return #Name;
#include "syntax/expr_kinds.def"
  }
  return "?";
}

const char* kindName(StmtKind k) {
  switch (k) {
#define STMT(Name) \
  case StmtKind::Name: return #Name;
#include "syntax/stmt_kinds.def"
  }
  return "?";
}

class Printer {
 public:
  explicit Printer(const SourceManager& sources) : sources_(sources) {}
  std::string out;

  void module(const ModuleAst& m) {
    line(0, fmt::format("Module {}", m.name.name.empty() ? "(unnamed)" : m.name.name), m.name.range);
    for (const UseDecl& u : m.uses) {
      std::string path, names;
      for (const Ident& p : u.path) path += (path.empty() ? "" : ".") + p.name;
      for (const Ident& n : u.names) names += (names.empty() ? "" : ", ") + n.name;
      line(1, fmt::format("Use {}::{{{}}}", path, names), u.range);
    }
    for (const auto& c : m.consts) {
      line(1, fmt::format("Const {}{}: {}", c->isPub ? "pub " : "", c->name.name, type(*c->type)), c->range);
      expr(2, *c->value);
    }
    for (const auto& b : m.blocks) block(*b);
    for (const auto& f : m.fns) fn(1, *f);
  }

 private:
  const SourceManager& sources_;

  // Indentation stops at kMaxIndent levels (then the depth is written), so a
  // deep tree prints in size linear in its nodes.
  static constexpr int kMaxIndent = 40;

  void line(int depth, const std::string& text, SourceRange r) {
    if (depth > kMaxIndent)
      out += std::string(kMaxIndent * 2, ' ') + fmt::format("[depth {}] ", depth) + text;
    else
      out += std::string(depth * 2, ' ') + text;
    if (r.valid()) {
      LineCol lc = sources_.file(r.file).lineCol(r.begin);
      out += fmt::format("  @{}:{}", lc.line, lc.col);
    }
    out += "\n";
  }

  std::string generics(const std::vector<GenericParam>& gs) {
    if (gs.empty()) return "";
    std::string s = "<";
    for (size_t i = 0; i < gs.size(); ++i)
      s += (i ? ", " : "") + gs[i].name.name + ": " + gs[i].kind.name + (gs[i].defaultValue ? " = ..." : "");
    return s + ">";
  }

  std::string type(const TypeExpr& t) {
    switch (t.kind) {
      case TypeKind::Named: {
        std::string s = t.name.name;
        if (t.hasGenerics) s += fmt::format("<{} args>", t.generics.size());
        return s;
      }
      case TypeKind::Tensor: return fmt::format("Tensor[{} dims; {}]", t.dims.size(), type(*t.elem));
      case TypeKind::Tuple: {
        std::string s = "(";
        for (size_t i = 0; i < t.elems.size(); ++i) s += (i ? ", " : "") + type(*t.elems[i]);
        return s + ")";
      }
      case TypeKind::Option: return fmt::format("Option<{}>", type(*t.elem));
      case TypeKind::Array: return fmt::format("[{}; ...]", type(*t.elem));
    }
    return "?";
  }

  void block(const BlockDecl& b) {
    line(1, fmt::format("Block {}{}{}", b.isPub ? "pub " : "", b.name.name, generics(b.generics)), b.range);
    for (const auto& w : b.where) {
      line(2, "Where", w->range);
      expr(3, *w);
    }
    for (const MemberDecl& m : b.members) {
      const char* kind = m.kind == MemberKind::Sub ? "Sub" : m.kind == MemberKind::State ? "State" : "Param";
      line(2, fmt::format("{} {}: {}", kind, m.name.name, type(*m.type)), m.range);
    }
    for (const auto& f : b.fns) fn(2, *f);
  }

  void fn(int d, const FnDecl& f) {
    std::string params;
    for (const ParamDecl& p : f.params) params += (params.empty() ? "" : ", ") + p.name.name + ": " + type(*p.type);
    line(d, fmt::format("{} {}{}{}({}){}", f.isEntry ? "Entry" : "Fn", f.isPub ? "pub " : "", f.name.name,
                        generics(f.generics), params, f.result ? " -> " + type(*f.result) : ""),
         f.range);
    for (const auto& w : f.where) {
      line(d + 1, "Where", w->range);
      expr(d + 2, *w);
    }
    for (const auto& s : f.body) stmt(d + 1, *s);
  }

  void stmt(int d, const Stmt& s) {
    std::string head = kindName(s.kind);
    switch (s.kind) {
      case StmtKind::Let: {
        const auto& l = static_cast<const LetStmt&>(s);
        line(d, head + " " + l.name.name, s.range);
        expr(d + 1, *l.value);
        return;
      }
      case StmtKind::LetTuple: {
        const auto& l = static_cast<const LetTupleStmt&>(s);
        std::string names;
        for (const Ident& n : l.names) names += (names.empty() ? "" : ", ") + n.name;
        line(d, head + " (" + names + ")", s.range);
        expr(d + 1, *l.value);
        return;
      }
      case StmtKind::Comprehension: {
        const auto& c = static_cast<const ComprehensionStmt&>(s);
        std::string idx;
        for (const Ident& n : c.indices) idx += (idx.empty() ? "" : ", ") + n.name;
        line(d, fmt::format("{} {}[{}]", head, c.name.name, idx), s.range);
        expr(d + 1, *c.body);
        return;
      }
      case StmtKind::Var: {
        const auto& v = static_cast<const VarStmt&>(s);
        line(d, head + " " + v.name.name, s.range);
        expr(d + 1, *v.value);
        return;
      }
      case StmtKind::Assign: {
        const auto& a = static_cast<const AssignStmt&>(s);
        line(d, head + " " + a.target.name, s.range);
        expr(d + 1, *a.value);
        return;
      }
      case StmtKind::Return: {
        const auto& r = static_cast<const ReturnStmt&>(s);
        line(d, head, s.range);
        if (r.value) expr(d + 1, *r.value);
        return;
      }
      case StmtKind::Expr:
        line(d, head, s.range);
        expr(d + 1, *static_cast<const ExprStmt&>(s).expr);
        return;
      case StmtKind::StaticFor: {
        const auto& f = static_cast<const StaticForStmt&>(s);
        line(d, head + " " + f.var.name, s.range);
        if (f.iterable) expr(d + 1, *f.iterable);
        if (f.lo) expr(d + 1, *f.lo);
        if (f.hi) expr(d + 1, *f.hi);
        for (const auto& x : f.body) stmt(d + 1, *x);
        return;
      }
      case StmtKind::While: {
        const auto& w = static_cast<const WhileStmt&>(s);
        line(d, head, s.range);
        expr(d + 1, *w.cond);
        for (const auto& x : w.body) stmt(d + 1, *x);
        return;
      }
    }
  }

  void expr(int d, const Expr& e) {
    std::string head = kindName(e.kind);
    switch (e.kind) {
      case ExprKind::IntLiteral: return line(d, fmt::format("{} {}", head, static_cast<const IntLiteralExpr&>(e).value), e.range);
      case ExprKind::FloatLiteral: return line(d, fmt::format("{} {}", head, static_cast<const FloatLiteralExpr&>(e).value), e.range);
      case ExprKind::BoolLiteral: return line(d, fmt::format("{} {}", head, static_cast<const BoolLiteralExpr&>(e).value), e.range);
      case ExprKind::Name: return line(d, head + " " + static_cast<const NameExpr&>(e).name, e.range);
      case ExprKind::Unary: {
        const auto& u = static_cast<const UnaryExpr&>(e);
        line(d, head + " " + spelling(u.op), e.range);
        return expr(d + 1, *u.operand);
      }
      case ExprKind::Binary: {
        // A left-leaning chain by a loop down its left spine, not recursion
        // (`x + ... + x` may be 700,000 deep): heads top-down, then the
        // leftmost operand, then the right operands bottom-up.
        std::vector<const BinaryExpr*> spine{static_cast<const BinaryExpr*>(&e)};
        while (spine.back()->lhs->kind == ExprKind::Binary)
          spine.push_back(static_cast<const BinaryExpr*>(spine.back()->lhs.get()));
        for (size_t i = 0; i < spine.size(); ++i)
          line(d + static_cast<int>(i), head + " " + spelling(spine[i]->op), spine[i]->range);
        expr(d + static_cast<int>(spine.size()), *spine.back()->lhs);
        for (size_t i = spine.size(); i-- > 0;) expr(d + static_cast<int>(i) + 1, *spine[i]->rhs);
        return;
      }
      case ExprKind::Call: {
        const auto& c = static_cast<const CallExpr&>(e);
        line(d, head + (c.hasGenerics ? fmt::format(" <{} generics>", c.generics.size()) : ""), e.range);
        expr(d + 1, *c.callee);
        for (const auto& g : c.generics) expr(d + 1, *g);
        for (const Argument& a : c.args) {
          if (!a.name.name.empty()) line(d + 1, "Named " + a.name.name, a.name.range);
          expr(d + (a.name.name.empty() ? 1 : 2), *a.value);
        }
        return;
      }
      case ExprKind::Member: {
        const auto& m = static_cast<const MemberExpr&>(e);
        line(d, head + " ." + m.member.name, e.range);
        return expr(d + 1, *m.base);
      }
      case ExprKind::Index: {
        const auto& ix = static_cast<const IndexExpr&>(e);
        line(d, head, e.range);
        expr(d + 1, *ix.base);
        for (const IndexItem& it : ix.items) {
          if (it.kind == IndexItem::Single) {
            expr(d + 1, *it.index);
          } else {
            line(d + 1, "Slice", it.range);
            if (it.lo) expr(d + 2, *it.lo);
            if (it.hi) expr(d + 2, *it.hi);
          }
        }
        return;
      }
      case ExprKind::Tuple:
        line(d, head, e.range);
        for (const auto& x : static_cast<const TupleExpr&>(e).elems) expr(d + 1, *x);
        return;
      case ExprKind::List:
        line(d, head, e.range);
        for (const auto& x : static_cast<const ListExpr&>(e).elems) expr(d + 1, *x);
        return;
      case ExprKind::Spread: return line(d, head + " .." + static_cast<const SpreadExpr&>(e).pack.name, e.range);
      case ExprKind::Reduce: {
        const auto& r = static_cast<const ReduceExpr&>(e);
        std::string binders;
        for (const Ident& n : r.binders) binders += (binders.empty() ? "" : ", ") + n.name;
        line(d, fmt::format("{} {}[{}]", head, r.op.name, binders), e.range);
        return expr(d + 1, *r.body);
      }
    }
  }
};

}  // namespace

std::string printAst(const ModuleAst& module, const SourceManager& sources) {
  Printer p(sources);
  p.module(module);
  return p.out;
}

}  // namespace linnet::syntax
