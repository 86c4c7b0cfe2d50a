// The runtime (runtime/): the cpu device, and the cuda device's driver paths
// against a stand-in libcuda (runtime/tests/CudaDriverStub.cpp) that fails
// chosen calls, so every message is checked on machines without a GPU.
#include "StubDriver.h"

#include "CudaDriverApi.h"
#include "loopc/generated.h"
#include "loopc/runtime.h"
#include "loopc/runtime.hpp"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <doctest/doctest.h>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace loopc::cuda;
using namespace loopc::runtime;
using loopc::test::ScopedEnvironment;

namespace {

// The stub driver, loaded by the runtime through LOOPC_CUDA_DRIVER; the test
// reaches the same loaded copy to choose failures.
struct RuntimeStub : loopc::test::StubDriver {
  explicit RuntimeStub(const char *path = LOOPC_CUDA_STUB) : StubDriver(path, true) {}
};

const char *kStubPtx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                       ".visible .entry loopc_fill_u32(.param .u64 out, .param .u32 value, "
                       ".param .u32 count) { ret; }\n"
                       ".visible .entry matmul() { ret; }\n";

Runtime openStub() {
  auto runtime = Runtime::open(DeviceKind::Cuda);
  REQUIRE_MESSAGE(runtime, runtime.error().message);
  return std::move(*runtime);
}

// The stand-in PTX loaded as module `moduleName`, and its entry `kernel`.
struct StubKernel {
  Module module;
  Function function;
};
StubKernel loadStubKernel(const Runtime &runtime, const char *moduleName, const char *kernel) {
  auto module = runtime.loadPtx(kStubPtx, moduleName);
  REQUIRE_MESSAGE(module, module.error().message);
  auto function = module->function(kernel);
  REQUIRE_MESSAGE(function, function.error().message);
  return {std::move(*module), *function};
}

loopc_launch_config matmulLaunch() {
  loopc_launch_config config{};
  config.grid[0] = 4;
  config.grid[1] = 2;
  config.grid[2] = 1;
  config.block[0] = 16;
  config.block[1] = 16;
  config.block[2] = 1;
  config.kernel_name = "matmul";
  config.source_location = "samples/matmul.loop:3:5";
  return config;
}

} // namespace

TEST_CASE("the cpu device copies, sets and times host buffers") {
  auto runtime = Runtime::open(DeviceKind::Cpu);
  REQUIRE(runtime);
  auto info = runtime->info();
  REQUIRE(info);
  CHECK(info->kind == LOOPC_DEVICE_CPU);
  CHECK(info->multiprocessor_count >= 1);
  CHECK(info->total_memory_bytes > 0);
  CHECK(std::string(info->name).size() > 0);

  std::vector<float> input = {1, 2, 3, 4, 5};
  auto first = runtime->allocate(input.size() * sizeof(float));
  auto second = runtime->allocate(input.size() * sizeof(float));
  REQUIRE((first && second));
  CHECK(first->address() % 64 == 0);
  REQUIRE(first->upload(std::span<const float>(input)));
  REQUIRE(loopc_copy_on_device(runtime->handle(), second->address(), first->address(),
                               2 * sizeof(float)) == LOOPC_SUCCESS);
  std::vector<float> output(input.size(), -1);
  REQUIRE(second->download(std::span<float>(output)).has_value());
  CHECK(output[0] == 1);
  CHECK(output[1] == 2);
  REQUIRE(first->fill(0));
  REQUIRE(first->download(std::span<float>(output)).has_value());
  CHECK(output == std::vector<float>(input.size(), 0.0f));

  auto start = runtime->createEvent();
  auto end = runtime->createEvent();
  REQUIRE((start && end));
  auto unrecorded = end->elapsedSince(*start);
  REQUIRE_FALSE(unrecorded);
  CHECK(unrecorded.error().status == LOOPC_ERROR_INVALID_ARGUMENT);
  REQUIRE(start->record());
  REQUIRE(end->record());
  auto elapsed = end->elapsedSince(*start);
  REQUIRE(elapsed);
  CHECK(*elapsed >= 0.0f);
  CHECK(*elapsed < 1000.0f);
}

TEST_CASE("the cpu device refuses PTX and other ordinals with a reason") {
  auto runtime = Runtime::open(DeviceKind::Cpu);
  REQUIRE(runtime);
  auto module = runtime->loadPtx(kStubPtx, "saxpy");
  REQUIRE_FALSE(module);
  CHECK(module.error().status == LOOPC_ERROR_UNSUPPORTED);
  CHECK(module.error().message.find("loading PTX module 'saxpy'") != std::string::npos);

  auto second = Runtime::open(DeviceKind::Cpu, 1);
  REQUIRE_FALSE(second);
  CHECK(second.error().status == LOOPC_ERROR_NO_DEVICE);
}

TEST_CASE("opening cuda without a driver says which library is missing and why") {
  ScopedEnvironment environment("LOOPC_CUDA_DRIVER", "/nonexistent/libcuda.so.1");
  loopc_runtime *runtime = reinterpret_cast<loopc_runtime *>(1);
  CHECK(loopc_runtime_open(LOOPC_DEVICE_CUDA, 0, &runtime) == LOOPC_ERROR_NO_DRIVER);
  CHECK(runtime == nullptr);
  std::string message = loopc_runtime_last_error(nullptr);
  CHECK(message.starts_with("no CUDA driver (/nonexistent/libcuda.so.1 not found: "));
  CHECK(message.find("No such file") != std::string::npos);

  // The cpu device still works in the same process.
  CHECK(Runtime::open(DeviceKind::Cpu).has_value());
}

TEST_CASE("without LOOPC_CUDA_DRIVER the runtime opens libcuda.so.1") {
  ScopedEnvironment environment("LOOPC_CUDA_DRIVER", "");
  void *system = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  auto runtime = Runtime::open(DeviceKind::Cuda);
  if (system) { // a machine with a driver: it opens or reports no device
    dlclose(system);
    CHECK((runtime || runtime.error().status == LOOPC_ERROR_NO_DEVICE));
  } else {
    REQUIRE_FALSE(runtime);
    CHECK(runtime.error().status == LOOPC_ERROR_NO_DRIVER);
    CHECK(runtime.error().message.starts_with("no CUDA driver (libcuda.so.1 not found: "));
  }
}

TEST_CASE("a driver without an entry point the runtime needs is named as too old") {
  RuntimeStub stub(LOOPC_CUDA_STUB_WITHOUT_LAUNCH);
  auto runtime = Runtime::open(DeviceKind::Cuda);
  REQUIRE_FALSE(runtime);
  CHECK(runtime.error().status == LOOPC_ERROR_NO_DRIVER);
  CHECK(runtime.error().message.find("lacks the entry points cuLaunchKernel (") !=
        std::string::npos);
}

TEST_CASE("cuInit failures: no device, and a driver error named with its code") {
  RuntimeStub stub;
  stub.fail("cuInit", CUDA_ERROR_NO_DEVICE);
  auto noDevice = Runtime::open(DeviceKind::Cuda);
  REQUIRE_FALSE(noDevice);
  CHECK(noDevice.error().status == LOOPC_ERROR_NO_DEVICE);
  CHECK(noDevice.error().message ==
        "no CUDA device (cuInit failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is "
        "detected))");

  stub.fail("cuInit", CUDA_ERROR_SYSTEM_DRIVER_MISMATCH);
  auto oldDriver = Runtime::open(DeviceKind::Cuda);
  REQUIRE_FALSE(oldDriver);
  CHECK(oldDriver.error().status == LOOPC_ERROR_DRIVER);
  CHECK(oldDriver.error().message.find(": cuInit failed: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH") !=
        std::string::npos);
}

TEST_CASE("a missing device ordinal and an empty machine are told apart") {
  RuntimeStub stub;
  auto third = Runtime::open(DeviceKind::Cuda, 3);
  REQUIRE_FALSE(third);
  CHECK(third.error().status == LOOPC_ERROR_NO_DEVICE);
  CHECK(third.error().message == "no CUDA device 3 (the driver sees 1 device)");

  stub.setDeviceCount(0);
  auto none = Runtime::open(DeviceKind::Cuda);
  REQUIRE_FALSE(none);
  CHECK(none.error().message.starts_with("no CUDA device (the driver "));
}

TEST_CASE("device information comes from the driver") {
  RuntimeStub stub;
  Runtime runtime = openStub();
  auto info = runtime.info();
  REQUIRE(info);
  CHECK(info->kind == LOOPC_DEVICE_CUDA);
  CHECK(std::string(info->name) == "loopc stub GPU");
  CHECK(info->compute_capability_major == 9);
  CHECK(info->compute_capability_minor == 0);
  CHECK(info->multiprocessor_count == 132);
  CHECK(info->total_memory_bytes == size_t{80} << 30);
  CHECK(info->warp_size == 32);
  CHECK(info->driver_version == 13000); // the stub says CUDA 13.0
}

TEST_CASE("a module the JIT rejects reports the JIT's error log") {
  RuntimeStub stub;
  Runtime runtime = openStub();
  auto module = runtime.loadPtx(".version 8.0\n// syntax error here\n", "matmul");
  REQUIRE_FALSE(module);
  CHECK(module.error().status == LOOPC_ERROR_DRIVER);
  CHECK(module.error().message ==
        "loading module 'matmul': cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT "
        "compilation failed)\nJIT error log:\nptxas application ptx input, line 3; error   : "
        "syntax error");
}

TEST_CASE("a loaded module gives its JIT log, functions and their attributes") {
  RuntimeStub stub;
  Runtime runtime = openStub();
  auto module = runtime.loadPtx(kStubPtx, "fill");
  REQUIRE_MESSAGE(module, module.error().message);
  CHECK(module->jitLog() == "ptxas info    : Used 8 registers");
  auto function = module->function("loopc_fill_u32");
  REQUIRE(function);
  auto again = module->function("loopc_fill_u32");
  REQUIRE(again);
  CHECK(again->handle() == function->handle());
  auto attributes = function->info();
  REQUIRE(attributes);
  CHECK(attributes->registers_per_thread == 8);

  auto missing = module->function("nope");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().message ==
        "looking up kernel 'nope' in module 'fill': cuModuleGetFunction failed: "
        "CUDA_ERROR_NOT_FOUND (stub error)");
}

TEST_CASE("a timed launch passes parameters and geometry and reports the kernel time") {
  RuntimeStub stub;
  Runtime runtime = openStub();
  StubKernel fill = loadStubKernel(runtime, "fill", "loopc_fill_u32");
  auto buffer = runtime.allocate(8 * sizeof(uint32_t));
  REQUIRE(buffer);
  REQUIRE(buffer->fill(0));

  loopc_device_ptr out = buffer->address();
  uint32_t value = 0xC0FFEE;
  uint32_t count = 5;
  auto params = kernelParams(out, value, count);
  LaunchConfig config;
  config.grid = {3, 2, 1};
  config.block = {128, 1, 1};
  config.dynamicSharedBytes = 256;
  auto elapsed = runtime.launchTimed(fill.function, config, params);
  REQUIRE_MESSAGE(elapsed, elapsed.error().message);
  CHECK(*elapsed == doctest::Approx(1.5));
  const unsigned *launch = stub.lastLaunch();
  CHECK(std::vector<unsigned>(launch, launch + 7) ==
        std::vector<unsigned>{3, 2, 1, 128, 1, 1, 256});

  std::vector<uint32_t> result(8);
  REQUIRE(buffer->download(std::span<uint32_t>(result)).has_value());
  CHECK(result == std::vector<uint32_t>{value, value, value, value, value, 0, 0, 0});
  CHECK(runtime.synchronize().has_value());
}

TEST_CASE("a failed launch names the kernel, its source location and geometry") {
  RuntimeStub stub;
  Runtime runtime = openStub();
  StubKernel matmul = loadStubKernel(runtime, "matmul", "matmul");
  stub.fail("cuLaunchKernel", CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  loopc_launch_config config = matmulLaunch();
  CHECK(loopc_launch(runtime.handle(), matmul.function.handle(), &config, nullptr, nullptr) ==
        LOOPC_ERROR_DRIVER);
  CHECK(std::string(loopc_runtime_last_error(runtime.handle())) ==
        "launching kernel 'matmul' at samples/matmul.loop:3:5 (grid 4x2x1, block 16x16x1, 0 "
        "bytes of dynamic shared memory): cuLaunchKernel failed: "
        "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (too many resources requested for launch)");

  config.block[2] = 0;
  CHECK(loopc_launch(runtime.handle(), matmul.function.handle(), &config, nullptr, nullptr) ==
        LOOPC_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(loopc_runtime_last_error(runtime.handle()))
            .starts_with("launching kernel 'matmul' at samples/matmul.loop:3:5: every grid"));
}

TEST_CASE("a kernel's asynchronous failure is blamed on it by later calls") {
  RuntimeStub stub;
  Runtime runtime = openStub();
  StubKernel matmul = loadStubKernel(runtime, "matmul", "matmul");
  auto buffer = runtime.allocate(16);
  REQUIRE(buffer);
  loopc_launch_config config = matmulLaunch();
  REQUIRE(loopc_launch(runtime.handle(), matmul.function.handle(), &config, nullptr, nullptr) ==
          LOOPC_SUCCESS);

  stub.fail("cuMemcpyDtoH", CUDA_ERROR_ILLEGAL_ADDRESS);
  char bytes[16];
  auto copied = buffer->copyToHost(bytes, sizeof bytes);
  REQUIRE_FALSE(copied);
  CHECK(copied.error().message ==
        "copying 16 bytes to the host: cuMemcpyDtoH failed: CUDA_ERROR_ILLEGAL_ADDRESS (an "
        "illegal memory access was encountered) (raised by the earlier launch of kernel "
        "'matmul' at samples/matmul.loop:3:5)");

  stub.fail("cuCtxSynchronize", CUDA_ERROR_ILLEGAL_ADDRESS);
  auto synchronized = runtime.synchronize();
  REQUIRE_FALSE(synchronized);
  CHECK(synchronized.error().message ==
        "synchronizing after kernel 'matmul' at samples/matmul.loop:3:5: cuCtxSynchronize "
        "failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)");
}

TEST_CASE("more than 48 KiB of dynamic shared memory is opted into per function") {
  RuntimeStub stub;
  Runtime runtime = openStub();
  StubKernel matmul = loadStubKernel(runtime, "matmul", "matmul");
  stub.fail("cuFuncSetAttribute", CUDA_ERROR_INVALID_VALUE);
  loopc_launch_config config = matmulLaunch();
  config.dynamic_shared_bytes = 48 * 1024;
  CHECK(loopc_launch(runtime.handle(), matmul.function.handle(), &config, nullptr, nullptr) ==
        LOOPC_SUCCESS);
  config.dynamic_shared_bytes = 64 * 1024;
  CHECK(loopc_launch(runtime.handle(), matmul.function.handle(), &config, nullptr, nullptr) ==
        LOOPC_ERROR_DRIVER);
  CHECK(std::string(loopc_runtime_last_error(runtime.handle()))
            .ends_with("cuFuncSetAttribute failed: CUDA_ERROR_INVALID_VALUE (stub error)"));
}

TEST_CASE("allocation failures and NULL arguments are values, not crashes") {
  RuntimeStub stub;
  Runtime runtime = openStub();
  stub.fail("cuMemAlloc", CUDA_ERROR_OUT_OF_MEMORY);
  auto buffer = runtime.allocate(1 << 20);
  REQUIRE_FALSE(buffer);
  CHECK(buffer.error().status == LOOPC_ERROR_OUT_OF_MEMORY);
  CHECK(buffer.error().message.starts_with("allocating 1048576 bytes: cuMemAlloc failed: "
                                           "CUDA_ERROR_OUT_OF_MEMORY"));

  loopc_device_ptr address = 0;
  CHECK(loopc_buffer_alloc(nullptr, 16, &address) == LOOPC_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(loopc_runtime_last_error(nullptr)) ==
        "loopc_buffer_alloc: the runtime is NULL");
  CHECK(loopc_copy_to_host(runtime.handle(), nullptr, 0x1000, 4) == LOOPC_ERROR_INVALID_ARGUMENT);
  CHECK(std::string(loopc_status_name(LOOPC_ERROR_NO_DRIVER)) == "LOOPC_ERROR_NO_DRIVER");
}

namespace {

// A CPU kernel of generated code's shape: adds 1 to each block's counter.
void countBlocks(void **buffers, void * /*scalars*/, int64_t begin, int64_t end) {
  auto *counts = static_cast<int64_t *>(buffers[0]);
  for (int64_t block = begin; block < end; ++block)
    counts[block] += 1;
}

// Whether every one of the 1000 blocks ran once on the CPU thread pool.
bool poolRunsEveryBlock() {
  std::vector<int64_t> counts(1000, 0);
  void *buffers[] = {counts.data()};
  loopc_cpu_call_lock();
  loopc_cpu_launch_kernel(countBlocks, buffers, nullptr, int64_t(counts.size()), nullptr);
  loopc_cpu_call_unlock();
  return counts == std::vector<int64_t>(counts.size(), 1);
}

} // namespace

TEST_CASE("the cpu thread pool works in a fork()ed child once it has started in the parent") {
  // From a bug hunt: the child inherited a pool whose workers it lacks, and
  // its first launch waited for them forever.
  REQUIRE(poolRunsEveryBlock());
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    alarm(10); // a hang fails the test instead of blocking it
    _exit(poolRunsEveryBlock() && poolRunsEveryBlock() ? 0 : 1);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(poolRunsEveryBlock()); // the parent's pool is unharmed
}

namespace {

// Runs `units` units of `body(unit)` on the CPU thread pool with `cost`.
template <typename Body> void launch(int64_t units, loopc_cpu_kernel_cost *cost, const Body &body) {
  void *buffers[] = {const_cast<Body *>(&body)};
  auto kernel = [](void **buffers, void *, int64_t begin, int64_t end) {
    const Body &body = *static_cast<const Body *>(buffers[0]);
    for (int64_t unit = begin; unit < end; ++unit)
      body(unit);
  };
  loopc_cpu_launch_kernel(kernel, buffers, nullptr, units, cost);
}

void spinFor(std::chrono::microseconds duration) {
  auto end = std::chrono::steady_clock::now() + duration;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// A launch's units, which note the threads running them; unit 0 waits (up
// to 10 s) until a unit has run on another thread than its own, so the
// launch is seen shared only if it is, whether or not the workers slept.
struct NeedsTwoThreads {
  void operator()(int64_t unit) const {
    std::unique_lock lock(mutex);
    threads.insert(std::this_thread::get_id());
    if (unit == 0)
      twoThreads.wait_for(lock, std::chrono::seconds(10), [&] { return threads.size() >= 2; });
    else if (threads.size() >= 2)
      twoThreads.notify_all();
  }

  bool shared() const {
    std::lock_guard lock(mutex);
    return threads.size() >= 2;
  }

  mutable std::mutex mutex;
  mutable std::condition_variable twoThreads;
  mutable std::set<std::thread::id> threads;
};

// Like poolRunsEveryBlock, without the call lock (as the JIT's programs).
bool launchRunsEveryBlock() {
  std::vector<int64_t> counts(1000, 0);
  void *buffers[] = {counts.data()};
  loopc_cpu_launch_kernel(countBlocks, buffers, nullptr, int64_t(counts.size()), nullptr);
  return counts == std::vector<int64_t>(counts.size(), 1);
}

} // namespace

TEST_CASE("a launch measured to be short runs in the calling thread alone and is measured again") {
  loopc_cpu_kernel_cost cost{.alone_picoseconds_per_unit = 1,
                             .shared_picoseconds_per_unit = 0,
                             .alone_launches_until_timed = 0};
  std::vector<std::thread::id> ranOn(1000);
  // 1 ps a unit: 1 ns in all, far below a hand-over; each unit takes 1 us,
  // long enough that a worker offered the launch would take part.
  launch(1000, &cost, [&](int64_t unit) {
    spinFor(std::chrono::microseconds(1));
    ranOn[unit] = std::this_thread::get_id();
  });
  CHECK(ranOn == std::vector<std::thread::id>(1000, std::this_thread::get_id()));
  if (loopc_cpu_worker_count() >= 2)                     // one thread runs every launch unmeasured
    CHECK(cost.alone_picoseconds_per_unit >= 1'000'000); // 1 us
  CHECK(cost.shared_picoseconds_per_unit == 0);
}

TEST_CASE("of the launches run alone, the first and then one in sixty-four are timed") {
  // 1 ps a unit: far below a hand-over, so every launch runs alone; a
  // timed one records its 1 us a unit.
  loopc_cpu_kernel_cost cost{.alone_picoseconds_per_unit = 1,
                             .shared_picoseconds_per_unit = 0,
                             .alone_launches_until_timed = 0};
  std::vector<int64_t> alone;
  for (int i = 0; i < 129; ++i) {
    cost.alone_picoseconds_per_unit = 1;
    launch(4, &cost, [&](int64_t) { spinFor(std::chrono::microseconds(1)); });
    alone.push_back(cost.alone_picoseconds_per_unit);
  }
  for (int i = 0; i < 129; ++i) {
    CAPTURE(i);
    bool timed = i % 64 == 0;
    if (loopc_cpu_worker_count() >= 2)
      CHECK((alone[i] >= 1'000'000) == timed);
  }
}

TEST_CASE("a launch measured to be long is shared, and its measurement replaces a longer one") {
  if (loopc_cpu_worker_count() < 2)
    return; // one thread runs every launch alone
  // 1 s a unit when it last ran alone.
  loopc_cpu_kernel_cost cost{.alone_picoseconds_per_unit = 1'000'000'000'000,
                             .shared_picoseconds_per_unit = 0,
                             .alone_launches_until_timed = 0};
  NeedsTwoThreads units;
  launch(64, &cost, units);
  CHECK(units.shared());
  CHECK(cost.shared_picoseconds_per_unit > 0);
  CHECK(cost.alone_picoseconds_per_unit == cost.shared_picoseconds_per_unit);
}

TEST_CASE("a kernel first measured in parallel is tried alone when that may be short") {
  if (loopc_cpu_worker_count() < 2)
    return;
  // Its units took 10 ns each in a parallel launch: 1000 units, 10 us in
  // all, are within kProbeAloneFactor of a hand-over, 10^6 are not.
  loopc_cpu_kernel_cost cost{.alone_picoseconds_per_unit = 0,
                             .shared_picoseconds_per_unit = 10'000,
                             .alone_launches_until_timed = 0};
  std::vector<std::thread::id> ranOn(1000);
  launch(1000, &cost, [&](int64_t unit) { ranOn[unit] = std::this_thread::get_id(); });
  CHECK(ranOn == std::vector<std::thread::id>(1000, std::this_thread::get_id()));
  CHECK(cost.alone_picoseconds_per_unit > 0);

  loopc_cpu_kernel_cost large{.alone_picoseconds_per_unit = 0,
                              .shared_picoseconds_per_unit = 10'000,
                              .alone_launches_until_timed = 0};
  NeedsTwoThreads units;
  launch(1'000'000, &large, units);
  CHECK(units.shared());
}

TEST_CASE("workers asleep between launches are woken, and so is a launcher waiting for them") {
  if (loopc_cpu_worker_count() < 2)
    return;
  for (int round = 0; round < 5; ++round) {
    CAPTURE(round);
    // Longer than the workers spin before they sleep.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    NeedsTwoThreads units;
    launch(64, nullptr, units);
    REQUIRE(units.shared());
    // The units another thread runs take long: the launcher, done with
    // its own, sleeps until they are done.
    std::atomic<int64_t> done{0};
    std::thread::id caller = std::this_thread::get_id();
    launch(16, nullptr, [&](int64_t) {
      if (std::this_thread::get_id() != caller)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      done.fetch_add(1);
    });
    CHECK(done.load() == 16);
  }
}

TEST_CASE("launches from several threads at once each run every unit once") {
  constexpr int kThreads = 4, kLaunches = 300;
  std::vector<std::vector<int64_t>> counts(kThreads, std::vector<int64_t>(1000, 0));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      loopc_cpu_kernel_cost cost{};
      for (int i = 0; i < kLaunches; ++i) {
        void *buffers[] = {counts[t].data()};
        // Shared, measured, and sizes that run alone once measured.
        int64_t units = i % 3 == 0 ? 1000 : 1 + i % 200;
        loopc_cpu_launch_kernel(countBlocks, buffers, nullptr, units, i % 2 ? &cost : nullptr);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  std::vector<int64_t> expected(1000, 0);
  for (int i = 0; i < kLaunches; ++i)
    for (int64_t unit = 0; unit < (i % 3 == 0 ? 1000 : 1 + i % 200); ++unit)
      ++expected[unit];
  for (int t = 0; t < kThreads; ++t)
    CHECK(counts[t] == expected);
}

TEST_CASE("a fork() while another thread launches leaves the child a working pool") {
  std::atomic<bool> stop{false};
  std::atomic<bool> launchesAgree{true};
  std::thread launcher([&] {
    while (!stop.load())
      if (!launchRunsEveryBlock())
        launchesAgree.store(false);
  });
  for (int child = 0; child < 20; ++child) {
    CAPTURE(child);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      alarm(10); // a hang fails the test instead of blocking it
      _exit(poolRunsEveryBlock() && poolRunsEveryBlock() ? 0 : 1);
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  stop.store(true);
  launcher.join();
  CHECK(launchesAgree.load());
}

TEST_CASE("a launch's geometry is checked against CUDA's limits and the kernel's") {
  char reason[256] = "";
  const int64_t fits[6] = {2147483647, 65535, 65535, 256, 4, 1};
  CHECK(loopc_launch_geometry_check(fits, 0, reason, sizeof reason) == 1);
  const int64_t empty[6] = {0, 1, 1, 256, 1, 1};
  CHECK(loopc_launch_geometry_check(empty, 0, reason, sizeof reason) == 0);
  const int64_t tallGrid[6] = {1, 65536, 1, 32, 1, 1};
  CHECK(loopc_launch_geometry_check(tallGrid, 0, reason, sizeof reason) == -1);
  CHECK(std::string(reason) ==
        "needs a grid of 65536 blocks of 1 threads along axis y, beyond the GPU's limits");
  const int64_t square[6] = {8, 8, 1, 32, 32, 1};
  CHECK(loopc_launch_geometry_check(square, 0, reason, sizeof reason) == 1);
  CHECK(loopc_launch_geometry_check(square, 256, reason, sizeof reason) == -1);
  CHECK(std::string(reason) == "needs blocks of 1024 threads, more than its limit of 256");
  const int64_t deep[6] = {1, 1, 1, 1, 1, 65};
  CHECK(loopc_launch_geometry_check(deep, 0, reason, sizeof reason) == -1);
}
