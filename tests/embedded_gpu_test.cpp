// Objects that embed GPU code (`loopc compile --emit object --gpu ...`): a C
// program (tests/embedded_gpu/drive.c) calls the kernels of
// tests/embedded_gpu/kernels.loop on the CPU, where no driver is found or the
// CPU is chosen, and over the stand-in CUDA driver, which runs no kernel but
// records each launch: the host code's launches, scalar parameters, copies in
// and out, its own reads and writes of device arrays, and the errors a call
// can meet (no driver, no image for the device, a kernel's fault).
#include "TestSupport.h"

#include <doctest/doctest.h>

#include <string>

using namespace loopc;

namespace {

const std::string kStub = LOOPC_CUDA_STUB;

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// drive.c linked with kernels.loop compiled into `dir` with `objectOptions`
// (such as "--gpu sm_80,sm_90"): the program's path.
std::string buildDriver(const test::TempDir &dir, const std::string &objectOptions) {
  std::string kernels = test::sourcePath("tests/embedded_gpu/kernels.loop");
  auto header = test::runLoopc("compile " + kernels + " --emit header -o " + dir.at("kernels.h"));
  REQUIRE(header.exitCode == 0);
  auto object = test::runLoopc("compile " + kernels + " --emit object " + objectOptions + " -o " +
                               dir.at("kernels.o"));
  INFO(object.output);
  REQUIRE(object.exitCode == 0);
  auto linked = test::runShell(
      "cc -std=c11 -D_GNU_SOURCE -I" + dir.at("") + " -I" + test::sourcePath("runtime/include") +
      " " + test::sourcePath("tests/embedded_gpu/drive.c") + " " + dir.at("kernels.o") + " " +
      LOOPC_RUNTIME_LIBRARY + " -lstdc++ -lm -lpthread -ldl -o " + dir.at("drive"));
  INFO(linked.output);
  REQUIRE(linked.exitCode == 0);
  return dir.at("drive");
}

// The program's output, run with `environment` (VAR=value ...) and `arguments`.
std::string drive(const std::string &program, const std::string &environment,
                  const std::string &arguments = "") {
  auto run = test::runShell("env -u LOOPC_DEVICE " + environment + " " + program + " " + arguments);
  INFO(run.output);
  CHECK(run.exitCode == 0);
  return run.output;
}

// What the buffer calls refuse, on any device.
void checkBufferErrors(const std::string &output) {
  CHECK(contains(output, "saxpy_buffers small: LOOPC_ERROR_INVALID_ARGUMENT (kernel 'saxpy': 'y' "
                         "is a buffer of 4 bytes; its type, f32[N], needs 20)\n"));
  CHECK(contains(output, "saxpy_buffers null: LOOPC_ERROR_INVALID_ARGUMENT (kernel 'saxpy': 'x' is "
                         "NULL)\n"));
  CHECK(contains(output, "download past the end: LOOPC_ERROR_INVALID_ARGUMENT "
                         "(loopc_buffer_download: bytes 16 to 24 are past the end of a buffer of "
                         "20)\n"));
}

// What every engine computes for drive.c's calls.
void checkComputed(const std::string &output) {
  CHECK(contains(output, "saxpy: LOOPC_SUCCESS\n  y = 3 5 7 9 11\n"));
  CHECK(contains(output, "total: LOOPC_SUCCESS\n  s = 15\n"));
  CHECK(contains(output, "shifted: LOOPC_SUCCESS\n  v = 11.5 12.5 13.5\n"));
  CHECK(contains(output, "gather: LOOPC_SUCCESS\n  picked = 5 1 3\n"));
  CHECK(contains(output, "gather outside: LOOPC_ERROR_KERNEL_FAULT (" +
                             test::sourcePath("tests/embedded_gpu/kernels.loop") +
                             ":18:12: kernel 'gather': index 5 out of range for dimension 0 of "
                             "'x' (extent 5))"));
  CHECK(contains(output, "levinson: LOOPC_SUCCESS\n  ry = -0.53591 0.0860358 -0.0383103 "
                         "0.00325896 0.00590223 -0.00335547\n"));
  // The chain on buffers: y = 2x + 1, then y += x, then the sum of y.
  CHECK(contains(output, "  chained = 4 7 10 13 16\n  sum = 50\n"));
  checkBufferErrors(output);
  CHECK(contains(output, "  copied = 4 1 2 13 16\n"));
  CHECK(contains(output, "gather_buffers: LOOPC_SUCCESS\nwait: LOOPC_SUCCESS\ndownload: "
                         "LOOPC_SUCCESS\n  picked from buffers = 5 1 3\n"));
  CHECK(contains(output, "timer stop: LOOPC_SUCCESS\n  timed: yes\n"));
}

} // namespace

TEST_CASE("an object with GPU code runs on the CPU where no driver is found or the CPU is chosen") {
  test::TempDir dir;
  std::string program = buildDriver(dir, "--gpu sm_80,sm_90");
  std::string noDriver = "LOOPC_CUDA_DRIVER=" + dir.at("no-such-driver.so");
  std::string alone = drive(program, noDriver);
  CHECK(contains(alone, "device: cpu\n"));
  CHECK(contains(alone, "buffers on: cpu\n"));
  checkComputed(alone);
  // Chosen, with a GPU present: by the API and by the environment.
  std::string chosen = drive(program, "LOOPC_CUDA_DRIVER=" + kStub, "use-cpu");
  CHECK(contains(chosen, "use-cpu: LOOPC_SUCCESS\ndevice: cpu\n"));
  checkComputed(chosen);
  std::string environment = drive(program, "LOOPC_DEVICE=cpu LOOPC_CUDA_DRIVER=" + kStub);
  CHECK(contains(environment, "device: cpu\n"));
  checkComputed(environment);
  // A value it does not know is said and ignored: auto, here the CPU.
  std::string unknown = drive(program, "LOOPC_DEVICE=fpga " + noDriver);
  CHECK(contains(unknown, "loopc: LOOPC_DEVICE=fpga is not cpu, gpu or auto; ignored\n"));
  checkComputed(unknown);
}

TEST_CASE("an object without GPU code runs on the CPU whatever LOOPC_DEVICE says") {
  test::TempDir dir;
  std::string program = buildDriver(dir, "");
  // Buffers are made on the GPU, which the functions read and write through
  // copies in host memory.
  std::string output = drive(program, "LOOPC_DEVICE=gpu LOOPC_CUDA_DRIVER=" + kStub);
  CHECK(contains(output, "buffers on: cuda\n"));
  checkComputed(output);
  CHECK(contains(output, "module: \n")); // nothing loaded into the stand-in
  CHECK(!contains(output, "launch "));
}

TEST_CASE("over the stand-in driver the host code launches each kernel with its arguments and "
          "copies the arrays in and out") {
  test::TempDir dir;
  std::string program = buildDriver(dir, "--gpu sm_80,sm_90");
  // Auto takes the GPU when there is one; the stand-in runs no kernel.
  std::string output = drive(program, "LOOPC_CUDA_DRIVER=" + kStub);
  CHECK(contains(output, "device: cuda\n"));
  CHECK(contains(output, "module: .target sm_90\n"));
  // In-out arrays come back as they went (no kernel changed them), out
  // arrays and scalar results zeroed, whatever the caller had in them.
  CHECK(contains(output, "saxpy: LOOPC_SUCCESS\n  y = 1 1 1 1 1\n"));
  CHECK(contains(output, "total: LOOPC_SUCCESS\n  s = 0\n"));
  CHECK(contains(output, "shifted: LOOPC_SUCCESS\n  v = 0 0 0\n"));
  CHECK(contains(output, "gather: LOOPC_SUCCESS\n  picked = 0 0 0\n"));
  // Parameters: device addresses, sizes, then the scalars in their kernel
  // types (2.0f, true as a byte, 10 as i64), the error record last.
  CHECK(contains(output, "launch saxpy_kernel0 grid 1 1 1 block 256 1 1 params 8:address "
                         "8:address 8:5 4:1073741824 8:address\n"));
  CHECK(contains(output, "launch shifted_kernel0 grid 1 1 1 block 256 1 1 params 8:address "
                         "8:address 8:3 1:1 8:10 8:address\n"));
  CHECK(contains(output, "launch total_kernel0 "));
  CHECK(contains(output, "launch total_kernel1 "));
  // Levinson-Durbin's host loop: two launches per step over k points, alpha
  // (computed by the host code from what it read of r and y) passed to the
  // first; y[0] = -r[0] and y[k] = alpha written by the host code itself.
  for (int k = 1; k < 6; ++k) {
    CAPTURE(k);
    CHECK(contains(output, "launch levinson_kernel0 grid 1 1 1 block 256 1 1 params 8:address "
                           "8:address 8:" +
                               std::to_string(k) + " 8:6 4:"));
    CHECK(contains(output, "launch levinson_kernel1 grid 1 1 1 block 256 1 1 params 8:address "
                           "8:address 8:" +
                               std::to_string(k) + " 8:6 8:address\n"));
  }
  CHECK(contains(output, "levinson: LOOPC_SUCCESS\n  ry = -0.5 0.0666667 "));
  // Buffers on the GPU: the calls change nothing here but zero the out one,
  // and a copy between buffers moves the bytes.
  CHECK(contains(output, "buffers on: cuda\n"));
  CHECK(contains(output, "  chained = 1 1 1 1 1\n  sum = 0\n"));
  checkBufferErrors(output);
  CHECK(contains(output, "  copied = 1 1 2 1 1\n"));
  CHECK(contains(output, "gather_buffers: LOOPC_SUCCESS\nwait: LOOPC_SUCCESS\n"));
  CHECK(contains(output, "launch gather_kernel0 grid 1 1 1 block 256 1 1 params 8:address "
                         "8:address 8:address 8:3 8:5 8:address\n"));
  // LOOPC_DEVICE=gpu and the API choose it too.
  CHECK(contains(drive(program, "LOOPC_DEVICE=gpu LOOPC_CUDA_DRIVER=" + kStub), "device: cuda\n"));
  std::string chosen = drive(program, "LOOPC_DEVICE=cpu LOOPC_CUDA_DRIVER=" + kStub, "use-gpu");
  CHECK(contains(chosen, "use-gpu: LOOPC_SUCCESS\ndevice: cuda\n"));
  CHECK(contains(chosen, "launch saxpy_kernel0 "));
}

TEST_CASE("the GPU code for the device is the newest architecture it runs") {
  test::TempDir dir;
  std::string program = buildDriver(dir, "--gpu sm_90,sm_80,sm_80");
  std::string stub = "LOOPC_CUDA_DRIVER=" + kStub;
  CHECK(contains(drive(program, stub, "capability=86"), "module: .target sm_80\n"));
  CHECK(contains(drive(program, stub, "capability=90"), "module: .target sm_90\n"));
  // None: every call fails, naming what the object holds and what to add.
  std::string older = drive(program, stub, "capability=75");
  CHECK(contains(older, "saxpy: LOOPC_ERROR_UNSUPPORTED (kernel 'saxpy': its object holds GPU "
                        "code for sm_80, sm_90, all newer than the GPU (loopc stub GPU, sm_75): "
                        "compile it with --gpu sm_75 too)\n  y = 1 1 1 1 1\n"));
  CHECK(contains(older, "levinson: LOOPC_ERROR_UNSUPPORTED"));
}

TEST_CASE("a kernel's fault on the GPU and a missing driver are a call's status and message") {
  test::TempDir dir;
  std::string program = buildDriver(dir, "--gpu sm_80");
  // The stand-in writes gather's first error site into the record its next
  // launch is given, as a kernel failing a bounds check would.
  std::string fault = drive(program, "LOOPC_CUDA_DRIVER=" + kStub, "fault=1");
  CHECK(contains(fault, "gather: LOOPC_ERROR_KERNEL_FAULT (" +
                            test::sourcePath("tests/embedded_gpu/kernels.loop") +
                            ":18:12: kernel 'gather': index 0 out of range for dimension 0 of "
                            "'x' (extent 0))\n"));
  CHECK(contains(fault, "levinson: LOOPC_SUCCESS\n")); // the next call starts clean
  // A call on GPU buffers does not wait: its fault is reported by the wait.
  std::string later = drive(program, "LOOPC_CUDA_DRIVER=" + kStub, "async-fault=1");
  CHECK(contains(later, "gather_buffers: LOOPC_SUCCESS\nwait: LOOPC_ERROR_KERNEL_FAULT (" +
                            test::sourcePath("tests/embedded_gpu/kernels.loop") +
                            ":18:12: kernel 'gather': index 0 out of range for dimension 0 of "
                            "'x' (extent 0))\ndownload: LOOPC_SUCCESS\n"));
  CHECK(contains(later, "timer stop: LOOPC_SUCCESS\n  timed: yes\n"));
  // LOOPC_DEVICE=gpu without a driver: each call fails, nothing is written.
  std::string noDriver =
      drive(program, "LOOPC_DEVICE=gpu LOOPC_CUDA_DRIVER=" + dir.at("no-such-driver.so"));
  CHECK(contains(noDriver, "saxpy: LOOPC_ERROR_NO_DRIVER (kernel 'saxpy': cannot run on the GPU: "
                           "no CUDA driver ("));
  CHECK(contains(noDriver, "  y = 1 1 1 1 1\n"));
  CHECK(contains(noDriver, "total: LOOPC_ERROR_NO_DRIVER"));
  CHECK(contains(noDriver, "  s = 7\n"));
  // loopc_use_device(CUDA) fails the same way and keeps the choice before.
  std::string refused =
      drive(program, "LOOPC_CUDA_DRIVER=" + dir.at("no-such-driver.so"), "use-gpu");
  CHECK(contains(refused, "use-gpu: LOOPC_ERROR_NO_DRIVER (no CUDA driver ("));
  CHECK(contains(refused, "device: cpu\n"));
  checkComputed(refused);
}

TEST_CASE("the C++ functions of a generated header take spans and buffers and throw failures") {
  test::TempDir dir;
  buildDriver(dir, "--gpu sm_80");
  auto linked =
      test::runShell("c++ -std=c++17 -Wall -Wextra -Werror -I" + dir.at("") + " -I" +
                     test::sourcePath("runtime/include") + " " +
                     test::sourcePath("tests/embedded_gpu/drive.cpp") + " " + dir.at("kernels.o") +
                     " " + LOOPC_RUNTIME_LIBRARY + " -lm -lpthread -ldl -o " + dir.at("drive_cpp"));
  INFO(linked.output);
  REQUIRE(linked.exitCode == 0);
  std::string output =
      drive(dir.at("drive_cpp"), "LOOPC_CUDA_DRIVER=" + dir.at("no-such-driver.so"));
  CHECK(contains(output, "saxpy: ok\n  y = 3 5 7 9 11\ntotal: ok\n  s = 15\n"));
  CHECK(contains(output, "gather: ok\n  picked = 5 1 3\n"));
  CHECK(contains(output, "gather into too few: LOOPC_ERROR_INVALID_ARGUMENT (kernel 'gather': "
                         "'y' has 2 elements; its type, f32[M], needs 3)\n"));
  CHECK(contains(output, "gather outside: LOOPC_ERROR_KERNEL_FAULT (" +
                             test::sourcePath("tests/embedded_gpu/kernels.loop") +
                             ":18:12: kernel 'gather': index 5 out of range"));
  CHECK(contains(output, "  y from buffers = 3 5 7 9 11\n  s from buffers = 35\n  timed: yes\n"));
  CHECK(contains(output, "gather on buffers: ok\n  picked from buffers = 5 1 3\n"));
  CHECK(contains(output, "total on a short buffer: LOOPC_ERROR_INVALID_ARGUMENT (kernel 'total': "
                         "'x' has 1 element; its type, f32[N], needs 5)\n"));
  CHECK(contains(output, "  moved: 5 elements, the source 0\n"));
  CHECK(contains(output, "stop twice: LOOPC_ERROR_INVALID_ARGUMENT"));
  // Over the stand-in driver the same calls go to the GPU's buffers.
  std::string onGpu = drive(dir.at("drive_cpp"), "LOOPC_CUDA_DRIVER=" + kStub);
  CHECK(contains(onGpu, "saxpy on buffers: ok\ntotal on buffers: ok\n  y from buffers = 1 1 1 1 "
                        "1\n  s from buffers = 0\n"));
  // The stand-in runs no kernel: an out array the kernel writes whole keeps
  // what the buffer held (no clearing before the call), one it may not
  // (total's s) is zeroed.
  CHECK(contains(onGpu, "gather on buffers: ok\n  picked from buffers = 9 9 9\n"));
}

TEST_CASE("a parameter named loopc is renamed in the header and a kernel named loopc refused") {
  test::TempDir dir;
  std::string source = dir.file("named.loop", "kernel scale(loopc: f32, y: inout f32[N]) {\n"
                                              "  parfor i in 0..N { y[i] = loopc * y[i]; }\n}\n");
  auto header = test::runLoopc("compile " + source + " --emit header -o " + dir.at("named.h"));
  REQUIRE(header.exitCode == 0);
  CHECK(contains(test::readFile(dir.at("named.h")),
                 "inline void scale(float loopc_, loopc::Span<float> y, int64_t N) {"));
  std::string program = dir.file("main.cpp", "#include \"named.h\"\nint main() { return 0; }\n");
  auto compiled = test::runShell("c++ -std=c++17 -fsyntax-only -Wall -Werror -I" + dir.at("") +
                                 " -I" + test::sourcePath("runtime/include") + " " + program);
  CHECK(compiled.output == "");
  std::string kernel = dir.file("loopc.loop", "kernel loopc(y: inout f32[N]) {\n"
                                              "  parfor i in 0..N { y[i] = 2.0 * y[i]; }\n}\n");
  auto refused = test::runLoopc("compile " + kernel + " --emit header");
  CHECK(refused.exitCode == 1);
  CHECK(contains(refused.output, "kernel 'loopc' cannot be a C function named 'loopc'"));
}

TEST_CASE("compile --emit object --gpu refuses an architecture it does not know") {
  test::TempDir dir;
  auto unknown = test::runLoopc("compile samples/dot.loop --emit object --gpu sm_80,sm_99 -o " +
                                dir.at("dot.o"));
  CHECK(unknown.exitCode == 1);
  CHECK(contains(unknown.output, "unknown GPU 'sm_99' (loopc compiles for sm_50 to sm_90a"));
  auto target =
      test::runLoopc("compile samples/dot.loop --emit object --target gpu -o " + dir.at("dot.o"));
  CHECK(target.exitCode == 1);
  CHECK(contains(target.output, "--emit object embeds CPU code, and GPU code with --gpu: it takes "
                                "no --target gpu"));
}
