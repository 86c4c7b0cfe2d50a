// `loopc check`: the checker alone, for editors and scripts. Exit status 0
// when every file is free of errors, 1 otherwise; all files are checked even
// after one fails, so one run reports everything. With --describe, the
// kernels' signatures as one JSON document instead of the "ok" lines, printed
// only when every file is free of errors.
#include "driver/CheckCommand.h"

#include "driver/Session.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

namespace loopc::driver {

namespace {

struct CheckOptions {
  std::vector<std::string> files;
  bool describe = false;
};

// A kernel's signature: its parameters in order (intent, element type, and
// for an array its extents as written, in the kernel's sizes), the sizes a
// run binds from the arrays or --set, and how it is compiled as it says
// (`unsafe`, `@fp_contract`).
nlohmann::json describeKernel(const KernelDecl &kernel, const SourceManager &sources) {
  nlohmann::json parameters = nlohmann::json::array();
  for (const VarDeclPtr &param : kernel.params) {
    nlohmann::json shape = nlohmann::json::array();
    for (const ExprPtr &extent : param->type.dims)
      shape.push_back(sources.text(extent->range));
    parameters.push_back(
        {{"name", param->name},
         {"intent", param->intent == Intent::None ? "value" : intentName(param->intent)},
         {"type", scalarTypeName(param->type.element)},
         {"shape", shape}});
  }
  nlohmann::json sizes = nlohmann::json::array();
  for (const VarDeclPtr &size : kernel.sizes)
    sizes.push_back(size->name);
  nlohmann::json schedule = nlohmann::json::array();
  for (const ScheduleChoice &choice : kernel.schedule)
    schedule.push_back(choice.name + "=" + choice.value);
  return {{"name", kernel.name},
          {"location", sources.location(kernel.nameRange)},
          {"parameters", parameters},
          {"sizes", sizes},
          {"unsafe", kernel.isUnsafe},
          {"fp_contract", kernel.fpContract == FpContract::Off ? "off" : "on"},
          {"schedule", schedule}};
}

int runCheck(const CheckOptions &options) {
  int exitCode = 0;
  nlohmann::json files = nlohmann::json::array();
  for (const std::string &file : options.files) {
    auto session = openSession(file);
    if (!session) {
      exitCode = 1;
      continue;
    }
    size_t kernelCount = 0;
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto &module : session->program->modules) {
      kernelCount += module->kernels.size();
      for (const auto &kernel : module->kernels)
        kernels.push_back(describeKernel(*kernel, session->sources));
    }
    if (options.describe)
      files.push_back({{"file", file}, {"kernels", kernels}});
    else
      std::cout << file << ": ok (" << kernelCount << " kernel" << (kernelCount == 1 ? "" : "s")
                << ")\n";
  }
  if (options.describe && exitCode == 0)
    std::cout << nlohmann::json{{"files", files}}.dump(2) << "\n";
  return exitCode;
}

} // namespace

void addCheckCommand(CLI::App &app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App *command = app.add_subcommand("check", "Check programs for errors without running them");
  command->add_option("FILE", options->files, "The .loop files to check")->required();
  command->add_flag(
      "--describe", options->describe,
      "Print each kernel's signature as JSON (parameters with intent, type and shape; "
      "sizes; attributes and schedule) instead of the ok lines, when every file is free of "
      "errors");
  command->callback([options] {
    if (int exitCode = runCheck(*options))
      throw CLI::RuntimeError(exitCode);
  });
}

} // namespace loopc::driver
