// What is known about dimensions in a scope (a where clause plus implied
// facts), and a bounded, sound prover over it.
//
// Every variable, pack product and well-defined `/` or `%` of dimensions is a
// nonnegative integer. The prover is incomplete by design: `false` means "not
// proven", never "disproven".
#pragma once

#include <memory>
#include <optional>
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
  // Which facts a proof of `goal` needs, for explanations (`linnetc
  // explain`): nullopt when prove(goal) fails, else the indices into
  // relations() of a minimal set of facts from which prove(goal) still
  // succeeds, in order. Found by minimizing, not by tracing the search:
  // drop one fact at a time and keep the drop when the goal is still
  // proven. Each fact left was needed when it was tried; an empty set means
  // the goal holds for all nonnegative dimensions. Costs a proof per fact:
  // only for explaining, never on the checker's path.
  std::optional<std::vector<size_t>> usedBy(const Relation& goal) const;
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
