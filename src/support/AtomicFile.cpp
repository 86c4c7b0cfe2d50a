// Files written whole or not at all (see AtomicFile.h).
#include "support/AtomicFile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace loopc {

namespace {

// The folder part of `path` ("." for a bare name) and the name.
std::pair<std::string, std::string> splitPath(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// The permissions a new file gets: the destination's when it exists,
// else what open() would give under the process's umask.
mode_t permissionsFor(const struct stat *existing) {
  if (existing)
    return existing->st_mode & 07777;
  mode_t mask = umask(0);
  umask(mask);
  return 0666 & ~mask;
}

} // namespace

PendingFile::PendingFile(std::string path, std::string description, std::string temporary, int fd)
    : path_(std::move(path)), description_(std::move(description)),
      temporary_(std::move(temporary)), fd_(fd) {}

PendingFile::PendingFile(PendingFile &&other) noexcept
    : path_(std::move(other.path_)), description_(std::move(other.description_)),
      temporary_(std::move(other.temporary_)), fd_(std::exchange(other.fd_, -1)) {
  other.temporary_.clear();
}

PendingFile::~PendingFile() {
  if (fd_ >= 0)
    close(fd_);
  if (!temporary_.empty())
    unlink(temporary_.c_str());
}

Error PendingFile::failure(int error) const {
  return Error{"cannot write " + description_ + ": " + std::strerror(error), {}};
}

Expected<PendingFile> PendingFile::open(const std::string &path, const std::string &description) {
  struct stat existing {};
  bool exists = stat(path.c_str(), &existing) == 0;
  if (exists && S_ISDIR(existing.st_mode))
    return std::unexpected(Error{"cannot write " + description + ": it is a folder", {}});
  if (exists && !S_ISREG(existing.st_mode)) {
    int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0)
      return std::unexpected(
          Error{"cannot write " + description + ": " + std::strerror(errno), {}});
    return PendingFile(path, description, "", fd);
  }
  auto [folder, name] = splitPath(path);
  std::string pattern = folder + "/." + name + ".tmp.XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  int fd = mkostemp(buffer.data(), O_CLOEXEC);
  if (fd < 0)
    return std::unexpected(Error{"cannot write " + description + ": " + std::strerror(errno), {}});
  PendingFile file(path, description, buffer.data(), fd);
  if (fchmod(fd, permissionsFor(exists ? &existing : nullptr)) != 0)
    return std::unexpected(file.failure(errno));
  return file;
}

Status PendingFile::write(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t written = ::write(fd_, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return std::unexpected(failure(errno));
    }
    bytes.remove_prefix(static_cast<size_t>(written));
  }
  return {};
}

Status PendingFile::commit() {
  int fd = std::exchange(fd_, -1);
  // On the disk before the rename, so a crash leaves the old file or the
  // new one, not an empty one.
  bool synced = temporary_.empty() || fsync(fd) == 0;
  int syncError = errno;
  if (close(fd) != 0 || !synced)
    return std::unexpected(failure(synced ? errno : syncError));
  if (temporary_.empty())
    return {};
  if (rename(temporary_.c_str(), path_.c_str()) != 0)
    return std::unexpected(failure(errno));
  temporary_.clear();
  return {};
}

Status writeFileAtomically(const std::string &path, std::string_view bytes,
                           const std::string &description) {
  auto file = PendingFile::open(path, description);
  if (!file)
    return std::unexpected(file.error());
  if (auto written = file->write(bytes); !written)
    return written;
  return file->commit();
}

Status writeFilesAtomically(const std::vector<std::string> &paths,
                            const std::function<std::string(size_t)> &contents) {
  std::vector<PendingFile> pending;
  for (size_t i = 0; i < paths.size(); ++i) {
    auto file = PendingFile::open(paths[i], "'" + paths[i] + "'");
    if (!file)
      return std::unexpected(file.error());
    if (Status written = file->write(contents(i)); !written)
      return written;
    pending.push_back(std::move(*file));
  }
  for (PendingFile &file : pending)
    if (Status committed = file.commit(); !committed)
      return committed;
  return {};
}

} // namespace loopc
