// Values crossing the boundary between the driver and an engine: every kernel
// argument is a HostArray (a scalar is a rank-0 array of one element), stored
// densely in C order.
#pragma once

#include "frontend/Ast.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace loopc {

struct HostArray {
  ScalarType type = ScalarType::F32;
  std::vector<int64_t> shape; // empty for a scalar
  std::vector<unsigned char> bytes;

  HostArray() = default;
  HostArray(ScalarType type, std::vector<int64_t> shape);

  size_t elementCount() const;
  size_t rank() const { return shape.size(); }
  template <typename T> T *data() { return reinterpret_cast<T *>(bytes.data()); }
  template <typename T> const T *data() const { return reinterpret_cast<const T *>(bytes.data()); }
  // Element i (flat index) converted to double / int64, whatever the type.
  double getAsDouble(size_t i) const;
  int64_t getAsInt(size_t i) const;
  void setFromDouble(size_t i, double value);
};

} // namespace loopc
