#include "common/output_file.h"

namespace linnet {

std::optional<std::string> unwritableOutput(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status s = fs::status(path, ec);
  if (ec || s.type() == fs::file_type::not_found || s.type() == fs::file_type::regular) return std::nullopt;
  const char* kind = s.type() == fs::file_type::directory   ? "a folder"
                     : s.type() == fs::file_type::character ? "a character device"
                     : s.type() == fs::file_type::block     ? "a block device"
                     : s.type() == fs::file_type::fifo      ? "a FIFO"
                     : s.type() == fs::file_type::socket    ? "a socket"
                                                            : "not a regular file";
  return path.string() + " is " + kind + ": outputs are written only to regular files (name a file to create or " +
         "replace)";
}

}  // namespace linnet
