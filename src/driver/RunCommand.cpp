// `loopc run`: the whole path from a file to results. Inputs not given are
// seeded random data, so `--check` (and any two engines) see identical
// inputs: the reference run gets a copy of the arguments taken before the
// kernel runs.
#include "driver/RunCommand.h"

#include "driver/Cli.h"
#include "driver/Engines.h"
#include "driver/OutputPaths.h"
#include "driver/Session.h"
#include "engine/Compare.h"
#include "engine/Npy.h"
#include "engine/Summary.h"
#include "interp/Interpreter.h"
#include "lower/Lower.h"
#include "passes/analysis/WorkCount.h"
#include "support/AtomicFile.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

namespace loopc::driver {

namespace {

struct RunOptions {
  RunTargetOptions target;
  RunOutputOptions run;
};

// Writes each input of the run (in and inout parameters, arrays and scalars,
// as given or drawn at random) to folder/NAME.npy, which `--in NAME=...`
// reads back: a user without NumPy can keep and edit a run's inputs.
Status saveInputs(const std::string &folder, const KernelDecl &kernel, const KernelArgs &args) {
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (error)
    return makeError("--save-inputs " + folder + ": cannot make the folder: " + error.message());
  for (size_t position = 0; position < kernel.params.size(); ++position) {
    const VarDecl &param = *kernel.params[position];
    if (param.intent == Intent::Out)
      continue;
    std::string path = (std::filesystem::path(folder) / (param.name + ".npy")).string();
    if (Status written = writeNpy(path, args.params[position]); !written)
      return written;
  }
  return {};
}

bool isOutput(const VarDecl &param) {
  return param.intent == Intent::Out || param.intent == Intent::InOut;
}

// Whether `path` can be written, checked before the kernel runs: a folder,
// a missing folder or one without write permission, with the system's reason.
Status checkWritable(const std::string &path) {
  std::error_code error;
  std::filesystem::path file(path);
  if (std::filesystem::is_directory(file, error))
    return makeError("cannot write '" + path + "': it is a directory");
  std::filesystem::path folder = file.parent_path().empty() ? "." : file.parent_path();
  bool exists = std::filesystem::exists(file, error);
  if (::access(exists ? file.c_str() : folder.c_str(), W_OK) != 0)
    return makeError("cannot write '" + path + "': " + std::strerror(errno));
  return {};
}

// Out and inout parameters by position, each with the file to write, if any.
// No file may be one of `inputs` or another output's.
Expected<std::vector<std::pair<size_t, std::string>>>
selectOutputs(const KernelDecl &kernel, const std::vector<std::string> &outputFiles,
              const std::vector<PathUse> &inputs) {
  std::map<std::string, std::string> files;
  std::vector<PathUse> uses;
  for (const std::string &text : outputFiles) {
    auto assignment = splitAssignment(text, "--out");
    if (!assignment)
      return std::unexpected(assignment.error());
    auto it = std::ranges::find_if(
        kernel.params, [&](const VarDeclPtr &param) { return param->name == assignment->first; });
    if (it == kernel.params.end() || !isOutput(**it))
      return makeError("'" + assignment->first + "' is not an out or inout parameter of kernel '" +
                       kernel.name + "'");
    if (assignment->second == "-")
      return makeError("--out " + text +
                       ": outputs are written to .npy files, not to standard output; name a "
                       "file (--out " +
                       assignment->first + "=" + assignment->first + ".npy)");
    if (!files.emplace(assignment->first, assignment->second).second)
      return makeError("'" + assignment->first + "' is given twice with --out");
    if (Status writable = checkWritable(assignment->second); !writable)
      return std::unexpected(writable.error());
    uses.push_back({assignment->second, "--out " + text});
  }
  if (Status distinct = checkDistinctOutputs(inputs, uses); !distinct)
    return std::unexpected(distinct.error());
  std::vector<std::pair<size_t, std::string>> outputs;
  for (size_t position = 0; position < kernel.params.size(); ++position) {
    const VarDecl &param = *kernel.params[position];
    if (isOutput(param))
      outputs.emplace_back(position, files.contains(param.name) ? files[param.name] : "");
  }
  return outputs;
}

// The interpreter is the oracle, but it runs about 4e7 operations a second:
// beyond this much work (flops plus elements moved) it would take minutes, so
// the CPU JIT, itself tested against the interpreter on every sample, checks
// instead, unless it is the engine under test.
constexpr double kInterpreterWorkLimit = 5e8;
constexpr double kInterpreterOperationsPerSecond = 4e7;
// A check expected to take longer than this says so before it starts.
constexpr double kAnnouncedCheckSeconds = 1;

// The engine that checks `run`'s results (see RunOptions::reference), chosen
// before the kernel runs: a check against the engine under test itself
// cannot fail, and is refused naming what the user typed.
Expected<std::unique_ptr<Engine>> selectReference(const Program &program, const KernelDecl &kernel,
                                                  const Engine &engine, const KernelArgs &inputs,
                                                  const std::string &reference) {
  std::string name = reference;
  if (reference == "auto") {
    passes::WorkCount work =
        passes::countWork(ir::lowerKernel(program, kernel), integerValues(kernel, inputs));
    name = autoReferenceEngine(work.flops + work.bytes / 4, engine.kind());
  }
  if (name == engine.kind()) {
    std::string other = name == "interp" ? "cpu" : "interp";
    if (reference == "auto")
      return makeError("--check on --device " + name + " would compare the " +
                       (name == "interp" ? "interpreter" : name + " engine") +
                       " with itself: give --reference " + other);
    return makeError("--reference " + name +
                     " is the engine under test: a check against itself cannot fail; use "
                     "--reference " +
                     other);
  }
  // Checked, as by default: an index out of range is reported, not compared.
  passes::PassChoices checked;
  checked.boundsChecks = true;
  return createEngine(name, checked);
}

// Runs the reference engine on `inputs` and compares every output with
// `results`; false on a mismatch, which it prints to `out`.
Expected<bool> checkOutputs(const Program &program, const KernelDecl &kernel,
                            const KernelArgs &results, Engine &reference, KernelArgs inputs,
                            const std::vector<std::pair<size_t, std::string>> &outputs,
                            std::ostream &out) {
  std::string referenceName =
      reference.kind() == "interp" ? "the interpreter" : "the " + reference.name() + " engine";
  if (reference.kind() == "interp") {
    passes::WorkCount work =
        passes::countWork(ir::lowerKernel(program, kernel), integerValues(kernel, inputs));
    double seconds = (work.flops + work.bytes / 4) / kInterpreterOperationsPerSecond;
    if (seconds >= kAnnouncedCheckSeconds) {
      std::ostringstream estimate;
      estimate << std::setprecision(2) << seconds;
      std::cerr << "loopc: --check: the interpreter runs the kernel again to compare, about "
                << estimate.str() << " s at these sizes (--reference cpu compares in less)\n";
      // On a terminal, how far it is, on one line rewritten in place.
      if (auto *interpreter = dynamic_cast<Interpreter *>(&reference);
          interpreter && isatty(STDERR_FILENO))
        interpreter->setProgress([](double fraction) {
          if (fraction < 1)
            std::cerr << "\rloopc: --check: the interpreter is " << static_cast<int>(fraction * 100)
                      << "% through the kernel" << std::flush;
          else
            std::cerr << "\r" << std::string(60, ' ') << "\r" << std::flush;
        });
    }
  }
  auto stats = reference.run(program, kernel, inputs);
  if (!stats) {
    Error error = stats.error();
    error.message = "--check: " + referenceName + " failed: " + error.message;
    return std::unexpected(error);
  }
  CompareOptions options = compareOptionsFor(kernel, inputs);
  options.reductionLength = std::max(options.reductionLength, stats->combinesRun);
  bool allMatch = true;
  for (const auto &[position, file] : outputs) {
    const std::string &name = kernel.params[position]->name;
    CompareReport report =
        compareArrays(inputs.params[position], results.params[position], options);
    if (!report.matches) {
      out << "MISMATCH " << report.describe(name) << "\n";
      allMatch = false;
    }
  }
  if (allMatch)
    out << "PASS: " << outputs.size() << " output" << (outputs.size() == 1 ? "" : "s")
        << (outputs.size() == 1 ? " matches " : " match ") << referenceName << "\n";
  return allMatch;
}

int runKernel(const RunOptions &options) {
  std::optional<PreparedRun> run = prepareRun(options.target);
  if (!run)
    return 1;
  Session &session = *run->session;
  std::vector<PathUse> inputFiles = sourceFileUses(session.sources);
  for (const std::string &input : options.target.arguments.inputs)
    if (auto assignment = splitAssignment(input, "--in"))
      inputFiles.push_back({parseInputFile(assignment->second).path, "--in " + input});
  auto matched = runBoundKernel(options.run, *session.program, *run->kernel, run->args,
                                *run->engine, inputFiles, std::cout, "--repeat N");
  if (!matched) {
    session.report(matched.error());
    return 1;
  }
  return *matched ? 0 : 1;
}

} // namespace

void RunOutputOptions::addTo(CLI::App &command) {
  command
      .add_option("--out", outputs,
                  "Write an output array to a .npy file (every --out file is written whole "
                  "or, if one fails, none is changed)")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false);
  command
      .add_option("--save-inputs", saveInputs,
                  "Write the inputs of the run (given or random) to DIR/NAME.npy, for --in")
      ->type_name("DIR")
      ->check(nonEmpty());
  CLI::Option *checkFlag = command.add_flag(
      "--check", check,
      "Compare every output with the reference interpreter's, or the CPU JIT's for work too "
      "large for the interpreter (exit 1 if any differ)");
  command
      .add_option("--reference", reference,
                  "The engine --check compares with: interp, cpu, or auto (the interpreter, or "
                  "the CPU JIT beyond 5e8 operations when it is not the engine under test)")
      ->check(CLI::IsMember({"auto", "interp", "cpu"}))
      ->capture_default_str()
      ->needs(checkFlag);
  command.add_flag("--quiet", quiet, "Print no summaries or timing");
  command
      .add_option("--repeat", repeat,
                  "Run the kernel N times from the same inputs and report the median time")
      ->type_name("N")
      ->check(wholeNumberIn(1, 1000000));
}

Expected<bool> runBoundKernel(const RunOutputOptions &options, const Program &program,
                              const KernelDecl &kernel, KernelArgs &args, Engine &engine,
                              const std::vector<PathUse> &inputFiles, std::ostream &out,
                              const std::string &steadyState) {
  auto outputs = selectOutputs(kernel, options.outputs, inputFiles);
  if (!outputs)
    return std::unexpected(outputs.error());
  std::unique_ptr<Engine> reference;
  if (options.check) {
    auto selected = selectReference(program, kernel, engine, args, options.reference);
    if (!selected)
      return std::unexpected(selected.error());
    reference = std::move(*selected);
  }
  if (!options.saveInputs.empty())
    if (Status saved = saveInputs(options.saveInputs, kernel, args); !saved)
      return std::unexpected(saved.error());
  std::optional<KernelArgs> inputs;
  if (options.check || options.repeat > 1)
    inputs = args;
  auto times = timeRuns(engine, program, kernel, args, inputs, options.repeat);
  if (!times)
    return std::unexpected(times.error());
  if (!options.quiet)
    printRunReport(out, kernel, args, engine.name(), medianOf(*times), options.repeat, steadyState);
  // Every output file is written whole or none is: each goes to its
  // temporary first, and the temporaries replace the files once all are
  // written (support/AtomicFile.h).
  std::vector<std::string> paths;
  std::vector<size_t> positions;
  for (const auto &[position, file] : *outputs)
    if (!file.empty()) {
      paths.push_back(file);
      positions.push_back(position);
    }
  if (Status written = writeFilesAtomically(
          paths, [&](size_t i) { return encodeNpy(args.params[positions[i]]); });
      !written)
    return std::unexpected(written.error());
  if (!reference)
    return true;
  return checkOutputs(program, kernel, args, *reference, std::move(*inputs), *outputs, out);
}

std::string autoReferenceEngine(double operations, const std::string &engineUnderTest) {
  return operations <= kInterpreterWorkLimit || engineUnderTest == "cpu" ? "interp" : "cpu";
}

Expected<std::vector<double>> timeRuns(Engine &engine, const Program &program,
                                       const KernelDecl &kernel, KernelArgs &args,
                                       const std::optional<KernelArgs> &inputs, int repeat) {
  std::vector<double> seconds;
  for (int run = 0; run < repeat; ++run) {
    if (run > 0)
      args = *inputs;
    auto stats = engine.run(program, kernel, args);
    if (!stats)
      return std::unexpected(stats.error());
    seconds.push_back(stats->seconds);
  }
  std::ranges::sort(seconds);
  return seconds;
}

double medianOf(const std::vector<double> &sortedSeconds) {
  if (sortedSeconds.empty())
    return 0;
  size_t middle = sortedSeconds.size() / 2;
  return sortedSeconds.size() % 2 ? sortedSeconds[middle]
                                  : (sortedSeconds[middle - 1] + sortedSeconds[middle]) / 2;
}

std::string formatMilliseconds(double seconds) {
  double milliseconds = seconds * 1e3;
  int decimals = 3;
  if (milliseconds > 0 && milliseconds < 0.1)
    decimals = 2 - static_cast<int>(std::floor(std::log10(milliseconds)));
  std::ostringstream text;
  text << std::fixed << std::setprecision(decimals) << milliseconds;
  return text.str();
}

void printRunReport(std::ostream &out, const KernelDecl &kernel, const KernelArgs &args,
                    const std::string &device, double seconds, int repeat,
                    const std::string &steadyState) {
  for (size_t position = 0; position < kernel.params.size(); ++position)
    if (isOutput(*kernel.params[position]))
      out << summarizeArray(kernel.params[position]->name, args.params[position]) << "\n";
  out << "kernel '" << kernel.name << "' ran on " << device << " in " << formatMilliseconds(seconds)
      << " ms";
  if (repeat > 1)
    out << " (median of " << repeat << " runs)";
  else
    out << " (one run, the first: it includes warming up; " << steadyState
        << " for the steady state)";
  out << "\n";
}

void addRunCommand(CLI::App &app) {
  auto options = std::make_shared<RunOptions>();
  CLI::App *command = app.add_subcommand("run", "Run a kernel and summarize its outputs");
  options->target.addTo(*command, "run");
  options->run.addTo(*command);
  command->callback([options] {
    if (int exitCode = runKernel(*options))
      throw CLI::RuntimeError(exitCode);
  });
}

} // namespace loopc::driver
