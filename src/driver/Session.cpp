// The shared front half of the subcommands (see Session.h).
#include "driver/Session.h"

#include "driver/Engines.h"
#include "engine/Npy.h"
#include "frontend/Loader.h"
#include "sema/Sema.h"

#include <iostream>

namespace loopc::driver {

void Session::report(const Error &error) {
  diagnostics.error(error.range, error.message);
  std::cerr << diagnostics.format(diagnostics.diagnostics().back());
}

void printError(const std::string &message) { std::cerr << "loopc: error: " << message << "\n"; }

std::unique_ptr<Session> openSession(const std::string &path) {
  auto session = std::make_unique<Session>();
  session->program = loadProgram(path, session->sources, session->diagnostics);
  if (session->program && !checkProgram(*session->program, session->diagnostics))
    session->program.reset();
  session->diagnostics.print(std::cerr);
  if (!session->program || session->diagnostics.hasErrors())
    return nullptr;
  return session;
}

Expected<const KernelDecl *> selectKernel(const Program &program, const std::string &name) {
  if (name.empty()) {
    const Module &main = *program.modules.front();
    if (main.kernels.empty())
      return makeError("the program has no kernel to run");
    return main.kernels.back().get();
  }
  if (const KernelDecl *kernel = program.findKernel(name))
    return kernel;
  std::string available;
  for (const auto &module : program.modules)
    for (const auto &kernel : module->kernels)
      available += (available.empty() ? "" : ", ") + kernel->name;
  return makeError("no kernel named '" + name +
                   "' (available: " + (available.empty() ? "none" : available) + ")");
}

Expected<std::pair<std::string, std::string>> splitAssignment(const std::string &text,
                                                              const std::string &option) {
  size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
    return makeError(option + " expects NAME=VALUE, got '" + text + "'");
  return std::pair{text.substr(0, equals), text.substr(equals + 1)};
}

void ArgumentOptions::addTo(CLI::App &command) {
  command.add_option("--set", sets, "Value of a size or scalar parameter (N=1024, alpha=0.5)")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  command.add_option("--in", inputs, "Input array from a .npy file (default: seeded random data)")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false);
  command.add_option("--seed", seed, "Seed of the random inputs")->capture_default_str();
}

Expected<ArgumentRequest> ArgumentOptions::toRequest() const {
  ArgumentRequest request;
  request.seed = seed;
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
    auto array = readNpy(assignment->second);
    if (!array)
      return std::unexpected(array.error());
    if (request.arrays.contains(assignment->first))
      return makeError("'" + assignment->first + "' is given twice with --in");
    request.arrays.emplace(assignment->first, std::move(*array));
  }
  return request;
}

void RunTargetOptions::addTo(CLI::App &command, const std::string &verb) {
  command.add_option("FILE", file, "The .loop file")->required();
  command.add_option("--kernel", kernel,
                     "The kernel to " + verb + " (default: the last kernel of FILE)");
  command.add_option("--device", device, "interp, cpu or gpu (default: the best one available)");
  arguments.addTo(command);
}

std::optional<PreparedRun> prepareRun(const RunTargetOptions &options) {
  PreparedRun run;
  run.session = openSession(options.file);
  if (!run.session)
    return std::nullopt;
  Session &session = *run.session;
  auto kernel = selectKernel(*session.program, options.kernel);
  if (!kernel) {
    session.report(kernel.error());
    return std::nullopt;
  }
  run.kernel = *kernel;
  auto request = options.arguments.toRequest();
  if (!request) {
    session.report(request.error());
    return std::nullopt;
  }
  auto args = bindKernelArguments(*run.kernel, *request);
  if (!args) {
    session.report(args.error());
    return std::nullopt;
  }
  run.args = std::move(*args);
  auto engine = options.device.empty() ? createDefaultEngine() : createEngine(options.device);
  if (!engine) {
    session.report(engine.error());
    return std::nullopt;
  }
  run.engine = std::move(*engine);
  return run;
}

} // namespace loopc::driver
