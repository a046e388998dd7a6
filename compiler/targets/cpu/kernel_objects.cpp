#include "targets/cpu/kernel_objects.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string_view>
#include <system_error>

#include "common/process.h"
#include "llvm/Support/xxhash.h"
#include "transforms/pipeline.h"

namespace linnet::cpu {

namespace fs = std::filesystem;

namespace {

struct KernelSource {
  const char* path;  // under the kernels' include root
  const char* text;
};
constexpr KernelSource kKernelSources[] = {
#include "kernel_sources.inc"
};

bool isSource(const KernelSource& k) { return std::string_view(k.path).ends_with(".c"); }

void writeSources(const fs::path& root, bool sources) {
  for (const KernelSource& k : kKernelSources) {
    if (isSource(k) != sources) continue;
    fs::create_directories((root / k.path).parent_path());
    std::ofstream(root / k.path) << k.text;
  }
}

fs::path cacheRoot() {
  if (const char* c = std::getenv("LINNET_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "linnet";
  return {};
}

// What the objects depend on besides the sources: the flags, the compiler
// binary, and the CPU and features -march=native resolves to.
std::string keyOf(const std::string& clang, const std::vector<std::string>& flags) {
  std::string key = clang;
  for (const std::string& f : flags) key += "\n" + f;
  std::error_code ec;
  key += fmt::format("\n{} {}", fs::file_size(clang, ec),
                     fs::last_write_time(clang, ec).time_since_epoch().count());
  ProcessResult native = runProcess({clang, "-march=native", "-###", "-x", "c", "-c", "/dev/null", "-o", "/dev/null"});
  key += "\n" + native.errors;
  for (const KernelSource& k : kKernelSources) key += fmt::format("\n{}\n{}", k.path, k.text);
  return fmt::format("{:016x}", llvm::xxh3_64bits(llvm::StringRef(key)));
}

// Compiles every kernel source under `dir` (written there first) to an object beside it.
std::vector<fs::path> compileInto(const fs::path& dir, const std::string& clang, const std::vector<std::string>& flags) {
  writeSources(dir, /*sources=*/false);
  writeSources(dir, /*sources=*/true);
  std::vector<fs::path> objects;
  for (const KernelSource& k : kKernelSources) {
    if (!isSource(k)) continue;
    fs::path object = dir / (std::string(k.path) + ".o");
    std::vector<std::string> command = {clang};
    command.insert(command.end(), flags.begin(), flags.end());
    command.insert(command.end(), {"-c", "-o", object.string(), (dir / k.path).string(), "-I", dir.string()});
    ProcessResult r = runProcess(command);
    if (r.exitCode != 0)
      throw transforms::PipelineError(fmt::format("clang failed to compile the kernels ({}):\n{}", k.path, r.errors));
    objects.push_back(object);
  }
  return objects;
}

std::vector<fs::path> objectsIn(const fs::path& dir) {
  std::vector<fs::path> objects;
  for (const KernelSource& k : kKernelSources)
    if (isSource(k)) objects.push_back(dir / (std::string(k.path) + ".o"));
  return objects;
}

bool complete(const fs::path& dir) {
  std::error_code ec;
  for (const fs::path& o : objectsIn(dir))
    if (!fs::is_regular_file(o, ec)) return false;
  return true;
}

}  // namespace

std::vector<fs::path> kernelObjects(const std::string& clang, const std::vector<std::string>& flags,
                                    const fs::path& includeRoot, const fs::path& scratch) {
  writeSources(includeRoot, /*sources=*/false);
  fs::path root = cacheRoot();
  if (root.empty()) return compileInto(scratch, clang, flags);
  fs::path final = root / ("kernels-" + keyOf(clang, flags));
  if (complete(final)) return objectsIn(final);
  std::error_code ec;
  fs::create_directories(root, ec);
  fs::path tmp = root / fmt::format(".tmp-kernels-{}-{:08x}", ::getpid(), std::random_device{}());
  fs::create_directories(tmp, ec);
  if (ec) return compileInto(scratch, clang, flags);  // a cache we cannot write
  try {
    compileInto(tmp, clang, flags);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  fs::rename(tmp, final, ec);
  if (ec) fs::remove_all(tmp, ec);  // another build put its copy there first
  if (complete(final)) return objectsIn(final);
  return compileInto(scratch, clang, flags);
}

}  // namespace linnet::cpu
