#include "sema/index.h"

#include <algorithm>

namespace linnet::sema {

namespace {

bool same(SourceRange a, SourceRange b) { return a.file == b.file && a.begin == b.begin && a.end == b.end; }

}  // namespace

void SemanticIndex::type(SourceRange at, std::string type, bool concrete, std::string context) {
  if (!at.valid()) return;
  if (!seenTypes_.emplace(at.file, at.begin, at.end, type, concrete).second) return;
  types_.push_back({at, std::move(type), concrete, std::move(context)});
}

void SemanticIndex::reference(SourceRange at, SourceRange target, std::string what) {
  if (!at.valid() || !target.valid()) return;
  if (!seenReferences_.emplace(at.file, at.begin, at.end).second) return;
  references_.push_back({at, target, std::move(what)});
}

std::vector<const TypeAt*> SemanticIndex::typesAt(uint32_t file, uint32_t offset) const {
  const TypeAt* inner = nullptr;
  for (const TypeAt& t : types_)
    if (t.at.covers(file, offset) && (!inner || t.at.end - t.at.begin < inner->at.end - inner->at.begin))
      inner = &t;
  std::vector<const TypeAt*> out;
  if (!inner) return out;
  for (const TypeAt& t : types_)
    if (same(t.at, inner->at)) out.push_back(&t);
  std::stable_sort(out.begin(), out.end(), [](const TypeAt* a, const TypeAt* b) { return !a->concrete && b->concrete; });
  return out;
}

const ReferenceAt* SemanticIndex::referenceAt(uint32_t file, uint32_t offset) const {
  const ReferenceAt* inner = nullptr;
  for (const ReferenceAt& r : references_)
    if (r.at.covers(file, offset) && (!inner || r.at.end - r.at.begin < inner->at.end - inner->at.begin))
      inner = &r;
  return inner;
}

}  // namespace linnet::sema
