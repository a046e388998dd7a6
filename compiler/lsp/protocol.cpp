#include "lsp/protocol.h"

#include <stdexcept>

#include "lsp/documents.h"

namespace linnet::lsp {

using nlohmann::json;

json rangeJson(const SourceManager& sources, SourceRange r) {
  if (!r.valid()) return {{"start", toJson({})}, {"end", toJson({})}};
  std::string_view text = sources.file(r.file).text();
  return {{"start", toJson(positionOf(text, r.begin))}, {"end", toJson(positionOf(text, r.end))}};
}

json locationJson(const SourceManager& sources, SourceRange r) {
  return {{"uri", uriOfPath(sources.file(r.file).path())}, {"range", rangeJson(sources, r)}};
}

json diagnosticJson(const SourceManager& sources, const Diagnostic& d) {
  static const int kSeverity[] = {1, 2, 3};  // Error, Warning, Note -> LSP's Error, Warning, Information
  std::string message = d.message;
  json related = json::array();
  for (const Diagnostic& n : d.notes) {
    if (n.range.valid())
      related.push_back({{"location", locationJson(sources, n.range)}, {"message", n.message}});
    else
      message += "\n" + n.message;
  }
  json j = {{"range", rangeJson(sources, d.range)},
            {"severity", kSeverity[static_cast<int>(d.severity)]},
            {"source", "linnet"},
            {"message", message}};
  if (!related.empty()) j["relatedInformation"] = related;
  return j;
}

std::string documentPath(const json& params) {
  if (!params.is_object() || !params.contains("textDocument") || !params["textDocument"].is_object() ||
      !params["textDocument"].contains("uri") || !params["textDocument"]["uri"].is_string())
    throw std::invalid_argument("params need textDocument.uri");
  std::string uri = params["textDocument"]["uri"].get<std::string>();
  auto path = pathOfUri(uri);
  if (!path) throw std::invalid_argument("only file:// URIs of local files are served, not `" + uri + "`");
  return *path;
}

}  // namespace linnet::lsp
