// JSON parsing for the small JSON documents of this library (safetensors
// headers, index.json, bindings.json): well-formedness and UTF-8 are checked
// by nlohmann::json, and a key repeated within one object is an error
// (nlohmann would silently keep the last one).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace linnet::weights {

// Throws Error("<what>: <problem>") for malformed JSON (with line and
// column) or a duplicate key (naming it).
nlohmann::json parseJsonStrict(std::string_view text, std::string_view what);

// A short, printable rendering of a JSON value for messages (at most ~60
// characters).
std::string jsonSnippet(const nlohmann::json& value);

}  // namespace linnet::weights
