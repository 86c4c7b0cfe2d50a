#include "engine/HostArray.h"

namespace loopc {

HostArray::HostArray(ScalarType type, std::vector<int64_t> shape)
    : type(type), shape(std::move(shape)) {
  bytes.assign(elementCount() * scalarSize(type), 0);
}

HostArray HostArray::borrowing(ScalarType type, std::vector<int64_t> shape, void *data) {
  HostArray array;
  array.type = type;
  array.shape = std::move(shape);
  array.borrowed = {static_cast<unsigned char *>(data), array.elementCount() * scalarSize(type)};
  return array;
}

HostArray HostArray::onDevice(ScalarType type, std::vector<int64_t> shape, uint64_t address) {
  HostArray array;
  array.type = type;
  array.shape = std::move(shape);
  array.deviceAddress = address;
  return array;
}

size_t HostArray::elementCount() const {
  size_t count = 1;
  for (int64_t extent : shape)
    count *= static_cast<size_t>(extent);
  return count;
}

double HostArray::getAsDouble(size_t i) const {
  switch (type) {
  case ScalarType::I32:
    return data<int32_t>()[i];
  case ScalarType::I64:
    return static_cast<double>(data<int64_t>()[i]);
  case ScalarType::F32:
    return data<float>()[i];
  case ScalarType::F64:
    return data<double>()[i];
  case ScalarType::Bool:
    return data<uint8_t>()[i] ? 1.0 : 0.0;
  }
  return 0;
}

int64_t HostArray::getAsInt(size_t i) const {
  switch (type) {
  case ScalarType::I32:
    return data<int32_t>()[i];
  case ScalarType::I64:
    return data<int64_t>()[i];
  case ScalarType::F32:
    return static_cast<int64_t>(data<float>()[i]);
  case ScalarType::F64:
    return static_cast<int64_t>(data<double>()[i]);
  case ScalarType::Bool:
    return data<uint8_t>()[i] ? 1 : 0;
  }
  return 0;
}

void HostArray::setFromDouble(size_t i, double value) {
  switch (type) {
  case ScalarType::I32:
    data<int32_t>()[i] = static_cast<int32_t>(value);
    break;
  case ScalarType::I64:
    data<int64_t>()[i] = static_cast<int64_t>(value);
    break;
  case ScalarType::F32:
    data<float>()[i] = static_cast<float>(value);
    break;
  case ScalarType::F64:
    data<double>()[i] = value;
    break;
  case ScalarType::Bool:
    data<uint8_t>()[i] = value != 0;
    break;
  }
}

} // namespace loopc
