// `loopc bench FILE [--kernel K] [--set ...] [--device D] [--repeat N]
// [--warmup W] [--json]`: times a kernel on a device: W untimed warm-up runs
// (compilation, module loading, caches), then N timed runs from the same
// inputs, reporting the median, minimum and spread ((max - min) / median)
// with GFLOP/s and GB/s from the work the kernel's IR does at those sizes
// (passes/analysis/WorkCount.h: bytes are a lower bound, each array parameter
// read or written once). --json prints one JSON object instead.
#pragma once

#include "driver/Session.h"

#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

namespace loopc::driver {

void addBenchCommand(CLI::App &app);

// What `loopc bench` does with a kernel once it is ready to run, and the
// REPL's :time too.
struct BenchOutputOptions {
  int repeat = 10;
  int warmup = 1;
  bool json = false;
  std::string deviceModel; // --device-model: the device the model predicts for

  // --repeat, --warmup, --json, --device-model.
  void addTo(CLI::App &command);
};

// Times `run` as `options` say and prints the report (or the JSON object) to
// `out`, with what the performance model predicts beside it; `target` names
// the file and seed the JSON reports.
Status benchPreparedRun(const BenchOutputOptions &options, PreparedRun &run,
                        const RunTargetOptions &target, std::ostream &out);

} // namespace loopc::driver
