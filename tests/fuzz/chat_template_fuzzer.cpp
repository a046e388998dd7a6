// libFuzzer target: parses arbitrary bytes as a chat template and renders it
// with a small fixed conversation. Parse and render errors are expected; a
// crash, a sanitizer report, a hang or unbounded memory is a bug.
//
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I runtime
//     tests/fuzz/chat_template_fuzzer.cpp runtime/chat/*.cpp -lfmt -o /tmp/chatfuzz
//   /tmp/chatfuzz -max_total_time=60 tests/fuzz/corpus_chat
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_template.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"({
    "messages": [
      {"role": "system", "content": "You are helpful."},
      {"role": "user", "content": "Hi \u00e9\ud83d\ude00 {{ x }}"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"id": "abcdefghi", "type": "function",
         "function": {"name": "f", "arguments": {"a": 1, "b": [true, null, 2.5]}}}]},
      {"role": "tool", "content": {"k": "v"}},
      {"role": "user", "content": [{"type": "text", "text": "part"}, {"type": "image"}]}
    ],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d",
               "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}],
    "documents": null,
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>",
    "n": 3,
    "f": 1.5
  })");
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  std::string src(reinterpret_cast<const char*>(data), size);
  linnet::chat::RenderOptions opts;
  opts.limits.maxOutputBytes = 1 << 20;
  opts.limits.maxLoopIterations = 20000;
  opts.limits.maxSteps = 200000;
  opts.limits.maxCallDepth = 24;
  opts.limits.maxRange = 1000;
  opts.clock = [] {
    std::tm tm{};
    tm.tm_year = 124;
    tm.tm_mon = 6;
    tm.tm_mday = 26;
    return tm;
  };
  try {
    auto t = linnet::chat::ChatTemplate::parse(src, "fuzz");
    (void)t.render(context(), opts);
  } catch (const linnet::chat::ChatTemplateError&) {
  }
  return 0;
}
