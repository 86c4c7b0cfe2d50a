// The GPU engine's host program: the host code of a compiled Function run
// against device buffers, its launches through the runtime.
//
// The host program is interpreted rather than JIT-compiled for the CPU.
// After extract_kernels it is tiny (serial loops, scalar lets, allocations of
// global temporaries, launches, and loads and stores of the rank-0 cells
// through which top-level reductions pass their results), and every step of
// it is a driver call that costs microseconds, so compiling it would buy
// nothing and would tie the GPU path to the CPU JIT and a callback ABI into
// the runtime. Interpreting keeps launches, geometry checks and error messages
// in one readable place.
#pragma once

#include "ir/IR.h"
#include "support/Error.h"

#include <loopc/generated.h>
#include <loopc/runtime.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace loopc::engine {

// A runtime failure as a located error.
Error runtimeError(const runtime::RuntimeError &error, SourceRange range = {});

// An array with no elements still gets a few zeroed bytes, not a null
// address: a kernel may read its element 0 without using the value
// (stage_shared's copies clamp their indices into the array and pick 0 after
// the load; the code after a recorded fault reads index 0), as the CPU
// engine's empty arrays do.
constexpr size_t kSmallestArrayBytes = 16;

// Device memory for the host program's temporaries (reduction partials,
// kernel-level variables), kept from one run to the next: cuMemAlloc costs
// tens of microseconds and cuMemFree waits for the device, which would put
// both inside every timed run. A buffer is reused for a request of the same
// size; when none fits, the idle ones (sizes of earlier runs) are freed first,
// so the pool holds no more than one run needs.
class DevicePool {
public:
  runtime::Result<runtime::DeviceBuffer *> acquire(const runtime::Runtime &runtime, size_t bytes) {
    for (auto &entry : entries_)
      if (!entry->inUse && entry->buffer.size() == bytes) {
        entry->inUse = true;
        return &entry->buffer;
      }
    std::erase_if(entries_, [](const auto &entry) { return !entry->inUse; });
    auto buffer = runtime.allocate(bytes);
    if (!buffer)
      return std::unexpected(buffer.error());
    entries_.push_back(std::make_unique<Entry>(Entry{std::move(*buffer), true}));
    return &entries_.back()->buffer;
  }

  void release(const runtime::DeviceBuffer *buffer) {
    for (auto &entry : entries_)
      if (&entry->buffer == buffer)
        entry->inUse = false;
  }

private:
  struct Entry {
    runtime::DeviceBuffer buffer;
    bool inUse;
  };
  std::vector<std::unique_ptr<Entry>> entries_;
};

// A scalar of the host program: integers (and bools) in `integer`, floats in
// `real`, kept in the precision of `type`.
struct HostScalar {
  ScalarType type = ScalarType::I64;
  int64_t integer = 0;
  double real = 0;

  static HostScalar ofInteger(ScalarType type, int64_t value) {
    HostScalar scalar{type};
    if (type == ScalarType::I32)
      value = static_cast<int32_t>(value);
    if (type == ScalarType::Bool)
      value = value != 0;
    if (isFloat(type))
      return ofReal(type, static_cast<double>(value));
    scalar.integer = value;
    return scalar;
  }
  static HostScalar ofReal(ScalarType type, double value) {
    HostScalar scalar{type};
    scalar.real = type == ScalarType::F32 ? static_cast<double>(static_cast<float>(value)) : value;
    return scalar;
  }
  double asReal() const { return isFloat(type) ? real : static_cast<double>(integer); }

  // In its memory representation (bool as one byte).
  void store(unsigned char *bytes) const {
    switch (type) {
    case ScalarType::I32: {
      int32_t value = static_cast<int32_t>(integer);
      std::memcpy(bytes, &value, sizeof value);
      return;
    }
    case ScalarType::I64:
      std::memcpy(bytes, &integer, sizeof integer);
      return;
    case ScalarType::F32: {
      float value = static_cast<float>(real);
      std::memcpy(bytes, &value, sizeof value);
      return;
    }
    case ScalarType::F64:
      std::memcpy(bytes, &real, sizeof real);
      return;
    case ScalarType::Bool:
      bytes[0] = integer != 0;
      return;
    }
  }
  static HostScalar load(ScalarType type, const unsigned char *bytes) {
    switch (type) {
    case ScalarType::I32: {
      int32_t value;
      std::memcpy(&value, bytes, sizeof value);
      return ofInteger(type, value);
    }
    case ScalarType::I64: {
      int64_t value;
      std::memcpy(&value, bytes, sizeof value);
      return ofInteger(type, value);
    }
    case ScalarType::F32: {
      float value;
      std::memcpy(&value, bytes, sizeof value);
      return ofReal(type, value);
    }
    case ScalarType::F64: {
      double value;
      std::memcpy(&value, bytes, sizeof value);
      return ofReal(type, value);
    }
    case ScalarType::Bool:
      return ofInteger(type, bytes[0] != 0);
    }
    return {};
  }
};

// `value` as `to` converts it in the language: a float to an integer
// saturates, NaN to 0.
HostScalar convert(const HostScalar &value, ScalarType to);

class HostInterpreter; // GpuHostProgram.cpp

// Runs the host body of a Function against device buffers: its scalars and
// arrays bound first, `kernels` the loaded kernels its launches name.
class HostProgram {
public:
  HostProgram(const runtime::Runtime &runtime, DevicePool &pool,
              const std::map<std::string, runtime::Function> &kernels,
              const std::map<std::string, const ir::KernelFunc *> &kernelInfo);
  ~HostProgram();

  void bindVar(const std::string &name, HostScalar value);
  void bindBuffer(const ir::BufferInfo *buffer, loopc_device_ptr address);
  // The device error record every launch passes last (DeviceErrors.h).
  void bindErrorRecord(loopc_device_ptr address);
  // The parfor of the latest launch: where a kernel's asynchronous failure,
  // found by a later wait, most likely comes from.
  SourceRange lastLaunch() const;
  Status run(const ir::StmtNode &stmt);

private:
  std::unique_ptr<HostInterpreter> interpreter_;
};

} // namespace loopc::engine
