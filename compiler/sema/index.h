// What the checker learnt about each place of the source, for editors
// (`linnetc lsp`): the type of every expression it checked, symbolically
// and under the package's generics, and the declaration every name it
// resolved refers to. With an index set (Checker::setIndex) the checker
// records as it checks; without one it records nothing and pays a null test
// per expression.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "base/source.h"

namespace linnet::sema {

// An expression's type as one check saw it.
struct TypeAt {
  SourceRange at;
  std::string type;     // `Tensor[B, S, Heads * (H / Heads); T]`
  bool concrete = false;  // seen while checking an instantiation with numbers
  std::string context;  // concrete: the innermost instantiation, "in `forward`"
};

// A name written at `at` that refers to the declaration at `target`.
struct ReferenceAt {
  SourceRange at;
  SourceRange target;
  std::string what;  // "fn `rms_norm`", "local `mixed`", "member `q_proj` of block `Attention`"
};

class SemanticIndex {
 public:
  // Used by the checker. Repeats (one definition checked from several
  // places) are kept once.
  void type(SourceRange at, std::string type, bool concrete, std::string context);
  void reference(SourceRange at, SourceRange target, std::string what);

  // The types recorded for the innermost checked expression containing
  // byte `offset` of `file`: the symbolic ones first.
  std::vector<const TypeAt*> typesAt(uint32_t file, uint32_t offset) const;
  // The reference whose name contains `offset`, or null.
  const ReferenceAt* referenceAt(uint32_t file, uint32_t offset) const;

  const std::vector<TypeAt>& types() const { return types_; }
  const std::vector<ReferenceAt>& references() const { return references_; }

 private:
  std::vector<TypeAt> types_;
  std::vector<ReferenceAt> references_;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t, std::string, bool>> seenTypes_;
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> seenReferences_;
};

}  // namespace linnet::sema
