// `linnetc lsp`'s parts: UTF-16 positions, incremental edits, URIs, the
// message framing, and the server driven in process with malformed input.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "lsp/documents.h"
#include "lsp/json_rpc.h"
#include "lsp/server.h"

using namespace linnet::lsp;
using nlohmann::json;

namespace {

std::string framed(const std::string& body) {
  return "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// Every message the server wrote.
std::vector<json> messages(const std::string& out) {
  std::istringstream in(out);
  std::vector<json> all;
  for (Incoming m = readMessage(in); m.kind == Incoming::Message; m = readMessage(in))
    all.push_back(json::parse(m.body));
  return all;
}

}  // namespace

TEST_CASE("positions count UTF-16 code units", "[lsp]") {
  // `é` is 2 bytes and 1 unit; `😀` 4 bytes and 2 units (a surrogate pair).
  std::string text = "ab\n// é😀x\nlast";
  CHECK(offsetOf(text, {0, 1}) == 1);
  CHECK(offsetOf(text, {1, 3}) == 3 + 3);            // after `// `
  CHECK(offsetOf(text, {1, 4}) == 3 + 3 + 2);        // after `é`
  CHECK(offsetOf(text, {1, 6}) == 3 + 3 + 2 + 4);    // after `😀`
  CHECK(text[offsetOf(text, {1, 6})] == 'x');
  CHECK(offsetOf(text, {1, 99}) == text.find("\nlast"));  // past a line's end: its end
  CHECK(offsetOf(text, {9, 0}) == text.size());          // past the last line: the end
  for (uint32_t off : {0u, 1u, 3u, 6u, 8u, 12u, static_cast<uint32_t>(text.size())}) {
    Position p = positionOf(text, off);
    CHECK(offsetOf(text, p) == off);
  }
  // Malformed UTF-8 still advances a byte at a time.
  std::string bad = "\xff\xfe" "a";
  CHECK(offsetOf(bad, {0, 2}) == 2);
}

TEST_CASE("incremental changes apply in order", "[lsp]") {
  Documents docs;
  docs.open("/nowhere/a.linnet", "let x = 1\nlet y = 2\n", 1);
  docs.change("/nowhere/a.linnet",
              json{{"range", {{"start", {{"line", 1}, {"character", 4}}}, {"end", {{"line", 1}, {"character", 5}}}}},
                   {"text", "zz"}},
              2);
  CHECK(*docs.text("/nowhere/a.linnet") == "let x = 1\nlet zz = 2\n");
  // A reversed range is the same range; past the end appends.
  docs.change("/nowhere/a.linnet",
              json{{"range", {{"start", {{"line", 9}, {"character", 0}}}, {"end", {{"line", 9}, {"character", 0}}}}},
                   {"text", "end"}},
              3);
  CHECK(*docs.text("/nowhere/a.linnet") == "let x = 1\nlet zz = 2\nend");
  docs.change("/nowhere/a.linnet", json{{"text", "whole"}}, 4);
  CHECK(*docs.text("/nowhere/a.linnet") == "whole");
  CHECK_THROWS_AS(docs.change("/nowhere/a.linnet", json{{"range", 3}, {"text", "x"}}, 5), std::invalid_argument);
  CHECK_THROWS_AS(docs.change("/nowhere/b.linnet", json{{"text", "x"}}, 1), std::invalid_argument);
  CHECK_THROWS_AS(positionFrom(json{{"line", -1}, {"character", 0}}), std::invalid_argument);
}

TEST_CASE("file URIs round-trip with percent-encoding", "[lsp]") {
  CHECK(uriOfPath("/a b/c%.linnet") == "file:///a%20b/c%25.linnet");
  CHECK(pathOfUri("file:///a%20b/c%25.linnet") == std::optional<std::string>("/a b/c%.linnet"));
  CHECK(!pathOfUri("untitled:Untitled-1"));
  CHECK(!pathOfUri("file://host/share/x.linnet"));
}

TEST_CASE("framing: malformed headers are skipped, not fatal", "[lsp]") {
  std::istringstream in("Content-Type: x\r\n\r\n" +                          // no length
                        std::string("Content-Length: abc\r\n\r\n") +           // not a number
                        "Content-Length: 99999999999\r\n\r\n" +                 // over the limit
                        framed("{}"));
  CHECK(readMessage(in).kind == Incoming::Malformed);
  CHECK(readMessage(in).kind == Incoming::Malformed);
  Incoming big = readMessage(in);
  CHECK(big.kind == Incoming::Malformed);
  CHECK(big.error.find("over the limit") != std::string::npos);
  std::istringstream truncated("Content-Length: 10\r\n\r\n{}");
  CHECK(readMessage(truncated).kind == Incoming::Malformed);
  std::istringstream ok(framed("{\"a\":1}") + "\r\n" + framed("[]"));
  CHECK(readMessage(ok).body == "{\"a\":1}");
  CHECK(readMessage(ok).body == "[]");
  CHECK(readMessage(ok).kind == Incoming::End);
}

TEST_CASE("the server answers malformed requests with errors and goes on", "[lsp]") {
  std::ostringstream out, log;
  Server server(LINNET_STDLIB_DIR, out, log);
  auto request = [](int id, const std::string& method, json params) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump();
  };
  CHECK(server.handle(request(1, "textDocument/hover", json::object())));  // before initialize
  CHECK(server.handle(request(2, "initialize", json::object())));
  CHECK(server.handle("{not json"));
  CHECK(server.handle("[1, 2]"));
  CHECK(server.handle(request(3, "no/such/method", json::object())));
  CHECK(server.handle(request(4, "textDocument/hover", json{{"textDocument", {{"uri", 7}}}})));
  CHECK(server.handle(request(5, "textDocument/hover",
                              json{{"textDocument", {{"uri", "file:///nowhere/x.linnet"}}},
                                   {"position", {{"line", "one"}}}})));
  // Half-typed text in a lone file: diagnostics, no crash.
  std::string half = "fn f<N: Dim>(x: Tensor[N; f32]) -> Tensor[N; f32] {\n  let y = reshape(x, [N,\n";
  CHECK(server.handle(json{{"jsonrpc", "2.0"},
                           {"method", "textDocument/didOpen"},
                           {"params", {{"textDocument", {{"uri", "file:///nowhere/half.linnet"}, {"text", half}}}}}}
                          .dump()));
  CHECK(server.handle(request(6, "textDocument/hover",
                              json{{"textDocument", {{"uri", "file:///nowhere/half.linnet"}}},
                                   {"position", {{"line", 1}, {"character", 12}}}})));
  CHECK(server.handle(request(7, "shutdown", nullptr)));
  CHECK(server.handle(request(8, "textDocument/hover", json::object())));
  CHECK_FALSE(server.handle(json{{"jsonrpc", "2.0"}, {"method", "exit"}}.dump()));
  CHECK(server.exitCode() == 0);

  std::map<json, json> replies;
  json diagnostics;
  for (const json& m : messages(out.str())) {
    if (m.contains("id")) replies[m["id"]] = m;
    if (m.value("method", "") == "textDocument/publishDiagnostics") diagnostics = m["params"];
  }
  CHECK(replies[1]["error"]["code"] == -32002);
  CHECK(replies[2]["result"]["capabilities"]["hoverProvider"] == true);
  CHECK(replies[nullptr]["error"]["code"] == -32700);  // the bad JSON (id null)
  CHECK(replies[3]["error"]["code"] == -32601);
  CHECK(replies[4]["error"]["code"] == -32602);
  CHECK(replies[5]["error"]["code"] == -32602);
  CHECK(replies[6].contains("result"));
  CHECK(replies[7]["result"].is_null());
  CHECK(replies[8]["error"]["code"] == -32600);
  REQUIRE(diagnostics.is_object());
  CHECK(diagnostics["uri"] == "file:///nowhere/half.linnet");
  REQUIRE(!diagnostics["diagnostics"].empty());
  CHECK(diagnostics["diagnostics"][0]["severity"] == 1);
}
