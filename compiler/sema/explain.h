// What the shape checker proved, and from what: `linnetc explain`.
//
// With an Explainer set (Checker::setExplainer), the checker records every
// shape obligation it discharges or fails to discharge while it checks the
// definitions (symbolically, once): where it arose, what required it, the
// relation, its simplified form, and for a proven one a minimal set of the
// facts in scope that prove it, each with its origin. Without one, the
// checker records nothing and pays nothing beyond a null test per proof.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/diagnostics.h"
#include "sema/dims/facts.h"

namespace linnet::sema {

// Where a fact in scope came from: "where clause of block `Model`", at the
// clause's text.
struct FactOrigin {
  std::string what;
  SourceRange at;
};

// A fact as an explanation cites it.
struct CitedFact {
  std::string fact;  // `H % Heads == 0`
  FactOrigin origin;
};

struct Obligation {
  SourceRange at;           // the expression or declaration that required it
  std::string definition;   // "fn `split_heads`", "block `GroupedQueryAttention`"
  std::string requirement;  // "reshape from `...` to `[B, S, N, D]` must keep the element count"
  std::string obligation;   // the relation as the checker states it: `N == Heads * (N / Heads)`
  std::string simplified;   // after the facts' divisibility rewrites
  bool proven = false;
  bool concrete = false;              // met while checking an instantiation with numbers
  std::vector<std::string> context;  // concrete: the instantiation chain, outermost first
  // Proven: a minimal set of the facts in scope that proves it (empty: it
  // holds for all nonnegative dimensions).
  std::vector<CitedFact> because;
  // Not proven: the checker's message and help, the facts in scope that
  // mention its dimensions, and what would make it provable.
  std::string message;
  std::string help;
  std::vector<CitedFact> closest;
  std::string missing;
};

// Collects obligations for one check. Not thread-safe; one per Checker.
class Explainer {
 public:
  const std::vector<Obligation>& obligations() const { return obligations_; }

  // Used by the checker. False when this obligation (place, relation and
  // requirement) was recorded before: definitions' signatures are checked
  // from several places.
  bool fresh(SourceRange at, const std::string& relation, const std::string& requirement);
  void add(Obligation o) { obligations_.push_back(std::move(o)); }
  // facts.usedBy(goal), remembered by the facts and the goal.
  std::optional<std::vector<size_t>> usedBy(const dims::Facts& facts, const dims::Relation& goal);
  // Fills in each unproven obligation's message and help from the
  // diagnostic the checker reported at its place, where there is one.
  void attachDiagnostics(const std::vector<Diagnostic>& diags);

 private:
  std::vector<Obligation> obligations_;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t, std::string, std::string>> seen_;
  std::map<std::string, std::optional<std::vector<size_t>>> used_;
};

}  // namespace linnet::sema
