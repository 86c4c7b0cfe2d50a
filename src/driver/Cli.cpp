// Top-level error handling of the loopc command line (see Cli.h).
#include "driver/Cli.h"

#include "driver/Session.h"
#include "driver/Version.h"

#include <pthread.h>

#include <charconv>
#include <iostream>
#include <new>

namespace loopc::driver {

void configureApp(CLI::App &app) {
  app.require_subcommand(1);
  app.set_version_flag("--version", versionReport,
                       "Print loopc's version and commit, its LLVM, and the GPU it finds");
  app.failure_message([](const CLI::App *, const CLI::Error &error) {
    return "loopc: error: " + std::string(error.what()) + " (see --help)\n";
  });
}

CLI::Validator nonEmpty() {
  return CLI::Validator(
      [](const std::string &value) { return value.empty() ? "needs a value, got ''" : ""; },
      "TEXT");
}

CLI::Validator wholeNumberIn(int64_t min, int64_t max) {
  std::string range = std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](const std::string &text) -> std::string {
        int64_t value = 0;
        auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error == std::errc::invalid_argument || end != text.data() + text.size())
          return "'" + text + "' is not a whole number (expected " + range + ")";
        if (error != std::errc() || value < min || value > max)
          return text + " is out of range (expected " + range + ")";
        return "";
      },
      "INT in [" + range + "]");
}

int runApp(CLI::App &app, int argc, char **argv) {
  if (argc == 1) { // `loopc` alone: what it can do
    std::cerr << app.help();
    return 2;
  }
  // CLI11 would answer a misspelt command with "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::string commands;
    bool known = false;
    for (const CLI::App *command : app.get_subcommands([](const CLI::App *) { return true; })) {
      known |= command->get_name() == argv[1];
      commands += (commands.empty() ? "" : ", ") + command->get_name();
    }
    if (!known) {
      printError("unknown command '" + std::string(argv[1]) + "' (the commands are " + commands +
                 "; see --help)");
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
    return 0;
  } catch (const CLI::ParseError &error) {
    // --help exits with 0 and a failed subcommand with its own status
    // (RuntimeError); every usage error exits with 2, as is customary.
    int exitCode = app.exit(error);
    return exitCode == 0 || error.get_name() == "RuntimeError" ? exitCode : 2;
  } catch (const std::bad_alloc &) {
    printError("out of memory");
  } catch (const std::exception &error) {
    printError(std::string("internal error: ") + error.what());
  }
  return 1;
}

int runWithLargeStack(const std::function<int()> &body) {
  constexpr size_t kStackBytes = size_t{1} << 30;
  struct Call {
    const std::function<int()> &body;
    int result = 1;
  } call{body};
  auto entry = [](void *argument) -> void * {
    auto *pending = static_cast<Call *>(argument);
    pending->result = pending->body();
    return nullptr;
  };
  pthread_attr_t attributes;
  pthread_t thread;
  bool started = pthread_attr_init(&attributes) == 0 &&
                 pthread_attr_setstacksize(&attributes, kStackBytes) == 0 &&
                 pthread_create(&thread, &attributes, entry, &call) == 0;
  pthread_attr_destroy(&attributes);
  if (!started) // no room for the stack: run on this one, nesting bounded as ever
    return body();
  pthread_join(thread, nullptr);
  return call.result;
}

} // namespace loopc::driver
