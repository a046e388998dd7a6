// The engine: one thread that owns the model and batches every request
// over the package's paged entries (docs/serve.md). HTTP threads submit a
// request and read its events; the engine admits requests into rows while
// pages last, and each step is one call of `decode_paged` (rows that are
// generating), `prefill_paged` (prompt chunks) or `step_paged` (both).
//
// Shapes are fixed, so nothing compiles on the hot path: `Rows` = the rows,
// `Pages` = the table width (a request's context in pages, plus a column
// kept at the scratch page for rows that do not step), and the packed
// prompt length one of a few buckets, padding written to the scratch page.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nest/nest.h"
#include "nest/text.h"
#include "serve/metrics.h"
#include "serve/protocol.h"

namespace linnet::serve {

struct EngineOptions {
  int64_t rows = 4;
  int64_t maxQueue = 8;
  int64_t context = 2048;                    // positions per request, a multiple of the page size
  std::vector<int64_t> buckets = {16, 64, 256};  // packed prompt lengths; the largest is the chunk
  double queueTimeout = 60;                  // seconds waiting for a row
  double requestTimeout = 600;               // seconds from arrival to the end
};

// What a request's reader receives, in order: text (with the logprobs of
// the tokens it covers), then one finish or error.
struct Event {
  enum class Kind { Text, Finish, Error };
  Kind kind = Kind::Text;
  std::string text;
  std::vector<int32_t> tokens;  // Text: the tokens generated since the last event
  std::vector<TokenLogprob> logprobs;
  std::string finishReason;  // Finish: "stop" or "length"
  Usage usage;               // Finish
  int status = 0;            // Error: the HTTP status it stands for
  std::string message, code; // Error
  static Event error(int status, std::string message, std::string code = "");
};

// One request's event queue, shared by its HTTP thread and the engine.
class RequestStream {
 public:
  // The next event, waiting up to `timeout`; nullopt when none came.
  std::optional<Event> next(std::chrono::milliseconds timeout);
  // The client went away: the engine drops the request at its next step.
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  void post(Event e);

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Event> events_;
  std::atomic<bool> cancelled_{false};
};

class Engine {
 public:
  // `model` must be loaded with Batch = 1 and a pool of MaxSeq positions in
  // pages of PageSize; it is used from the engine thread only.
  Engine(nest::Model& model, const nest::TextModel& text, EngineOptions options, Metrics& metrics);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs every entry shape once on the scratch page (compiling it, or
  // finding it in the cache); `progress` hears each one. Returns the count.
  int warmUp(const std::function<void(const std::string&)>& progress);
  void start();
  // Ends running requests (finish "length") and the thread.
  void stop();

  // Queues a request; nullptr when the waiting queue is full (a 503).
  // `params.prompt` must fit: see check().
  std::shared_ptr<RequestStream> submit(GenerationParams params);
  // Throws ApiError (400) unless the prompt and max tokens fit the context
  // and every id is in the vocabulary; fills in the default max tokens.
  // `promptParam` names the prompt's field in the error.
  void check(GenerationParams& params, const std::string& promptParam) const;

  const EngineOptions& options() const { return options_; }
  int64_t pageSize() const { return pageSize_; }

  struct Active;

 private:
  void loop();
  bool step();  // one model call; false when there was nothing to do
  void dropGoneAndExpired();  // clients that went away, deadlines passed
  void finish(Active& a, const std::string& reason);
  void drop(Active& a);
  void preempt(Active& victim);
  bool ensurePages(Active& a, int64_t positions);
  void sampled(Active& a, const std::vector<double>& logits);
  uint64_t pageHash(const std::vector<int64_t>& tokens, const std::vector<uint64_t>& before) const;
  void publishPages(Active& a);
  void updateGauges();

  nest::Model& model_;
  const nest::TextModel& text_;
  EngineOptions options_;
  Metrics& metrics_;
  int64_t pageSize_ = 64, poolPages_ = 0, vocab_ = 0, tableWidth_ = 0;
  std::unique_ptr<class PagePool> pool_;

  std::mutex inboxMutex_;
  std::condition_variable inboxReady_;
  std::deque<std::unique_ptr<Active>> waiting_;  // guarded by inboxMutex_
  bool stopping_ = false;                        // guarded by inboxMutex_

  std::vector<std::unique_ptr<Active>> running_;  // engine thread only
  std::vector<bool> rowUsed_;
  std::atomic<int64_t> rowsInUse_{0};  // read by submit()
  uint64_t admissions_ = 0;
  std::thread thread_;
};

}  // namespace linnet::serve
