#include "export/hf_output_folder.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/output_file.h"
#include "nest/nest.h"

namespace linnet::exporter {

namespace fs = std::filesystem;
using nest::Error;

namespace {

fs::path sibling(const fs::path& destination, const char* suffix) {
  fs::path dir = destination.parent_path().empty() ? fs::path(".") : destination.parent_path();
  return dir / fmt::format(".{}.{}.{}", destination.filename().string(), ::getpid(), suffix);
}

void fsyncPath(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: the files themselves are synced
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void checkOutputFolder(const std::string& output, bool force, const char* command) {
  if (output.empty()) throw Error(fmt::format("{}: no output folder: pass -o DIR", command));
  fs::path out(output);
  if (out.filename().empty()) out = out.parent_path();  // "dir/" names "dir"
  std::error_code ec;
  // --force replaces a folder or a file, never a device, FIFO or socket.
  if (fs::exists(out, ec) && !fs::is_directory(out, ec))
    if (auto why = unwritableOutput(out)) throw Error(*why);
  if (fs::exists(out, ec) && !force)
    throw Error(fmt::format("{}: exists; pass --force to replace it (it is replaced only once the new folder is "
                            "complete)",
                            output));
  const fs::path dir = out.parent_path().empty() ? fs::path(".") : out.parent_path();
  if (!fs::is_directory(dir, ec)) throw Error(fmt::format("{}: no folder {} to write it in", output, dir.string()));
}

SyncedFile::SyncedFile(const fs::path& path) : path_(path), file_(std::fopen(path.c_str(), "wb")) {
  if (!file_) throw Error(fmt::format("{}: cannot create: {}", path.string(), std::strerror(errno)));
}

SyncedFile::~SyncedFile() {
  if (file_) std::fclose(file_);
}

void SyncedFile::write(std::span<const std::byte> bytes) {
  if (!file_) throw std::logic_error("SyncedFile::write after close");
  if (!bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    throw Error(fmt::format("{}: cannot write: {}", path_.string(), std::strerror(errno)));
}

void SyncedFile::close() {
  bool ok = std::fflush(file_) == 0 && ::fsync(fileno(file_)) == 0;
  std::string why = ok ? "" : std::strerror(errno);
  ok = std::fclose(file_) == 0 && ok;
  file_ = nullptr;
  if (!ok) throw Error(fmt::format("{}: cannot write: {}", path_.string(), why.empty() ? "close failed" : why));
}

OutputFolder::OutputFolder(fs::path destination) : destination_(std::move(destination)) {
  if (destination_.filename().empty()) destination_ = destination_.parent_path();
  fs::path temp = sibling(destination_, "part");
  std::error_code ec;
  fs::remove_all(temp, ec);  // a leftover of an earlier run with this pid
  if (!fs::create_directory(temp, ec) || ec)
    throw Error(fmt::format("{}: cannot create the temporary folder {} beside it: {}", destination_.string(),
                            temp.string(), ec.message()));
  temp_ = temp;
}

OutputFolder::~OutputFolder() {
  if (committed_ || temp_.empty()) return;
  std::error_code ec;
  fs::remove_all(temp_, ec);
}

void OutputFolder::writeFile(const std::string& name, std::string_view text) {
  SyncedFile f(file(name));
  f.write(text);
  f.close();
}

void OutputFolder::commit() {
  fsyncPath(temp_);
  std::error_code ec;
  fs::path backup;
  if (fs::exists(fs::symlink_status(destination_, ec))) {
    backup = sibling(destination_, "old");
    fs::remove_all(backup, ec);
    fs::rename(destination_, backup, ec);
    if (ec)
      throw Error(fmt::format("{}: cannot move the old one aside to {}: {}", destination_.string(), backup.string(),
                              ec.message()));
  }
  fs::rename(temp_, destination_, ec);
  if (ec) {
    std::error_code restore;
    if (!backup.empty()) fs::rename(backup, destination_, restore);
    throw Error(fmt::format("{}: cannot rename {} onto it: {}", destination_.string(), temp_.string(), ec.message()));
  }
  committed_ = true;
  fsyncPath(destination_.parent_path().empty() ? fs::path(".") : destination_.parent_path());
  if (!backup.empty()) fs::remove_all(backup, ec);
}

}  // namespace linnet::exporter
