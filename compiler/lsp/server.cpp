#include "lsp/server.h"

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

#include "lsp/json_rpc.h"
#include "lsp/protocol.h"

namespace linnet::lsp {

using nlohmann::json;

namespace {

// JSON-RPC's error codes, and LSP's for a request before `initialize`.
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;

struct RpcError : std::runtime_error {
  RpcError(int c, const std::string& m) : std::runtime_error(m), code(c) {}
  int code;
};

json errorReply(const json& id, int code, const std::string& message) {
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}};
}

}  // namespace

Server::Server(std::string stdlibDir, std::ostream& out, std::ostream& log, bool verbose)
    : stdlibDir_(std::move(stdlibDir)), out_(out), log_(log), verbose_(verbose) {
  std::string errors;
  // Checked once for the whole session; each package check then costs only
  // the package's own files.
  stdlib_ = sema::Stdlib::load(stdlibDir_, errors);
  if (!stdlib_) log_ << "linnetc lsp: the standard library does not check; each package reads it again:\n" << errors;
}

Server::Server(std::shared_ptr<const sema::Stdlib> stdlib, std::ostream& out, std::ostream& log)
    : stdlibDir_(stdlib ? stdlib->dir() : ""), stdlib_(std::move(stdlib)), out_(out), log_(log), verbose_(false) {}

bool Server::handle(const std::string& body) {
  auto start = std::chrono::steady_clock::now();
  json message = json::parse(body, nullptr, false);
  if (message.is_discarded()) {
    writeMessage(out_, errorReply(nullptr, kParseError, "the message is not JSON"));
    return true;
  }
  if (!message.is_object() || !message.contains("method") || !message["method"].is_string()) {
    // A reply to a request of ours would land here; we send none.
    if (message.is_object() && message.contains("id") && !message.contains("result") && !message.contains("error"))
      writeMessage(out_, errorReply(message["id"], kInvalidRequest, "a request needs a \"method\" string"));
    return true;
  }
  std::string method = message["method"].get<std::string>();
  json params = message.contains("params") ? message["params"] : json::object();
  bool isRequest = message.contains("id");
  json id = isRequest ? message["id"] : json();
  if (isRequest && !id.is_number_integer() && !id.is_string()) {
    writeMessage(out_, errorReply(nullptr, kInvalidRequest, "a request id is a number or a string"));
    return true;
  }
  try {
    if (method == "exit") return false;
    if (isRequest) {
      json result = request(method, params);
      writeMessage(out_, {{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
    } else {
      notification(method, params);
    }
  } catch (const RpcError& e) {
    if (isRequest) writeMessage(out_, errorReply(id, e.code, e.what()));
    log_ << "linnetc lsp: " << method << ": " << e.what() << "\n";
  } catch (const std::invalid_argument& e) {
    if (isRequest) writeMessage(out_, errorReply(id, kInvalidParams, e.what()));
    log_ << "linnetc lsp: " << method << ": " << e.what() << "\n";
  } catch (const std::exception& e) {
    if (isRequest) writeMessage(out_, errorReply(id, kInternalError, e.what()));
    log_ << "linnetc lsp: " << method << ": internal error: " << e.what() << "\n";
  }
  if (verbose_)
    log_ << fmt::format("linnetc lsp: {} in {:.1f} ms\n", method,
                        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return true;
}

json Server::request(const std::string& method, const json& params) {
  if (method == "initialize") {
    initialized_ = true;
    json capabilities = {
        {"positionEncoding", "utf-16"},
        {"textDocumentSync", {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
        {"hoverProvider", true},
        {"definitionProvider", true},
        {"documentSymbolProvider", true},
    };
    return {{"capabilities", capabilities}, {"serverInfo", {{"name", "linnetc lsp"}, {"version", LINNET_VERSION}}}};
  }
  if (!initialized_) throw RpcError(kServerNotInitialized, "the first request must be `initialize`");
  if (shutdown_) throw RpcError(kInvalidRequest, "the server is shut down; only `exit` is accepted");
  if (method == "shutdown") {
    shutdown_ = true;
    return nullptr;
  }
  if (method == "textDocument/hover") return hover(params);
  if (method == "textDocument/definition") return definition(params);
  if (method == "textDocument/documentSymbol") return documentSymbols(params);
  throw RpcError(kMethodNotFound, "no method `" + method + "`");
}

void Server::notification(const std::string& method, const json& params) {
  if (!initialized_ || shutdown_) return;  // LSP: notifications before initialize are dropped
  if (method == "textDocument/didOpen") {
    std::string path = documentPath(params);
    const json& doc = params["textDocument"];
    if (!doc.contains("text") || !doc["text"].is_string()) throw std::invalid_argument("didOpen needs textDocument.text");
    int64_t version = doc.contains("version") && doc["version"].is_number_integer() ? doc["version"].get<int64_t>() : 0;
    docs_.open(path, doc["text"].get<std::string>(), version);
    reanalyze(path);
  } else if (method == "textDocument/didChange") {
    std::string path = documentPath(params);
    if (!params.contains("contentChanges") || !params["contentChanges"].is_array())
      throw std::invalid_argument("didChange needs contentChanges");
    const json& doc = params["textDocument"];
    int64_t version = doc.contains("version") && doc["version"].is_number_integer() ? doc["version"].get<int64_t>() : 0;
    for (const json& change : params["contentChanges"]) docs_.change(path, change, version);
    reanalyze(path);
  } else if (method == "textDocument/didSave") {
    reanalyze(documentPath(params));
  } else if (method == "textDocument/didClose") {
    std::string path = documentPath(params);
    docs_.close(path);
    reanalyze(path);  // the disk's text again
  }
  // Others ($/cancelRequest, initialized, workspace/didChangeConfiguration, ...) need nothing.
}

void Server::reanalyze(const std::string& path) {
  auto a = analyze(path, docs_.texts(), stdlib_, stdlibDir_);
  if (verbose_) log_ << fmt::format("linnetc lsp: checked {} in {:.1f} ms\n", a->root, a->seconds * 1e3);
  publish(*a, path);
  analyses_[a->root] = std::move(a);
}

const Analysis* Server::analysisOf(const std::string& path) {
  std::string canonical = canonicalPath(path);
  for (const auto& [root, a] : analyses_)
    if (a->fileOf(canonical)) return a.get();
  reanalyze(path);
  for (const auto& [root, a] : analyses_)
    if (a->fileOf(canonical)) return a.get();
  return nullptr;
}

void Server::publish(const Analysis& a, const std::string& triggerPath) {
  std::map<std::string, json> byUri;
  std::string triggerUri = uriOfPath(triggerPath);
  for (uint32_t file : a.ownFiles()) byUri[uriOfPath(a.sources.file(file).path())] = json::array();
  for (const Diagnostic& d : a.diags.all()) {
    // One without a place (a manifest's) goes on the document that was edited.
    std::string uri = d.range.valid() ? uriOfPath(a.sources.file(d.range.file).path()) : triggerUri;
    if (!byUri.count(uri)) byUri[uri] = json::array();
    byUri[uri].push_back(diagnosticJson(a.sources, d));
  }
  std::set<std::string>& before = published_[a.root];
  for (const std::string& uri : before)
    if (!byUri.count(uri)) byUri[uri] = json::array();
  before.clear();
  for (auto& [uri, list] : byUri) {
    if (!list.empty()) before.insert(uri);
    writeMessage(out_, {{"jsonrpc", "2.0"},
                        {"method", "textDocument/publishDiagnostics"},
                        {"params", {{"uri", uri}, {"diagnostics", list}}}});
  }
}

int runServer(std::istream& in, std::ostream& out, std::ostream& log, const std::string& stdlibDir, bool verbose) {
  Server server(stdlibDir, out, log, verbose);
  for (;;) {
    Incoming m = readMessage(in);
    if (m.kind == Incoming::End) break;
    if (m.kind == Incoming::Malformed) {
      log << "linnetc lsp: skipped a malformed message: " << m.error << "\n";
      continue;
    }
    if (!server.handle(m.body)) break;
  }
  return server.exitCode();
}

}  // namespace linnet::lsp
