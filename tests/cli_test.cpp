// The loopc command line, run as a user runs it: exit codes and messages of
// `check` and `run`, argument options, .npy input and output, --check, and
// the errors a user can provoke.
#include "TestSupport.h"

#include "engine/Npy.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

using namespace loopc;
using loopc::test::runLoopc;

namespace {

// A file in a fresh temporary directory, removed with it.
struct TempDir {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() /
      ("loopc_cli_test_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
  TempDir() { std::filesystem::create_directories(path); }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string &name, const std::string &contents) const {
    std::string full = (path / name).string();
    std::ofstream(full, std::ios::binary) << contents;
    return full;
  }
  std::string at(const std::string &name) const { return (path / name).string(); }
};

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("check accepts a good file and rejects a bad one with a located message") {
  auto good = runLoopc("check samples/matmul.loop");
  CHECK(good.exitCode == 0);
  CHECK(good.output == "samples/matmul.loop: ok (1 kernel)\n");

  TempDir dir;
  std::string bad = dir.file("bad.loop", "kernel k(x: in f32[N], y: out f32[N]) {\n"
                                         "  parfor i in 0..N { y[i] = x[i] + true; }\n}\n");
  auto result = runLoopc("check " + bad);
  CHECK(result.exitCode == 1);
  CHECK(contains(result.output, bad + ":2:"));
  CHECK(contains(result.output, "error:"));
  CHECK(contains(result.output, "^"));

  auto missing = runLoopc("check no/such/file.loop");
  CHECK(missing.exitCode == 1);
  CHECK(contains(missing.output, "loopc: error: cannot open 'no/such/file.loop'"));
}

TEST_CASE("every subcommand has --help") {
  for (const char *command : {"", "check ", "run "}) {
    auto result = runLoopc(std::string(command) + "--help");
    CAPTURE(command);
    CHECK(result.exitCode == 0);
    CHECK(contains(result.output, "Usage: loopc"));
  }
  CHECK(contains(runLoopc("run --help").output, "--set NAME=VALUE"));
}

TEST_CASE("usage errors are one line and exit with 2") {
  auto none = runLoopc("");
  CHECK(none.exitCode == 2);
  CHECK(none.output == "loopc: error: A subcommand is required (see --help)\n");
  auto unknown = runLoopc("run samples/dot.loop --frobnicate");
  CHECK(unknown.exitCode == 2);
  CHECK(contains(unknown.output, "loopc: error: "));
}

TEST_CASE("run prints a summary of every output and the time") {
  auto result = runLoopc("run samples/matmul.loop --set M=4 --set N=3 --set K=5 --device interp");
  CHECK(result.exitCode == 0);
  CHECK(contains(result.output, "C: f32[4][3] sum="));
  CHECK(contains(result.output, "kernel 'matmul' ran on interp in "));
  auto quiet = runLoopc("run samples/matmul.loop --set M=4 --set N=3 --set K=5 --quiet");
  CHECK(quiet.exitCode == 0);
  CHECK(quiet.output.empty());
  auto scalar = runLoopc("run samples/dot.loop --set N=10");
  CHECK(scalar.exitCode == 0);
  CHECK(contains(scalar.output, "r: f32 sum="));
}

TEST_CASE("the same seed gives the same result, another seed another one") {
  auto run = [](const char *seed) {
    auto result = runLoopc(std::string("run samples/dot.loop --set N=100 --seed ") + seed);
    REQUIRE(result.exitCode == 0);
    return result.output.substr(0, result.output.find('\n'));
  };
  CHECK(run("1") == run("1"));
  CHECK(run("1") != run("2"));
}

TEST_CASE("--in and --out read and write .npy files, and --check compares") {
  TempDir dir;
  HostArray x(ScalarType::F32, {4}), y(ScalarType::F32, {4});
  for (size_t i = 0; i < 4; ++i) {
    x.setFromDouble(i, double(i + 1)); // 1 2 3 4
    y.setFromDouble(i, 2);
  }
  REQUIRE(writeNpy(dir.at("x.npy"), x).has_value());
  REQUIRE(writeNpy(dir.at("y.npy"), y).has_value());
  auto result = runLoopc("run samples/dot.loop --in x=" + dir.at("x.npy") +
                         " --in y=" + dir.at("y.npy") + " --out r=" + dir.at("r.npy") + " --check");
  CHECK(result.exitCode == 0);
  CHECK(contains(result.output, "r: f32 sum=20 value: 20"));
  CHECK(contains(result.output, "PASS: 1 output matches the interpreter"));
  auto written = readNpy(dir.at("r.npy"));
  REQUIRE(written.has_value());
  CHECK(written->rank() == 0);
  CHECK(written->getAsDouble(0) == 20);

  auto notOutput = runLoopc("run samples/dot.loop --set N=3 --out x=" + dir.at("bad.npy"));
  CHECK(notOutput.exitCode == 1);
  CHECK(contains(notOutput.output, "'x' is not an out or inout parameter of kernel 'dot'"));
}

TEST_CASE("argument errors name what is wrong") {
  TempDir dir;
  REQUIRE(writeNpy(dir.at("a.npy"), HostArray(ScalarType::F32, {3, 4})).has_value());
  REQUIRE(writeNpy(dir.at("b.npy"), HostArray(ScalarType::F32, {5, 2})).has_value());
  auto mismatch =
      runLoopc("run samples/matmul.loop --in A=" + dir.at("a.npy") + " --in B=" + dir.at("b.npy"));
  CHECK(mismatch.exitCode == 1);
  CHECK(contains(mismatch.output,
                 "samples/matmul.loop:6:42: error: size K is 4 from 'A' (dimension 1) but 5 "
                 "from 'B' (dimension 0)"));

  auto missing = runLoopc("run samples/matmul.loop --set M=2");
  CHECK(missing.exitCode == 1);
  CHECK(contains(missing.output, "loopc: error: cannot infer sizes K, N"));

  std::string malformed = dir.file("junk.npy", std::string("\x93NUMPY\x01\x00\x04\x00{'d}", 14));
  auto junk = runLoopc("run samples/dot.loop --in x=" + malformed);
  CHECK(junk.exitCode == 1);
  CHECK(contains(junk.output, "loopc: error: " + malformed + ": unparsable header"));

  auto huge = runLoopc("run samples/matmul.loop --set M=1000000 --set N=1000000 --set K=1000000");
  CHECK(huge.exitCode == 1);
  CHECK(contains(huge.output, "loopc: error: arrays need 12 TB but the machine has "));

  auto junkValue = runLoopc("run samples/dot.loop --set N=lots");
  CHECK(junkValue.exitCode == 1);
  CHECK(contains(junkValue.output, "invalid value 'lots' for size N"));
  auto noEquals = runLoopc("run samples/dot.loop --set N");
  CHECK(noEquals.exitCode == 1);
  CHECK(contains(noEquals.output, "loopc: error: --set expects NAME=VALUE, got 'N'"));
}

TEST_CASE("unknown kernels and unavailable devices are reported clearly") {
  auto kernel = runLoopc("run samples/dot.loop --kernel nope --set N=3");
  CHECK(kernel.exitCode == 1);
  CHECK(kernel.output == "loopc: error: no kernel named 'nope' (available: dot)\n");
  auto device = runLoopc("run samples/dot.loop --set N=3 --device tpu");
  CHECK(device.exitCode == 1);
  CHECK(device.output == "loopc: error: unknown device 'tpu' (choose from gpu, cpu, interp)\n");
}
