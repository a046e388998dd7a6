// Our things in the protocol's shapes: source ranges as LSP ranges (UTF-16
// positions), locations, diagnostics, and a request's document.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/diagnostics.h"
#include "base/source.h"

namespace linnet::lsp {

nlohmann::json rangeJson(const SourceManager& sources, SourceRange r);
nlohmann::json locationJson(const SourceManager& sources, SourceRange r);
// Notes with a place become relatedInformation; `help:` notes join the message.
nlohmann::json diagnosticJson(const SourceManager& sources, const Diagnostic& d);

// The local path of params.textDocument.uri; throws std::invalid_argument
// when there is none.
std::string documentPath(const nlohmann::json& params);

}  // namespace linnet::lsp
