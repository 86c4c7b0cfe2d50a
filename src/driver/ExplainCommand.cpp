// `loopc explain`: lowers the chosen kernel and runs the pass pipeline,
// printing the IR after each pass (`--after` keeps only the passes of that
// name; `--changes` prints what each pass changed instead), or with
// `--remarks` what the optimizations did and declined (of the `--after` pass
// alone, when given). Exit status 1 when the program does
// not check or PASS is unknown.
#include "driver/ExplainCommand.h"

#include "codegen/CpuLibrary.h"
#include "driver/Cli.h"
#include "driver/PerfReport.h"
#include "driver/RemarksOutput.h"
#include "driver/Session.h"
#include "ir/IRPrinter.h"
#include "lower/Lower.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"
#include "support/LineDiff.h"

#include <algorithm>
#include <charconv>
#include <iostream>
#include <map>
#include <memory>

namespace loopc::driver {

Expected<std::map<std::string, int64_t>> sizeValues(const KernelDecl &kernel,
                                                    const std::vector<std::string> &assignments,
                                                    bool integerScalars) {
  std::map<std::string, int64_t> values;
  for (const std::string &assignment : assignments) {
    auto split = splitAssignment(assignment, "--set");
    if (!split)
      return std::unexpected(split.error());
    const auto &[name, text] = *split;
    bool isSize = std::ranges::any_of(kernel.sizes,
                                      [&](const VarDeclPtr &size) { return size->name == name; });
    auto scalar = std::ranges::find_if(kernel.params, [&](const VarDeclPtr &param) {
      return param->name == name && !param->isArray() && !param->isScalarOutput();
    });
    bool isScalar = scalar != kernel.params.end();
    if (isScalar && integerScalars && !isInteger((*scalar)->type.element))
      continue; // a float scalar changes no count the model makes
    if (!isSize && !(integerScalars && isScalar)) {
      std::string sizes;
      for (const VarDeclPtr &size : kernel.sizes)
        sizes += (sizes.empty() ? "" : ", ") + size->name;
      return makeError("--set " + assignment + ": kernel '" + kernel.name +
                       "' has no size named '" + name + "' (explain takes sizes" +
                       (integerScalars ? std::string(" and scalars") : "") + "; it has " +
                       (sizes.empty() ? std::string("none") : sizes) + ")");
    }
    int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size())
      return makeError("--set " + assignment + ": explain takes the integer values of sizes of '" +
                       kernel.name + "'");
    if (value < 0) // as `loopc run` says (Bindings.cpp)
      return makeError("invalid value '" + text + "' for size " + name +
                       " (a non-negative integer)");
    values[name] = value;
  }
  return values;
}

Status explainPerformance(std::ostream &out, const Program &program, const KernelDecl &kernel,
                          const passes::PassChoices &choices,
                          const std::map<std::string, int64_t> &values, const std::string &target,
                          const std::string &deviceModel) {
  for (const VarDeclPtr &size : kernel.sizes)
    if (!values.contains(size->name))
      return makeError("explain --perf needs every size of '" + kernel.name + "': --set " +
                       size->name + "=VALUE");
  if (target == "cpu") {
    auto device = perf::findCpuDevice(deviceModel.empty() ? "native" : deviceModel);
    if (!device)
      return std::unexpected(device.error());
    auto prediction = predictCpuRun(program, kernel, choices, values, *device);
    if (!prediction)
      return std::unexpected(prediction.error());
    printCpuPrediction(out, *prediction);
    return {};
  }
  auto device = perf::findGpuDevice(deviceModel.empty() ? "h100" : deviceModel);
  if (!device)
    return std::unexpected(device.error());
  auto prediction = predictGpuRun(program, kernel, choices, values, **device);
  if (!prediction)
    return std::unexpected(prediction.error());
  printPrediction(out, *prediction);
  return {};
}

passes::PipelineTarget pipelineTargetNamed(const std::string &target) {
  return target == "cpu" ? passes::PipelineTarget::Cpu : passes::PipelineTarget::Gpu;
}

Status explainKernel(std::ostream &out, const Program &program, const KernelDecl &kernel,
                     const std::string &afterPass, passes::PipelineOptions pipeline,
                     bool changesOnly) {
  bool printed = false;
  std::vector<std::string> passNames;
  ir::Function lowered = ir::lowerKernel(program, kernel);
  std::string before = changesOnly ? ir::toString(lowered) : std::string();
  pipeline.afterPass = [&](const std::string &pass, const ir::Function &function) {
    if (std::ranges::find(passNames, pass) == passNames.end()) // simplify runs twice
      passNames.push_back(pass);
    bool shown = afterPass.empty() || pass == afterPass;
    if (!changesOnly) {
      if (shown)
        out << (printed ? "\n" : "") << "// after " << pass << "\n" << ir::toString(function);
      printed = printed || shown;
      return;
    }
    std::string now = ir::toString(function);
    if (shown) {
      std::string changes = unifiedLineDiff(before, now);
      out << (printed ? "\n" : "") << "// changes by " << pass
          << (changes.empty() ? ": none\n" : "\n") << changes;
      printed = true;
    }
    before = std::move(now);
  };
  // The passes up to a broken one are printed before its error.
  if (auto function = passes::runPipeline(std::move(lowered), pipeline); !function)
    return std::unexpected(function.error());
  if (!printed) {
    Error unknown = unknownPassError(afterPass, passNames, pipeline);
    if (pipeline.choices.kernelSchedules &&
        std::ranges::any_of(kernel.schedule, [&](const ScheduleChoice &choice) {
          return choice.name == ScheduleChoice::kSkip && choice.value == afterPass;
        }))
      unknown.message = "pass '" + afterPass + "' is not run: the @schedule of kernel '" +
                        kernel.name + "' leaves it out" +
                        unknown.message.substr(unknown.message.find(';'));
    return std::unexpected(unknown);
  }
  return {};
}

Error unknownPassError(const std::string &afterPass, const std::vector<std::string> &passNames,
                       const passes::PipelineOptions &pipeline) {
  std::string known;
  for (const std::string &name : passNames)
    known += (known.empty() ? "" : ", ") + name;
  if (std::string option = passes::passLeftOutBy(afterPass, pipeline); !option.empty())
    return Error{"pass '" + afterPass + "' is not run with " + option +
                     "; the passes run are: " + known,
                 {}};
  return Error{"no pass named '" + afterPass + "'; the passes are: " + known, {}};
}

void ExplainOptions::addTo(CLI::App &command, CommandForm form) {
  if (form == CommandForm::CommandLine) {
    command.add_option("FILE", file, "The .loop file")->required();
    command
        .add_option("--kernel", kernel,
                    "The kernel to explain (default: the last kernel of the file)")
        ->check(nonEmpty());
  } else {
    command.add_option("KERNEL", kernel, "The kernel to explain (default: the last one defined)");
  }
  command
      .add_option("--after", after,
                  "Print the IR only after this pass (with --remarks, its remarks only)")
      ->check(nonEmpty());
  CLI::Option *remarksFlag =
      command.add_flag("--remarks", remarks,
                       "Print what each optimization did or declined, and performance warnings, "
                       "located in the source, instead of the IR");
  CLI::Option *changesFlag =
      command
          .add_flag("--changes", changes,
                    "Print only what each pass changed: a unified diff of the IR against the IR "
                    "before the pass (with --after, that pass's changes)")
          ->excludes(remarksFlag);
  command
      .add_option("--target", target,
                  "The pipeline: gpu (the default) or cpu (leaves out the GPU-only passes)")
      ->check(CLI::IsMember({"cpu", "gpu"}));
  passes.addTo(command);
  command.add_option("--set", sizes,
                     "NAME=VALUE: a size's value at run time, for which the GPU engine "
                     "specializes the kernel when the size is small (repeatable)");
  command
      .add_flag("--perf", perf,
                "Print what the performance model predicts for each launch of the "
                "pipeline's kernels (--target) at the sizes --set gives (docs/perf.md)")
      ->excludes(remarksFlag)
      ->excludes(changesFlag);
  command
      .add_option("--device-model", deviceModel,
                  "The device --perf predicts for: a GPU (h100, the default, h100-pcie, "
                  "h200, a100, l4) or with --target cpu a CPU (native, the default: this "
                  "machine, measured once; epyc-2, xeon-2)")
      ->check(nonEmpty());
}

Status explainAsOptionsSay(std::ostream &out, Program &program, const ExplainOptions &options,
                           const RemarkPrinter &printRemarks) {
  Expected<const KernelDecl *> kernel = selectKernel(program, options.kernel, "explain");
  if (!kernel)
    return std::unexpected(kernel.error());
  auto choices = options.passes.choicesFor(program);
  if (!choices)
    return std::unexpected(choices.error());
  auto sizes = sizeValues(**kernel, options.sizes, options.perf);
  if (!sizes)
    return std::unexpected(sizes.error());
  if (options.perf)
    return explainPerformance(out, program, **kernel, *choices, *sizes, options.target,
                              options.deviceModel);
  passes::PipelineOptions pipeline;
  pipeline.target = pipelineTargetNamed(options.target);
  pipeline.choices = std::move(*choices);
  codegen::targetCpu(pipeline);
  for (const std::string &note : passes::choicesWithoutEffect(pipeline))
    printWarning(note);
  pipeline.specializedSizes =
      passes::sizesToSpecialize(ir::lowerKernel(program, **kernel), *sizes, pipeline);
  pipeline.runSizes = *sizes;
  if (options.remarks) {
    auto remarks = kernelRemarks(program, **kernel, pipeline, *sizes, options.after);
    if (!remarks)
      return std::unexpected(remarks.error());
    printRemarks(*remarks);
    if (remarks->empty())
      out << "no remarks for kernel '" << (*kernel)->name << "'\n";
    return {};
  }
  // Located where the pipeline refuses the program.
  return explainKernel(out, program, **kernel, options.after, pipeline, options.changes);
}

void addExplainCommand(CLI::App &app) {
  auto options = std::make_shared<ExplainOptions>();
  CLI::App *command =
      app.add_subcommand("explain", "Print a kernel's Loop IR after each compiler pass");
  options->addTo(*command, CommandForm::CommandLine);
  command->callback([options] {
    auto session = openSession(options->file);
    if (!session)
      throw CLI::RuntimeError(1);
    auto printRemarksOfFile = [&](const std::vector<passes::Remark> &remarks) {
      printRemarks(std::cout, session->diagnostics, remarks);
    };
    if (Status explained =
            explainAsOptionsSay(std::cout, *session->program, *options, printRemarksOfFile);
        !explained) {
      session->report(explained.error());
      throw CLI::RuntimeError(1);
    }
  });
}

} // namespace loopc::driver
