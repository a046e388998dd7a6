// The HTTP side of `linnet serve` (cpp-httplib; serve/connections holds the
// connections): routes, the API key, CORS, limits, and streaming. Workers
// parse and validate a request, render the chat template, tokenize, hand it
// to the engine and wait on its events; nothing here touches the model.
// Until ready() the model routes answer 503 and /health says so.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "nest/text.h"
#include "serve/engine.h"
#include "serve/metrics.h"

namespace linnet::serve {

class ConnectionServer;

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  std::string apiKey;  // empty: no key
  std::string cors;    // empty: no CORS headers
  int threads = 16;    // HTTP workers: a streaming request holds one
};

class Server {
 public:
  Server(ServerOptions options, Metrics& metrics);
  ~Server();
  // Binds the socket; the port it got. Throws nest::Error when it cannot.
  int bind();
  // Serves until stop() (blocking).
  void run();
  void stop();
  bool running() const;
  // The model is loaded and warm: requests go to `engine`.
  void ready(Engine& engine, const nest::TextModel& text, std::string modelName);

 private:
  void routes();
  std::unique_ptr<ConnectionServer> http_;
  ServerOptions options_;
  Metrics& metrics_;
  std::atomic<Engine*> engine_{nullptr};
  const nest::TextModel* text_ = nullptr;
  std::string modelName_;
  int64_t created_ = 0;
};

}  // namespace linnet::serve
