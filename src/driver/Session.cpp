// The shared front half of the subcommands (see Session.h).
#include "driver/Session.h"
#include "driver/Cli.h"

#include "driver/Engines.h"
#include "driver/RemarksOutput.h"
#include "driver/Tuning.h"
#include "engine/Npy.h"
#include "frontend/Loader.h"
#include "sema/Sema.h"

#include <charconv>
#include <iostream>
#include <set>
#include <string_view>
#include <tuple>

namespace loopc::driver {

void Session::report(const Error &error) {
  diagnostics.error(error.range, error.message);
  std::cerr << diagnostics.format(diagnostics.diagnostics().back());
}

void printError(const std::string &message) { std::cerr << "loopc: error: " << message << "\n"; }

void printWarning(const std::string &message, std::ostream &out) {
  out << "loopc: warning: " << message << "\n";
}

void warnChoicesWithoutEffect(const Engine &engine, const passes::PassChoices &choices,
                              std::ostream &out) {
  if (const passes::PipelineOptions *pipeline = compilingPipeline(engine)) {
    for (const std::string &note : passes::choicesWithoutEffect(*pipeline))
      printWarning(note, out);
    return;
  }
  if (!choices.skipped.empty() || !passes::describeChangedParameters(choices.parameters).empty())
    printWarning("--device " + engine.name() +
                     " compiles nothing: --skip-pass and --pass-param change nothing there",
                 out);
}

bool checkProgramAndSchedules(Program &program, DiagnosticEngine &diagnostics) {
  return checkProgram(program, diagnostics, passes::scheduleChoiceError);
}

std::unique_ptr<Session> openSession(const std::string &path) {
  auto session = std::make_unique<Session>();
  session->program = loadProgram(path, session->sources, session->diagnostics);
  if (session->program && !checkProgramAndSchedules(*session->program, session->diagnostics))
    session->program.reset();
  session->diagnostics.print(std::cerr);
  if (!session->program || session->diagnostics.hasErrors())
    return nullptr;
  return session;
}

Expected<const KernelDecl *> selectKernel(const Program &program, const std::string &name,
                                          const std::string &verb) {
  std::string available;
  for (const auto &module : program.modules)
    for (const auto &kernel : module->kernels)
      available += (available.empty() ? "" : ", ") + kernel->name;
  if (name.empty()) {
    const Module &main = *program.modules.front();
    if (!main.kernels.empty())
      return main.kernels.back().get();
    if (available.empty())
      return makeError("the program has no kernel to " + verb);
    // A file that only imports: its kernels are all another file's.
    return makeError("the file defines no kernel of its own; choose an imported one with --kernel "
                     "(available: " +
                     available + ")");
  }
  if (const KernelDecl *kernel = program.findKernel(name))
    return kernel;
  return makeError("no kernel named '" + name +
                   "' (available: " + (available.empty() ? "none" : available) + ")");
}

InputFile parseInputFile(const std::string &value) {
  constexpr std::string_view kConvert = ":convert";
  if (value.size() > kConvert.size() && value.ends_with(kConvert))
    return {value.substr(0, value.size() - kConvert.size()), true};
  return {value, false};
}

Expected<std::pair<std::string, std::string>> splitAssignment(const std::string &text,
                                                              const std::string &option) {
  size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
    return makeError(option + " expects NAME=VALUE, got '" + text + "'");
  return std::pair{text.substr(0, equals), text.substr(equals + 1)};
}

namespace {

// "LO:HI", two whole numbers with LO < HI.
Expected<std::pair<int64_t, int64_t>> parseRandomRange(const std::string &text) {
  auto bad = [&] {
    return makeError("--random-range expects LO:HI, two whole numbers with LO < HI (e.g. 0:100), "
                     "got '" +
                     text + "'");
  };
  size_t colon = text.find(':');
  if (colon == std::string::npos)
    return bad();
  int64_t low = 0, high = 0;
  const char *end = text.data() + text.size();
  auto [lowEnd, lowError] = std::from_chars(text.data(), text.data() + colon, low);
  auto [highEnd, highError] = std::from_chars(text.data() + colon + 1, end, high);
  if (lowError != std::errc() || lowEnd != text.data() + colon || highError != std::errc() ||
      highEnd != end || low >= high)
    return bad();
  return std::pair{low, high};
}

} // namespace

void ArgumentOptions::addTo(CLI::App &command) {
  command.add_option("--set", sets, "Value of a size or scalar parameter (N=1024, alpha=0.5)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  command
      .add_option("--in", inputs,
                  "Input array from a .npy file; FILE:convert converts its elements to the "
                  "parameter's type (default: seeded random data: floats in [-1, 1), integers "
                  "in [0, 16) or --random-range, bools 50/50)")
      ->type_name("NAME=FILE[:convert]")
      ->allow_extra_args(false);
  command.add_option("--seed", seed, "Seed of the random inputs")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](const std::string &text) -> std::string {
            uint64_t value = 0;
            auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
            return error == std::errc() && end == text.data() + text.size()
                       ? ""
                       : "a seed is a whole number from 0 to 18446744073709551615, got '" + text +
                             "'";
          },
          "UINT"));
  command
      .add_option("--random-range", randomRange,
                  "Random integer inputs are drawn from [LO, HI), e.g. -8:8 (an index "
                  "array's valid range, a histogram's keys)")
      ->type_name("LO:HI")
      ->capture_default_str();
}

Expected<ArgumentRequest> ArgumentOptions::toRequest() const {
  ArgumentRequest request;
  request.seed = seed;
  auto range = parseRandomRange(randomRange);
  if (!range)
    return std::unexpected(range.error());
  std::tie(request.randomLow, request.randomHigh) = *range;
  for (const std::string &set : sets) {
    auto assignment = splitAssignment(set, "--set");
    if (!assignment)
      return std::unexpected(assignment.error());
    if (!request.values.emplace(assignment->first, assignment->second).second)
      return makeError("'" + assignment->first + "' is set twice");
  }
  for (const std::string &input : inputs) {
    auto assignment = splitAssignment(input, "--in");
    if (!assignment)
      return std::unexpected(assignment.error());
    InputFile file = parseInputFile(assignment->second);
    auto array = readNpy(file.path);
    if (!array)
      return std::unexpected(array.error());
    if (request.arrays.contains(assignment->first))
      return makeError("'" + assignment->first + "' is given twice with --in");
    request.arrays.emplace(assignment->first, std::move(*array));
    if (file.convert)
      request.convertible.insert(assignment->first);
  }
  return request;
}

void RunTargetOptions::addTo(CLI::App &command, const std::string &verb, bool passChoices,
                             CommandForm form) {
  if (form == CommandForm::CommandLine) {
    command.add_option("FILE", file, "The .loop file")->required();
    command
        .add_option("--kernel", kernel,
                    "The kernel to " + verb + " (default: the last kernel of FILE)")
        ->check(nonEmpty());
  } else {
    command.add_option("KERNEL", kernel,
                       "The kernel to " + verb + " (default: the last one defined)");
  }
  command
      .add_option("--device", device,
                  form == CommandForm::CommandLine
                      ? "interp, cpu, gpu or gpu-on-cpu (default: the best one available)"
                      : "interp, cpu, gpu or gpu-on-cpu (default: the session's, :device)")
      ->check(nonEmpty());
  arguments.addTo(command);
  if (passChoices) {
    passes.addTo(command);
    command.add_flag("--tuned", tuned,
                     "Use the optimization choices `loopc tune` kept for this kernel, these sizes "
                     "and this device (the defaults, with a note, when it kept none)");
    command.add_flag("--remarks", remarks,
                     "Print to stderr what each optimization did or declined for this run, and "
                     "performance warnings, located in the source (as `loopc explain --remarks`)");
  }
  command
      .add_option("--tuning-cache", tuningCache,
                  "The tuning cache file (default: $LOOPC_TUNING_CACHE, else "
                  "$XDG_CACHE_HOME/loopc/tuning.json, else ~/.cache/loopc/tuning.json)")
      ->check(nonEmpty());
}

void PassChoiceOptions::addTo(CLI::App &command) {
  std::string skippable;
  for (const std::string &pass : passes::optimizationPasses())
    skippable += (skippable.empty() ? "" : ", ") + pass;
  command.add_option("--skip-pass", skippedPasses,
                     "Leave this optimization pass out (repeatable), to measure what it brings: " +
                         skippable);
  std::string sizable;
  for (const auto &[name, value] : passes::namedParameters({}))
    sizable += (sizable.empty() ? "" : ", ") + name;
  command.add_option("--pass-param", parameters,
                     "NAME=VALUE: size an optimization otherwise (repeatable): " + sizable +
                         " (docs/tuning.md)");
  command.add_flag("--bounds-check", boundsCheck,
                   "Check every array index not proven in range (the default): one out of range "
                   "is a located error, not a wild access (`explain --remarks` lists the checks "
                   "kept)");
  addUnsafeTo(command);
  addFpContractTo(command);
}

void PassChoiceOptions::addFpContractTo(CLI::App &command) {
  command
      .add_option("--fp-contract", fpContract,
                  "on: a * b + c on floats is one fused multiply-add, rounded once (the "
                  "default); off: every product is rounded before it is added, as C's "
                  "-ffp-contract=off (for kernels without @fp_contract; docs/language.md)")
      ->check(CLI::IsMember({"on", "off"}));
}

void PassChoiceOptions::applyFpContract(Program &program) const {
  FpContract mode = fpContract == "off" ? FpContract::Off : FpContract::On;
  for (const auto &module : program.modules)
    for (const auto &kernel : module->kernels)
      if (!kernel->fpContractWritten)
        kernel->fpContract = mode;
}

void PassChoiceOptions::addUnsafeTo(CLI::App &command) {
  command.add_flag("--unsafe", unsafe,
                   "Leave array indices unchecked in the generated code: an index out of range "
                   "is then a wild access, not an error (for the last few percent where the "
                   "checks kept cost; docs/language.md, \"Run-time errors\")");
}

Expected<passes::PassChoices> PassChoiceOptions::choicesFor(Program &program) const {
  Expected<passes::PassChoices> choices = toChoices();
  if (choices)
    applyFpContract(program);
  return choices;
}

Expected<passes::PassChoices> PassChoiceOptions::toChoices() const {
  if (boundsCheck && unsafe)
    return makeError("--bounds-check and --unsafe contradict each other: give one");
  passes::PassChoices choices;
  choices.skipped = {skippedPasses.begin(), skippedPasses.end()};
  choices.boundsChecks = !unsafe;
  std::set<std::string> named;
  for (const std::string &parameter : parameters) {
    if (Status set = passes::setPassParameter(choices.parameters, parameter); !set)
      return std::unexpected(set.error());
    // As for --set, one value per name.
    if (!named.insert(parameter.substr(0, parameter.find('='))).second)
      return makeError("pass parameter '" + parameter.substr(0, parameter.find('=')) +
                       "' is given twice with --pass-param");
  }
  choices.parametersGiven = std::move(named);
  return choices;
}

bool isTunable(const Engine &engine) { return engine.kind() == "gpu" || engine.kind() == "cpu"; }

namespace {

// Replaces `run`'s engine by one with the choices kept for it, if any.
Status useTunedChoices(const RunTargetOptions &options, PreparedRun &run, std::ostream &notes) {
  if (!options.passes.skippedPasses.empty() || !options.passes.parameters.empty())
    return makeError("--tuned chooses the optimizations itself: it takes no --skip-pass or "
                     "--pass-param");
  if (!isTunable(*run.engine))
    return makeError("--tuned: nothing is tuned on device '" +
                     (options.device.empty() ? run.engine->name() : options.device) +
                     "': run on gpu or cpu");
  std::string path = tuningCachePath(options.tuningCache);
  TuningKey key = tuningKey(run.session->sources, *run.kernel, run.args, run.engine->device(),
                            run.choices.boundsChecks);
  auto found = findTunedChoice(path, key);
  if (!found)
    return std::unexpected(found.error());
  if (!*found) {
    notes << "loopc: note: no tuned choices in " << path << " for kernel '" << key.kernel
          << "' at these sizes on " << key.device
          << "; using the defaults (loopc tune with the same arguments keeps some)\n";
    return {};
  }
  (*found)->choices.boundsChecks = run.choices.boundsChecks;
  auto engine = createEngine(run.engine->kind(), (*found)->choices);
  if (!engine)
    return std::unexpected(engine.error());
  run.engine = std::move(*engine);
  run.choices = (*found)->choices;
  std::cerr << "loopc: using the tuned choices in " << path << ": "
            << describeChoices((*found)->choices) << "\n";
  return {};
}

// `--remarks`: those of the pipeline the engine compiles the kernel with, at
// the run's sizes; false when the pipeline refuses the program.
bool printRunRemarks(PreparedRun &run) {
  const passes::PipelineOptions *pipeline = compilingPipeline(*run.engine);
  if (!pipeline) {
    std::cerr << "loopc: note: --remarks: the " << run.engine->name()
              << " engine runs no optimization passes\n";
    return true;
  }
  auto remarks = kernelRemarks(*run.session->program, *run.kernel, *pipeline, run.args.sizes);
  if (!remarks) {
    run.session->report(remarks.error());
    return false;
  }
  printRemarks(std::cerr, run.session->diagnostics, *remarks);
  return true;
}

} // namespace

Expected<PreparedRun> prepareRunIn(Session &session, const RunTargetOptions &options,
                                   std::ostream &notes) {
  PreparedRun run;
  run.session = &session;
  auto choices = options.passes.choicesFor(*session.program);
  if (!choices)
    return std::unexpected(choices.error());
  run.choices = *choices;
  auto selected = selectKernel(*session.program, options.kernel);
  if (!selected)
    return std::unexpected(selected.error());
  run.kernel = *selected;
  auto request = options.arguments.toRequest();
  if (!request)
    return std::unexpected(request.error());
  auto args = bindKernelArguments(*run.kernel, *request);
  if (!args)
    return std::unexpected(args.error());
  run.args = std::move(*args);
  auto engine = options.device.empty() ? createDefaultEngine(run.choices)
                                       : createEngine(options.device, run.choices);
  if (!engine)
    return std::unexpected(engine.error());
  run.engine = std::move(*engine);
  warnChoicesWithoutEffect(*run.engine, run.choices, notes);
  if (options.tuned)
    if (Status tuned = useTunedChoices(options, run, notes); !tuned)
      return std::unexpected(tuned.error());
  return run;
}

std::optional<PreparedRun> prepareRun(const RunTargetOptions &options) {
  std::unique_ptr<Session> session = openSession(options.file);
  if (!session)
    return std::nullopt;
  auto run = prepareRunIn(*session, options);
  if (!run) {
    session->report(run.error());
    return std::nullopt;
  }
  run->ownedSession = std::move(session);
  if (options.remarks && !printRunRemarks(*run))
    return std::nullopt;
  return std::move(*run);
}

} // namespace loopc::driver
