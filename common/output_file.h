// Where an output may go. Writers put a temporary file beside the path and
// rename it over the path, so that a reader never sees half a file; renamed
// over a device (/dev/null), a FIFO or a socket, that would replace the node
// with a regular file (as root, a system device). So an output path must be
// absent or a regular file (a symbolic link counts as what it points to).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace linnet {

// Why `path` cannot be written as an output ("/dev/null is a character
// device: ..."), or nullopt when it is absent or a regular file.
std::optional<std::string> unwritableOutput(const std::filesystem::path& path);

}  // namespace linnet
