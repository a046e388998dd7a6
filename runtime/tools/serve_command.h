// `linnet serve`: loads a package for serving, warms its entry shapes, and
// runs the OpenAI-compatible server (serve/) until SIGINT or SIGTERM.
#pragma once

#include <string>

#include "nest/nest.h"
#include "serve/engine.h"
#include "serve/server.h"

namespace linnet::tools {

struct ServeArgs {
  std::string package, tokenizer, modelName;
  nest::LoadOptions load;
  serve::ServerOptions server;
  serve::EngineOptions engine;
  int64_t httpThreads = 0;  // 0: rows + max queue + 8
  int64_t prefillChunk = 256;  // the largest prompt bucket; the others a 16th and a quarter of it
};

int runServe(ServeArgs& args);

}  // namespace linnet::tools
