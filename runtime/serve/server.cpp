#include "serve/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>

#include "serve/connections.h"
#include "serve/protocol.h"

namespace linnet::serve {

namespace {

using json = nlohmann::json;
using std::chrono::milliseconds;

// Text from a tokenizer can hold invalid UTF-8 (a token that is half a
// character): written as U+FFFD, never thrown.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void sendError(httplib::Response& res, const ApiError& e) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(dump(errorBody(e)), "application/json");
}

void sendJson(httplib::Response& res, const json& body) { res.set_content(dump(body), "application/json"); }

std::string requestId(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  uint64_t n = ++counter;
  auto t = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  return fmt::format("{}-{:x}{:06x}", prefix, t & 0xffffffffffull, n & 0xffffff);
}

int64_t now() { return static_cast<int64_t>(std::time(nullptr)); }

// The choices of one request, as the engine produces them.
struct Job {
  ParsedRequest request;
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<ChoiceResult> results;
  std::vector<bool> started, done;
  std::vector<int64_t> sentChars;  // per choice: characters streamed so far (logprobs' text_offset)
  int idlePolls = 0;               // stream polls without an event, for the `: ping`s
  Usage usage;
  std::string id, model;
  int64_t created = 0;
  void cancel() {
    for (auto& s : streams) s->cancel();
  }
};

// What the model routes answer until the model is warm.
ApiError loading() { return ApiError(503, "the model is loading", "", "model_loading"); }

// The error an engine event carries.
ApiError eventError(const Event& e) { return ApiError(e.status ? e.status : 500, e.message, "", e.code); }

}  // namespace

Server::Server(ServerOptions options, Metrics& metrics)
    : options_(std::move(options)), metrics_(metrics), created_(now()) {
  ConnectionLimits limits;
  limits.workers = std::max(options_.threads, 4);
  http_ = std::make_unique<ConnectionServer>(limits);
  http_->set_payload_max_length(kMaxBodyBytes);
  http_->set_tcp_nodelay(true);
  routes();
}

Server::~Server() = default;

// Debian's cpp-httplib 0.11 listens with a backlog of 5, compiled into its
// shared library: a burst of clients then sees connections reset. Listening
// again on the same socket raises it (Linux takes a second listen()).
void widenBacklog(int port) {
  for (int fd = 0; fd < 1024; ++fd) {
    sockaddr_storage addr{};
    socklen_t length = sizeof addr;
    int accepting = 0;
    socklen_t optLength = sizeof accepting;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) continue;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &optLength) != 0 || !accepting) continue;
    int bound = addr.ss_family == AF_INET    ? ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port)
                : addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port)
                                             : -1;
    if (bound == port) ::listen(fd, 1024);
  }
}

int Server::bind() {
  int port = options_.port == 0 ? http_->bind_to_any_port(options_.host)
                                : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port < 0)
    throw nest::Error(fmt::format("serve: cannot listen on {}:{} (in use, or not an address of this machine); "
                                  "choose another with --host/--port (--port 0 picks a free one)",
                                  options_.host, options_.port));
  widenBacklog(port);
  return port;
}

void Server::run() { http_->serve(); }
void Server::stop() { http_->stop(); }
bool Server::running() const { return http_->is_running(); }

void Server::ready(Engine& engine, const nest::TextModel& text, std::string modelName) {
  text_ = &text;
  modelName_ = std::move(modelName);
  engine_.store(&engine);
}

void Server::routes() {
  auto& http = *http_;
  // Auth and CORS before any route; /health answers without a key.
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!options_.cors.empty()) {
      res.set_header("Access-Control-Allow-Origin", options_.cors);
      res.set_header("Vary", "Origin");
      if (req.method == "OPTIONS") {
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.set_header("Access-Control-Max-Age", "600");
        res.status = 204;
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (!options_.apiKey.empty() && req.path != "/health" &&
        req.get_header_value("Authorization") != "Bearer " + options_.apiKey) {
      metrics_.add("linnet:requests_rejected_total", 1, "reason=\"unauthorized\"");
      sendError(res, ApiError(401, req.has_header("Authorization")
                                       ? "the API key is wrong"
                                       : "an API key is needed: send `Authorization: Bearer KEY`",
                              "", "invalid_api_key"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Errors httplib answers itself (no route, body too large, bad request
  // line) get the OpenAI error body too.
  http.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message =
        res.status == 404   ? fmt::format("no route {} {}", req.method, req.path)
        : res.status == 413 ? fmt::format("the request body is larger than {} MiB", kMaxBodyBytes >> 20)
                            : fmt::format("the request could not be read (HTTP {})", res.status);
    res.set_content(dump(errorBody(ApiError(res.status, message))), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    sendError(res, ApiError(500, what));
  });

  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (!engine_.load()) return sendError(res, loading());
    sendJson(res, {{"status", "ok"}});
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.prometheus(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    Engine* engine = engine_.load();
    if (!engine) return sendError(res, loading());
    sendJson(res, {{"object", "list"},
                   {"data", json::array({{{"id", modelName_},
                                          {"object", "model"},
                                          {"created", created_},
                                          {"owned_by", "linnet"},
                                          {"max_model_len", engine->options().context}}})}});
  });

  // The model routes: parse, validate, tokenize, submit, answer.
  auto generation = [this](Endpoint endpoint) {
    return [this, endpoint](const httplib::Request& req, httplib::Response& res) {
      Engine* engine = engine_.load();
      auto job = std::make_shared<Job>();
      try {
        if (!engine) throw loading();
        json body = parseBody(req.body);
        job->request = endpoint == Endpoint::Chat ? parseChatRequest(body) : parseCompletionRequest(body);
        ParsedRequest& r = job->request;
        if (r.model != modelName_)
          throw ApiError(404, fmt::format("the model `{}` does not exist here; this server has `{}`", r.model,
                                          modelName_),
                         "model", "model_not_found");
        std::vector<int32_t> ids;
        std::string promptParam = endpoint == Endpoint::Chat ? "messages" : "prompt";
        try {
          if (endpoint == Endpoint::Chat)
            ids = text_->tokenizer.encode(nest::renderChat(*text_, r.messages), /*addSpecialTokens=*/false);
          else if (r.promptText)
            ids = text_->tokenizer.encode(*r.promptText, /*addSpecialTokens=*/true);
        } catch (const std::exception& e) {
          throw ApiError(400, e.what(), promptParam);
        }
        if (r.promptIds)
          r.params.prompt = *r.promptIds;
        else
          r.params.prompt.assign(ids.begin(), ids.end());
        engine->check(r.params, promptParam);
        // More choices than rows and queue together can never be admitted: a
        // 400 that says so, not a 503 that invites a retry.
        const EngineOptions& held = engine->options();
        if (r.n > held.rows + held.maxQueue)
          throw ApiError(400,
                         fmt::format("n = {} choices, but this server holds at most {} requests at once (--rows {} "
                                     "+ --max-queue {}); ask for fewer",
                                     r.n, held.rows + held.maxQueue, held.rows, held.maxQueue),
                         "n");
        if (!r.params.seeded) {
          r.params.sampling.seed = std::random_device{}();
          r.params.seeded = true;
        }
        for (int k = 0; k < r.n; ++k) {
          GenerationParams p = r.params;
          p.sampling.seed += static_cast<uint64_t>(k);  // n choices, n different draws
          auto stream = engine->submit(std::move(p));
          if (!stream) {
            job->cancel();
            metrics_.add("linnet:requests_rejected_total", 1, "reason=\"overloaded\"");
            throw ApiError(503, "the server is overloaded: every row is busy and the waiting queue is full; retry later",
                           "", "server_overloaded");
          }
          job->streams.push_back(stream);
        }
      } catch (const ApiError& e) {
        if (e.status == 400) metrics_.add("linnet:requests_rejected_total", 1, "reason=\"invalid\"");
        return sendError(res, e);
      }
      size_t n = job->streams.size();
      job->results.resize(n);
      job->started.assign(n, false);
      job->done.assign(n, false);
      job->sentChars.assign(n, 0);
      job->usage.promptTokens = static_cast<int64_t>(job->request.params.prompt.size());
      job->id = requestId(endpoint == Endpoint::Chat ? "chatcmpl" : "cmpl");
      job->model = modelName_;
      job->created = now();
      bool wantLogprobs = job->request.params.topLogprobs >= 0;
      for (auto& c : job->results)
        if (wantLogprobs) c.logprobs.emplace();

      if (!job->request.stream) {
        // Whole answers: wait for every choice to finish.
        for (size_t k = 0; k < n; ++k) {
          while (true) {
            auto e = job->streams[k]->next(milliseconds(1000));
            if (!e) continue;
            if (e->kind == Event::Kind::Text) {
              job->results[k].text += e->text;
              if (wantLogprobs)
                job->results[k].logprobs->insert(job->results[k].logprobs->end(), e->logprobs.begin(),
                                                 e->logprobs.end());
              continue;
            }
            if (e->kind == Event::Kind::Error) {
              job->cancel();
              return sendError(res, eventError(*e));
            }
            job->results[k].finishReason = e->finishReason;
            job->usage.completionTokens += e->usage.completionTokens;
            if (k == 0) job->usage.cachedTokens = e->usage.cachedTokens;
            break;
          }
        }
        return sendJson(res, endpoint == Endpoint::Chat
                                 ? chatCompletion(job->id, job->created, job->model, job->results, job->usage)
                                 : textCompletion(job->id, job->created, job->model, job->results, job->usage));
      }

      // Server-sent events, one chunk per event, `: ping` while idle (the
      // client skips comments; a failed write means it went away).
      res.set_header("Cache-Control", "no-cache");
      res.set_chunked_content_provider(
          "text/event-stream",
          [job, endpoint, wantLogprobs](size_t, httplib::DataSink& sink) {
            auto send = [&](const json& j) {
              std::string line = "data: " + dump(j) + "\n\n";
              return sink.write(line.data(), line.size());
            };
            const ParsedRequest& r = job->request;
            auto chunk = [&](const ChunkPart& part) {
              return endpoint == Endpoint::Chat
                         ? chatChunk(job->id, job->created, job->model, part, r.includeUsage)
                         : completionChunk(job->id, job->created, job->model, part, r.includeUsage);
            };
            bool any = false;
            for (size_t k = 0; k < job->streams.size(); ++k) {
              if (job->done[k]) continue;
              // The role chunk first, as OpenAI sends it.
              if (endpoint == Endpoint::Chat && !job->started[k]) {
                ChunkPart part;
                part.index = static_cast<int>(k);
                part.first = true;
                if (!send(chunk(part))) return false;
                job->started[k] = true;
              }
              while (auto e = job->streams[k]->next(milliseconds(any ? 0 : 50))) {
                any = true;
                ChunkPart part;
                part.index = static_cast<int>(k);
                if (e->kind == Event::Kind::Error) {
                  send(errorBody(eventError(*e)));
                  job->cancel();
                  sink.done();
                  return true;
                }
                if (e->kind == Event::Kind::Text) {
                  if (e->text.empty() && (!wantLogprobs || e->logprobs.empty())) continue;  // held back
                  part.text = e->text;
                  part.textOffset = job->sentChars[k];
                  for (char c : e->text) job->sentChars[k] += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
                  if (wantLogprobs) part.logprobs = e->logprobs;
                } else {
                  part.finishReason = e->finishReason;
                  job->done[k] = true;
                  job->usage.completionTokens += e->usage.completionTokens;
                  if (k == 0) job->usage.cachedTokens = e->usage.cachedTokens;
                }
                if (!send(chunk(part))) return false;
                if (job->done[k]) break;
              }
            }
            if (std::all_of(job->done.begin(), job->done.end(), [](bool d) { return d; })) {
              if (r.includeUsage && !send(usageChunk(endpoint, job->id, job->created, job->model, job->usage)))
                return false;
              static const std::string done = "data: [DONE]\n\n";
              if (!sink.write(done.data(), done.size())) return false;
              sink.done();
              return true;
            }
            if (!any) {
              if (++job->idlePolls % 20 == 0) {  // about once a second
                static const std::string ping = ": ping\n\n";
                if (!sink.write(ping.data(), ping.size())) return false;
              }
            }
            return true;
          },
          [job](bool success) {
            if (!success) job->cancel();
          });
    };
  };
  http.Post("/v1/chat/completions", generation(Endpoint::Chat));
  http.Post("/v1/completions", generation(Endpoint::Completion));

  http.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      if (!engine_.load()) throw loading();
      json body = parseBody(req.body);
      std::vector<int32_t> ids;
      try {
        if (body.contains("messages"))
          ids = text_->tokenizer.encode(
              nest::renderChat(*text_, parseChatRequest({{"model", modelName_}, {"messages", body["messages"]}}).messages),
              false);
        else if (body.contains("prompt") && body["prompt"].is_string())
          ids = text_->tokenizer.encode(body["prompt"].get<std::string>(), body.value("add_special_tokens", true));
        else
          throw ApiError(400, "give `prompt` (a string) or `messages`", "prompt");
      } catch (const ApiError&) {
        throw;
      } catch (const std::exception& e) {
        throw ApiError(400, e.what(), "prompt");
      }
      sendJson(res, {{"tokens", ids}, {"count", ids.size()}, {"max_model_len", engine_.load()->options().context}});
    } catch (const ApiError& e) {
      sendError(res, e);
    }
  });
  http.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      if (!engine_.load()) throw loading();
      json body = parseBody(req.body);
      if (!body.contains("tokens") || !body["tokens"].is_array())
        throw ApiError(400, "give `tokens`, an array of token ids", "tokens");
      std::vector<int32_t> ids;
      const auto vocab = static_cast<int64_t>(text_->tokenizer.vocabSize());
      for (const auto& t : body["tokens"]) {
        if (!t.is_number_integer() || t.get<int64_t>() < 0)
          throw ApiError(400, "`tokens` must hold token ids (integers >= 0)", "tokens");
        if (t.get<int64_t>() >= vocab)  // decoded as "" before: a wrong id looked like an empty text
          throw ApiError(400, fmt::format("token id {} is outside the vocabulary [0, {})", t.get<int64_t>(), vocab),
                         "tokens");
        ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
      }
      sendJson(res, {{"prompt", text_->tokenizer.decode(ids)}});
    } catch (const ApiError& e) {
      sendError(res, e);
    }
  });

  // The right route with the wrong method: 405, naming the method it takes.
  auto wrongMethod = [](const char* allowed) {
    return [allowed](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", allowed);
      sendError(res, ApiError(405, fmt::format("{} {} is not allowed; use {}", req.method, req.path, allowed)));
    };
  };
  for (const char* path : {"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize"}) {
    http.Get(path, wrongMethod("POST"));
    http.Put(path, wrongMethod("POST"));
    http.Patch(path, wrongMethod("POST"));
    http.Delete(path, wrongMethod("POST"));
  }
  for (const char* path : {"/health", "/metrics", "/v1/models"}) {
    http.Post(path, wrongMethod("GET"));
    http.Put(path, wrongMethod("GET"));
    http.Patch(path, wrongMethod("GET"));
    http.Delete(path, wrongMethod("GET"));
  }
}

}  // namespace linnet::serve
