#include "driver/ReplDeviceValues.h"

#include <set>

namespace loopc::driver {

namespace {

Error runtimeFailure(const runtime::RuntimeError &error) {
  return Error{"the GPU: " + error.message, {}};
}

} // namespace

Expected<std::unique_ptr<ReplDeviceValues>> ReplDeviceValues::open() {
  auto runtime = runtime::Runtime::open(runtime::DeviceKind::Cuda);
  if (!runtime)
    return std::unexpected(runtimeFailure(runtime.error()));
  return std::unique_ptr<ReplDeviceValues>(new ReplDeviceValues(std::move(*runtime)));
}

Expected<HostArray> ReplDeviceValues::allocate(ScalarType type, std::vector<int64_t> shape) {
  HostArray described = HostArray::onDevice(type, std::move(shape), 0);
  auto buffer = runtime_.allocate(described.elementCount() * scalarSize(type));
  if (!buffer)
    return std::unexpected(runtimeFailure(buffer.error()));
  described.deviceAddress = buffer->address();
  buffers_.emplace(buffer->address(), std::move(*buffer));
  return described;
}

Expected<HostArray> ReplDeviceValues::upload(const HostArray &array) {
  auto onDevice = allocate(array.type, array.shape);
  if (!onDevice)
    return onDevice;
  std::span<const unsigned char> elements = array.elementBytes();
  if (auto copied =
          buffers_.at(onDevice->deviceAddress).copyFromHost(elements.data(), elements.size());
      !copied)
    return std::unexpected(runtimeFailure(copied.error()));
  return onDevice;
}

Expected<HostArray> ReplDeviceValues::download(const HostArray &array) const {
  if (!array.inDeviceMemory())
    return array;
  auto buffer = buffers_.find(array.deviceAddress);
  if (buffer == buffers_.end())
    return makeError("a value's GPU memory is gone (internal error)");
  HostArray host(array.type, array.shape);
  if (auto copied = buffer->second.copyToHost(host.bytes.data(), host.bytes.size()); !copied)
    return std::unexpected(runtimeFailure(copied.error()));
  return host;
}

void ReplDeviceValues::keepOnly(const std::map<std::string, HostArray> &values) {
  std::set<uint64_t> used;
  for (const auto &[name, value] : values)
    used.insert(value.deviceAddress);
  std::erase_if(buffers_, [&](const auto &buffer) { return !used.contains(buffer.first); });
}

} // namespace loopc::driver
