// The device-side error channel. Generated code cannot return an Error, and
// must not trap (x86 `idiv` raises SIGFPE on a zero divisor or INT_MIN / -1),
// so an operation that can fail at run time is guarded: when it fails, the
// code records the operation's site id (1-based, first failure wins by
// compare-and-swap from 0) in the status word of a record the engine owns,
// with up to two values the message quotes (the index out of range and the
// extent), and goes on with a harmless value. After the run the engine reads
// the record back and turns a nonzero site into the Error of that site. The
// record is the global `loopc_device_error` of the CPU module, and a trailing
// pointer parameter of every NVPTX kernel. Integer divisions and, with bounds
// checks on, array accesses register sites (LlvmEmitter::emitDeviceErrorIf).
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loopc::codegen {

inline constexpr const char *kDeviceErrorName = "loopc_device_error";

// What generated code writes on a fault: the first failing site and the
// values its message quotes. 24 bytes, zeroed before a run.
struct DeviceErrorRecord {
  uint32_t site = 0; // 0: no fault; else a 1-based index into DeviceErrorSites
  uint32_t unused = 0;
  int64_t values[2] = {0, 0};
};
static_assert(sizeof(DeviceErrorRecord) == 24);
inline constexpr uint64_t kDeviceErrorValuesOffset = 8;

struct DeviceErrorSite {
  std::string message; // "{0}" and "{1}" stand for the record's values
  SourceRange range;
};
// Site id i + 1 is sites[i].
using DeviceErrorSites = std::vector<DeviceErrorSite>;

// `message` with "{0}" and "{1}" replaced by the values.
std::string formatDeviceError(const std::string &message, const int64_t values[2]);

// Success for a zero site, else the Error of the site the record names.
Status deviceErrorStatus(const DeviceErrorRecord &record, const DeviceErrorSites &sites);

} // namespace loopc::codegen
