// Reading and writing NumPy .npy files, the format of `loopc run --in/--out`:
// arrays cross between loopc and Python (or another engine run) without any
// conversion. Supported: little-endian, C-order arrays of f4 f8 i4 i8 b1
// (loopc's scalar types), header versions 1.0, 2.0 and 3.0. Everything else
// is rejected with a message naming the file and the problem.
#pragma once

#include "engine/HostArray.h"
#include "support/Error.h"

#include <string>
#include <string_view>

namespace loopc {

// Decodes the bytes of a .npy file; `name` (the file's path) prefixes errors.
Expected<HostArray> decodeNpy(std::string_view bytes, const std::string &name);
// Encodes an array as a .npy file: version 1.0, or 2.0 when the header is too
// long for 1.0's 16-bit length.
std::string encodeNpy(const HostArray &array);

Expected<HostArray> readNpy(const std::string &path);
// Writes the file whole or not at all (support/AtomicFile.h).
Status writeNpy(const std::string &path, const HostArray &array);

} // namespace loopc
