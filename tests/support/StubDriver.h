// What the tests of the GPU paths share: an environment variable set for one
// test, and the stand-in driver's test controls (runtime/tests/
// CudaDriverStub.cpp) reached through the copy the runtime loaded.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <optional>
#include <string>
#include <vector>

namespace loopc::test {

// Sets an environment variable for the scope of one test.
class ScopedEnvironment {
public:
  ScopedEnvironment(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name))
      saved_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    if (saved_)
      setenv(name_, saved_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnvironment(const ScopedEnvironment &) = delete;
  ScopedEnvironment &operator=(const ScopedEnvironment &) = delete;

private:
  const char *name_;
  std::optional<std::string> saved_;
};

// The stand-in driver at `path`, its controls reset. With `pointDriverAtIt`,
// LOOPC_CUDA_DRIVER names it while the object lives, so the runtime loads it.
class StubDriver {
public:
  explicit StubDriver(const std::string &path, bool pointDriverAtIt = false)
      : library_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    if (pointDriverAtIt)
      driver_.emplace("LOOPC_CUDA_DRIVER", path);
    REQUIRE_MESSAGE(library_, dlerror());
    reset = symbol<void (*)()>("loopcStubReset");
    fail = symbol<void (*)(const char *, int)>("loopcStubFail");
    setDeviceCount = symbol<void (*)(int)>("loopcStubSetDeviceCount");
    lastLaunch = symbol<const unsigned *(*)()>("loopcStubLastLaunch");
    launchCount = symbol<int (*)()>("loopcStubLaunchCount");
    launchKernel = symbol<const char *(*)(int)>("loopcStubLaunchKernel");
    launchGeometry = symbol<const unsigned *(*)(int)>("loopcStubLaunchGeometry");
    parameterCount = symbol<int (*)(int)>("loopcStubLaunchParameterCount");
    parameterBytes =
        symbol<const unsigned char *(*)(int, int, size_t *)>("loopcStubLaunchParameter");
    setErrorWordOnNextLaunch = symbol<void (*)(uint32_t)>("loopcStubSetErrorWordOnNextLaunch");
    allocationCount = symbol<int (*)()>("loopcStubAllocationCount");
    reset();
  }
  StubDriver(const StubDriver &) = delete;
  StubDriver &operator=(const StubDriver &) = delete;
  ~StubDriver() {
    reset();
    dlclose(library_);
  }

  // Parameter `index` of launch `launch` as the kernel's PTX declares it.
  std::vector<unsigned char> parameter(int launch, int index) const {
    size_t size = 0;
    const unsigned char *bytes = parameterBytes(launch, index, &size);
    return {bytes, bytes + size};
  }
  template <typename T> T value(int launch, int index) const {
    std::vector<unsigned char> bytes = parameter(launch, index);
    REQUIRE(bytes.size() == sizeof(T));
    T result;
    std::memcpy(&result, bytes.data(), sizeof result);
    return result;
  }
  // Whether some launch since the reset had `address` as a parameter.
  bool launchedWith(uint64_t address) const {
    for (int launch = 0; launch < launchCount(); ++launch)
      for (int index = 0; index < parameterCount(launch); ++index)
        if (parameter(launch, index).size() == sizeof address &&
            value<uint64_t>(launch, index) == address)
          return true;
    return false;
  }

  void (*reset)();
  void (*fail)(const char *entryPoint, int result);
  void (*setDeviceCount)(int count);
  const unsigned *(*lastLaunch)(); // grid x, y, z, block x, y, z, dynamic shared bytes
  int (*launchCount)();
  const char *(*launchKernel)(int launch);
  const unsigned *(*launchGeometry)(int launch); // grid x, y, z, block x, y, z
  int (*parameterCount)(int launch);
  const unsigned char *(*parameterBytes)(int launch, int index, size_t *size);
  void (*setErrorWordOnNextLaunch)(uint32_t value);
  int (*allocationCount)();

private:
  template <typename F> F symbol(const char *name) {
    void *address = dlsym(library_, name);
    REQUIRE_MESSAGE(address != nullptr, name);
    return reinterpret_cast<F>(address);
  }
  void *library_;
  std::optional<ScopedEnvironment> driver_;
};

} // namespace loopc::test
