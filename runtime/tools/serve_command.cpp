#include "tools/serve_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <filesystem>
#include <thread>
#include <toml++/toml.h>

#include "common/units.h"
#include "nest/conventions.h"
#include "nest/text.h"
#include "tools/arguments.h"

namespace linnet::tools {

namespace {

int64_t genericOr(const nest::LoadOptions& load, const std::string& name, int64_t fallback) {
  auto it = load.generics.find(name);
  if (it == load.generics.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second.value)) return *v;
  throw Usage(fmt::format("serve: --set {}={} must be a number", name, it->second.str()));
}

// The model's id in the API: nest.toml's [model] name, else the package's.
std::string modelId(const std::string& package, const nest::Model& model) {
  std::filesystem::path nestToml = std::filesystem::path(package) / "nest.toml";
  if (std::filesystem::exists(nestToml)) {
    try {
      toml::table t = toml::parse_file(nestToml.string());
      if (auto name = t["model"]["name"].value<std::string>()) return *name;
    } catch (const std::exception&) {
      // The package loaded, so nest.toml was read once already; keep the package's name.
    }
  }
  return model.name();
}

}  // namespace

// Bounds past which a setting is a typo, not a plan: each row, waiting
// request and HTTP worker costs memory or a thread up front, and rows x
// context sizes the page pool (MaxSeq).
constexpr int64_t kMaxRows = 1024, kMaxQueue = 65536, kMaxHttpThreads = 1024, kMaxPoolPositions = int64_t{1} << 31;

int runServe(ServeArgs& a) {
  serve::EngineOptions& e = a.engine;
  if (e.rows < 1 || e.rows > kMaxRows) throw Usage(fmt::format("serve: --rows must be 1 to {}, not {}", kMaxRows, e.rows));
  if (e.maxQueue < 0 || e.maxQueue > kMaxQueue)
    throw Usage(fmt::format("serve: --max-queue must be 0 to {}, not {}", kMaxQueue, e.maxQueue));
  if (a.httpThreads > kMaxHttpThreads)
    throw Usage(fmt::format("serve: --http-threads must be 1 to {}, not {}", kMaxHttpThreads, a.httpThreads));
  if (e.context > kMaxPoolPositions / e.rows)
    throw Usage(fmt::format("serve: --rows {} x --context {} positions is more than the page pool can index ({}); "
                            "lower one",
                            e.rows, e.context, kMaxPoolPositions));
  int64_t pageSize = genericOr(a.load, "PageSize", 64);
  if (pageSize < 1) throw Usage("serve: PageSize must be at least 1");
  if (e.context < pageSize || e.context % pageSize)
    throw Usage(fmt::format("serve: --context {} must be a positive multiple of the page size {}", e.context, pageSize));
  // The pool: one cache row of MaxSeq positions, every request's context plus the scratch page.
  if (genericOr(a.load, "Batch", 1) != 1)
    throw Usage("serve: the model is served with Batch = 1 (its cache row is the page pool); drop --set Batch");
  a.load.generics.insert_or_assign("Batch", int64_t{1});
  if (!a.load.generics.count("MaxSeq")) a.load.generics.insert_or_assign("MaxSeq", e.rows * e.context + pageSize);
  e.buckets.clear();
  for (int64_t b : {a.prefillChunk / 16, a.prefillChunk / 4, a.prefillChunk})
    if (b >= 1 && std::find(e.buckets.begin(), e.buckets.end(), b) == e.buckets.end()) e.buckets.push_back(b);
  a.server.threads =
      static_cast<int>(a.httpThreads > 0 ? a.httpThreads : std::min(e.rows + e.maxQueue + 8, kMaxHttpThreads));

  std::string tokenizerPath = tokenizerSource(a.tokenizer, a.load.weights);

  // Signals go to one thread, which stops the server; the others never see them.
  std::signal(SIGPIPE, SIG_IGN);
  sigset_t stopSignals;
  sigemptyset(&stopSignals);
  sigaddset(&stopSignals, SIGINT);
  sigaddset(&stopSignals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);

  serve::Metrics metrics;
  serve::Server server(a.server, metrics);
  int port = server.bind();
  fmt::print("linnet serve: listening on http://{}:{}\n", a.server.host, port);
  std::fflush(stdout);
  std::thread http([&] { server.run(); });
  // stop() is lost on a server not yet listening.
  while (!server.running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<bool> signalled{false};
  std::atomic<serve::Engine*> live{nullptr};  // set once the engine runs; joined before it is destroyed
  std::thread watcher([&] {
    int signal = 0;
    sigwait(&stopSignals, &signal);
    signalled = true;
    fmt::print(stderr, "linnet serve: stopping ({})\n", signal == SIGINT ? "SIGINT" : "SIGTERM");
    // The engine first: every request gets its end (a finish reason; a
    // stream its [DONE]) while its connection is still served; then the
    // HTTP server, whose workers finish writing those ends and return.
    if (serve::Engine* e = live.load()) e->stop();
    server.stop();
  });
  auto joinAll = [&] {
    http.join();
    // Wakes the watcher when no signal came, so it can be joined.
    if (!signalled.exchange(true)) pthread_kill(watcher.native_handle(), SIGTERM);
    watcher.join();
  };

  std::optional<nest::TextModel> text;
  std::optional<nest::Model> model;
  std::unique_ptr<serve::Engine> engine;
  try {
    auto t0 = std::chrono::steady_clock::now();
    text = nest::loadText(tokenizerPath);
    nest::useCardChatTemplate(*text, a.package);
    model = nest::load(a.package, a.load);
    nest::TextLimits limits = nest::textLimits(model->dims());
    nest::checkTokenizer(limits, static_cast<int64_t>(text->tokenizer.vocabSize()),
                         fmt::format("the tokenizer {}", tokenizerPath));
    engine = std::make_unique<serve::Engine>(*model, *text, e, metrics);
    fmt::print(stderr, "linnet serve: {} on {} ({} thread{}), {} rows x {} positions, pool of {} positions\n",
               model->name(), model->backend(), model->threads(), model->threads() == 1 ? "" : "s", e.rows,
               e.context, model->dims().at("MaxSeq"));
    int shapes = engine->warmUp([](const std::string& shape) { fmt::print(stderr, "linnet serve: warming {}\n", shape); });
    engine->start();
    live = engine.get();  // a signal before this stopped the HTTP server; the engine stops below
    std::string name = a.modelName.empty() ? modelId(a.package, *model) : a.modelName;
    server.ready(*engine, *text, name);
    fmt::print("linnet serve: ready (`{}`, {} entry shapes, warm-up {:.1f} s)\n", name, shapes, secondsSince(t0));
    std::fflush(stdout);
  } catch (const std::exception& err) {
    fmt::print(stderr, "{}\n", err.what());
    server.stop();
    joinAll();
    return 1;
  }
  joinAll();
  engine->stop();
  return 0;
}

}  // namespace linnet::tools
