// Run-time errors of generated code at the CLI: `loopc run --device cpu` on a
// program that divides by zero prints the interpreter's message with the
// source line and exits 1, instead of dying of SIGFPE.
#include "TestSupport.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

using loopc::test::runLoopc;

namespace {

// A .loop file in a fresh temporary directory, removed with it.
struct TempProgram {
  loopc::test::TempDir directory;
  std::string path;
  explicit TempProgram(const std::string &text) : path(directory.file("program.loop", text)) {}
};

constexpr const char *kDivide = "kernel divide(x: in i32[N], d: i32, q: out i32[N]) {\n"
                                "  parfor i in 0..N {\n"
                                "    q[i] = x[i] / d;\n"
                                "  }\n"
                                "}\n";

} // namespace

TEST_CASE("run --device cpu reports an integer division by zero and exits 1") {
  TempProgram program(kDivide);
  auto result = runLoopc("run " + program.path + " --set N=5 --set d=0 --device cpu");
  CHECK(result.exitCode == 1);
  // At the division, as the interpreter reports it.
  CHECK(result.output.find("program.loop:3:12: error: integer division by zero") !=
        std::string::npos);
  CHECK(result.output.find("q[i] = x[i] / d;") != std::string::npos);
  auto interpreted = runLoopc("run " + program.path + " --set N=5 --set d=0 --device interp");
  CHECK(interpreted.output.find("program.loop:3:12: error: integer division by zero") !=
        std::string::npos);
}

TEST_CASE("a modulo by zero inside a function is reported there, as by the interpreter") {
  TempProgram program("fn wrap(v: i32, m: i32) -> i32 { return v % m; }\n"
                      "kernel k(x: in i32[N], m: i32, y: out i32[N]) {\n"
                      "  parfor i in 0..N { y[i] = wrap(x[i], m); }\n"
                      "}\n");
  for (const char *device : {"interp", "cpu", "gpu-on-cpu"}) {
    CAPTURE(device);
    auto result = runLoopc("run " + program.path + " --set N=5 --set m=0 --device " + device);
    CHECK(result.exitCode == 1);
    CHECK(result.output.find("program.loop:1:41: error: integer modulo by zero") !=
          std::string::npos);
  }
}

TEST_CASE("run --device cpu divides by a nonzero input as before") {
  TempProgram program(kDivide);
  auto result = runLoopc("run " + program.path + " --set N=5 --set d=-1 --device cpu --check");
  CHECK(result.exitCode == 0);
  CHECK(result.output.find("PASS: 1 output matches the interpreter") != std::string::npos);
}

TEST_CASE("a range step that is not positive at run time fails at the step on every engine") {
  // Found by a bug hunt: a negative step ran no iteration silently, a zero
  // one divided by zero somewhere in the kernel.
  TempProgram program("kernel k(s: i64, r: out i64) { for i in 0..10 by s { r += 1; } }\n");
  for (const char *step : {"0", "-1"})
    for (const char *device : {"interp", "cpu", "gpu-on-cpu"}) {
      CAPTURE(step);
      CAPTURE(device);
      auto result = runLoopc("run " + program.path + " --set s=" + step + " --device " + device);
      CHECK(result.exitCode == 1);
      CHECK(result.output.find("program.loop:1:50: error: ") != std::string::npos);
    }
  auto fine = runLoopc("run " + program.path + " --set s=3 --device cpu --check");
  CHECK(fine.exitCode == 0);
}
