// libFuzzer target for the server's request side (serve/protocol): arbitrary
// bytes as a body, parsed and validated for both endpoints. A body must end
// as a parsed request or an ApiError with a 4xx status and a message; a
// parsed request must respect the limits the engine relies on, and its
// answers must serialize. Anything else (a crash, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/protocol.h"

using namespace linnet::serve;

namespace {

void checkParsed(const ParsedRequest& r) {
  const GenerationParams& p = r.params;
  if (r.n < 1 || r.n > 16 || p.stops.size() > 4 || p.topLogprobs > 20) std::abort();
  for (const auto& s : p.stops)
    if (s.empty()) std::abort();
  if (p.maxTokens == 0 || p.maxTokens < -1) std::abort();
  if (!(p.sampling.temperature >= 0) || !(p.sampling.topP > 0 && p.sampling.topP <= 1)) std::abort();
  ChoiceResult c{"text", "stop", std::nullopt};
  (void)chatCompletion("id", 0, r.model, {c}, {}).dump();
  (void)textCompletion("id", 0, r.model, {c}, {}).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  try {
    j = parseBody(body);
  } catch (const ApiError& e) {
    if (e.status != 400 || std::string_view(e.what()).empty()) std::abort();
    return 0;
  }
  for (auto parse : {parseChatRequest, parseCompletionRequest}) {
    try {
      checkParsed(parse(j));
    } catch (const ApiError& e) {
      if (e.status < 400 || e.status >= 500 || std::string_view(e.what()).empty()) std::abort();
      (void)errorBody(e).dump();
    }
  }
  return 0;
}
