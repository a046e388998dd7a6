#include "nest/artifact_cache.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "artifact/manifest.h"
#include "common/hash.h"
#include "common/install.h"
#include "common/process.h"
#include "nest/nest.h"

namespace linnet::nest {

namespace fs = std::filesystem;

namespace {

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// FNV-1a of the compiler's bytes, remembered per (path, size, mtime): hashing
// a few MB once per process is cheap; 0 when it cannot be read.
uint64_t compilerIdentity(const fs::path& linnetc) {
  static std::mutex mutex;
  static std::map<std::string, uint64_t> known;
  std::error_code ec;
  auto size = fs::file_size(linnetc, ec);
  if (ec) return 0;
  auto stamp = fs::last_write_time(linnetc, ec);
  std::string at = fmt::format("{}|{}|{}", linnetc.string(), size, ec ? 0 : stamp.time_since_epoch().count());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = known.find(at);
  if (it == known.end()) it = known.emplace(at, fnv1a(readFile(linnetc))).first;
  return it->second;
}

// Every .linnet file under `dir`, in a stable order, with its contents.
std::string sourcesOf(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
    if (it->path().extension() == ".linnet" || it->path().filename() == "nest.toml" ||
        it->path().filename() == "linnet.toml")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  std::string out;
  for (const auto& f : files) out += f.lexically_relative(dir).string() + "\n" + readFile(f) + "\n";
  return out;
}

// The package folder and those of its linnet.toml [dependencies],
// transitively: every folder whose sources a compiled entry depends on.
// (Malformed manifests are linnetc's to report; here they add nothing.)
std::vector<fs::path> packageDirs(const fs::path& dir) {
  std::vector<fs::path> dirs{dir};
  std::set<fs::path> seen{fs::weakly_canonical(dir)};
  for (size_t i = 0; i < dirs.size() && i < 64; ++i) {
    try {
      toml::table t = toml::parse_file((dirs[i] / "linnet.toml").string());
      if (auto* deps = t["dependencies"].as_table())
        for (auto& [name, value] : *deps)
          if (auto path = value.is_table() ? (*value.as_table())["path"].value<std::string>() : std::nullopt)
            if (seen.insert(fs::weakly_canonical(dirs[i] / *path)).second) dirs.push_back(dirs[i] / *path);
    } catch (const std::exception&) {
    }
  }
  return dirs;
}

// `--arg` text for an argument: `i32:1x8`; a literal is `int:` or `float:`.
std::string argSpec(const Tensor& a) {
  std::string dt = !a.weak ? linnet::name(a.dtype) : a.isFloat() ? "float" : "int";
  return fmt::format("{}:{}", dt, fmt::join(a.shape, "x"));
}

// The instruction sets of the CPU this process runs on (the first `flags`
// or `Features` line of /proc/cpuinfo; empty where there is none). The CPU
// target compiles with -march=native, so code built on one CPU may not run
// on another: a cache folder shared between machines (a network home, a
// copied ~/.cache) keeps one set of entries per instruction set.
std::string hostCpuFeatures() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("flags") || line.starts_with("Features")) return line.substr(line.find(':') + 1);
  return "";
}

// Removes the private build folders (`.tmp-PID-...`) of processes that no
// longer run: a `linnet` killed mid-compile leaves its folder behind (its
// linnetc dies with it, dieWithParent). A live PID's folder is left alone.
void removeAbandonedBuilds(const fs::path& cacheDir) {
  std::error_code ec;
  for (auto it = fs::directory_iterator(cacheDir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (!name.starts_with(".tmp-")) continue;
    char* end = nullptr;
    long pid = std::strtol(name.c_str() + 5, &end, 10);
    if (end == name.c_str() + 5 || *end != '-' || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code removed;
    fs::remove_all(it->path(), removed);
  }
}

// Whether the artifact in `dir` can be used: its manifest reads and its
// code (if it has any) is the code the manifest was written for. A damaged
// one (a truncated copy, a full disk, an edit) is removed with a line on
// stderr, so that it is built again; a missing one is simply absent.
bool usable(const fs::path& dir) {
  if (!fs::exists(dir / artifact::kManifestFile)) return false;
  std::string damage;
  try {
    if (auto problem = artifact::checkLibrary(artifact::read(dir), dir)) damage = *problem;
  } catch (const artifact::ManifestError& e) {
    damage = e.what();
  }
  if (damage.empty()) return true;
  fmt::print(stderr, "linnet: the cached artifact {} is damaged ({}); building it again\n", dir.string(), damage);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec)
    throw Error(fmt::format("{}: a damaged cached artifact that cannot be removed ({}): delete it by hand",
                            dir.string(), ec.message()));
  return false;
}

}  // namespace

ArtifactCache::ArtifactCache(CacheSettings settings) : settings_(std::move(settings)) {
  if (settings_.linnetc.empty()) settings_.linnetc = defaultLinnetc();  // $LINNETC, the installed one, the build's
  std::string from = "the artifact cache";
  if (settings_.cacheDir.empty()) {
    if (const char* c = std::getenv("LINNET_CACHE")) {
      if (*c == '\0')
        throw Error("LINNET_CACHE is set but empty: set it to a folder for compiled artifacts, or unset it "
                    "(the default is ~/.cache/linnet)");
      settings_.cacheDir = c;
      from = "LINNET_CACHE";
    } else if (const char* h = std::getenv("HOME")) {
      settings_.cacheDir = fs::path(h) / ".cache" / "linnet";
    } else {
      settings_.cacheDir = fs::temp_directory_path() / "linnet-cache";
    }
  }
  std::error_code ec;
  if (fs::exists(settings_.cacheDir, ec) && !fs::is_directory(settings_.cacheDir, ec))
    throw Error(fmt::format("{}={}: not a folder; point it at a folder for compiled artifacts", from,
                            settings_.cacheDir.string()));
  from_ = from;
  // The compiler by its contents, not its path: a cache built on one
  // machine serves another with the same linnetc beside it (the CUDA check
  // carries prebuilt artifacts to a GPU machine without MLIR); CPU code
  // only where the instruction sets are the same.
  std::string key = fmt::format("linnetc {:016x}\nschema {}\ntarget {}\n", compilerIdentity(settings_.linnetc),
                                artifact::kSchemaVersion, settings_.target);
  if (settings_.target == "cpu") key += "host" + hostCpuFeatures() + "\n";
  for (const fs::path& dir : packageDirs(settings_.package)) key += sourcesOf(dir);
  key += sourcesOf(settings_.stdlib);
  for (const auto& s : settings_.sets) key += "\nset " + s;
  key_ = fmt::format("{:016x}", fnv1a(key));
}

void ArtifactCache::build(const fs::path& dir, std::vector<std::string> extra, const std::string& what) {
  std::error_code made;
  fs::create_directories(settings_.cacheDir, made);
  if (made)
    throw Error(fmt::format("{}={}: cannot make the folder ({}); point it at a writable folder", from_,
                            settings_.cacheDir.string(), made.message()));
  removeAbandonedBuilds(settings_.cacheDir);
  fs::path tmp = settings_.cacheDir / fmt::format(".tmp-{}-{}", ::getpid(), dir.filename().string());
  std::vector<std::string> argv = {settings_.linnetc, "build", settings_.package, "--stdlib", settings_.stdlib,
                                   "--target", settings_.target, "-o", tmp.string()};
  for (const auto& s : settings_.sets) argv.insert(argv.end(), {"--set", s});
  argv.insert(argv.end(), extra.begin(), extra.end());
  ProcessResult r;
  try {
    r = runProcess(argv);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: {}", what, e.what()));
  }
  if (r.exitCode != 0) {
    fs::remove_all(tmp);
    throw Error(what.empty() ? r.errors : fmt::format("{}:\n{}", what, r.errors));
  }
  std::error_code ec;
  fs::rename(tmp, dir, ec);
  if (ec) fs::remove_all(tmp);  // another process got there first
}

fs::path ArtifactCache::modelDir() {
  fs::path dir = settings_.cacheDir / fmt::format("model-{}", key_);
  // linnetc's diagnostics are the message, as the reference backend's are.
  if (!usable(dir)) build(dir, {"--manifest-only"}, "");
  return dir;
}

fs::path ArtifactCache::entryPath(const std::string& entry, const std::vector<Tensor>& args,
                                  const std::map<std::string, int64_t>& generics,
                                  const std::optional<GradientOf>& gradient) const {
  std::string key = key_ + "|" + entry;
  if (gradient) {
    for (const auto& p : gradient->wrt) key += "|wrt " + p;
    if (settings_.tape != "recompute") key += "|tape " + settings_.tape;
    if (gradient->lowRank > 0) key += fmt::format("|low rank {}", gradient->lowRank);
  }
  for (const auto& a : args) key += "|" + argSpec(a);
  for (const auto& [k, v] : generics) key += fmt::format("|{}={}", k, v);
  for (const auto& s : paramStorage_) key += "|storage " + s;
  if (settings_.numerics != "exact") key += "|numerics " + settings_.numerics;
  if (settings_.products != "own") key += "|products " + settings_.products;
  return settings_.cacheDir / fmt::format("{}{}-{:016x}", entry, gradient ? ".gradient" : "", fnv1a(key));
}

fs::path ArtifactCache::entryDir(const std::string& entry, const std::vector<Tensor>& args,
                                 const std::map<std::string, int64_t>& generics,
                                 const std::optional<GradientOf>& gradient) {
  fs::path dir = entryPath(entry, args, generics, gradient);
  if (usable(dir)) return dir;
  std::vector<std::string> extra = {"--entry", entry};
  if (gradient) {
    extra.insert(extra.end(), {"--gradient", "--tape", settings_.tape});
    if (!gradient->all)
      for (const auto& p : gradient->wrt) extra.insert(extra.end(), {"--wrt", p});
    if (gradient->lowRank > 0) extra.insert(extra.end(), {"--low-rank", std::to_string(gradient->lowRank)});
  }
  for (const auto& [k, v] : generics) extra.insert(extra.end(), {"--generic", fmt::format("{}={}", k, v)});
  for (const auto& a : args) extra.insert(extra.end(), {"--arg", argSpec(a)});
  for (const auto& s : paramStorage_) extra.insert(extra.end(), {"--param-storage", s});
  if (settings_.numerics != "exact") extra.insert(extra.end(), {"--numerics", settings_.numerics});
  if (settings_.products != "own") extra.insert(extra.end(), {"--products", settings_.products});
  // One line, finished with the time taken: "linnet: compiling `decode` for cpu ... 1.9 s".
  auto start = std::chrono::steady_clock::now();
  if (settings_.progress) {
    fmt::print(stderr, "linnet: compiling `{}`{} for {} ...", entry, gradient ? "'s gradient" : "", settings_.target);
    std::fflush(stderr);
  }
  try {
    build(dir, extra, fmt::format("entry `{}`{} could not be compiled for {}", entry, gradient ? "'s gradient" : "",
                                  settings_.target));
  } catch (...) {
    if (settings_.progress) fmt::print(stderr, "\n");
    throw;
  }
  if (settings_.progress)
    fmt::print(stderr, " {:.1f} s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return dir;
}

}  // namespace linnet::nest
