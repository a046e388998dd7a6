#include "common/install.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <initializer_list>
#include <system_error>

// Set by common/CMakeLists.txt: the build's stdlib and linnetc, and the
// install layout's paths from bin/ and from lib/ (GNUInstallDirs).
#ifndef LINNET_STDLIB_DIR
#define LINNET_STDLIB_DIR "stdlib"
#endif
#ifndef LINNET_LINNETC
#define LINNET_LINNETC "linnetc"
#endif
#ifndef LINNET_STDLIB_FROM_BIN
#define LINNET_STDLIB_FROM_BIN "../share/linnet/stdlib"
#endif
#ifndef LINNET_STDLIB_FROM_LIB
#define LINNET_STDLIB_FROM_LIB "../share/linnet/stdlib"
#endif
#ifndef LINNET_LINNETC_FROM_BIN
#define LINNET_LINNETC_FROM_BIN "linnetc"
#endif
#ifndef LINNET_LINNETC_FROM_LIB
#define LINNET_LINNETC_FROM_LIB "../bin/linnetc"
#endif

namespace linnet {

namespace fs = std::filesystem;

namespace {

// `dir/rel` when `found` says it is there, normalized; empty otherwise.
template <typename Found>
std::string beside(const fs::path& dir, std::initializer_list<const char*> rels, Found found) {
  if (dir.empty()) return {};
  for (const char* rel : rels) {
    fs::path p = (dir / rel).lexically_normal();
    std::error_code ec;
    if (found(p, ec) && !ec) return p.string();
  }
  return {};
}

}  // namespace

fs::path ownModuleDir() {
  Dl_info info{};
  link_map* map = nullptr;
  std::error_code ec;
  if (dladdr1(reinterpret_cast<void*>(&ownModuleDir), &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) && map &&
      map->l_name && map->l_name[0] != '\0') {
    fs::path lib = fs::canonical(map->l_name, ec);  // a shared library: the path the loader opened
    if (!ec) return lib.parent_path();
  }
  // The main program (its link map has no name; dladdr would say argv[0]).
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return exe.parent_path();
}

std::string defaultStdlibDir() {
  if (const char* env = std::getenv("LINNET_STDLIB")) return env;
  std::string installed =
      beside(ownModuleDir(), {LINNET_STDLIB_FROM_BIN, LINNET_STDLIB_FROM_LIB},
             [](const fs::path& p, std::error_code& ec) { return fs::is_directory(p / "std", ec); });
  return installed.empty() ? LINNET_STDLIB_DIR : installed;
}

std::string defaultFamiliesDir() {
  if (const char* env = std::getenv("LINNET_FAMILIES")) return env;
  std::string installed =
      beside(ownModuleDir(), {LINNET_FAMILIES_FROM_BIN, LINNET_FAMILIES_FROM_LIB},
             [](const fs::path& p, std::error_code& ec) { return fs::is_regular_file(p / "llama.toml", ec); });
  return installed.empty() ? LINNET_FAMILIES_DIR : installed;
}

std::string defaultLinnetc() {
  if (const char* env = std::getenv("LINNETC")) return env;
  std::string installed = beside(ownModuleDir(), {LINNET_LINNETC_FROM_BIN, LINNET_LINNETC_FROM_LIB},
                                 [](const fs::path& p, std::error_code& ec) { return fs::is_regular_file(p, ec); });
  return installed.empty() ? LINNET_LINNETC : installed;
}

}  // namespace linnet
