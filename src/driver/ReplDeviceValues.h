// The GPU memory of a REPL session's values (docs/repl.md, "Values"): with
// the GPU as the session's device, its arrays are kept there between calls,
// passed to kernels where they are (HostArray::onDevice), and copied to the
// host only to be printed, saved, converted or taken apart. A runtime opened
// for the session keeps the device's context, and so the memory, alive;
// each buffer lives while a value refers to its address.
#pragma once

#include "engine/HostArray.h"
#include "support/Error.h"

#include <loopc/runtime.hpp>

#include <map>
#include <memory>
#include <string>

namespace loopc::driver {

class ReplDeviceValues {
public:
  // Opens the first CUDA device; an error (the runtime's) where there is none.
  static Expected<std::unique_ptr<ReplDeviceValues>> open();

  // `array`, in host memory, copied into new GPU memory.
  Expected<HostArray> upload(const HostArray &array);
  // New GPU memory for an array of `type` and `shape` (the kernel's run
  // zeroes an output).
  Expected<HostArray> allocate(ScalarType type, std::vector<int64_t> shape);
  // A host copy of `array` when it is in GPU memory; else `array`.
  Expected<HostArray> download(const HostArray &array) const;
  // Frees the memory no value of `values` refers to.
  void keepOnly(const std::map<std::string, HostArray> &values);

private:
  explicit ReplDeviceValues(runtime::Runtime runtime) : runtime_(std::move(runtime)) {}
  runtime::Runtime runtime_;
  std::map<uint64_t, runtime::DeviceBuffer> buffers_; // by address
};

} // namespace loopc::driver
