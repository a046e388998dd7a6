#include "serve/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "serve/pages.h"
#include "nest/text_stream.h"

namespace linnet::serve {

using Clock = std::chrono::steady_clock;
using nest::DType;
using nest::Tensor;

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t dim(const nest::Model& model, const std::string& name, std::optional<int64_t> fallback = std::nullopt) {
  auto it = model.dims().find(name);
  if (it != model.dims().end()) return it->second;
  if (fallback) return *fallback;
  throw nest::Error(fmt::format("serve: `{}` has no value for its generic `{}`; pass --set {}=N", model.name(), name,
                                name));
}

// Row `r` of a [rows, vocab] result, as doubles.
std::vector<double> row(const Tensor& logits, int64_t r, int64_t vocab) {
  std::vector<double> v(vocab);
  if (logits.dtype == DType::F32) {
    const float* f = reinterpret_cast<const float*>(logits.data()) + r * vocab;
    std::copy(f, f + vocab, v.begin());
    return v;
  }
  for (int64_t k = 0; k < vocab; ++k) v[k] = logits.asDouble(r * vocab + k);
  return v;
}

}  // namespace

Event Event::error(int status, std::string message, std::string code) {
  Event e;
  e.kind = Kind::Error;
  e.status = status;
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

std::optional<Event> RequestStream::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
  Event e = std::move(events_.front());
  events_.pop_front();
  return e;
}

void RequestStream::post(Event e) {
  {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(e));
  }
  ready_.notify_one();
}

// A request the engine holds, waiting or running.
struct Engine::Active {
  std::shared_ptr<RequestStream> stream;
  GenerationParams params;
  std::vector<int64_t> tokens;  // the prompt, then what was generated
  size_t promptLength = 0;
  int64_t computed = 0;          // leading positions whose keys and values the pool holds
  std::vector<int32_t> pages;    // the request's table row
  std::vector<uint64_t> hashes;  // of its full pages, in order
  int64_t row = -1;
  bool generating = false;       // computed == tokens.size() - 1: the last token is the next step's
  int64_t generated = 0;
  int64_t cachedTokens = 0;
  uint64_t order = 0;            // admission order: the newest is preempted first
  std::optional<nest::TextStream> text;
  std::mt19937_64 rng;
  Clock::time_point arrived, lastToken;
  bool admittedOnce = false;
};

Engine::Engine(nest::Model& model, const nest::TextModel& text, EngineOptions options, Metrics& metrics)
    : model_(model), text_(text), options_(std::move(options)), metrics_(metrics) {
  if (dim(model, "Batch") != 1)
    throw nest::Error("serve: the model must be loaded with Batch = 1 (its one cache row is the page pool)");
  pageSize_ = dim(model, "PageSize", 64);
  int64_t maxSeq = dim(model, "MaxSeq");
  vocab_ = dim(model, "Vocab");
  for (const char* entry : {"decode_paged", "prefill_paged", "step_paged"}) {
    auto names = model.entries();
    if (std::find(names.begin(), names.end(), entry) == names.end())
      throw nest::Error(fmt::format("serve: `{}` has no entry `{}`; serving needs decode_paged, prefill_paged and "
                                    "step_paged (see nest/llama-3.1-8b-instruct)",
                                    model.name(), entry));
  }
  if (options_.rows < 1) throw nest::Error("serve: --rows must be at least 1");
  if (options_.context < pageSize_ || options_.context % pageSize_)
    throw nest::Error(fmt::format("serve: --context {} must be a positive multiple of the page size {}",
                                  options_.context, pageSize_));
  if (maxSeq % pageSize_)
    throw nest::Error(fmt::format("serve: the pool (MaxSeq = {}) must be a whole number of pages of {}", maxSeq,
                                  pageSize_));
  poolPages_ = maxSeq / pageSize_;
  if (poolPages_ - 1 < options_.context / pageSize_)
    throw nest::Error(fmt::format("serve: the pool (MaxSeq = {}) holds {} pages after the scratch page, fewer than "
                                  "one request's context of {} positions needs; raise MaxSeq or lower --context",
                                  maxSeq, poolPages_ - 1, options_.context));
  std::sort(options_.buckets.begin(), options_.buckets.end());
  if (options_.buckets.empty() || options_.buckets.front() < 1)
    throw nest::Error("serve: the prompt buckets must be positive");
  // One column past the context: rows that do not step write there, at the scratch page.
  tableWidth_ = options_.context / pageSize_ + 1;
  pool_ = std::make_unique<PagePool>(poolPages_, pageSize_);
  rowUsed_.assign(options_.rows, false);
  updateGauges();
}

Engine::~Engine() { stop(); }

void Engine::check(GenerationParams& p, const std::string& promptParam) const {
  int64_t n = static_cast<int64_t>(p.prompt.size()), C = options_.context;
  if (n == 0) throw ApiError(400, "the prompt is empty", promptParam);
  for (int64_t id : p.prompt)
    if (id < 0 || id >= vocab_)
      throw ApiError(400, fmt::format("token id {} is outside the vocabulary [0, {})", id, vocab_), promptParam);
  if (n >= C)
    throw ApiError(400,
                   fmt::format("this server's context is {} tokens per request (--context), and the prompt has {} "
                               "tokens; shorten the prompt",
                               C, n),
                   promptParam, "context_length_exceeded");
  if (p.maxTokens < 0) p.maxTokens = C - n;
  if (p.maxTokens > C - n)  // not n + maxTokens > C: a max_tokens near 2^63 would wrap
    throw ApiError(400,
                   fmt::format("this server's context is {} tokens per request (--context); the prompt has {} tokens "
                               "and max_tokens asks for {} more; lower max_tokens to at most {}",
                               C, n, p.maxTokens, C - n),
                   "max_tokens", "context_length_exceeded");
  try {
    nest::validate(p.sampling);
  } catch (const nest::Error& e) {
    throw ApiError(400, e.what());
  }
}

int Engine::warmUp(const std::function<void(const std::string&)>& progress) {
  int64_t R = options_.rows, G = tableWidth_;
  Tensor table = Tensor::zeros(DType::I32, {R, G});
  Tensor stepTokens = Tensor::zeros(DType::I32, {R, 1}), stepPositions = Tensor::zeros(DType::I32, {R});
  Tensor last = Tensor::zeros(DType::I32, {R});
  // Everything writes position 0 of the scratch page.
  int count = 0;
  progress(fmt::format("decode_paged<Rows={}, Pages={}>", R, G));
  model_.call("decode_paged", {stepTokens, stepPositions, table}, {{"Rows", R}, {"Pages", G}});
  ++count;
  for (int64_t P : options_.buckets) {
    Tensor zeros = Tensor::zeros(DType::I32, {P});
    progress(fmt::format("prefill_paged<P={}, Rows={}, Pages={}>", P, R, G));
    model_.call("prefill_paged", {zeros, zeros, zeros, zeros, last, table}, {{"P", P}, {"Rows", R}, {"Pages", G}});
    progress(fmt::format("step_paged<P={}, Rows={}, Pages={}>", P, R, G));
    model_.call("step_paged", {zeros, zeros, zeros, zeros, last, stepTokens, stepPositions, table},
                {{"P", P}, {"Rows", R}, {"Pages", G}});
    count += 2;
  }
  metrics_.set("linnet:compiled_shapes", count);
  return count;
}

void Engine::start() { thread_ = std::thread([this] { loop(); }); }

void Engine::stop() {
  {
    std::lock_guard lock(inboxMutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  inboxReady_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<RequestStream> Engine::submit(GenerationParams params) {
  auto a = std::make_unique<Active>();
  a->stream = std::make_shared<RequestStream>();
  a->promptLength = params.prompt.size();
  a->tokens = params.prompt;
  a->rng.seed(params.seeded ? params.sampling.seed : std::random_device{}());
  a->text.emplace(text_.tokenizer, params.stops);
  a->params = std::move(params);
  a->arrived = Clock::now();
  auto stream = a->stream;
  {
    std::lock_guard lock(inboxMutex_);
    // Requests about to take a free row do not count as waiting.
    int64_t freeRows = options_.rows - rowsInUse_.load();
    if (stopping_ || static_cast<int64_t>(waiting_.size()) >= options_.maxQueue + freeRows) return nullptr;
    waiting_.push_back(std::move(a));
    metrics_.set("linnet:num_requests_waiting", static_cast<double>(waiting_.size()));
  }
  inboxReady_.notify_one();
  return stream;
}

void Engine::loop() {
  while (true) {
    {
      std::unique_lock lock(inboxMutex_);
      if (stopping_) break;
      if (running_.empty() && waiting_.empty())
        inboxReady_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_ || !waiting_.empty(); });
      if (stopping_) break;
    }
    try {
      if (!step()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    } catch (const std::exception& e) {
      // A failed model call fails the requests it served, not the server.
      for (auto& a : running_) {
        a->stream->post(Event::error(500, fmt::format("the model call failed: {}", e.what())));
        drop(*a);
      }
      running_.clear();
      updateGauges();
    }
  }
  // Stopped (SIGTERM): every request ends now, running or waiting, with
  // finish_reason "abort" (vLLM's word for a request the server ended), so
  // a stream gets its last chunk and [DONE] instead of a cut connection.
  std::deque<std::unique_ptr<Active>> waiting;
  {
    std::lock_guard lock(inboxMutex_);
    waiting.swap(waiting_);
  }
  for (auto& a : running_) finish(*a, "abort");
  for (auto& a : waiting) finish(*a, "abort");
  running_.clear();
  updateGauges();
}

void Engine::drop(Active& a) {
  for (int32_t p : a.pages) pool_->release(p);
  a.pages.clear();
  if (a.row >= 0) rowUsed_[a.row] = false;
  a.row = -1;
}

void Engine::finish(Active& a, const std::string& reason) {
  // Pages and metrics first: a client that reads /metrics after its answer sees it counted.
  drop(a);
  metrics_.add("linnet:requests_finished_total", 1, fmt::format("finish_reason=\"{}\"", reason));
  metrics_.observe("linnet:e2e_request_latency_seconds", seconds(Clock::now() - a.arrived));
  updateGauges();
  std::string rest = a.text->finish();
  if (!rest.empty()) {
    Event t;
    t.text = rest;
    a.stream->post(std::move(t));
  }
  Event e;
  e.kind = Event::Kind::Finish;
  e.finishReason = reason;
  e.usage = {static_cast<int64_t>(a.promptLength), a.generated, a.cachedTokens};
  a.stream->post(std::move(e));
  a.stream.reset();  // marks it finished for the sweep in step()
}

void Engine::preempt(Active& victim) {
  // Its pages keep their hashes: re-admitted, it usually finds its own prefix.
  drop(victim);
  victim.computed = 0;
  victim.generating = false;
  victim.hashes.clear();
  metrics_.add("linnet:num_preemptions_total");
}

// Pages for the first `positions` positions of `a`.
bool Engine::ensurePages(Active& a, int64_t positions) {
  while (static_cast<int64_t>(a.pages.size()) * pageSize_ < positions) {
    auto page = pool_->allocate(a.pages.empty() ? -1 : a.pages.back());
    if (!page) return false;
    a.pages.push_back(*page);
  }
  return true;
}

// The prefix-cache key of page `j` of `tokens`, after the hashes of the pages before it.
uint64_t Engine::pageHash(const std::vector<int64_t>& tokens, const std::vector<uint64_t>& before) const {
  size_t j = before.size();
  return PagePool::chain(j ? before.back() : 0, std::span<const int64_t>(tokens).subspan(j * pageSize_, pageSize_));
}

void Engine::publishPages(Active& a) {
  while (static_cast<int64_t>(a.hashes.size() + 1) * pageSize_ <= a.computed) {
    uint64_t h = pageHash(a.tokens, a.hashes);
    pool_->publish(a.pages[a.hashes.size()], h);
    a.hashes.push_back(h);
  }
}

void Engine::updateGauges() {
  rowsInUse_ = std::count(rowUsed_.begin(), rowUsed_.end(), true);
  metrics_.set("linnet:num_requests_running", static_cast<double>(running_.size()));
  {
    // Also here, not only where a request joins or leaves the queue in
    // order: a cancelled, timed-out or preempted one changes it too.
    std::lock_guard lock(inboxMutex_);
    metrics_.set("linnet:num_requests_waiting", static_cast<double>(waiting_.size()));
  }
  metrics_.set("linnet:kv_cache_usage_perc",
               pool_->usable() ? static_cast<double>(pool_->held()) / static_cast<double>(pool_->usable()) : 0.0);
}

void Engine::sampled(Active& a, const std::vector<double>& logits) {
  int32_t id = nest::sampleToken(logits, a.params.sampling, a.rng, a.tokens, a.promptLength);
  auto now = Clock::now();
  if (a.generated == 0)
    metrics_.observe("linnet:time_to_first_token_seconds", seconds(now - a.arrived));
  else
    metrics_.observe("linnet:inter_token_latency_seconds", seconds(now - a.lastToken));
  a.lastToken = now;
  a.tokens.push_back(id);
  ++a.generated;
  metrics_.add("linnet:generation_tokens_total");
  Event e;
  if (a.params.topLogprobs >= 0) {
    // log-softmax of the model's logits, as OpenAI reports them.
    double top = *std::max_element(logits.begin(), logits.end()), total = 0;
    for (double v : logits) total += std::exp(v - top);
    double logZ = top + std::log(total);
    TokenLogprob lp;
    lp.token = text_.tokenizer.decode(std::vector<int32_t>{id});
    lp.logprob = logits[id] - logZ;
    std::vector<int32_t> order(logits.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int32_t>(k);
    size_t k = std::min<size_t>(a.params.topLogprobs, order.size());
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t x, int32_t y) { return logits[x] > logits[y]; });
    for (size_t j = 0; j < k; ++j)
      lp.top.emplace_back(text_.tokenizer.decode(std::vector<int32_t>{order[j]}), logits[order[j]] - logZ);
    e.logprobs.push_back(std::move(lp));
  }
  bool eos = !a.params.ignoreEos &&
             std::find(text_.stopIds.begin(), text_.stopIds.end(), id) != text_.stopIds.end();
  if (!eos) e.text = a.text->push(id);
  e.tokens.push_back(id);
  a.stream->post(std::move(e));
  if (eos || a.text->stopped())
    finish(a, "stop");
  else if (a.generated >= a.params.maxTokens || static_cast<int64_t>(a.tokens.size()) >= options_.context)
    finish(a, "length");
}

void Engine::dropGoneAndExpired() {
  auto now = Clock::now();
  // Clients that went away, and requests past their deadline.
  for (auto& a : running_) {
    if (!a->stream) continue;
    if (a->stream->cancelled()) {
      metrics_.add("linnet:requests_cancelled_total");
      drop(*a);
      a->stream.reset();
    } else if (seconds(now - a->arrived) > options_.requestTimeout) {
      finish(*a, "length");
    }
  }
  std::lock_guard lock(inboxMutex_);
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    Active& a = **it;
    if (a.stream->cancelled()) {
      metrics_.add("linnet:requests_cancelled_total");
      it = waiting_.erase(it);
    } else if (seconds(now - a.arrived) > options_.queueTimeout) {
      a.stream->post(Event::error(
          503, fmt::format("the request waited {} s for a row without getting one; retry later", options_.queueTimeout),
          "queue_timeout"));
      metrics_.add("linnet:requests_rejected_total", 1, "reason=\"queue_timeout\"");
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
}

bool Engine::step() {
  dropGoneAndExpired();
  std::erase_if(running_, [](const std::unique_ptr<Active>& a) { return !a->stream; });
  int64_t R = options_.rows, G = tableWidth_, P = options_.buckets.back();

  // Rows that generate take their next position's page first, oldest first;
  // when none is left the newest request gives its pages back.
  std::sort(running_.begin(), running_.end(), [](const auto& x, const auto& y) { return x->order < y->order; });
  for (size_t k = 0; k < running_.size(); ++k) {
    Active& a = *running_[k];
    if (!a.generating) continue;
    while (!ensurePages(a, a.computed + 1)) {
      Active* victim = running_.back().get();
      for (auto it = running_.rbegin(); it != running_.rend(); ++it)
        if ((*it)->row >= 0) {
          victim = it->get();
          break;
        }
      preempt(*victim);
      if (victim == &a) break;
    }
  }
  // Preempted requests go back to the front of the queue, oldest first.
  {
    std::lock_guard lock(inboxMutex_);
    for (auto it = running_.rbegin(); it != running_.rend(); ++it)
      if ((*it)->row < 0 && (*it)->stream) waiting_.push_front(std::move(*it));
  }
  std::erase_if(running_, [](const std::unique_ptr<Active>& a) { return !a; });

  // Prompt chunks under the token budget: unfinished prompts first, then
  // waiting requests while a row and their prompt's pages are free.
  struct Chunk {
    Active* a;
    int64_t start, count;
  };
  std::vector<Chunk> chunks;
  int64_t budget = P;
  // The next chunk of `a`'s prompt: as much as the budget and the pages allow.
  auto takeChunk = [&](Active& a) {
    int64_t count = std::min<int64_t>(static_cast<int64_t>(a.tokens.size()) - a.computed, budget);
    while (count > 0 && !ensurePages(a, a.computed + count))
      count = static_cast<int64_t>(a.pages.size()) * pageSize_ - a.computed;
    if (count <= 0) return;
    chunks.push_back({&a, a.computed, count});
    budget -= count;
  };
  for (auto& a : running_)
    if (!a->generating && budget > 0) takeChunk(*a);
  while (budget > 0) {
    std::unique_ptr<Active> next;
    {
      std::lock_guard lock(inboxMutex_);
      if (waiting_.empty()) break;
      auto freeRow = std::find(rowUsed_.begin(), rowUsed_.end(), false);
      if (freeRow == rowUsed_.end()) break;
      Active& a = *waiting_.front();
      int64_t n = static_cast<int64_t>(a.tokens.size());
      // The prefix cache: whole pages, leaving at least one token to compute for the logits.
      std::vector<int32_t> hit;
      std::vector<uint64_t> hashes;
      for (int64_t j = 0; j < (n - 1) / pageSize_; ++j) {
        uint64_t h = pageHash(a.tokens, hashes);
        auto page = pool_->take(h);
        if (!page) break;
        hit.push_back(*page);
        hashes.push_back(h);
      }
      int64_t needed = (n + pageSize_ - 1) / pageSize_ - static_cast<int64_t>(hit.size());
      if (needed + 1 > pool_->available() && !(running_.empty() && needed <= pool_->available())) {
        for (int32_t p : hit) pool_->release(p);
        break;
      }
      if (!a.admittedOnce) {
        metrics_.add("linnet:prefix_cache_queries_total", static_cast<double>(n));
        metrics_.add("linnet:prefix_cache_hits_total", static_cast<double>(hit.size() * pageSize_));
        metrics_.observe("linnet:request_queue_time_seconds", seconds(Clock::now() - a.arrived));
        a.cachedTokens = static_cast<int64_t>(hit.size()) * pageSize_;
        a.admittedOnce = true;
      }
      a.pages = hit;
      a.hashes = hashes;
      a.computed = static_cast<int64_t>(hit.size()) * pageSize_;
      a.row = freeRow - rowUsed_.begin();
      *freeRow = true;
      a.order = ++admissions_;
      next = std::move(waiting_.front());
      waiting_.pop_front();
      metrics_.set("linnet:num_requests_waiting", static_cast<double>(waiting_.size()));
    }
    running_.push_back(std::move(next));
    takeChunk(*running_.back());
  }

  std::vector<Active*> generating;
  for (auto& a : running_)
    if (a->generating && a->row >= 0) generating.push_back(a.get());
  if (chunks.empty() && generating.empty() && running_.size() > 1) {
    // Prompts that all wait for pages the others hold: the newest yields.
    auto newest = std::max_element(running_.begin(), running_.end(),
                                   [](const auto& x, const auto& y) { return x->order < y->order; });
    preempt(**newest);
    std::lock_guard lock(inboxMutex_);
    waiting_.push_front(std::move(*newest));
    running_.erase(newest);
  }
  updateGauges();
  if (chunks.empty() && generating.empty()) return false;

  // The call's tensors. Table rows of requests that do not step this pass
  // keep their last column at the scratch page, where their step writes.
  int64_t packed = P - budget;
  int64_t bucket = *std::lower_bound(options_.buckets.begin(), options_.buckets.end(), packed);
  Tensor table = Tensor::zeros(DType::I32, {R, G});
  Tensor stepTokens = Tensor::zeros(DType::I32, {R, 1}), stepPositions = Tensor::zeros(DType::I32, {R});
  Tensor last = Tensor::zeros(DType::I32, {R});
  for (int64_t r = 0; r < R; ++r) stepPositions.setInt(r, (G - 1) * pageSize_);
  for (Active* a : generating) {
    stepTokens.setInt(a->row, a->tokens.back());
    stepPositions.setInt(a->row, a->computed);
  }
  auto fillTable = [&](Active* a) {
    for (size_t j = 0; j < a->pages.size(); ++j) table.setInt(a->row * G + static_cast<int64_t>(j), a->pages[j]);
  };
  for (Active* a : generating) fillTable(a);
  Tensor tokens = Tensor::zeros(DType::I32, {bucket}), positions = Tensor::zeros(DType::I32, {bucket});
  Tensor rows = Tensor::zeros(DType::I32, {bucket}), slots = Tensor::zeros(DType::I32, {bucket});
  int64_t at = 0;
  for (const Chunk& c : chunks) {
    fillTable(c.a);
    for (int64_t i = 0; i < c.count; ++i, ++at) {
      int64_t pos = c.start + i;
      tokens.setInt(at, c.a->tokens[pos]);
      positions.setInt(at, pos);
      rows.setInt(at, c.a->row);
      slots.setInt(at, static_cast<int64_t>(c.a->pages[pos / pageSize_]) * pageSize_ + pos % pageSize_);
    }
    if (c.start + c.count == static_cast<int64_t>(c.a->tokens.size())) last.setInt(c.a->row, at - 1);
  }

  Tensor logits;
  std::map<std::string, int64_t> generics = {{"Rows", R}, {"Pages", G}};
  int64_t stepOffset = 0;
  std::string entry = chunks.empty() ? "decode_paged" : generating.empty() ? "prefill_paged" : "step_paged";
  auto t0 = Clock::now();
  if (chunks.empty()) {
    logits = model_.call(entry, {stepTokens, stepPositions, table}, generics)[0];
  } else {
    generics["P"] = bucket;
    if (generating.empty()) {
      logits = model_.call(entry, {tokens, positions, rows, slots, last, table}, generics)[0];
    } else {
      logits = model_.call(entry, {tokens, positions, rows, slots, last, stepTokens, stepPositions, table},
                           generics)[0];
      stepOffset = R;
    }
  }
  std::string label = fmt::format("entry=\"{}\"", entry);
  metrics_.add("linnet:engine_steps_total", 1, label);
  metrics_.add("linnet:engine_step_seconds_total", seconds(Clock::now() - t0), label);
  metrics_.add("linnet:prompt_tokens_total", static_cast<double>(packed));
  if (!chunks.empty()) metrics_.add("linnet:engine_padding_tokens_total", static_cast<double>(bucket - packed));

  for (Active* a : generating) {
    a->computed += 1;
    publishPages(*a);
    if (a->stream && !a->stream->cancelled()) sampled(*a, row(logits, stepOffset + a->row, vocab_));
  }
  for (const Chunk& c : chunks) {
    Active& a = *c.a;
    a.computed += c.count;
    publishPages(a);
    if (a.computed == static_cast<int64_t>(a.tokens.size())) {
      // The prompt's end: its logits give the next token, and the row generates.
      a.generating = true;
      if (a.stream && !a.stream->cancelled()) sampled(a, row(logits, a.row, vocab_));
    }
  }
  std::erase_if(running_, [](const std::unique_ptr<Active>& a) { return !a->stream; });
  updateGauges();
  return true;
}

}  // namespace linnet::serve
