// Errors as values. A failure carries a message and, when it stems from the
// program, the source range it concerns, so every engine (interpreter, CPU
// JIT, GPU) reports run-time failures the same way compile errors are shown.
#pragma once

#include "support/Diagnostics.h"

#include <expected>
#include <string>

namespace loopc {

struct Error {
  std::string message;
  SourceRange range; // invalid when the error has no place in the source
};

template <typename T> using Expected = std::expected<T, Error>;
using Status = std::expected<void, Error>;

inline std::unexpected<Error> makeError(std::string message, SourceRange range = {}) {
  return std::unexpected<Error>(Error{std::move(message), range});
}

} // namespace loopc
