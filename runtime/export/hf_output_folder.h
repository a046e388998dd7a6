// A folder written whole or not at all, for exports that are folders (a
// Hugging Face checkpoint): every file goes into a temporary sibling
// `.NAME.PID.part`, each flushed and fsynced as it is closed; commit()
// fsyncs the folder and renames it into place. An existing destination
// (with --force) is replaced only by renames: old -> `.NAME.PID.old`,
// new -> NAME, then the old one removed, so a reader sees the old folder or
// the new one, never a mix. Destroyed uncommitted, the temporary folder is
// removed.
#pragma once

#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace linnet::exporter {

// The refusals that come before anything is read: no output named, an
// existing one without `force`, no parent folder. Throws nest::Error naming
// the fix.
void checkOutputFolder(const std::string& output, bool force, const char* command);

// One file being written, fsynced on close().
class SyncedFile {
 public:
  explicit SyncedFile(const std::filesystem::path& path);  // gguf-style errors: nest::Error
  SyncedFile(const SyncedFile&) = delete;
  SyncedFile& operator=(const SyncedFile&) = delete;
  ~SyncedFile();
  void write(std::span<const std::byte> bytes);
  void write(std::string_view text) { write(std::as_bytes(std::span<const char>(text.data(), text.size()))); }
  void close();  // flush, fsync, close; throws on failure

 private:
  std::filesystem::path path_;
  std::FILE* file_ = nullptr;
};

class OutputFolder {
 public:
  explicit OutputFolder(std::filesystem::path destination);  // creates the temporary folder
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;
  ~OutputFolder();  // removes the temporary folder unless committed

  const std::filesystem::path& temporary() const { return temp_; }
  std::filesystem::path file(const std::string& name) const { return temp_ / name; }
  void writeFile(const std::string& name, std::string_view text);
  // fsync the folder, rename it onto the destination (replacing an old one by renames).
  void commit();

 private:
  std::filesystem::path destination_, temp_;
  bool committed_ = false;
};

}  // namespace linnet::exporter
