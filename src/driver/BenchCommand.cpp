// `loopc bench` (see BenchCommand.h). The timing loop is `loopc run
// --repeat`'s (timeRuns), so both commands measure alike.
#include "driver/BenchCommand.h"

#include "driver/Cli.h"
#include "driver/PerfReport.h"
#include "driver/RunCommand.h"
#include "driver/Session.h"
#include "lower/Lower.h"
#include "passes/analysis/WorkCount.h"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <memory>

namespace loopc::driver {

namespace {

struct BenchOptions {
  RunTargetOptions target;
  BenchOutputOptions output;
};

// The GPU the performance model predicts this run for: --device-model, or
// the model of the GPU the run is on; none for a run on the CPU but when
// --device-model names a GPU (the CPU's own model predicts it otherwise).
Expected<const perf::GpuDevice *> benchDeviceModel(const BenchOutputOptions &options,
                                                   const Engine &engine) {
  if (!options.deviceModel.empty()) {
    auto gpu = perf::findGpuDevice(options.deviceModel);
    if (!gpu && engine.kind() == "cpu")
      return nullptr; // a CPU model's name (runBench)
    return gpu;
  }
  if (engine.kind() == "cpu")
    return nullptr; // the CPU's own model (runBench)
  if (engine.kind() == "gpu")
    return perf::gpuDeviceForDriverName(engine.device());
  return nullptr;
}

} // namespace

Status benchPreparedRun(const BenchOutputOptions &options, PreparedRun &run,
                        const RunTargetOptions &target, std::ostream &out) {
  Session &session = *run.session;
  const KernelDecl &kernel = *run.kernel;
  KernelArgs &args = run.args;
  std::optional<KernelArgs> inputs = args;
  if (options.warmup > 0) {
    auto warm = timeRuns(*run.engine, *session.program, kernel, args, inputs, options.warmup);
    if (!warm)
      return std::unexpected(warm.error());
    args = *inputs;
  }
  auto times = timeRuns(*run.engine, *session.program, kernel, args, inputs, options.repeat);
  if (!times)
    return std::unexpected(times.error());
  double median = medianOf(*times);
  double minimum = times->front();
  double spread = median > 0 ? (times->back() - minimum) / median : 0;
  passes::WorkCount work =
      passes::countWork(ir::lowerKernel(*session.program, kernel), integerValues(kernel, *inputs));
  double gflops = median > 0 ? work.flops / median / 1e9 : 0;
  double gbytes = median > 0 ? work.bytes / median / 1e9 : 0;

  // What the performance model predicted, beside what was measured.
  auto device = benchDeviceModel(options, *run.engine);
  if (!device)
    return std::unexpected(device.error());
  std::optional<perf::ProgramPrediction> prediction;
  std::optional<perf::CpuProgramPrediction> cpuPrediction;
  std::optional<perf::CpuDevice> cpuDevice;
  if (!*device && run.engine->kind() == "cpu") {
    auto found = perf::findCpuDevice(options.deviceModel.empty() ? "native" : options.deviceModel);
    if (!found) // neither a GPU's name (benchDeviceModel) nor a CPU's
      return makeError(
          "unknown device model '" + options.deviceModel +
          "': a GPU (h100, h100-pcie, h200, a100, l4) or a CPU (native, epyc-2, xeon-2)");
    cpuDevice = *found;
    auto predicted = predictCpuRun(*session.program, kernel, run.choices,
                                   integerValues(kernel, *inputs), *cpuDevice);
    if (!predicted)
      return std::unexpected(predicted.error());
    cpuPrediction = std::move(*predicted);
  }
  if (*device) {
    auto predicted = predictGpuRun(*session.program, kernel, run.choices,
                                   integerValues(kernel, *inputs), **device);
    if (!predicted)
      return std::unexpected(predicted.error());
    prediction = std::move(*predicted);
  }

  if (options.json) {
    // The scalar inputs' values (--set, or seeded random ones): the work and
    // the time depend on them as on the sizes.
    nlohmann::json scalars = nlohmann::json::object();
    for (size_t i = 0; i < kernel.params.size(); ++i) {
      const HostArray &value = (*inputs).params[i];
      Intent intent = kernel.params[i]->intent;
      if (intent == Intent::Out || intent == Intent::InOut || value.rank() != 0)
        continue;
      if (value.type == ScalarType::Bool)
        scalars[kernel.params[i]->name] = value.getAsInt(0) != 0;
      else if (isInteger(value.type))
        scalars[kernel.params[i]->name] = value.getAsInt(0);
      else
        scalars[kernel.params[i]->name] = value.getAsDouble(0);
    }
    nlohmann::json result = {{"kernel", kernel.name},
                             {"file", target.file},
                             {"device", run.engine->kind()},
                             {"bounds_checked", run.choices.boundsChecks},
                             {"sizes", args.sizes},
                             {"scalars", scalars},
                             {"seed", target.arguments.seed},
                             {"runs", options.repeat},
                             {"warmup", options.warmup},
                             {"median_ms", median * 1e3},
                             {"min_ms", minimum * 1e3},
                             {"spread", spread},
                             {"flops", work.flops},
                             {"bytes", work.bytes},
                             {"gflops", gflops},
                             {"gbytes_per_s", gbytes},
                             {"approximate", work.approximate}};
    if (prediction) {
      result["device_model"] = (*device)->name;
      result["predicted_ms"] = prediction->seconds * 1e3;
      result["predicted_bound"] = predictedBound(*prediction);
    }
    if (cpuPrediction) {
      result["device_model"] = cpuDevice->name;
      result["predicted_ms"] = cpuPrediction->seconds * 1e3;
      result["predicted_bound"] = predictedBound(*cpuPrediction);
    }
    out << result.dump() << "\n";
    return {};
  }
  out << "kernel '" << kernel.name << "' on " << run.engine->name() << ": median "
      << formatMilliseconds(median) << " ms, min " << formatMilliseconds(minimum) << " ms, spread "
      << std::fixed << std::setprecision(1) << spread * 100 << "% over " << options.repeat
      << " runs\n";
  out << std::setprecision(2) << "  " << gflops << " GFLOP/s (" << work.flops / 1e9 << " GFLOP), "
      << gbytes << " GB/s (" << work.bytes / 1e9 << " GB, each array once: a lower bound)"
      << (work.approximate ? " [approximate: some loop bounds or branches depend on data]" : "")
      << "\n";
  out.unsetf(std::ios::fixed);
  if (prediction)
    out << "  " << predictionSummary(*prediction, **device) << " (loopc explain --perf says why)\n";
  if (cpuPrediction)
    out << "  " << predictionSummary(*cpuPrediction, *cpuDevice)
        << " (loopc explain --perf --target cpu says why)\n";
  return {};
}

void BenchOutputOptions::addTo(CLI::App &command) {
  command.add_option("--repeat", repeat, "Timed runs (default: 10)")
      ->type_name("N")
      ->check(wholeNumberIn(1, 1000000));
  command.add_option("--warmup", warmup, "Untimed runs first (default: 1)")
      ->type_name("N")
      ->check(wholeNumberIn(0, 1000));
  command.add_flag("--json", json, "Print one JSON object");
  command
      .add_option("--device-model", deviceModel,
                  "Also print what the performance model predicts on this GPU (h100, "
                  "h100-pcie, h200, a100, l4; a run on a known GPU predicts for it), or "
                  "for a run on the CPU on this CPU model (native, the default, epyc-2 or xeon-2)")
      ->check(nonEmpty());
}

void addBenchCommand(CLI::App &app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App *command = app.add_subcommand("bench", "Time a kernel and report GFLOP/s and GB/s");
  options->target.addTo(*command, "time");
  options->output.addTo(*command);
  command->callback([options] {
    std::optional<PreparedRun> run = prepareRun(options->target);
    if (!run)
      throw CLI::RuntimeError(1);
    if (Status timed = benchPreparedRun(options->output, *run, options->target, std::cout);
        !timed) {
      run->session->report(timed.error());
      throw CLI::RuntimeError(1);
    }
  });
}

} // namespace loopc::driver
