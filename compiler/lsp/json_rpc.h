// The Language Server Protocol's framing over a byte stream: each message is
// `Content-Length: N` (other headers ignored), a blank line, then N bytes of
// JSON. Malformed framing is reported and skipped, never fatal: an editor
// that sends one bad message keeps its session.
#pragma once

#include <cstddef>
#include <istream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace linnet::lsp {

struct Incoming {
  enum Kind { Message, End, Malformed } kind = End;
  std::string body;   // Message: the JSON text, unparsed
  std::string error;  // Malformed: what was wrong, for the log
};

// A body larger than this is read and dropped (Malformed): one message must
// not take the machine's memory.
constexpr size_t kMaxMessageBytes = 64u << 20;

// The next message; End at end of input.
Incoming readMessage(std::istream& in);

// Writes `message` framed, and flushes.
void writeMessage(std::ostream& out, const nlohmann::json& message);

}  // namespace linnet::lsp
