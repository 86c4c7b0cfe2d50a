// Values crossing the boundary between the driver and an engine: every kernel
// argument is a HostArray (a scalar is a rank-0 array of one element), stored
// densely in C order.
#pragma once

#include "frontend/Ast.h"

#include <cstdint>
#include <cstring>
#include <new>
#include <span>
#include <vector>

namespace loopc {

// Allocates on 64-byte boundaries (a cache line, a 512-bit vector): the
// vector loops of a kernel then split no cache line where the program's rows
// start aligned, and a run's time does not depend on where the allocator
// happened to put its arrays (a 16 KiB array updated in place ran markedly
// slower at one offset than at another: docs/benchmarks.md, CPU history).
template <typename T> struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlignment{64};
  CacheLineAllocator() = default;
  template <typename U> CacheLineAllocator(const CacheLineAllocator<U> &) {}
  T *allocate(size_t count) {
    return static_cast<T *>(::operator new(count * sizeof(T), kAlignment));
  }
  void deallocate(T *pointer, size_t) { ::operator delete(pointer, kAlignment); }
  bool operator==(const CacheLineAllocator &) const { return true; }
};

using HostBytes = std::vector<unsigned char, CacheLineAllocator<unsigned char>>;

struct HostArray {
  ScalarType type = ScalarType::F32;
  std::vector<int64_t> shape; // empty for a scalar
  HostBytes bytes;
  // Elements in memory the caller owns, used in place of `bytes` when set: a
  // host program's array handed to a kernel without a copy (a NumPy array
  // from Python). Copies of the HostArray share it.
  std::span<unsigned char> borrowed;
  // Elements in GPU memory the caller owns, at this device address, instead
  // (an array of a GPU library from Python): only the GPU engine takes such
  // an array, and uses it where it is.
  uint64_t deviceAddress = 0;

  HostArray() = default;
  HostArray(ScalarType type, std::vector<int64_t> shape);
  // An array of `type` and `shape` over `data`, which the caller owns and
  // keeps while the array is used.
  static HostArray borrowing(ScalarType type, std::vector<int64_t> shape, void *data);
  // An array of `type` and `shape` in GPU memory at `address`, which the
  // caller owns.
  static HostArray onDevice(ScalarType type, std::vector<int64_t> shape, uint64_t address);
  bool inDeviceMemory() const { return deviceAddress != 0; }

  size_t elementCount() const;
  size_t rank() const { return shape.size(); }
  // The elements' bytes: the borrowed memory, else `bytes`.
  std::span<unsigned char> elementBytes() {
    return borrowed.data() ? borrowed : std::span<unsigned char>(bytes);
  }
  std::span<const unsigned char> elementBytes() const {
    return borrowed.data() ? std::span<const unsigned char>(borrowed)
                           : std::span<const unsigned char>(bytes);
  }
  template <typename T> T *data() { return reinterpret_cast<T *>(elementBytes().data()); }
  template <typename T> const T *data() const {
    return reinterpret_cast<const T *>(elementBytes().data());
  }
  // Element i (flat index) converted to double / int64, whatever the type.
  double getAsDouble(size_t i) const;
  int64_t getAsInt(size_t i) const;
  void setFromDouble(size_t i, double value);
};

} // namespace loopc
