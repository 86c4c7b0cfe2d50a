// `loopc bench FILE [--kernel K] [--set ...] [--device D] [--repeat N]
// [--warmup W] [--json]`: times a kernel on a device: W untimed warm-up runs
// (compilation, module loading, caches), then N timed runs from the same
// inputs, reporting the median, minimum and spread ((max - min) / median)
// with GFLOP/s and GB/s from the work the kernel's IR does at those sizes
// (passes/analysis/WorkCount.h: bytes are a lower bound, each array parameter
// read or written once). --json prints one JSON object instead.
#pragma once

#include <CLI/CLI.hpp>

namespace loopc::driver {

void addBenchCommand(CLI::App &app);

} // namespace loopc::driver
