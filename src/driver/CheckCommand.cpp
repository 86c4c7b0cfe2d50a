// `loopc check`: the checker alone, for editors and scripts. Exit status 0
// when every file is free of errors, 1 otherwise; all files are checked even
// after one fails, so one run reports everything.
#include "driver/CheckCommand.h"

#include "driver/Session.h"

#include <iostream>
#include <memory>

namespace loopc::driver {

namespace {

struct CheckOptions {
  std::vector<std::string> files;
};

int runCheck(const CheckOptions &options) {
  int exitCode = 0;
  for (const std::string &file : options.files) {
    auto session = openSession(file);
    if (!session) {
      exitCode = 1;
      continue;
    }
    size_t kernelCount = 0;
    for (const auto &module : session->program->modules)
      kernelCount += module->kernels.size();
    std::cout << file << ": ok (" << kernelCount << " kernel" << (kernelCount == 1 ? "" : "s")
              << ")\n";
  }
  return exitCode;
}

} // namespace

void addCheckCommand(CLI::App &app) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App *command = app.add_subcommand("check", "Check programs for errors without running them");
  command->add_option("FILE", options->files, "The .loop files to check")->required();
  command->callback([options] {
    if (int exitCode = runCheck(*options))
      throw CLI::RuntimeError(exitCode);
  });
}

} // namespace loopc::driver
