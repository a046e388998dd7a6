// analyzeScopes(): which names each frame (the template, a loop body, a macro,
// ...) must start as undefined, in jinja2's scoping (see ast.h).
#include <algorithm>
#include <string>
#include <vector>

#include "chat/ast.h"

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
