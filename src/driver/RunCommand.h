// `loopc run FILE`: binds a kernel's arguments, runs it on a device, prints a
// summary of every output and the time taken; `--check` compares the outputs
// with the reference interpreter's (the CPU JIT's when the work is too large
// for the interpreter, or when `--reference cpu` asks for it).
#pragma once

#include "driver/OutputPaths.h"
#include "engine/Engine.h"

#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace loopc::driver {

void addRunCommand(CLI::App &app);

// What `loopc run` does with a kernel after binding its inputs, and the
// REPL's :run too: time it, print its outputs, write them, check them.
struct RunOutputOptions {
  std::vector<std::string> outputs; // NAME=FILE.npy
  bool check = false;
  std::string reference = "auto"; // auto, interp or cpu
  bool quiet = false;
  int repeat = 1;         // timed runs from the same inputs; the median is reported
  std::string saveInputs; // a folder for the inputs as NAME.npy, or empty

  // --out, --save-inputs, --check, --reference, --quiet, --repeat.
  void addTo(CLI::App &command);
};

// A kernel with bound arguments run on `engine` as `options` say, its report
// printed to `out` ("--repeat N" or whatever times more, `steadyState`).
// `inputFiles` are the files the run reads (no output may be one). An error
// stops it before or after the runs; false when --check found a mismatch.
Expected<bool> runBoundKernel(const RunOutputOptions &options, const Program &program,
                              const KernelDecl &kernel, KernelArgs &args, Engine &engine,
                              const std::vector<PathUse> &inputFiles, std::ostream &out,
                              const std::string &steadyState);

// Runs the kernel `repeat` times, each from `inputs` when more than once so
// that inout parameters start alike, and returns every run's time in seconds,
// sorted. `args` holds the last run's results. Shared with `loopc bench`.
Expected<std::vector<double>> timeRuns(Engine &engine, const Program &program,
                                       const KernelDecl &kernel, KernelArgs &args,
                                       const std::optional<KernelArgs> &inputs, int repeat);

// The engine `--check --reference auto` compares with: the interpreter (the
// oracle), or the CPU JIT when `operations` (flops plus elements moved) is
// more than the interpreter runs in reasonable time, unless the CPU JIT is
// `engineUnderTest`.
std::string autoReferenceEngine(double operations, const std::string &engineUnderTest);

// The median of sorted times.
double medianOf(const std::vector<double> &sortedSeconds);

// `seconds` in milliseconds, with three decimals, or three significant
// digits below 0.1 ms (a tiny kernel's 0.000412 rather than 0.000).
std::string formatMilliseconds(double seconds);

// What `loopc run` prints after a run: a summary of every out and inout
// parameter, then the device and the time (the median when `repeat` > 1; a
// single run's says it is a first run, and that `steadyState` times more).
// Shared with the REPL's :run.
void printRunReport(std::ostream &out, const KernelDecl &kernel, const KernelArgs &args,
                    const std::string &device, double seconds, int repeat,
                    const std::string &steadyState);

} // namespace loopc::driver
