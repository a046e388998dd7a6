#include "weights/json_util.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "weights/error.h"

namespace linnet::weights {

nlohmann::json parseJsonStrict(std::string_view text, std::string_view what) {
  using nlohmann::json;
  std::vector<std::set<std::string>> keys;
  std::string duplicate;
  json::parser_callback_t cb = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string() && !keys.back().insert(parsed.get<std::string>()).second &&
            duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default:
        break;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), cb, /*allow_exceptions=*/true);
  } catch (const json::exception& e) {
    std::string msg = e.what();
    if (auto close = msg.find("] "); msg.rfind("[json.exception", 0) == 0 && close != std::string::npos)
      msg = msg.substr(close + 2);
    throw Error(fmt::format("{}: not well-formed JSON: {}", what, msg));
  }
  if (!duplicate.empty())
    throw Error(fmt::format("{}: key \"{}\" appears twice in one JSON object; keep one of them", what, duplicate));
  return doc;
}

std::string jsonSnippet(const nlohmann::json& value) {
  std::string s = value.dump(-1, ' ', /*ensure_ascii=*/true);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

}  // namespace linnet::weights
