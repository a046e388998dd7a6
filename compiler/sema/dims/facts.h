// What is known about dimensions in a scope (a where clause plus implied
// facts), and a bounded, sound prover over it.
//
// Every variable, pack product and well-defined `/` or `%` of dimensions is a
// nonnegative integer. The prover is incomplete by design: `false` means "not
// proven", never "disproven".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sema/dims/expr.h"

namespace linnet::dims {

// Copyable: scopes copy and extend it. Copies share derived caches until one
// of them adds a fact. Not safe for concurrent use of one instance.
class Facts {
public:
  void add(const Relation& r);
  bool prove(const Relation& goal) const;
  // Normal form that also uses divisibility facts: with `Vocab % Shards == 0`,
  // (Vocab / Shards) * Shards -> Vocab and Vocab % Shards -> 0.
  Expr simplify(const Expr& e) const;
  bool provePositive(const Expr& e) const { return prove({e, Rel::Gt, Expr::constant(0)}); }
  bool proveNonnegative(const Expr& e) const { return prove({e, Rel::Ge, Expr::constant(0)}); }
  std::vector<std::string> describe() const;  // the facts as given, in order
  const std::vector<Relation>& relations() const { return given_; }
  bool empty() const { return given_.empty(); }

private:
  struct Derived;  // normalized facts and caches (facts.cpp)
  Derived& derived() const;
  std::vector<Relation> given_;
  mutable std::shared_ptr<Derived> derived_;
};

}  // namespace linnet::dims
