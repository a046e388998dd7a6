// Elaboration of fn bodies: statements, `static for` (unrolled over a
// range, one body over a sub-block array), `while`, and calls resolved to
// function instances.
#include "elaborate/builder.h"

namespace linnet::elab {

using namespace syntax;

FnInstance* Program::Builder::instantiateFn(const FnDecl& fn, const sema::Module* module, const Instance* self,
                                            Env env, const std::vector<Value>& args) {
  std::string key = fmt::format("{:p}|{}|{}", static_cast<const void*>(&fn),
                                self ? fmt::format("{}<{}>", self->block->name.name, self->env.key()) : "", env.key());
  for (const Value& a : args) key += "|" + a.type.key();
  if (auto it = program.fns_.find(key); it != program.fns_.end()) return it->second.get();
  // Cached only once its body is complete: a body that fails to elaborate
  // leaves nothing behind for a later call to find half built (fns cannot
  // recurse, so nothing needs the instance before then).
  auto owned = std::make_unique<FnInstance>();
  FnInstance* inst = owned.get();
  inst->decl = &fn;
  inst->module = module;
  inst->self = self;
  inst->env = env;
  inst->key = key;
  Frame f;
  f.fn = inst;
  f.self = self;
  f.module = module;
  f.env = std::move(env);
  f.out = &inst->body;
  f.scopes.emplace_back();
  for (size_t k = 0; k < fn.params.size(); ++k) {
    SlotId s = newSlot(f, fn.params[k].name.name, args[k].type);
    inst->params.push_back(s);
    bind(f, fn.params[k].name.name, local(f, s, fn.params[k].name.range));
  }
  inst->result = Type::unit();
  body(f, fn.body);
  program.fns_[key] = std::move(owned);
  return inst;
}

void Program::Builder::body(Frame& f, const StmtList& stmts) {
  f.scopes.emplace_back();
  for (const StmtPtr& s : stmts) {
    statement(f, *s);
    if (f.returned) break;
  }
  f.scopes.pop_back();
}

std::vector<SlotId> Program::Builder::varsInScope(Frame& f) {
  std::vector<SlotId> out;
  for (auto& scope : f.scopes)
    for (auto& [n, v] : scope)
      if (v.expr && v.expr->kind == ExprKind::Local && f.fn->slots[v.expr->slot].mutableVar &&
          v.type.isTensor())
        out.push_back(v.expr->slot);
  return out;
}

// A new slot holding `v`, its `Let`, and `name` bound to it.
void Program::Builder::letSlot(Frame& f, const Ident& name, const Value& v, bool isVar, SourceRange at) {
  elab::Stmt* st = stmt(f, elab::StmtKind::Let, at);
  st->slot = newSlot(f, name.name, v.type, isVar);
  st->value = v.expr;
  st->binds = &name;
  bind(f, name.name, local(f, st->slot, name.range));
}

void Program::Builder::statement(Frame& f, const syntax::Stmt& s) {
  switch (s.kind) {
    case syntax::StmtKind::Let:
    case syntax::StmtKind::Var: {
      bool isVar = s.kind == syntax::StmtKind::Var;
      const Ident& n = isVar ? static_cast<const VarStmt&>(s).name : static_cast<const LetStmt&>(s).name;
      const TypeExpr* declaredType =
          isVar ? static_cast<const VarStmt&>(s).type.get() : static_cast<const LetStmt&>(s).type.get();
      const syntax::Expr& valueExpr =
          isVar ? *static_cast<const VarStmt&>(s).value : *static_cast<const LetStmt&>(s).value;
      Value v = eval(f, valueExpr);
      if (v.type.isTensor()) {
        if (declaredType && v.t().weak) v = cast(f, v, declaredDType(f, *declaredType), declaredType->range);
        v = finalize(v);
      }
      letSlot(f, n, v, isVar, s.range);
      return;
    }
    case syntax::StmtKind::LetTuple: {
      const auto& l = static_cast<const LetTupleStmt&>(s);
      Value v = eval(f, *l.value);
      if (v.type.kind != Type::Tuple || v.type.elems.size() != l.names.size())
        fail(l.range, "a tuple `let` needs a tuple of as many values");
      elab::Stmt* st = stmt(f, elab::StmtKind::LetTuple, s.range);
      st->value = v.expr;
      for (size_t i = 0; i < l.names.size(); ++i) {
        SlotId slot = newSlot(f, l.names[i].name, v.type.elems[i]);
        st->slots.push_back(slot);
        st->bindsEach.push_back(&l.names[i]);
        bind(f, l.names[i].name, local(f, slot, l.names[i].range));
      }
      return;
    }
    case syntax::StmtKind::Comprehension: {
      const auto& c = static_cast<const ComprehensionStmt&>(s);
      letSlot(f, c.name, finalize(comprehension(f, c.indices, *c.body, std::nullopt, c.range)), false, s.range);
      return;
    }
    case syntax::StmtKind::Assign: {
      const auto& a = static_cast<const AssignStmt&>(s);
      Value v = eval(f, *a.value);
      if (Value* target = lookup(f, a.target.name)) {
        if (!target->expr || target->expr->kind != ExprKind::Local || !f.fn->slots[target->expr->slot].mutableVar)
          fail(a.range, fmt::format("`{}` is not a `var`", a.target.name));
        const Type& want = f.fn->slots[target->expr->slot].type;
        if (v.type.isTensor() && want.isTensor() && v.t().dtype != want.tensor.dtype)
          v = cast(f, v, want.tensor.dtype, a.range);
        elab::Stmt* st = stmt(f, elab::StmtKind::Assign, s.range);
        st->slot = target->expr->slot;
        st->value = v.expr;
        return;
      }
      const Member* state = f.self ? f.self->state(a.target.name) : nullptr;
      if (!state) fail(a.range, fmt::format("no variable or state `{}`", a.target.name));
      if (v.t().shape != state->type.shape)
        fail(a.range, fmt::format("state `{}` is {} but is assigned {}", a.target.name, state->type.str(), v.t().str()));
      v = cast(f, v, state->type.dtype, a.range);
      elab::Stmt* st = stmt(f, elab::StmtKind::AssignState, s.range);
      st->name = a.target.name;
      st->value = v.expr;
      return;
    }
    case syntax::StmtKind::Return: {
      const auto& r = static_cast<const ReturnStmt&>(s);
      elab::Stmt* st = stmt(f, elab::StmtKind::Return, s.range);
      if (r.value) {
        Value v = eval(f, *r.value);
        if (v.type.isTensor()) v = finalize(v);
        st->value = v.expr;
        f.fn->result = v.type;
      }
      f.returned = true;
      return;
    }
    case syntax::StmtKind::Expr: {
      Value v = eval(f, *static_cast<const ExprStmt&>(s).expr);
      stmt(f, elab::StmtKind::Eval, s.range)->value = v.expr;
      return;
    }
    case syntax::StmtKind::StaticFor: staticFor(f, static_cast<const StaticForStmt&>(s)); return;
    case syntax::StmtKind::While: {
      const auto& w = static_cast<const WhileStmt&>(s);
      Value c = eval(f, *w.cond);
      if (!c.type.isTensor() || c.t().rank() != 0 || c.t().dtype != Scalar::Bool)
        fail(w.cond->range, "a `while` condition must be a bool");
      elab::Stmt* st = stmt(f, elab::StmtKind::While, s.range);
      st->value = c.expr;
      st->varsInScope = varsInScope(f);
      Body* outer = f.out;
      f.out = &st->body;
      body(f, w.body);
      f.out = outer;
      f.returned = false;  // the loop may run no iteration
      return;
    }
  }
}

// Over a range: unrolled, the variable a static int in each copy. Over a
// sub-block array: one body, its variable a block standing for each
// element (they share a block and generics, so they type alike).
void Program::Builder::staticFor(Frame& f, const StaticForStmt& l) {
  if (!l.iterable) {
    int64_t lo = dim(f, *l.lo), hi = dim(f, *l.hi);
    for (int64_t i = lo; i < hi && !f.returned; ++i) {
      f.scopes.emplace_back();
      Value v = constantInt(f, Scalar::I64, i, true, l.var.range);
      v.staticInt = i;
      bind(f, l.var.name, v);
      body(f, l.body);
      f.scopes.pop_back();
    }
    return;
  }
  Value array = eval(f, *l.iterable);
  if (array.type.kind != Type::Array) fail(l.iterable->range, "`static for` needs a range or an array of blocks");
  const auto& elements = array.type.arrayOwner->arrays.at(array.type.array);
  if (elements.empty()) return;
  Type element;
  element.kind = Type::Block;
  element.block = elements[0].get();
  elab::Stmt* st = stmt(f, elab::StmtKind::ForArray, l.range);
  st->value = array.expr;
  st->varsInScope = varsInScope(f);
  st->slot = newSlot(f, l.var.name, element);
  Body* outer = f.out;
  f.out = &st->body;
  f.scopes.emplace_back();
  Value v = local(f, st->slot, l.var.range);
  bind(f, l.var.name, v);
  body(f, l.body);
  f.scopes.pop_back();
  f.out = outer;
}

// ------------------------------------------------------------ calls

Env Program::Builder::bindCallEnv(Frame& caller, const FnDecl& fn, const Env& base, const CallExpr* call,
                                  const std::vector<Value>& args, const std::map<std::string, int64_t>& given) {
  std::vector<ArgType> types;
  for (const Value& a : args) types.push_back({a.type.isTensor(), a.t().dtype, a.t().weak, a.t().shape});
  return guarded([&] {
    return bindCallGenerics(
        fn, base, given, call, types, [&](const syntax::Expr& e) { return dim(caller, e); },
        [&](const syntax::Expr& e) { return dtypeOf(caller, e); });
  });
}

// Parameters take their declared dtype: a literal argument becomes it.
std::vector<Value> Program::Builder::coerceArgs(Frame& callee, Frame& at, const FnDecl& fn, std::vector<Value> args) {
  for (size_t k = 0; k < fn.params.size(); ++k) {
    Value& v = args[k];
    if (v.type.isTensor() && v.t().weak) {
      v = cast(at, v, declaredDType(callee, *fn.params[k].type), fn.params[k].type->range);
      v.staticInt.reset();
    }
  }
  return args;
}

Value Program::Builder::callFn(Frame& caller, const FnDecl& fn, const Value* receiver, const Instance* self,
                               const sema::Module* module, const CallExpr& call, std::vector<Value> args) {
  if (args.size() != fn.params.size())
    fail(call.range, fmt::format("`{}` takes {} arguments, {} were given", fn.name.name, fn.params.size(), args.size()));
  Frame callee;
  callee.env = bindCallEnv(caller, fn, self ? self->env : Env{}, &call, args, {});
  args = coerceArgs(callee, caller, fn, std::move(args));
  FnInstance* inst = instantiateFn(fn, module, self, callee.env, args);
  std::vector<const Expr*> operands = {receiver ? receiver->expr : nullptr};
  for (const Value& a : args) operands.push_back(a.expr);
  Expr* e = node(caller, ExprKind::Call, inst->result, call.range, std::move(operands));
  e->callee = inst;
  return tensorValue(e);
}

Value Program::Builder::call(Frame& f, const CallExpr& c) {
  auto args = [&] {
    std::vector<Value> out;
    for (const Argument& a : c.args) out.push_back(eval(f, *a.value));
    return out;
  };
  auto methodOf = [](const Instance& inst, const std::string& n) -> const FnDecl* {
    for (const auto& fn : inst.block->fns)
      if (fn->name.name == n) return fn.get();
    return nullptr;
  };
  if (c.callee->kind == syntax::ExprKind::Member) {
    const auto& m = static_cast<const MemberExpr&>(*c.callee);
    Value base = eval(f, *m.base);
    if (base.type.kind != Type::Block) fail(m.range, "a method call needs a block");
    const FnDecl* fn = methodOf(*base.type.block, m.member.name);
    if (!fn) fail(m.member.range, fmt::format("no fn `{}`", m.member.name));
    return callFn(f, *fn, &base, base.type.block, base.type.block->module, c, args());
  }
  const std::string& n = static_cast<const NameExpr&>(*c.callee).name;
  if (f.self)
    if (const FnDecl* fn = methodOf(*f.self, n)) {
      Type selfType;
      selfType.kind = Type::Block;
      selfType.block = f.self;
      Value self{node(f, ExprKind::Self, selfType, c.callee->range), selfType, std::nullopt};
      return callFn(f, *fn, &self, f.self, f.self->module, c, args());
    }
  if (const sema::Item* item = source.lookup(*f.module, n); item && item->kind == sema::Item::Fn)
    return callFn(f, *item->fn, nullptr, nullptr, item->module, c, args());
  if (auto p = sema::primitiveCalled(n)) return primitive(f, c, *p);
  fail(c.range, fmt::format("unknown fn `{}`", n));
}

}  // namespace linnet::elab
