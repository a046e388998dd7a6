// The requests answered from the latest check: hover, go to definition and
// document symbols. None checks again; each reads the Analysis.
#include <fmt/format.h>

#include <algorithm>

#include "driver/explain.h"
#include "lsp/protocol.h"
#include "lsp/server.h"

namespace linnet::lsp {

using nlohmann::json;

namespace {


uint32_t size(SourceRange r) { return r.end - r.begin; }

// Source text short enough to quote on one line, else empty.
std::string quotable(const SourceManager& sources, SourceRange r) {
  std::string_view t = sources.text(r);
  if (t.empty() || t.size() > 60 || t.find('\n') != std::string_view::npos) return {};
  return std::string(t);
}

std::string placeText(const SourceManager& sources, SourceRange r) {
  const SourceFile& f = sources.file(r.file);
  return fmt::format("{}:{}", f.path(), f.lineCol(r.begin).line);
}

// The innermost obligations containing the place: those of the smallest
// range, as `linnetc explain --at FILE:LINE:COL` picks them.
std::vector<const sema::Obligation*> obligationsAt(const Server::Place& p) {
  const sema::Obligation* inner = nullptr;
  for (const sema::Obligation& o : p.analysis->explainer.obligations())
    if (o.at.covers(p.file, p.offset) && (!inner || size(o.at) < size(inner->at))) inner = &o;
  std::vector<const sema::Obligation*> out;
  if (!inner) return out;
  for (const sema::Obligation& o : p.analysis->explainer.obligations())
    if (o.at.file == inner->at.file && o.at.begin == inner->at.begin && o.at.end == inner->at.end) out.push_back(&o);
  return out;
}

json symbol(const SourceManager& sources, const std::string& name, std::string detail, int kind, SourceRange range,
            SourceRange selection) {
  if (!range.valid()) range = selection;
  return {{"name", name.empty() ? "?" : name},
          {"detail", std::move(detail)},
          {"kind", kind},
          {"range", rangeJson(sources, range)},
          {"selectionRange", rangeJson(sources, selection.valid() ? selection : range)},
          {"children", json::array()}};
}

// LSP's SymbolKind numbers.
constexpr int kClass = 5, kMethod = 6, kField = 8, kFunction = 12, kConstant = 14;

std::string fnDetail(const syntax::FnDecl& fn) {
  return fmt::format("{}{}fn", fn.isPub ? "pub " : "", fn.isEntry ? "entry " : "");
}

}  // namespace

Server::Place Server::placeOf(const json& params, const char* request) {
  std::string path = documentPath(params);
  if (!params.contains("position")) throw std::invalid_argument(std::string(request) + " needs a position");
  Position pos = positionFrom(params["position"]);
  Place p{analysisOf(path)};
  if (p.analysis) p.file = p.analysis->fileOf(canonicalPath(path));
  if (!p.file) return {};
  p.offset = offsetOf(p.analysis->sources.file(p.file).text(), pos);
  return p;
}

json Server::hover(const json& params) {
  Place p = placeOf(params, "hover");
  if (!p.analysis) return nullptr;
  const SourceManager& sources = p.analysis->sources;

  std::vector<const sema::TypeAt*> types = p.analysis->index.typesAt(p.file, p.offset);
  const sema::ReferenceAt* ref = p.analysis->index.referenceAt(p.file, p.offset);
  std::vector<const sema::Obligation*> obligations = obligationsAt(p);
  if (types.empty() && !ref && obligations.empty()) return nullptr;

  std::string md;
  SourceRange range = !types.empty() ? types[0]->at : ref ? ref->at : obligations[0]->at;
  if (ref) {
    if (size(ref->at) <= size(range)) range = ref->at;
    md += fmt::format("**{}**, declared at `{}`\n", ref->what, placeText(sources, ref->target));
    const SourceFile& f = sources.file(ref->target.file);
    std::string_view line = f.lineText(f.lineCol(ref->target.begin).line);
    auto first = line.find_first_not_of(" \t");
    if (first != std::string_view::npos) md += fmt::format("```linnet\n{}\n```\n", line.substr(first));
  }
  if (!types.empty()) {
    std::string expr = quotable(sources, types[0]->at);
    std::vector<const sema::TypeAt*> concrete;
    for (const sema::TypeAt* t : types) {
      if (t->concrete) {
        concrete.push_back(t);
      } else {
        md += fmt::format("```linnet\n{}{}\n```\n", expr.empty() ? "" : expr + ": ", t->type);
      }
    }
    if (!concrete.empty()) {
      md += "At the package's generics:\n";
      size_t shown = std::min<size_t>(concrete.size(), 4);
      for (size_t i = 0; i < shown; ++i)
        md += fmt::format("- `{}`{}\n", concrete[i]->type,
                          concrete[i]->context.empty() ? "" : " (" + concrete[i]->context + ")");
      if (concrete.size() > shown) md += fmt::format("- and {} more instantiations\n", concrete.size() - shown);
    }
  }
  if (!obligations.empty()) {
    md += "\n---\nShape obligations here:\n";
    size_t shown = std::min<size_t>(obligations.size(), 4);
    for (size_t i = 0; i < shown; ++i)
      md += fmt::format("```text\n{}```\n", driver::explanationText(*obligations[i], sources));
    if (obligations.size() > shown)
      md += fmt::format("and {} more (`linnetc explain --at`)\n", obligations.size() - shown);
  }
  return {{"contents", {{"kind", "markdown"}, {"value", md}}}, {"range", rangeJson(sources, range)}};
}

json Server::definition(const json& params) {
  Place p = placeOf(params, "definition");
  if (!p.analysis) return nullptr;
  const SourceManager& sources = p.analysis->sources;
  if (const sema::ReferenceAt* ref = p.analysis->index.referenceAt(p.file, p.offset))
    return locationJson(sources, ref->target);
  // A name a `use` brings in, or the module it names.
  const sema::Module* m = p.analysis->moduleOf(p.file);
  if (!m || !m->ast) return nullptr;
  for (const syntax::UseDecl& use : m->ast->uses) {
    const sema::Item* any = nullptr;
    for (const syntax::Ident& name : use.names) {
      auto it = m->imports.find(name.name);
      if (it == m->imports.end()) continue;
      any = &it->second;
      if (!name.range.covers(p.file, p.offset)) continue;
      const sema::Item& item = it->second;
      SourceRange target = item.block ? item.block->name.range : item.fn ? item.fn->name.range
                           : item.constant                     ? item.constant->name.range
                                                               : item.range;
      return locationJson(sources, target);
    }
    for (const syntax::Ident& part : use.path)
      if (part.range.covers(p.file, p.offset) && any && any->module)
        return locationJson(sources, SourceRange{any->module->file, 0, 0});
  }
  return nullptr;
}

json Server::documentSymbols(const json& params) {
  std::string path = documentPath(params);
  const Analysis* a = analysisOf(path);
  json out = json::array();
  if (!a) return out;
  const sema::Module* m = a->moduleOf(a->fileOf(canonicalPath(path)));
  if (!m || !m->ast) return out;
  const SourceManager& sources = a->sources;
  for (const auto& b : m->ast->blocks) {
    json s = symbol(sources, b->name.name, b->isPub ? "pub block" : "block", kClass, b->range, b->name.range);
    for (const syntax::MemberDecl& mem : b->members) {
      static const char* kinds[] = {"sub", "state", "param"};
      std::string type = mem.type ? std::string(sources.text(mem.type->range)) : "";
      s["children"].push_back(symbol(sources, mem.name.name,
                                     fmt::format("{}{}", kinds[static_cast<int>(mem.kind)], type.empty() ? "" : ": " + type),
                                     kField, mem.range, mem.name.range));
    }
    for (const auto& fn : b->fns)
      s["children"].push_back(symbol(sources, fn->name.name, fnDetail(*fn), kMethod, fn->range, fn->name.range));
    out.push_back(std::move(s));
  }
  for (const auto& fn : m->ast->fns)
    out.push_back(symbol(sources, fn->name.name, fnDetail(*fn), kFunction, fn->range, fn->name.range));
  for (const auto& c : m->ast->consts)
    out.push_back(symbol(sources, c->name.name, c->isPub ? "pub const" : "const", kConstant, c->range, c->name.range));
  return out;
}

}  // namespace linnet::lsp
