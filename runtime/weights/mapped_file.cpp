#include "weights/mapped_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "weights/error.h"

namespace linnet::weights {

namespace {
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};
}  // namespace

MappedFile MappedFile::open(const std::filesystem::path& path) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    throw Error(fmt::format("{}: no such file; check the path (relative paths are resolved against {})",
                            path.string(), std::filesystem::current_path(ec).string()));
  if (std::filesystem::is_directory(status))
    throw Error(fmt::format("{}: is a directory, not a file; pass a .safetensors file inside it, or its "
                            "*.safetensors.index.json for a sharded checkpoint",
                            path.string()));
  if (!std::filesystem::is_regular_file(status))
    throw Error(fmt::format("{}: not a regular file (a device, FIFO or socket cannot be memory-mapped)",
                            path.string()));

  Fd fd;
  fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd.fd < 0)
    throw Error(fmt::format("{}: cannot open for reading: {}", path.string(), std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0)
    throw Error(fmt::format("{}: cannot stat: {}", path.string(), std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw Error(fmt::format("{}: not a regular file", path.string()));

  MappedFile m;
  m.path_ = path;
  if (st.st_size == 0) return m;
  void* p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED)
    throw Error(fmt::format("{}: cannot memory-map {} bytes: {}", path.string(), st.st_size,
                            std::strerror(errno)));
  m.data_ = static_cast<const std::byte*>(p);
  m.size_ = static_cast<std::size_t>(st.st_size);
  m.mapped_ = true;
  return m;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_), mapped_(other.mapped_) {
  other.data_ = nullptr;
  other.size_ = 0;
  other.mapped_ = false;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, false);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() noexcept {
  if (mapped_) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
  mapped_ = false;
}

}  // namespace linnet::weights
