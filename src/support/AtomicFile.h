// Files written whole or not at all. The bytes go to a temporary file in the
// destination's folder, renamed over the destination once they are all
// written (a rename within one file system replaces the file in one step),
// so a write that fails part way (a full disk, a missing folder, a killed
// process) leaves the file that was there as it was. A destination that
// exists and is not a regular file (/dev/null, a pipe) is written in place:
// it cannot be replaced, and renaming over a device would remove it.
#pragma once

#include "support/Error.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace loopc {

// One file being written. Its bytes are in the temporary until commit();
// destroyed before that, it removes the temporary and the destination is
// untouched. Several files are written all or none by writing each, then
// committing each.
class PendingFile {
public:
  // Opens the temporary beside `path`; `description` names the file in
  // messages ("'r.npy'", "--out r=r.npy").
  static Expected<PendingFile> open(const std::string &path, const std::string &description);

  PendingFile(PendingFile &&other) noexcept;
  PendingFile &operator=(PendingFile &&) = delete;
  PendingFile(const PendingFile &) = delete;
  ~PendingFile();

  Status write(std::string_view bytes);
  // Closes the temporary and renames it over the destination.
  Status commit();

private:
  PendingFile(std::string path, std::string description, std::string temporary, int fd);
  Error failure(int error) const;

  std::string path_, description_;
  std::string temporary_; // empty when writing the destination in place
  int fd_ = -1;
};

// `bytes` as the whole content of `path`, or an error and `path` unchanged.
Status writeFileAtomically(const std::string &path, std::string_view bytes,
                           const std::string &description);

// Each of `paths` with the bytes `contents` gives for its index (made one at
// a time, so only one file's bytes are held), every file written whole or,
// when one fails, none changed.
Status writeFilesAtomically(const std::vector<std::string> &paths,
                            const std::function<std::string(size_t)> &contents);

} // namespace loopc
