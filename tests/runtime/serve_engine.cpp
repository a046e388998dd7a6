// The engine on a real model (the llama card's gqa2 fixture, reference
// backend): greedy tokens equal transformers' continuation, and every
// request served in a crowd (chunked prompts, shared pages, preemption when
// the pool runs out) equals the same request decoded alone through
// `prefill` and `decode`.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>

#include "nest/nest.h"
#include "nest/text.h"
#include "serve/engine.h"

namespace nest = linnet::nest;
namespace serve = linnet::serve;

namespace {

const std::string kCard = std::string(LINNET_SOURCE_DIR) + "/nest/llama-3.1-8b-instruct";
const std::string kWeights = std::string(LINNET_TEST_DATA) + "/llama/gqa2/model.safetensors";

nest::LoadOptions options(int64_t maxSeq, int64_t batchPageSize) {
  nest::LoadOptions o;
  o.weights = kWeights;
  o.backend = "reference";
  o.generics = {{"Vocab", 64}, {"H", 64},     {"Heads", 4},         {"KvHeads", 2}, {"Inner", 96},
                {"Layers", 2}, {"T", "f32"}, {"MaxSeq", maxSeq}, {"Batch", 1}};
  if (batchPageSize) o.generics.insert_or_assign("PageSize", batchPageSize);
  return o;
}

// A tokenizer is needed for text; these tests read tokens.
nest::TextModel byteTokens() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int k = 0; k < 64; ++k) vocab[std::string(1, static_cast<char>('0' + k))] = k;
  nlohmann::json doc = {{"version", "1.0"},
                        {"added_tokens", nlohmann::json::array()},
                        {"normalizer", nullptr},
                        {"pre_tokenizer", nullptr},
                        {"post_processor", nullptr},
                        {"decoder", nullptr},
                        {"model",
                         {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}, {"unk_token", nullptr}}}};
  return nest::TextModel{linnet::tokenizer::Tokenizer::fromJson(doc.dump())};
}

std::vector<int64_t> alone(nest::Model& model, const std::vector<int64_t>& prompt, int64_t steps) {
  model.resetState();
  int64_t S = static_cast<int64_t>(prompt.size());
  auto argmax = [](const nest::Tensor& l) {
    std::vector<double> v = l.toFloats();
    return static_cast<int64_t>(std::max_element(v.begin(), v.end()) - v.begin());
  };
  std::vector<int64_t> out;
  nest::Tensor logits = model.call("prefill", {nest::Tensor::fromInts(nest::DType::I32, {1, S}, prompt),
                                               nest::Tensor::scalarI(nest::DType::I32, 0)})[0];
  out.push_back(argmax(logits));
  for (int64_t k = 1; k < steps; ++k) {
    logits = model.call("decode", {nest::Tensor::fromInts(nest::DType::I32, {1, 1}, {out.back()}),
                                   nest::Tensor::scalarI(nest::DType::I32, S + k - 1)})[0];
    out.push_back(argmax(logits));
  }
  return out;
}

struct Outcome {
  std::vector<int64_t> tokens;
  std::string finishReason;
  serve::Usage usage;
};

Outcome drain(serve::RequestStream& s) {
  Outcome o;
  auto until = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (std::chrono::steady_clock::now() < until) {
    auto e = s.next(std::chrono::milliseconds(100));
    if (!e) continue;
    if (e->kind == serve::Event::Kind::Text) o.tokens.insert(o.tokens.end(), e->tokens.begin(), e->tokens.end());
    if (e->kind == serve::Event::Kind::Error) FAIL("engine error: " << e->message);
    if (e->kind == serve::Event::Kind::Finish) {
      o.finishReason = e->finishReason;
      o.usage = e->usage;
      return o;
    }
  }
  FAIL("no finish within 5 minutes");
  return o;
}

serve::GenerationParams greedy(std::vector<int64_t> prompt, int64_t maxTokens) {
  serve::GenerationParams p;
  p.prompt = std::move(prompt);
  p.maxTokens = maxTokens;
  p.ignoreEos = true;
  p.seeded = true;
  return p;
}

// `rows` rows of 32 positions, `maxQueue` waiting, prompts padded to `buckets`.
serve::EngineOptions engineOptions(int64_t rows, int64_t maxQueue, std::vector<int64_t> buckets) {
  serve::EngineOptions eo;
  eo.rows = rows;
  eo.maxQueue = maxQueue;
  eo.context = 32;
  eo.buckets = std::move(buckets);
  return eo;
}

}  // namespace

TEST_CASE("serve engine: greedy tokens are transformers', and a crowd equals each request alone", "[serve]") {
  nest::TextModel text = byteTokens();
  // Pages of 8 and a pool of 7 pages (6 usable) for 3 rows of 32 positions:
  // prompts cross pages and chunks, and the pool runs out.
  nest::Model model = nest::load(kCard, options(56, 8));
  serve::Metrics metrics;
  serve::EngineOptions eo = engineOptions(3, 16, {4, 16});
  serve::Engine engine(model, text, eo, metrics);
  CHECK(engine.warmUp([](const std::string&) {}) == 5);
  engine.start();

  // tests/data/llama/gqa2: transformers' greedy continuation (greedy1).
  auto first = engine.submit(greedy({47, 19, 38, 53, 12, 52, 24, 57}, 6));
  REQUIRE(first);
  Outcome one = drain(*first);
  CHECK(one.tokens == std::vector<int64_t>{56, 16, 48, 7, 13, 14});
  CHECK(one.finishReason == "length");
  CHECK(one.usage.promptTokens == 8);
  CHECK(one.usage.completionTokens == 6);

  nest::Model oracle = nest::load(kCard, options(64, 0));
  std::vector<std::vector<int64_t>> prompts;
  for (int r = 0; r < 7; ++r) {
    std::vector<int64_t> p;
    for (int k = 0; k < 3 + 3 * r; ++k) p.push_back((r * 7 + k * 13 + 5) % 64);
    prompts.push_back(p);
  }
  // The crowd is queued before its engine steps, so that all seven compete
  // for the pool however fast this machine runs the first admissions.
  engine.stop();
  serve::Engine crowd(model, text, eo, metrics);
  CHECK(crowd.warmUp([](const std::string&) {}) == 5);
  std::vector<std::shared_ptr<serve::RequestStream>> streams;
  for (const auto& p : prompts) {
    streams.push_back(crowd.submit(greedy(p, 10)));
    REQUIRE(streams.back());
  }
  crowd.start();
  for (size_t r = 0; r < prompts.size(); ++r) {
    INFO("request " << r << " of prompt length " << prompts[r].size());
    Outcome o = drain(*streams[r]);
    CHECK(o.tokens == alone(oracle, prompts[r], 10));
    CHECK(o.usage.completionTokens == 10);
  }
  CHECK(metrics.value("linnet:num_preemptions_total") > 0);
  CHECK(metrics.value("linnet:generation_tokens_total") == 6 + 7 * 10);

  // A prompt sharing two full pages with an earlier one takes them from the cache.
  std::vector<int64_t> shared = prompts[6];  // 21 tokens
  shared.resize(16);
  for (int64_t t : {3, 9, 27}) shared.push_back(t);
  auto again = crowd.submit(greedy(shared, 5));
  Outcome cached = drain(*again);
  CHECK(cached.usage.cachedTokens == 16);
  CHECK(cached.tokens == alone(oracle, shared, 5));

  // A client that goes away frees its row; the engine keeps serving.
  auto gone = crowd.submit(greedy(prompts[2], 20));
  gone->cancel();
  auto after = crowd.submit(greedy(prompts[1], 4));
  CHECK(drain(*after).tokens == alone(oracle, prompts[1], 4));
  crowd.stop();
  CHECK(metrics.value("linnet:num_requests_running") == 0);
}

TEST_CASE("serve engine: the waiting gauge follows a request cancelled in the queue", "[serve]") {
  nest::TextModel text = byteTokens();
  nest::Model model = nest::load(kCard, options(40, 8));
  serve::Metrics metrics;
  serve::Engine engine(model, text, engineOptions(1, 4, {8}), metrics);
  engine.warmUp([](const std::string&) {});
  // Queued before the engine steps: the first takes the one row, the second
  // waits; once the first has a token (admitted: the gauge says 1 waits),
  // the second is cancelled, and nothing is admitted after it.
  auto running = engine.submit(greedy({47, 19, 38, 53}, 24));
  auto waiting = engine.submit(greedy({12, 52, 24, 57}, 4));
  REQUIRE(running);
  REQUIRE(waiting);
  engine.start();
  REQUIRE(running->next(std::chrono::minutes(1)));
  CHECK(metrics.value("linnet:num_requests_waiting") == 1);
  waiting->cancel();
  drain(*running);
  // Nothing waits now (the gauge stayed at 1 when a cancel emptied the queue).
  CHECK(metrics.value("linnet:num_requests_waiting") == 0);
  engine.stop();
}

TEST_CASE("serve engine: requests that do not fit are refused before they run", "[serve]") {
  nest::TextModel text = byteTokens();
  nest::Model model = nest::load(kCard, options(72, 8));
  serve::Metrics metrics;
  serve::Engine engine(model, text, engineOptions(1, 1, {8}), metrics);
  auto tooLong = greedy(std::vector<int64_t>(32, 1), 1);
  CHECK_THROWS_AS(engine.check(tooLong, "prompt"), serve::ApiError);
  auto tooMany = greedy(std::vector<int64_t>(8, 1), 25);
  CHECK_THROWS_AS(engine.check(tooMany, "prompt"), serve::ApiError);
  // Past the context by any amount, even one that wraps n + max_tokens.
  auto wraps = greedy(std::vector<int64_t>(8, 1), INT64_MAX - 4);
  CHECK_THROWS_AS(engine.check(wraps, "prompt"), serve::ApiError);
  auto badId = greedy({1, 64}, 1);
  CHECK_THROWS_AS(engine.check(badId, "prompt"), serve::ApiError);
  auto fits = greedy(std::vector<int64_t>(8, 1), -1);
  engine.check(fits, "prompt");
  CHECK(fits.maxTokens == 24);
  // Not started: the first request is about to take the free row, the
  // second waits, the third finds the queue full.
  CHECK(engine.submit(greedy({1, 2}, 1)));
  CHECK(engine.submit(greedy({1, 2}, 1)));
  CHECK_FALSE(engine.submit(greedy({1, 2}, 1)));
}
