#include "sema/explain.h"

namespace linnet::sema {

bool Explainer::fresh(SourceRange at, const std::string& relation, const std::string& requirement) {
  return seen_.emplace(at.file, at.begin, at.end, relation, requirement).second;
}

std::optional<std::vector<size_t>> Explainer::usedBy(const dims::Facts& facts, const dims::Relation& goal) {
  std::string key = goal.str();
  for (const auto& r : facts.relations()) {
    key += '\n';
    key += r.str();
  }
  auto it = used_.find(key);
  if (it == used_.end()) it = used_.emplace(std::move(key), facts.usedBy(goal)).first;
  return it->second;
}

void Explainer::attachDiagnostics(const std::vector<Diagnostic>& diags) {
  for (Obligation& o : obligations_) {
    if (o.proven) continue;
    const Diagnostic* best = nullptr;
    for (const Diagnostic& d : diags) {
      if (d.range.file != o.at.file || d.range.begin != o.at.begin || d.range.end != o.at.end) continue;
      bool names = d.message.find("`" + o.obligation + "`") != std::string::npos;
      if (!best || (names && best->message.find("`" + o.obligation + "`") == std::string::npos)) best = &d;
      if (names) break;
    }
    if (!best) continue;
    o.message = best->message;
    for (const Diagnostic& n : best->notes)
      if (n.message.rfind("help: ", 0) == 0) o.help = n.message.substr(6);
  }
}

}  // namespace linnet::sema
