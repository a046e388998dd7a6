#include "lsp/json_rpc.h"

#include <algorithm>
#include <cctype>

namespace linnet::lsp {

namespace {

// One header line without its CR LF (a bare LF is accepted too); false at end of input.
bool readLine(std::istream& in, std::string& line) {
  line.clear();
  char c;
  while (in.get(c)) {
    if (c == '\n') {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return true;
    }
    if (line.size() < 4096) line += c;  // an overlong header is cut, then rejected below
  }
  return !line.empty();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

Incoming readMessage(std::istream& in) {
  std::string line;
  bool any = false, haveLength = false, badLength = false;
  size_t length = 0;
  while (readLine(in, line)) {
    if (line.empty()) {
      if (!any) continue;  // blank lines between messages
      break;
    }
    any = true;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (lower(line.substr(0, colon)) != "content-length") continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t") + 1);
    if (value.empty() || value.size() > 12 || !std::all_of(value.begin(), value.end(), ::isdigit)) {
      badLength = true;
      continue;
    }
    length = std::stoull(value);
    haveLength = true;
  }
  if (!any) return {Incoming::End, {}, {}};
  if (!haveLength)
    return {Incoming::Malformed, {}, badLength ? "Content-Length is not a number" : "no Content-Length header"};
  if (length > kMaxMessageBytes) {
    in.ignore(static_cast<std::streamsize>(length));
    return {Incoming::Malformed, {},
            "a message of " + std::to_string(length) + " bytes is over the limit of " +
                std::to_string(kMaxMessageBytes)};
  }
  Incoming m{Incoming::Message, std::string(length, '\0'), {}};
  in.read(m.body.data(), static_cast<std::streamsize>(length));
  if (static_cast<size_t>(in.gcount()) != length)
    return {Incoming::Malformed, {}, "the input ended inside a message body"};
  return m;
}

void writeMessage(std::ostream& out, const nlohmann::json& message) {
  // Invalid UTF-8 in a source (quoted in a diagnostic) is replaced, not thrown.
  std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
}

}  // namespace linnet::lsp
