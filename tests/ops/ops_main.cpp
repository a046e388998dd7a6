// linnet_ops_tests: the per-op conformance suite (docs/testing.md).
//
//   linnet_ops_tests [--backend reference|cpu|cuda-emulated]... [--perf] [--filter TEXT]... [--list]
//                    [--work DIR] [--cache DIR] [--verbose]
//
// Every case (ops_cases.cpp) is an entry of a small generated package; the
// packages are run on the reference backend, and on compiled code (cpu, or
// the cuda target's kernels emulated on the CPU) when asked, through linnet::nest. The reference is checked against the
// language's definition where a case has an oracle; every other backend is
// compared with the reference. Compiled entries are built with one `linnetc
// build` per package (all its entries at once) into the runtime's cache,
// under the folder each entry shape would be compiled into, so the runtime
// finds them and compiles nothing itself.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "nest/artifact_cache.h"
#include "nest/nest.h"
#include "ops_cases.h"
#include "ops_package.h"

namespace fs = std::filesystem;
using namespace linnet::ops;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The first lines of a long message.
std::string firstLines(const std::string& text, int n = 6) {
  std::string out;
  std::istringstream in(text);
  int k = 0;
  for (std::string line; std::getline(in, line) && k < n; ++k) out += (k ? "\n      " : "") + line;
  return out;
}

struct Options {
  std::vector<std::string> backends;
  std::vector<std::string> filters;
  bool perf = false, list = false, verbose = false;
  fs::path work = LINNET_OPS_WORK;
  fs::path cache = LINNET_TEST_CACHE;
  std::string stdlib = LINNET_STDLIB_DIR;
  std::string linnetc;
};

enum class Verdict { Pass, Skip, Fail };

struct Outcome {
  Verdict verdict = Verdict::Pass;
  std::string why;  // skip reason or failure details
};

// One backend's results: per case, its outputs per run (when it ran).
struct BackendRun {
  std::string backend;
  std::map<std::string, std::vector<Outputs>> outputs;
  std::map<std::string, Outcome> outcomes;
  std::map<std::string, double> micros;  // --perf: per call, best of several
  double compileSeconds = 0, runSeconds = 0;
  int linnetcRuns = 0;
  int runtimeCompiles = 0;
};

linnet::nest::LoadOptions loadOptions(const Options& o, const std::string& backend) {
  linnet::nest::LoadOptions lo;
  lo.backend = backend;
  lo.stdlib = o.stdlib;
  lo.randomWeights = true;  // the packages have no params
  lo.cacheDir = o.cache.string();
  return lo;
}

// ------------------------------------------------------------------ running

std::string describeInputs(const std::vector<Values>& in) {
  std::vector<std::string> items;
  for (const Values& v : in) items.push_back(format(v));
  return fmt::format("{}", fmt::join(items, "\n        "));
}

std::string compareOutputs(const Outputs& want, const Outputs& got, const Tolerance& tol) {
  if (want.size() != got.size()) return fmt::format("{} results expected, {} returned", want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    std::string d = compare(want[k], got[k], tol);
    if (!d.empty()) {
      std::string which = want.size() > 1 ? fmt::format("result {}: ", k) : "";
      return fmt::format("{}{}\n      expected {}\n      got      {}", which, d, format(want[k], 48), format(got[k], 48));
    }
  }
  return "";
}

// Types only: for values the language leaves unspecified.
std::string compareTypes(const Outputs& want, const Outputs& got) {
  if (want.size() != got.size()) return fmt::format("{} results expected, {} returned", want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k)
    if (want[k].dtype != got[k].dtype || want[k].shape != got[k].shape)
      return fmt::format("expected {}, got {}", typeName(want[k]), typeName(got[k]));
  return "";
}

// Calls every run of every case of one package on a loaded model.
void runCases(linnet::nest::Model& model, const std::vector<const Case*>& cases, const Options& o, BackendRun& out) {
  for (const Case* c : cases) {
    if (out.outcomes.count(c->name)) continue;  // already decided (did not check, not compiled)
    std::vector<Outputs> results;
    std::string error;
    for (const auto& run : c->runs) {
      try {
        std::vector<linnet::nest::Tensor> args = toTensors(run);
        Outputs r;
        for (const auto& t : model.call(c->name, args)) r.push_back(fromTensor(t));
        results.push_back(std::move(r));
      } catch (const std::exception& e) {
        error = e.what();
        break;
      }
    }
    if (!error.empty()) {
      out.outcomes[c->name] = {Verdict::Fail, fmt::format("{} raised: {}", out.backend, firstLines(error))};
      continue;
    }
    if (o.perf) {
      // Best of several rounds of all runs, after the calls above warmed up.
      double best = 1e300;
      auto start = Clock::now();
      for (int round = 0; round < 50 && (round < 3 || seconds(start) < 0.05); ++round) {
        auto t0 = Clock::now();
        for (const auto& run : c->runs) model.call(c->name, toTensors(run));
        best = std::min(best, seconds(t0) * 1e6 / static_cast<double>(c->runs.size()));
      }
      out.micros[c->name] = best;
    }
    out.outputs[c->name] = std::move(results);
  }
}

// Loads a package; if it does not check, finds the cases that do not (each
// alone in a package of its own) and marks them failed, then loads the rest.
std::optional<linnet::nest::Model> loadChecked(const fs::path& dir, const std::string& group, std::vector<const Case*>& cases,
                                               const Options& o, const std::string& backend, BackendRun& out) {
  try {
    return linnet::nest::load(dir.string(), loadOptions(o, backend));
  } catch (const linnet::nest::Error& e) {
    if (o.verbose) fmt::print("{}: does not load, isolating its cases:\n{}\n", dir.string(), firstLines(e.what(), 20));
  }
  std::vector<const Case*> good;
  for (const Case* c : cases) {
    fs::path single = o.work / "isolated" / c->name;
    writePackage(single, "isolated", {c});
    try {
      linnet::nest::load(single.string(), loadOptions(o, "reference"));
      good.push_back(c);
    } catch (const linnet::nest::Error& e) {
      out.outcomes[c->name] = {Verdict::Fail, "the generated entry does not check:\n      " + firstLines(e.what(), 12)};
    }
  }
  cases = good;
  writePackage(dir, group, cases);
  try {
    return linnet::nest::load(dir.string(), loadOptions(o, backend));
  } catch (const linnet::nest::Error& e) {
    for (const Case* c : cases)
      out.outcomes[c->name] = {Verdict::Fail, "the package does not load: " + firstLines(e.what())};
    return std::nullopt;
  }
}

// ------------------------------------------------------------------ compiled builds

struct Build {
  int rc = 0;
  std::string log;
  std::set<std::string> built;
  std::map<std::string, std::string> notCompiled;  // entry -> linnetc's reason
};

Build runLinnetc(const Options& o, const fs::path& package, const std::string& target, const fs::path& outDir) {
  fs::remove_all(outDir);
  fs::path log = outDir.string() + ".log";
  std::string cmd = fmt::format("{} build {} --stdlib {} --target {} -o {} > {} 2>&1", quote(o.linnetc),
                                quote(package.string()), quote(o.stdlib), target, quote(outDir.string()),
                                quote(log.string()));
  Build b;
  int status = std::system(cmd.c_str());
  b.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  b.log = readFile(log);
  fs::remove(log);
  std::istringstream lines(b.log);
  for (std::string line; std::getline(lines, line);) {
    // linnetc: entry `NAME` not compiled: REASON
    auto at = line.find("linnetc: entry `");
    auto end = line.find("` not compiled: ");
    if (at == 0 && end != std::string::npos) b.notCompiled[line.substr(16, end - 16)] = line.substr(end + 16);
  }
  if (b.rc == 0) {
    auto m = nlohmann::json::parse(readFile(outDir / "manifest.json"));
    for (const auto& e : m.at("entries")) b.built.insert(e.at("name").get<std::string>());
    for (const auto& s : m.at("skipped")) b.notCompiled[s.at("name").get<std::string>()] = s.at("reason").get<std::string>();
  }
  return b;
}

// Builds `cases` into artifacts under `root`; where linnetc fails on the
// whole package (an internal error in one entry), halves it until the
// entries that fail alone are found. Returns each built entry's artifact.
void buildCases(const Options& o, const fs::path& root, const std::string& tag, const std::vector<const Case*>& cases,
                const fs::path& package, std::map<std::string, fs::path>& artifactOf, BackendRun& out) {
  fs::path dir = root / tag;
  Build b = runLinnetc(o, package, out.backend, dir);
  out.linnetcRuns++;
  for (const auto& [entry, why] : b.notCompiled)
    if (!out.outcomes.count(entry)) out.outcomes[entry] = {Verdict::Skip, out.backend + ": " + why};
  if (b.rc == 0) {
    for (const std::string& e : b.built) artifactOf[e] = dir;
    return;
  }
  std::vector<const Case*> rest;
  for (const Case* c : cases)
    if (!b.notCompiled.count(c->name)) rest.push_back(c);
  if (rest.empty()) return;
  if (rest.size() == 1) {
    out.outcomes[rest[0]->name] = {Verdict::Fail, fmt::format("linnetc build failed (exit {}):\n      {}", b.rc, firstLines(b.log, 12))};
    return;
  }
  size_t half = rest.size() / 2;
  std::vector<const Case*> parts[2] = {{rest.begin(), rest.begin() + half}, {rest.begin() + half, rest.end()}};
  for (int k = 0; k < 2; ++k) {
    fs::path sub = o.work / "parts" / fmt::format("{}{}", tag, k);
    writePackage(sub, "part", parts[k]);
    buildCases(o, root, fmt::format("{}{}", tag, k), parts[k], sub, artifactOf, out);
  }
}

// Compiles a package's cases for `out.backend`'s target with as few linnetc
// runs as possible and links each entry's cache folder to its artifact.
void prepareCompiled(const Options& o, const fs::path& package, const std::string& group, const std::vector<const Case*>& cases,
                BackendRun& out) {
  linnet::nest::CacheSettings settings;  // as nest::load makes them for this package
  settings.package = fs::absolute(package).string();
  settings.stdlib = fs::absolute(o.stdlib).string();
  settings.target = out.backend;
  settings.cacheDir = o.cache;
  const linnet::nest::ArtifactCache keys(settings);
  std::vector<std::pair<const Case*, fs::path>> wanted;
  for (const Case* c : cases)
    if (!out.outcomes.count(c->name)) wanted.push_back({c, keys.entryPath(c->name, toTensors(c->runs[0]), {})});
  bool all = std::all_of(wanted.begin(), wanted.end(), [](const auto& w) { return fs::exists(w.second / "manifest.json"); });
  fs::path root = keys.entryPath("ops-batch-" + group, {}, {});
  if (all && !wanted.empty()) return;  // compiled by an earlier run of the same sources and compiler
  auto start = Clock::now();
  fs::remove_all(root);
  fs::create_directories(root);
  std::map<std::string, fs::path> artifactOf;
  std::vector<const Case*> todo;
  for (const auto& w : wanted) todo.push_back(w.first);
  buildCases(o, root, "all", todo, package, artifactOf, out);
  for (const auto& [c, dir] : wanted) {
    auto a = artifactOf.find(c->name);
    if (a == artifactOf.end()) continue;
    fs::remove_all(dir);
    fs::create_directory_symlink(a->second, dir);
  }
  out.compileSeconds += seconds(start);
}

int countDirs(const fs::path& dir) {
  int n = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); ++it)
    // Entry artifacts only: a package's manifest (`model-*`) is the runtime's to make.
    if (it->is_directory() && !it->is_symlink() && it->path().filename().string().rfind("model-", 0) != 0) ++n;
  return n;
}

// ------------------------------------------------------------------ report

struct Tally {
  int cases = 0, passed = 0, skipped = 0, failed = 0, oracle = 0;
  std::map<std::string, int> perDType;
  std::map<std::string, int> skipReasons;
  std::vector<std::string> failures;
};

std::string summaryLine(const std::string& backend, const Tally& t, const std::string& extra) {
  std::vector<std::string> dt;
  for (const char* d : {"f32", "bf16", "f16", "i32", "i64", "bool"})
    if (t.perDType.count(d)) dt.push_back(fmt::format("{} {}", d, t.perDType.at(d)));
  return fmt::format("ops[{}]: {} cases ({}): {} passed, {} skipped, {} failed{}", backend, t.cases, fmt::join(dt, ", "),
                     t.passed, t.skipped, t.failed, extra);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    auto next = [&]() -> std::string {
      if (k + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n", a);
        std::exit(2);
      }
      return argv[++k];
    };
    if (a == "--backend") o.backends.push_back(next());
    else if (a == "--filter") o.filters.push_back(next());
    else if (a == "--perf") o.perf = true;
    else if (a == "--list") o.list = true;
    else if (a == "--verbose" || a == "-v") o.verbose = true;
    else if (a == "--work") o.work = next();
    else if (a == "--cache") o.cache = next();
    else {
      fmt::print(stderr,
                 "usage: linnet_ops_tests [--backend reference|cpu|cuda-emulated]... [--perf] [--filter TEXT]... [--list] "
                 "[--work DIR] [--cache DIR] [--verbose]\n");
      return 2;
    }
  }
#ifdef LINNET_OPS_CPU
  const bool haveCpu = true;
#else
  const bool haveCpu = false;
#endif
#ifdef LINNET_OPS_CUDA_EMULATED
  const bool haveCudaEmulated = true;
#else
  const bool haveCudaEmulated = false;
#endif
  if (o.backends.empty()) o.backends = haveCpu ? std::vector<std::string>{"reference", "cpu"} : std::vector<std::string>{"reference"};
  for (const std::string& b : o.backends) {
    if (b == "cuda-emulated" && !haveCudaEmulated) {
      fmt::print(stderr, "this build has no cuda target\n");
      return 2;
    }
    if (b == "cpu" && !haveCpu) {
      fmt::print(stderr, "this build has no cpu backend (LINNET_MLIR=OFF)\n");
      return 2;
    }
    if (b != "cpu" && b != "reference" && b != "cuda-emulated") {
      fmt::print(stderr, "unknown backend `{}` (reference, cpu, cuda-emulated)\n", b);
      return 2;
    }
  }
  o.linnetc = std::getenv("LINNETC") ? std::getenv("LINNETC") : LINNET_OPS_LINNETC;
  if (const char* s = std::getenv("LINNET_STDLIB")) o.stdlib = s;
  // Each backend set works in its own folder (ctest may run them at once).
  o.work /= fmt::format("{}", fmt::join(o.backends, "-"));
  o.work = fs::absolute(o.work);

  Suite suite = generateSuite();
  std::vector<const Case*> cases;
  for (const Case& c : suite.cases) {
    bool keep = o.filters.empty();
    for (const auto& f : o.filters) keep = keep || c.name.find(f) != std::string::npos || c.family == f;
    if (keep) cases.push_back(&c);
  }
  if (o.list) {
    for (const Case* c : cases) fmt::print("{}  [{} {} {}]\n{}", c->name, c->family, dtypeName(c->dtype), c->group, entryText(*c));
    return 0;
  }
  std::map<std::string, std::vector<const Case*>> groups;
  for (const Case* c : cases) groups[c->group].push_back(c);
  for (auto& [g, cs] : groups) writePackage(o.work / g, "ops_" + g, cs);

  // The reference: always, as the others are compared with it.
  BackendRun ref;
  ref.backend = "reference";
  auto start = Clock::now();
  for (auto& [g, cs] : groups) {
    auto model = loadChecked(o.work / g, "ops_" + g, cs, o, "reference", ref);
    if (model) runCases(*model, cs, o, ref);
  }
  ref.runSeconds = seconds(start);

  std::vector<BackendRun> others;
  for (const std::string& b : o.backends) {
    if (b == "reference") continue;
    BackendRun run;
    run.backend = b;
    for (const auto& [name, outcome] : ref.outcomes)
      if (outcome.verdict == Verdict::Fail) run.outcomes[name] = {Verdict::Skip, "no reference result (the reference backend failed it)"};
    for (auto& [g, cs] : groups) prepareCompiled(o, o.work / g, g, cs, run);
    int linked = countDirs(o.cache);
    start = Clock::now();
    for (auto& [g, cs] : groups) {
      // Cases that were not compiled are decided; the model still loads the whole package.
      try {
        auto model = linnet::nest::load((o.work / g).string(), loadOptions(o, b));
        runCases(model, cs, o, run);
      } catch (const linnet::nest::Error& e) {
        for (const Case* c : cs)
          if (!run.outcomes.count(c->name)) run.outcomes[c->name] = {Verdict::Fail, "does not load: " + firstLines(e.what())};
      }
    }
    run.runSeconds = seconds(start);
    run.runtimeCompiles = countDirs(o.cache) - linked;  // folders the runtime made itself: batch keys that missed
    others.push_back(std::move(run));
  }

  // Verdicts.
  bool anyFailed = !suite.missing.empty();
  auto decide = [&](BackendRun& run, bool isReference) {
    Tally t;
    for (const Case* c : cases) {
      t.cases++;
      t.perDType[dtypeName(c->dtype)]++;
      Outcome oc;
      if (auto it = run.outcomes.find(c->name); it != run.outcomes.end()) {
        oc = it->second;
      } else {
        const std::vector<Outputs>& got = run.outputs.at(c->name);
        for (size_t r = 0; r < c->runs.size() && oc.verdict == Verdict::Pass; ++r) {
          Outputs want;
          if (isReference) {
            if (!c->oracle) continue;
            want = c->oracle(c->runs[r]);
          } else {
            want = ref.outputs.at(c->name)[r];
          }
          std::string d = c->unspecified.empty() ? compareOutputs(want, got[r], c->tol) : compareTypes(want, got[r]);
          if (!d.empty())
            oc = {Verdict::Fail, fmt::format("{} (run {} of {})\n      entry: pub entry {}({}) -> {} {{ {} }}\n      inputs: {}\n      {} vs {}: {}",
                                             isReference ? "differs from the language's definition" : "differs from the reference",
                                             r + 1, c->runs.size(), c->name, c->params, c->result, c->body,
                                             describeInputs(c->runs[r]), run.backend, isReference ? "oracle" : "reference", d)};
        }
        if (isReference && c->oracle) t.oracle++;
      }
      switch (oc.verdict) {
        case Verdict::Pass: t.passed++; break;
        case Verdict::Skip: t.skipped++; t.skipReasons[oc.why]++; break;
        case Verdict::Fail: t.failed++; t.failures.push_back(fmt::format("FAILED {} [{} {}] on {}: {}", c->name, c->family, dtypeName(c->dtype), run.backend, oc.why)); break;
      }
    }
    return t;
  };

  std::vector<std::string> summaries;
  Tally refTally = decide(ref, true);
  bool referenceRequested = std::find(o.backends.begin(), o.backends.end(), "reference") != o.backends.end();
  if (referenceRequested) {
    for (const auto& f : refTally.failures) fmt::print("{}\n", f);
    for (const auto& [why, n] : refTally.skipReasons) fmt::print("skipped {} on reference: {}\n", n, why);
    anyFailed = anyFailed || refTally.failed > 0;
    summaries.push_back(summaryLine("reference", refTally,
                                    fmt::format("; {} checked against the language's definition too; ran in {:.1f} s",
                                                refTally.oracle, ref.runSeconds)));
  }
  for (BackendRun& run : others) {
    Tally t = decide(run, false);
    for (const auto& f : t.failures) fmt::print("{}\n", f);
    for (const auto& [why, n] : t.skipReasons) fmt::print("skipped {} on {}: {}\n", n, run.backend, why);
    anyFailed = anyFailed || t.failed > 0;
    std::string extra = fmt::format("; compiled in {:.1f} s ({} linnetc run{}{}), ran in {:.1f} s", run.compileSeconds,
                                    run.linnetcRuns, run.linnetcRuns == 1 ? "" : "s",
                                    run.linnetcRuns == 0 ? ", all cached" : "", run.runSeconds);
    if (run.runtimeCompiles > 0)
      extra += fmt::format("; warning: the runtime compiled {} entr{} itself (the batch missed its cache key)",
                           run.runtimeCompiles, run.runtimeCompiles == 1 ? "y" : "ies");
    summaries.push_back(summaryLine(run.backend, t, extra));
  }
  if (o.perf) {
    fmt::print("\n{:<48} {:>14}", "case (us per call, best of rounds)", "reference");
    for (const BackendRun& run : others) fmt::print(" {:>14}", run.backend);
    fmt::print("\n");
    for (const Case* c : cases) {
      auto show = [&](const BackendRun& run) {
        auto it = run.micros.find(c->name);
        return it == run.micros.end() ? std::string("-") : fmt::format("{:.1f}", it->second);
      };
      fmt::print("{:<48} {:>14}", c->name, show(ref));
      for (const BackendRun& run : others) fmt::print(" {:>14}", show(run));
      fmt::print("\n");
    }
  }
  for (const auto& m : suite.missing) fmt::print("FAILED: {}\n", m);
  for (const auto& [p, why] : suite.skipped) fmt::print("skipped primitive `{}`: {}\n", p, why);
  for (const auto& s : summaries) fmt::print("{}\n", s);
  return anyFailed ? 1 : 0;
}
