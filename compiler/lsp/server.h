// `linnetc lsp`: a Language Server Protocol server over stdio. It checks the
// package of each open document on open, change and save (the editor's
// unsaved texts in place of the disk's) and publishes every file's
// diagnostics; answers hover (an expression's type, symbolic and at the
// package's generics, the declaration a name refers to, and the shape
// obligations there with the facts that prove them, as `linnetc explain`
// prints them), go to definition (across modules and into the standard
// library) and document symbols. docs/editor.md.
#pragma once

#include <istream>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <string>

#include "lsp/analysis.h"
#include "lsp/documents.h"

namespace linnet::lsp {

class Server {
 public:
  // Replies and notifications go to `out`; `log` takes one line per problem
  // (and per request with `verbose`).
  Server(std::string stdlibDir, std::ostream& out, std::ostream& log, bool verbose = false);
  // With the standard library already loaded and checked (tests, fuzzing).
  Server(std::shared_ptr<const sema::Stdlib> stdlib, std::ostream& out, std::ostream& log);

  // Handles one message's JSON text; false once `exit` has arrived.
  bool handle(const std::string& body);
  // LSP's rule: 0 when `shutdown` came before `exit` (or the end of input).
  int exitCode() const { return shutdown_ ? 0 : 1; }

 public:
  // A request's document position in the latest check that read it; no
  // analysis when none did.
  struct Place {
    const Analysis* analysis = nullptr;
    uint32_t file = 0;
    uint32_t offset = 0;
  };

 private:
  Place placeOf(const nlohmann::json& params, const char* request);
  nlohmann::json request(const std::string& method, const nlohmann::json& params);
  void notification(const std::string& method, const nlohmann::json& params);
  nlohmann::json hover(const nlohmann::json& params);
  nlohmann::json definition(const nlohmann::json& params);
  nlohmann::json documentSymbols(const nlohmann::json& params);

  // Checks the package holding `path` again and publishes its diagnostics.
  void reanalyze(const std::string& path);
  void publish(const Analysis& a, const std::string& triggerPath);
  // The latest check that read `path`, checking its package if none did.
  const Analysis* analysisOf(const std::string& path);

  std::string stdlibDir_;
  std::shared_ptr<const sema::Stdlib> stdlib_;
  std::ostream& out_;
  std::ostream& log_;
  bool verbose_;
  bool initialized_ = false;
  bool shutdown_ = false;
  Documents docs_;
  std::map<std::string, std::unique_ptr<Analysis>> analyses_;  // by package folder (or lone file)
  std::map<std::string, std::set<std::string>> published_;     // by package: URIs holding diagnostics
};

// Reads messages from `in` until `exit` or the end of input; the exit code.
int runServer(std::istream& in, std::ostream& out, std::ostream& log, const std::string& stdlibDir, bool verbose);

}  // namespace linnet::lsp
