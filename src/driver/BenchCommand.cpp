// `loopc bench` (see BenchCommand.h). The timing loop is `loopc run
// --repeat`'s (timeRuns), so both commands measure alike.
#include "driver/BenchCommand.h"

#include "driver/Engines.h"
#include "driver/RunCommand.h"
#include "driver/Session.h"
#include "ir/Lower.h"
#include "passes/analysis/WorkCount.h"

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <memory>

namespace loopc::driver {

namespace {

struct BenchOptions {
  std::string file;
  std::string kernel;
  std::string device;
  ArgumentOptions arguments;
  int repeat = 10;
  int warmup = 1;
  bool json = false;
};

// Sizes and integer scalar arguments, the values the work count needs.
std::map<std::string, int64_t> boundValues(const KernelDecl &kernel, const KernelArgs &args) {
  std::map<std::string, int64_t> values = args.sizes;
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const HostArray &value = args.params[i];
    if (value.rank() == 0 && !isFloat(value.type) && value.elementCount() == 1)
      values[kernel.params[i]->name] = static_cast<int64_t>(value.getAsDouble(0));
  }
  return values;
}

int runBench(const BenchOptions &options) {
  auto session = openSession(options.file);
  if (!session)
    return 1;
  auto kernel = selectKernel(*session->program, options.kernel);
  if (!kernel) {
    session->report(kernel.error());
    return 1;
  }
  auto request = options.arguments.toRequest();
  if (!request) {
    session->report(request.error());
    return 1;
  }
  auto args = bindKernelArguments(**kernel, *request);
  if (!args) {
    session->report(args.error());
    return 1;
  }
  auto engine = options.device.empty() ? createDefaultEngine() : createEngine(options.device);
  if (!engine) {
    session->report(engine.error());
    return 1;
  }
  std::optional<KernelArgs> inputs = *args;
  if (options.warmup > 0) {
    auto warm = timeRuns(**engine, *session->program, **kernel, *args, inputs, options.warmup);
    if (!warm) {
      session->report(warm.error());
      return 1;
    }
    *args = *inputs;
  }
  auto times = timeRuns(**engine, *session->program, **kernel, *args, inputs, options.repeat);
  if (!times) {
    session->report(times.error());
    return 1;
  }
  double median = medianOf(*times);
  double minimum = times->front();
  double spread = median > 0 ? (times->back() - minimum) / median : 0;
  passes::WorkCount work = passes::countWork(ir::lowerKernel(*session->program, **kernel),
                                             boundValues(**kernel, *inputs));
  double gflops = median > 0 ? work.flops / median / 1e9 : 0;
  double gbytes = median > 0 ? work.bytes / median / 1e9 : 0;

  if (options.json) {
    nlohmann::json result = {{"kernel", (*kernel)->name},
                             {"file", options.file},
                             {"device", (*engine)->name()},
                             {"sizes", args->sizes},
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
    std::cout << result.dump() << "\n";
    return 0;
  }
  std::cout << std::fixed << std::setprecision(3);
  std::cout << "kernel '" << (*kernel)->name << "' on " << (*engine)->name() << ": median "
            << median * 1e3 << " ms, min " << minimum * 1e3 << " ms, spread "
            << std::setprecision(1) << spread * 100 << "% over " << options.repeat << " runs\n";
  std::cout << std::setprecision(2) << "  " << gflops << " GFLOP/s (" << work.flops / 1e9
            << " GFLOP), " << gbytes << " GB/s (" << work.bytes / 1e9
            << " GB, each array once: a lower bound)"
            << (work.approximate ? " [approximate: some extents depend on data]" : "") << "\n";
  std::cout.unsetf(std::ios::fixed);
  return 0;
}

} // namespace

void addBenchCommand(CLI::App &app) {
  auto options = std::make_shared<BenchOptions>();
  CLI::App *command = app.add_subcommand("bench", "Time a kernel and report GFLOP/s and GB/s");
  command->add_option("FILE", options->file, "The .loop file")->required();
  command->add_option("--kernel", options->kernel,
                      "The kernel to time (default: the last kernel of FILE)");
  command->add_option("--device", options->device,
                      "interp, cpu or gpu (default: the best one available)");
  options->arguments.addTo(*command);
  command->add_option("--repeat", options->repeat, "Timed runs (default: 10)")
      ->type_name("N")
      ->check(CLI::Range(1, 1000000));
  command->add_option("--warmup", options->warmup, "Untimed runs first (default: 1)")
      ->type_name("N")
      ->check(CLI::Range(0, 1000));
  command->add_flag("--json", options->json, "Print one JSON object");
  command->callback([options] {
    if (int exitCode = runBench(*options))
      throw CLI::RuntimeError(exitCode);
  });
}

} // namespace loopc::driver
