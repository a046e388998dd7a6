// `linnet bench decode|prefill`; see bench.h and bench/decode/README.md.
#include "tools/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>
#include <toml++/toml.h>
#include <vector>

#include "common/units.h"
#include "nest/model_config.h"

namespace linnet::bench {

namespace {

using nest::Error;
using nest::DType;
using nest::Tensor;
using Clock = std::chrono::steady_clock;

// A computed value the optimizer must keep.
volatile float gSink = 0;

// ---------------------------------------------------------------------------
// Memory read bandwidth: a STREAM-like sum.

typedef float V4 __attribute__((vector_size(16)));

// Eight independent vector accumulators, so the adds never wait on each
// other and the loop is bound by the loads alone.
float sumFloats(const float* p, size_t n) {
  V4 acc[8] = {};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int j = 0; j < 8; ++j) {
      V4 v;
      std::memcpy(&v, p + i + 4 * j, sizeof v);
      acc[j] += v;
    }
  float total = 0;
  for (; i < n; ++i) total += p[i];
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 4; ++l) total += acc[j][l];
  return total;
}

// Runs fn(t) on `threads` threads started together; the seconds from the
// start signal to the last one finishing.
template <typename Fn>
double timeThreads(int threads, Fn fn) {
  if (threads <= 1) {
    auto t0 = Clock::now();
    fn(0);
    return secondsSince(t0);
  }
  std::atomic<bool> go{false};
  std::atomic<int> ready{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      fn(t);
    });
  while (ready.load() < threads) std::this_thread::yield();
  auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  return secondsSince(t0);
}

// ---------------------------------------------------------------------------
// Our own f32 GEMM: B packed into panels of NR columns, A into panels of
// MR = 4 rows, per KC-deep slice; a 4 x NR register-blocked micro-kernel
// (NR = two vectors) for each instruction set, chosen at run time.

constexpr int kMR = 4, kKC = 256, kMC = 128;

using MicroKernel = void (*)(const float* ap, const float* bp, float* c, int ldc, int kc);

#define LINNET_GEMM_KERNEL(NAME, TARGET, LANES)                                   \
  TARGET void NAME(const float* ap, const float* bp, float* c, int ldc, int kc) { \
    typedef float V __attribute__((vector_size((LANES) * 4)));                    \
    V c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {}, c30 = {}, c31 = {}; \
    for (int k = 0; k < kc; ++k) {                                                \
      V b0, b1;                                                                   \
      std::memcpy(&b0, bp + k * 2 * (LANES), sizeof b0);                          \
      std::memcpy(&b1, bp + k * 2 * (LANES) + (LANES), sizeof b1);                \
      const float* a = ap + k * kMR;                                              \
      c00 += a[0] * b0;                                                           \
      c01 += a[0] * b1;                                                           \
      c10 += a[1] * b0;                                                           \
      c11 += a[1] * b1;                                                           \
      c20 += a[2] * b0;                                                           \
      c21 += a[2] * b1;                                                           \
      c30 += a[3] * b0;                                                           \
      c31 += a[3] * b1;                                                           \
    }                                                                             \
    V rows[4][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};              \
    for (int r = 0; r < 4; ++r)                                                   \
      for (int h = 0; h < 2; ++h) {                                               \
        V old;                                                                    \
        float* at = c + r * ldc + h * (LANES);                                    \
        std::memcpy(&old, at, sizeof old);                                        \
        old += rows[r][h];                                                        \
        std::memcpy(at, &old, sizeof old);                                        \
      }                                                                           \
  }

LINNET_GEMM_KERNEL(kernelSse2, , 4)
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LINNET_HAVE_X86_KERNELS 1
LINNET_GEMM_KERNEL(kernelAvx2, __attribute__((target("avx2,fma"))), 8)
LINNET_GEMM_KERNEL(kernelAvx512, __attribute__((target("avx512f,fma"))), 16)
#endif
#undef LINNET_GEMM_KERNEL

struct Kernel {
  MicroKernel fn;
  int nr;
  const char* name;
};

Kernel pickKernel() {
#ifdef LINNET_HAVE_X86_KERNELS
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {kernelAvx512, 32, "avx512"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {kernelAvx2, 16, "avx2+fma"};
#endif
  return {kernelSse2, 8, "sse2"};
}

struct AlignedFloats {
  explicit AlignedFloats(size_t n)
      : data(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64))) {
    if (!data) throw Error("bench: out of memory");
  }
  ~AlignedFloats() { std::free(data); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* data;
};

// C = A * B, all n x n row-major, n a multiple of kMC and of the kernel's NR.
void gemm(const Kernel& k, int n, const float* A, const float* B, float* C, float* apack, float* bpack) {
  const int nr = k.nr;
  std::fill(C, C + static_cast<size_t>(n) * n, 0.0f);
  for (int pc = 0; pc < n; pc += kKC) {
    int kc = std::min(kKC, n - pc);
    for (int jr = 0; jr < n / nr; ++jr)
      for (int p = 0; p < kc; ++p)
        std::memcpy(bpack + (static_cast<size_t>(jr) * kc + p) * nr, B + static_cast<size_t>(pc + p) * n + jr * nr,
                    nr * sizeof(float));
    for (int ic = 0; ic < n; ic += kMC) {
      int mc = std::min(kMC, n - ic);
      for (int ir = 0; ir < mc / kMR; ++ir)
        for (int p = 0; p < kc; ++p)
          for (int r = 0; r < kMR; ++r)
            apack[(static_cast<size_t>(ir) * kc + p) * kMR + r] =
                A[static_cast<size_t>(ic + ir * kMR + r) * n + pc + p];
      for (int jr = 0; jr < n / nr; ++jr)
        for (int ir = 0; ir < mc / kMR; ++ir)
          k.fn(apack + static_cast<size_t>(ir) * kc * kMR, bpack + static_cast<size_t>(jr) * kc * nr,
               C + static_cast<size_t>(ic + ir * kMR) * n + jr * nr, n, kc);
    }
  }
}

// ---------------------------------------------------------------------------
// The model side.

// nest.toml's [generics] with the --set overrides on top, as text.
std::map<std::string, std::string> effectiveGenerics(const Options& o) {
  std::map<std::string, std::string> out;
  std::filesystem::path nestToml = std::filesystem::path(o.package) / "nest.toml";
  if (std::filesystem::exists(nestToml)) {
    try {
      toml::table t = toml::parse_file(nestToml.string());
      if (auto* g = t["generics"].as_table())
        for (auto& [key, value] : *g) {
          if (auto i = value.value<int64_t>()) out[std::string(key.str())] = std::to_string(*i);
          else if (auto s = value.value<std::string>()) out[std::string(key.str())] = *s;
        }
    } catch (const std::exception& e) {
      throw Error(fmt::format("{}: {}", nestToml.string(), e.what()));
    }
  }
  for (const auto& [k, v] : o.load.generics) out[k] = v.str();
  return out;
}

std::optional<int64_t> intGeneric(const std::map<std::string, std::string>& g, const std::string& name) {
  auto it = g.find(name);
  if (it == g.end()) return std::nullopt;
  char* end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0') return std::nullopt;
  return v;
}

struct ParamTotals {
  int64_t tensors = 0, values = 0, bytes = 0;
  int64_t matrixValues = 0;    // 2-D params: the matmul weights (and embedding tables)
  int64_t embeddingBytes = 0;  // params whose path names an embedding
  int64_t embeddingRowBytes = 0;  // one row of each: what a token's lookup reads
  std::map<std::string, int64_t> bytesByDType;
};

ParamTotals paramTotals(const nest::Model& model) {
  ParamTotals t;
  for (const auto& p : model.params()) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    int64_t bytes = p.heldBytes();
    ++t.tensors;
    t.values += n;
    t.bytes += bytes;
    if (p.shape.size() == 2) t.matrixValues += n;
    if (p.path.find("embed") != std::string::npos) {
      t.embeddingBytes += bytes;
      if (!p.shape.empty() && p.shape[0] > 0) t.embeddingRowBytes += bytes / p.shape[0];
    }
    t.bytesByDType[p.storage ? std::string(linnet::name(*p.storage)) : linnet::name(p.dtype)] += bytes;
  }
  return t;
}

// Positions of keys one layer's decode step reads at position `pos`: all
// of them, or the last `Window` for a sliding-window layer. The cards'
// convention (Gemma 3's): a `Window` generic makes layers local, and with a
// `Pattern` generic the last layer of every `Pattern` is global instead.
double keysRead(const std::map<std::string, std::string>& g, int64_t layer, double pos) {
  auto window = intGeneric(g, "Window"), pattern = intGeneric(g, "Pattern");
  bool global = !window || (pattern && *pattern > 0 && (layer + 1) % *pattern == 0);
  return global ? pos + 1 : std::min(pos + 1, static_cast<double>(*window));
}

// Bytes of keys and values one decode step reads per sequence at position
// `pos`: 2 x KvHeads x D elements of T per key position each layer reads
// (keysRead; D: the head size, H / Heads where no generic gives it); 0 when
// the model lacks one of those generics.
double kvBytesPerToken(const std::map<std::string, std::string>& g, double pos) {
  auto layers = intGeneric(g, "Layers"), kv = intGeneric(g, "KvHeads"), h = intGeneric(g, "H"),
       heads = intGeneric(g, "Heads"), d = intGeneric(g, "D");
  auto t = g.find("T");
  if (!layers || !kv || !h || !heads || *heads <= 0 || t == g.end()) return 0;
  auto dtype = linnet::dtypeNamed(t->second);
  if (!dtype) return 0;
  const int64_t headSize = d ? *d : *h / *heads;  // a head size of its own (Qwen3, Gemma 3), else H / Heads
  double keys = 0;
  for (int64_t layer = 0; layer < *layers; ++layer) keys += keysRead(g, layer, pos);
  return 2.0 * static_cast<double>(*kv * headSize) * keys * static_cast<double>(linnet::byteSize(*dtype));
}

// Checks that an entry exists (nest's error lists the entries otherwise) and
// takes (tokens, pos) as the llama cards' `decode` and `prefill` do.
void requireEntry(const nest::Model& model, const std::string& entry, const char* signature) {
  std::vector<std::string> names = model.parameterNames(entry);
  if (names.size() != 2)
    throw Error(fmt::format("bench: entry `{}` of `{}` takes ({}); bench needs {}", entry, model.name(),
                            fmt::join(names, ", "), signature));
}

bool hasEntry(const nest::Model& model, const std::string& entry) {
  auto es = model.entries();
  return std::find(es.begin(), es.end(), entry) != es.end();
}

Tensor tokens(int64_t batch, int64_t len, int64_t vocab, int64_t salt) {
  Tensor t = Tensor::zeros(DType::I32, {batch, len});
  for (int64_t k = 0; k < batch * len; ++k) t.setInt(k, (7 * (k + salt) + 1) % std::max<int64_t>(vocab, 1));
  return t;
}

Tensor pos(int64_t p) { return Tensor::scalarI(DType::I32, p); }

std::string withCommas(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out = v < 0 ? "-" : "";
  for (size_t k = 0; k < digits.size(); ++k) {
    if (k > 0 && (digits.size() - k) % 3 == 0) out.push_back(',');
    out.push_back(digits[k]);
  }
  return out;
}

std::string percent(double fraction) {
  double p = fraction * 100;
  if (p >= 10) return fmt::format("{:.1f}%", p);
  if (p >= 0.1) return fmt::format("{:.2f}%", p);
  return fmt::format("{:.2g}%", p);
}

std::string seconds(double s) {
  if (s >= 1) return fmt::format("{:.3f} s", s);
  return fmt::format("{:.3g} ms", s * 1e3);
}

std::string rate(double v) { return v >= 100 ? fmt::format("{:.1f}", v) : fmt::format("{:.3g}", v); }

std::string configText(const std::map<std::string, std::string>& g) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : g) parts.push_back(k + "=" + v);
  return fmt::format("{}", fmt::join(parts, " "));
}

std::string weightsText(const Options& o) {
  if (o.load.randomWeights) return fmt::format("random (seed {})", o.load.seed);
  return o.load.weights;
}

void row(const char* label, const std::string& value) { fmt::print("  {:<20}{}\n", label, value); }

struct Common {
  std::map<std::string, std::string> generics;
  ParamTotals params;
  int64_t batch = 1, vocab = 1;
  std::optional<int64_t> maxSeq;
  int threads = 1;
};

nlohmann::ordered_json commonJson(const Options& o, const nest::Model& model, const Common& c) {
  nlohmann::ordered_json j;
  j["bench"] = o.mode;
  j["model"] = model.name();
  j["package"] = o.package;
  j["backend"] = model.backend();
  j["backend_threads"] = c.threads;
  j["weights"] = o.load.randomWeights ? "random" : o.load.weights;
  nlohmann::ordered_json g = nlohmann::ordered_json::object();
  for (const auto& [k, v] : c.generics) {
    if (auto i = intGeneric(c.generics, k)) g[k] = *i;
    else g[k] = v;
  }
  j["generics"] = g;
  j["batch"] = c.batch;
  j["param_tensors"] = c.params.tensors;
  j["param_values"] = c.params.values;
  j["param_bytes"] = c.params.bytes;
  return j;
}

void printHeader(const Options& o, const nest::Model& model, const Common& c) {
  fmt::print("linnet bench {}: {}, {} backend ({} thread{})\n", o.mode, model.name(), model.backend(), c.threads,
             c.threads == 1 ? "" : "s");
  row("config", configText(c.generics));
  row("weights", weightsText(o));
  // Bytes as held: a GGUF's quantized rows stay in their format.
  std::vector<std::string> dtypes;
  for (const auto& [d, b] : c.params.bytesByDType) dtypes.push_back(fmt::format("{} {}", d, withCommas(b)));
  row("parameters", fmt::format("{} tensors, {} values, {} bytes ({})", c.params.tensors, withCommas(c.params.values),
                                withCommas(c.params.bytes), fmt::join(dtypes, ", ")));
}

// --compile-only: the calls built their artifacts; nothing was timed.
void compiledOnly(const Options& o, const nest::Model& model) {
  fmt::print("linnet bench {}: {}, {} backend: compiled the entries it calls (--compile-only: nothing timed)\n",
             o.mode, model.name(), model.backend());
}

void runDecode(const Options& o, nest::Model& model, const Common& c) {
  requireEntry(model, "decode", "(token: Tensor[Batch, 1; i32], pos: i32)");
  bool viaPrefill = hasEntry(model, "prefill");
  if (viaPrefill) requireEntry(model, "prefill", "(tokens: Tensor[Batch, S; i32], pos: i32)");

  int64_t prompt = o.promptLen >= 0 ? o.promptLen : 8;
  int64_t warmup = std::max<int64_t>(o.warmup, 0);
  int64_t steps = o.steps > 0 ? o.steps : 32;
  int64_t askedSteps = steps;
  if (c.maxSeq) {
    // Positions prompt .. prompt + warmup + steps - 1 must stay below MaxSeq.
    int64_t room = *c.maxSeq;
    if (room < 1) throw Error(fmt::format("bench: MaxSeq = {} leaves no position to decode at", room));
    prompt = std::min(prompt, std::max<int64_t>(room - warmup - 1, 0));
    warmup = std::min(warmup, room - prompt - 1);
    steps = std::min(steps, room - prompt - warmup);
  }

  double promptSeconds = 0;
  if (prompt > 0) {
    auto t0 = Clock::now();
    if (viaPrefill) {
      model.call("prefill", {tokens(c.batch, prompt, c.vocab, 0), pos(0)});
    } else {
      for (int64_t p = 0; p < prompt; ++p) model.call("decode", {tokens(c.batch, 1, c.vocab, p), pos(p)});
    }
    promptSeconds = secondsSince(t0);
  }
  double warmupSeconds = 0;
  {
    auto t0 = Clock::now();
    for (int64_t w = 0; w < warmup; ++w)
      model.call("decode", {tokens(c.batch, 1, c.vocab, prompt + w), pos(prompt + w)});
    warmupSeconds = secondsSince(t0);
  }
  int64_t first = prompt + warmup;
  std::vector<double> stepSeconds;
  auto t0 = Clock::now();
  for (int64_t s = 0; s < steps; ++s) {
    auto ts = Clock::now();
    model.call("decode", {tokens(c.batch, 1, c.vocab, first + s), pos(first + s)});
    stepSeconds.push_back(secondsSince(ts));
  }
  double total = secondsSince(t0);
  if (o.load.compileOnly) return compiledOnly(o, model);
  double tokensPerSecond = static_cast<double>(c.batch * steps) / total;
  double bestStep = *std::min_element(stepSeconds.begin(), stepSeconds.end());

  // The machine, in the same run: as many threads as the backend, and all
  // cores; or, for a device with memory of its own (a GPU), a copy there
  // of 1 GiB (read and written: many times its cache).
  const int reps = 5;
  size_t bufferBytes = size_t{1} << 30;
  std::optional<double> deviceBandwidth = model.deviceCopyBandwidth(bufferBytes, reps);
  Bandwidth bw, bwAll;
  if (deviceBandwidth) {
    bw = bwAll = Bandwidth{*deviceBandwidth, 0};
  } else {
    bufferBytes = bandwidthBufferBytes();
    int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    bw = readBandwidth(bufferBytes, c.threads, reps);
    bwAll = cores == c.threads ? bw : readBandwidth(bufferBytes, cores, reps);
  }

  // What one decode step reads: every parameter once, except that an
  // embedding lookup reads one row per sequence, not the whole table.
  int64_t readBytes = c.params.bytes - c.params.embeddingBytes + c.batch * c.params.embeddingRowBytes;
  double weightBytesPerToken = static_cast<double>(readBytes) / static_cast<double>(c.batch);
  // And the keys and values attention reads: the positions up to the step's
  // (the mean over the timed steps), in the llama cards' cache layout.
  double cacheBytesPerToken = kvBytesPerToken(c.generics, static_cast<double>(first) + (steps - 1) / 2.0);
  double bytesPerToken = weightBytesPerToken + cacheBytesPerToken;
  double boundTokens = bw.bytesPerSecond / bytesPerToken;
  double boundTokensAll = bwAll.bytesPerSecond / bytesPerToken;
  double fraction = bytesPerToken * tokensPerSecond / bw.bytesPerSecond;
  double fractionAll = bytesPerToken * tokensPerSecond / bwAll.bytesPerSecond;
  size_t llc = lastLevelCacheBytes();
  bool fitsInCache = llc > 0 && static_cast<size_t>(c.params.bytes) <= llc;

  if (o.json) {
    nlohmann::ordered_json j = commonJson(o, model, c);
    j["prompt_tokens"] = prompt;
    j["prompt_via"] = prompt == 0 ? "none" : viaPrefill ? "prefill" : "decode";
    j["prompt_seconds"] = promptSeconds;
    j["warmup_steps"] = warmup;
    j["warmup_seconds"] = warmupSeconds;
    j["steps"] = steps;
    j["steps_requested"] = askedSteps;
    j["first_pos"] = first;
    if (c.maxSeq) j["max_seq"] = *c.maxSeq;
    j["seconds"] = total;
    j["tokens_per_s"] = tokensPerSecond;
    j["ms_per_step"] = total / static_cast<double>(steps) * 1e3;
    j["best_ms_per_step"] = bestStep * 1e3;
    j["weight_bytes"] = c.params.bytes;
    j["weight_bytes_read_per_token"] = static_cast<int64_t>(weightBytesPerToken);
    j["cache_bytes_read_per_token"] = static_cast<int64_t>(cacheBytesPerToken);
    j["embedding_bytes"] = c.params.embeddingBytes;
    j["bandwidth_buffer_bytes"] = bufferBytes;
    j["last_level_cache_bytes"] = llc;
    j["weights_fit_in_cache"] = fitsInCache;
    j["bandwidth_reps"] = reps;
    j["bandwidth_kind"] = deviceBandwidth ? "device copy, bytes read + written" : "host read";
    j["bandwidth_bytes_per_s"] = bw.bytesPerSecond;
    j["bandwidth_threads"] = bw.threads;
    j["bandwidth_all_bytes_per_s"] = bwAll.bytesPerSecond;
    j["bandwidth_all_threads"] = bwAll.threads;
    j["bound_tokens_per_s"] = boundTokens;
    j["bound_fraction"] = fraction;
    j["bound_tokens_per_s_all"] = boundTokensAll;
    j["bound_fraction_all"] = fractionAll;
    fmt::print("{}\n", j.dump());
    return;
  }
  printHeader(o, model, c);
  if (prompt > 0)
    row("prompt", fmt::format("{} token{} through `{}` in {}", prompt, prompt == 1 ? "" : "s",
                              viaPrefill ? "prefill" : "decode", seconds(promptSeconds)));
  if (warmup > 0)
    row("warm-up", fmt::format("{} decode step{} in {} (untimed)", warmup, warmup == 1 ? "" : "s",
                               seconds(warmupSeconds)));
  std::string clamped = steps < askedSteps ? fmt::format(" (of {} asked: MaxSeq = {})", askedSteps, *c.maxSeq) : "";
  std::string at = steps == 1 ? fmt::format("pos {}", first) : fmt::format("pos {}..{}", first, first + steps - 1);
  row("decode", fmt::format("{} step{} at {}{} in {}", steps, steps == 1 ? "" : "s", at, clamped, seconds(total)));
  row("tokens/s", fmt::format("{} (Batch {} x {} step{} / {}); {} per step, best {}", rate(tokensPerSecond),
                              c.batch, steps, steps == 1 ? "" : "s", seconds(total),
                              seconds(total / static_cast<double>(steps)), seconds(bestStep)));
  std::string embed = c.params.embeddingBytes > 0
                          ? fmt::format("; embedding tables {} bytes", withCommas(c.params.embeddingBytes))
                          : "";
  row("weight bytes/token", fmt::format("{} read per token (of {} in all{}; a lookup reads one row)",
                                        withCommas(static_cast<int64_t>(weightBytesPerToken)),
                                        withCommas(c.params.bytes), embed));
  if (cacheBytesPerToken > 0)
    row("cache bytes/token", fmt::format("{} (keys and values up to the mean position, a local layer's window; counted in the bound)",
                                         withCommas(static_cast<int64_t>(cacheBytesPerToken))));
  if (deviceBandwidth) {
    row("device bandwidth", fmt::format("{:.1f} GB/s, a device-to-device copy of {} MiB (bytes read + written, best "
                                        "of {})",
                                        bw.bytesPerSecond / 1e9, bufferBytes >> 20, reps));
    row("bandwidth bound", fmt::format("{} tokens/s", rate(boundTokens)));
    row("bound reached", percent(fraction));
    return;
  }
  row("read bandwidth", fmt::format("{:.1f} GB/s on {} thread{}, {:.1f} GB/s on all {} cores ({} MiB buffer, "
                                    "best of {})",
                                    bw.bytesPerSecond / 1e9, bw.threads, bw.threads == 1 ? "" : "s",
                                    bwAll.bytesPerSecond / 1e9, bwAll.threads, bufferBytes >> 20, reps));
  row("bandwidth bound", fmt::format("{} tokens/s on {} thread{}, {} on all cores", rate(boundTokens), bw.threads,
                                     bw.threads == 1 ? "" : "s", rate(boundTokensAll)));
  std::string cached = fitsInCache ? fmt::format("; the weights fit in the {} MiB last-level cache, so memory is "
                                                 "not the bound",
                                                 llc >> 20)
                                   : "";
  row("bound reached", fmt::format("{} ({} thread{}), {} (all cores){}", percent(fraction), bw.threads,
                                   bw.threads == 1 ? "" : "s", percent(fractionAll), cached));
}

void runPrefill(const Options& o, nest::Model& model, const Common& c) {
  requireEntry(model, "prefill", "(tokens: Tensor[Batch, S; i32], pos: i32)");
  int64_t len = o.promptLen >= 0 ? o.promptLen : 64;
  int64_t asked = len;
  if (c.maxSeq) len = std::min(len, *c.maxSeq);
  if (len < 1) throw Error("bench prefill: the prompt needs at least 1 token (--prompt-len)");
  int64_t warmup = std::max<int64_t>(o.warmup, 0);
  int64_t steps = o.steps > 0 ? o.steps : 3;
  Tensor prompt = tokens(c.batch, len, c.vocab, 0);

  auto once = [&] {
    model.resetState();
    auto t0 = Clock::now();
    model.call("prefill", {prompt, pos(0)});
    return secondsSince(t0);
  };
  double warmupSeconds = 0;
  for (int64_t w = 0; w < warmup; ++w) warmupSeconds += once();
  std::vector<double> runs;
  for (int64_t s = 0; s < steps; ++s) runs.push_back(once());
  double total = 0;
  for (double r : runs) total += r;
  double best = *std::min_element(runs.begin(), runs.end());
  double tokensPerSecond = static_cast<double>(c.batch * len * steps) / total;
  double flopsPerToken = 2.0 * static_cast<double>(c.params.matrixValues);
  double flops = flopsPerToken * tokensPerSecond;

  if (o.load.compileOnly) return compiledOnly(o, model);
  const int gemmN = 512, gemmReps = 5;
  GemmRate g = gemmRate(gemmN, gemmReps);
  double fraction = flops / g.flopsPerSecond;

  if (o.json) {
    nlohmann::ordered_json j = commonJson(o, model, c);
    j["prompt_tokens"] = len;
    j["prompt_tokens_requested"] = asked;
    if (c.maxSeq) j["max_seq"] = *c.maxSeq;
    j["warmup_calls"] = warmup;
    j["warmup_seconds"] = warmupSeconds;
    j["calls"] = steps;
    j["seconds"] = total;
    j["best_call_seconds"] = best;
    j["tokens_per_s"] = tokensPerSecond;
    j["matrix_values"] = c.params.matrixValues;
    j["flop_per_token"] = flopsPerToken;
    j["flop_per_s"] = flops;
    j["gemm_n"] = g.n;
    j["gemm_kernel"] = g.kernel;
    j["gemm_threads"] = 1;
    j["gemm_reps"] = gemmReps;
    j["gemm_flop_per_s"] = g.flopsPerSecond;
    j["gemm_is_vendor_peak"] = false;
    j["gemm_fraction"] = fraction;
    fmt::print("{}\n", j.dump());
    return;
  }
  printHeader(o, model, c);
  if (warmup > 0)
    row("warm-up", fmt::format("{} prefill call{} in {} (untimed)", warmup, warmup == 1 ? "" : "s",
                               seconds(warmupSeconds)));
  std::string clamped = len < asked ? fmt::format(" (of {} asked: MaxSeq = {})", asked, *c.maxSeq) : "";
  row("prefill", fmt::format("{} call{} of {} tokens{} at pos 0 in {}; best call {}", steps, steps == 1 ? "" : "s",
                             len, clamped, seconds(total), seconds(best)));
  row("tokens/s", fmt::format("{} (Batch {} x {} tokens x {} call{} / {})", rate(tokensPerSecond), c.batch, len,
                              steps, steps == 1 ? "" : "s", seconds(total)));
  row("FLOP/token", fmt::format("{} (2 x {} values of 2-D weights; attention scores not counted)",
                                withCommas(static_cast<int64_t>(flopsPerToken)), withCommas(c.params.matrixValues)));
  row("achieved", fmt::format("{} GFLOP/s", rate(flops / 1e9)));
  row("our GEMM", fmt::format("{} GFLOP/s: our own cache-blocked {}x{}x{} f32 kernel ({}), 1 thread, best of {} "
                              "-- not a vendor peak",
                              rate(g.flopsPerSecond / 1e9), g.n, g.n, g.n, g.kernel, gemmReps));
  row("of our GEMM", percent(fraction));
}

}  // namespace

size_t lastLevelCacheBytes() {
  size_t best = 0;
  int bestLevel = -1;
  for (int index = 0; index < 16; ++index) {
    std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", index);
    std::ifstream levelFile(dir + "level"), sizeFile(dir + "size");
    int level = 0;
    std::string size;
    if (!(levelFile >> level) || !(sizeFile >> size) || size.empty()) continue;
    size_t n = std::strtoull(size.c_str(), nullptr, 10);
    char unit = size.back();
    if (unit == 'K') n <<= 10;
    else if (unit == 'M') n <<= 20;
    else if (unit == 'G') n <<= 30;
    if (level > bestLevel || (level == bestLevel && n > best)) {
      bestLevel = level;
      best = n;
    }
  }
  return best;
}

size_t bandwidthBufferBytes() { return std::max<size_t>(size_t{1} << 30, 4 * lastLevelCacheBytes()); }

Bandwidth readBandwidth(size_t bytes, int threads, int reps) {
  threads = std::max(threads, 1);
  size_t n = bytes / sizeof(float);
  AlignedFloats buffer(n);
  float* data = buffer.data;
  auto slice = [&](int t) {
    size_t lo = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
    size_t hi = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
    return std::pair{lo, hi};
  };
  // Each thread first touches the pages it will read.
  timeThreads(threads, [&](int t) {
    auto [lo, hi] = slice(t);
    for (size_t i = lo; i < hi; ++i) data[i] = static_cast<float>(i & 1023) * (1.0f / 1024);
  });
  std::vector<float> sums(static_cast<size_t>(threads));
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    double s = timeThreads(threads, [&](int t) {
      auto [lo, hi] = slice(t);
      sums[static_cast<size_t>(t)] = sumFloats(data + lo, hi - lo);
    });
    float total = 0;
    for (float v : sums) total += v;
    gSink = gSink + total;
    best = std::max(best, static_cast<double>(n * sizeof(float)) / s);
  }
  return {best, threads};
}

GemmRate gemmRate(int n, int reps) {
  Kernel k = pickKernel();
  if (n <= 0 || n % kMC != 0 || n % k.nr != 0)
    throw Error(fmt::format("bench: GEMM size {} must be a positive multiple of {}", n, kMC));
  size_t nn = static_cast<size_t>(n) * n;
  AlignedFloats A(nn), B(nn), C(nn), apack(static_cast<size_t>(kMC) * kKC),
      bpack(static_cast<size_t>(kKC) * n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (size_t i = 0; i < nn; ++i) A.data[i] = uniform(rng);
  for (size_t i = 0; i < nn; ++i) B.data[i] = uniform(rng);
  double best = 0;
  for (int r = 0; r < std::max(reps, 1); ++r) {
    auto t0 = Clock::now();
    gemm(k, n, A.data, B.data, C.data, apack.data, bpack.data);
    double s = secondsSince(t0);
    best = std::max(best, 2.0 * n * n * static_cast<double>(n) / s);
  }
  // Spot checks: a wrong kernel must not report a rate.
  for (int probe = 0; probe < 16; ++probe) {
    int i = static_cast<int>(rng() % static_cast<unsigned>(n)), j = static_cast<int>(rng() % static_cast<unsigned>(n));
    double want = 0, scale = 0;
    for (int p = 0; p < n; ++p) {
      double a = A.data[static_cast<size_t>(i) * n + p], b = B.data[static_cast<size_t>(p) * n + j];
      want += a * b;
      scale += std::fabs(a * b);
    }
    double got = C.data[static_cast<size_t>(i) * n + j];
    if (std::fabs(got - want) > 1e-4 * scale + 1e-6)
      throw Error(fmt::format("bench: our GEMM kernel ({}) is wrong at [{}, {}]: {} instead of {}", k.name,
                              i, j, got, want));
  }
  return {best, k.name, n};
}

void run(const Options& given) {
  if (given.mode != "decode" && given.mode != "prefill" && given.mode != "rows" && given.mode != "paged")
    throw Error(fmt::format("bench: unknown benchmark `{}` (decode, prefill, rows or paged)", given.mode));
  // As load() resolves them: a weights folder's checkpoint, and its config's
  // generics (--generics-from-config), which the figures below read.
  Options o = given;
  o.load = nest::prepareLoad(o.package, o.load);
  nest::Model model = nest::load(o.package, o.load);
  if (o.mode == "rows" || o.mode == "paged") return runRows(o, model);
  Common c;
  c.generics = effectiveGenerics(o);
  c.params = paramTotals(model);
  c.batch = intGeneric(c.generics, "Batch").value_or(1);
  c.vocab = intGeneric(c.generics, "Vocab").value_or(1);
  c.maxSeq = intGeneric(c.generics, "MaxSeq");
  c.threads = model.threads();  // the bandwidth bound is measured on as many
  if (o.mode == "decode") runDecode(o, model, c);
  else runPrefill(o, model, c);
}

}  // namespace linnet::bench
