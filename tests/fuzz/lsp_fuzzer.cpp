// libFuzzer target: `linnetc lsp` fed random edits. The input is a starting
// text (up to the first NUL), then edits: four bytes for a range (start
// line and column, end line and column), a length byte and that many bytes
// of replacement. After each edit the server checks the document again
// and answers a hover, a definition and the document symbols at a place
// the edit's bytes pick. Malformed, half-typed text must never crash it,
// hang it or trip a sanitizer.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "lsp/json_rpc.h"
#include "lsp/server.h"
#include "fuzz_stdlib.h"
#include "sema/stdlib.h"

namespace {

std::shared_ptr<const linnet::sema::Stdlib> stdlib() { return fuzzStdlib("lsp_fuzzer"); }

using nlohmann::json;

json position(uint8_t line, uint8_t character) { return {{"line", line % 64}, {"character", character % 96}}; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::ostringstream out, log;
  linnet::lsp::Server server(stdlib(), out, log);
  const std::string uri = "file:///fuzz/edited.linnet";
  auto send = [&](json m) {
    m["jsonrpc"] = "2.0";
    server.handle(m.dump(-1, ' ', false, json::error_handler_t::replace));
  };
  send({{"id", 1}, {"method", "initialize"}, {"params", json::object()}});
  size_t i = 0;
  while (i < size && data[i] != 0) ++i;
  json doc = {{"uri", uri}, {"version", 1}, {"text", std::string(reinterpret_cast<const char*>(data), i)}};
  send({{"method", "textDocument/didOpen"}, {"params", {{"textDocument", doc}}}});
  ++i;
  int id = 2, edits = 0;
  while (i + 5 <= size && edits++ < 16) {
    json range = {{"start", position(data[i], data[i + 1])}, {"end", position(data[i + 2], data[i + 3])}};
    size_t n = std::min<size_t>(data[i + 4], size - (i + 5));
    std::string text(reinterpret_cast<const char*>(data + i + 5), n);
    json change = {{"range", range}, {"text", text}};
    json params = {{"textDocument", {{"uri", uri}, {"version", edits + 1}}}, {"contentChanges", json::array({change})}};
    send({{"method", "textDocument/didChange"}, {"params", params}});
    json at = {{"textDocument", {{"uri", uri}}}, {"position", position(data[i + 1], data[i + 3])}};
    send({{"id", id++}, {"method", "textDocument/hover"}, {"params", at}});
    send({{"id", id++}, {"method", "textDocument/definition"}, {"params", at}});
    json symbols = {{"textDocument", {{"uri", uri}}}};
    send({{"id", id++}, {"method", "textDocument/documentSymbol"}, {"params", symbols}});
    i += 5 + n;
  }
  send({{"id", id}, {"method", "shutdown"}});
  // Every request (initialize, three per edit, shutdown) got exactly one reply.
  std::istringstream replies(out.str());
  int answered = 0;
  for (auto m = linnet::lsp::readMessage(replies); m.kind == linnet::lsp::Incoming::Message;
       m = linnet::lsp::readMessage(replies))
    answered += nlohmann::json::parse(m.body).contains("id");
  if (answered != id) {
    std::fprintf(stderr, "lsp_fuzzer: %d requests, %d replies\n", id, answered);
    std::abort();
  }
  return 0;
}
