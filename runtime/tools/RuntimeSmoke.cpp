// loopc-runtime-smoke: checks the runtime against a real CUDA driver in
// seconds, with nothing but this binary (it needs neither LLVM nor the CUDA
// toolkit): device information, PTX JIT with its log, a timed launch whose
// result is verified, and the messages of a rejected module and a rejected
// launch. Exit status 0 when all hold, 1 when one does not, 2 when no CUDA
// driver or device is present.
//
// Usage: loopc-runtime-smoke [device ordinal]
#include "loopc/runtime.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace loopc::runtime;

namespace {

// `out[i] = value` for i < count, one thread per element: LLVM 19's NVPTX
// output (llc -mcpu=sm_80 -mattr=+ptx80) for that kernel.
constexpr const char *kFillPtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry loopc_fill_u32(
	.param .u64 loopc_fill_u32_param_0,
	.param .u32 loopc_fill_u32_param_1,
	.param .u32 loopc_fill_u32_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<7>;
	.reg .b64 	%rd<4>;
	mov.u32 	%r2, %tid.x;
	ld.param.u32 	%r3, [loopc_fill_u32_param_2];
	mov.u32 	%r4, %ctaid.x;
	mov.u32 	%r5, %ntid.x;
	mad.lo.s32 	%r6, %r4, %r5, %r2;
	setp.ge.u32 	%p1, %r6, %r3;
	@%p1 bra 	$L__BB0_2;
	ld.param.u32 	%r1, [loopc_fill_u32_param_1];
	ld.param.u64 	%rd2, [loopc_fill_u32_param_0];
	mul.wide.u32 	%rd3, %r6, 4;
	add.s64 	%rd1, %rd2, %rd3;
	st.global.u32 	[%rd1], %r1;
$L__BB0_2:
	ret;
}
)";

// Rejected by the JIT (and by the test stub, which looks for "syntax error").
constexpr const char *kBrokenPtx = "// syntax error below\n.version 8.0\n.target sm_80\n"
                                   ".address_size 64\n.visible .entry broken() { bogus.u32; }\n";

int failures = 0;

void expect(bool holds, const std::string &what) {
  std::printf("%s %s\n", holds ? "ok:  " : "FAIL:", what.c_str());
  failures += holds ? 0 : 1;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

int main(int argc, char **argv) {
  int ordinal = argc > 1 ? std::atoi(argv[1]) : 0;
  auto opened = Runtime::open(DeviceKind::Cuda, ordinal);
  if (!opened) {
    std::printf("no GPU to check: %s\n", opened.error().message.c_str());
    return 2;
  }
  Runtime &runtime = *opened;

  auto info = runtime.info();
  if (!info) {
    std::printf("FAIL: device information: %s\n", info.error().message.c_str());
    return 1;
  }
  std::printf("device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB, driver %d\n", ordinal,
              info->name, info->compute_capability_major, info->compute_capability_minor,
              info->multiprocessor_count, static_cast<double>(info->total_memory_bytes) / (1 << 30),
              info->driver_version);

  auto module = runtime.loadPtx(kFillPtx, "smoke");
  if (!module) {
    std::printf("FAIL: %s\n", module.error().message.c_str());
    return 1;
  }
  std::printf("JIT log:\n%s\n", module->jitLog().c_str());
  auto fill = module->function("loopc_fill_u32");
  if (!fill) {
    std::printf("FAIL: %s\n", fill.error().message.c_str());
    return 1;
  }
  if (auto attributes = fill->info())
    std::printf("loopc_fill_u32: %d registers, %d bytes local memory\n",
                attributes->registers_per_thread, attributes->local_memory_bytes);

  // Fill all but the last few elements, so a kernel that ignores its bounds
  // or its count parameter is caught.
  constexpr uint32_t kElements = 1 << 24;
  constexpr uint32_t kUntouched = 7;
  auto buffer = runtime.allocate(size_t{kElements} * sizeof(uint32_t));
  if (!buffer || !buffer->fill(0)) {
    std::printf("FAIL: allocating and clearing the buffer\n");
    return 1;
  }
  loopc_device_ptr out = buffer->address();
  uint32_t value = 0xC0FFEE;
  uint32_t count = kElements - kUntouched;
  auto params = kernelParams(out, value, count);
  LaunchConfig config;
  config.block = {256, 1, 1};
  config.grid = {(kElements + 255) / 256, 1, 1};
  config.kernelName = "fill";
  config.sourceLocation = "smoke.loop:1:1";
  auto elapsed = runtime.launchTimed(*fill, config, params);
  expect(elapsed.has_value(), elapsed ? "timed launch: " + std::to_string(*elapsed) + " ms, " +
                                            std::to_string(count * 4.0 / (*elapsed * 1e6)) +
                                            " GB/s written"
                                      : "timed launch: " + elapsed.error().message);
  std::vector<uint32_t> result(kElements);
  auto copied = buffer->download(std::span<uint32_t>(result));
  size_t wrong = 0;
  for (uint32_t i = 0; i < kElements; ++i)
    wrong += result[i] != (i < count ? value : 0u);
  expect(copied && wrong == 0, "kernel result (" + std::to_string(wrong) + " wrong elements)");

  auto broken = runtime.loadPtx(kBrokenPtx, "broken");
  expect(!broken && contains(broken.error().message, "loading module 'broken'") &&
             contains(broken.error().message, "JIT error log:"),
         "rejected PTX reports the JIT log: " + (broken ? "" : broken.error().message));

  config.block = {2048, 1, 1};
  auto rejected = runtime.launch(*fill, config, params);
  expect(!rejected && contains(rejected.error().message, "kernel 'fill' at smoke.loop:1:1") &&
             contains(rejected.error().message, "cuLaunchKernel failed: CUDA_ERROR_"),
         "rejected launch names the kernel: " + (rejected ? "" : rejected.error().message));
  auto synchronized = runtime.synchronize();
  expect(synchronized.has_value(), "the context is still usable after the rejected launch");

  std::printf("runtime smoke: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
