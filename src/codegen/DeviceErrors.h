// The device-side error channel. Generated code cannot return an Error, and
// must not trap (x86 `idiv` raises SIGFPE on a zero divisor or INT_MIN / -1),
// so an operation that can fail at run time is guarded: when it fails, the
// code records the operation's site id (1-based, first failure wins by
// compare-and-swap from 0) in a 32-bit status word the engine owns, and goes on
// with a harmless value. After the run the engine reads the word back and turns
// a nonzero id into the Error of that site. The word is the global
// `loopc_device_error` of the CPU module, and a trailing pointer parameter of
// every NVPTX kernel. Integer division registers sites today; a bounds-checking
// mode can register its own the same way (LlvmEmitter::emitDeviceErrorIf).
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loopc::codegen {

inline constexpr const char *kDeviceErrorName = "loopc_device_error";

struct DeviceErrorSite {
  std::string message;
  SourceRange range;
};
// Site id i + 1 is sites[i].
using DeviceErrorSites = std::vector<DeviceErrorSite>;

// Success for a zero status word, else the Error of the site it names.
Status deviceErrorStatus(uint32_t word, const DeviceErrorSites &sites);

} // namespace loopc::codegen
