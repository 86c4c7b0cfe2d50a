// The loopc command line: one line per subcommand, each in its own file.
#include "driver/BenchCommand.h"
#include "driver/CheckCommand.h"
#include "driver/Cli.h"
#include "driver/CompileCommand.h"
#include "driver/ExplainCommand.h"
#include "driver/OptCommand.h"
#include "driver/ReplCommand.h"
#include "driver/RunCommand.h"
#include "driver/TuneCommand.h"
#include "support/CrashReport.h"

int main(int argc, char **argv) {
  using namespace loopc::driver;
  return runWithLargeStack([&] {
    loopc::installCrashReport();
    CLI::App app{"loopc: a compiler for parallel loop nests (.loop files)", "loopc"};
    configureApp(app);
    addCheckCommand(app);
    addRunCommand(app);
    addExplainCommand(app);
    addOptCommand(app);
    addCompileCommand(app);
    addBenchCommand(app);
    addTuneCommand(app);
    addReplCommand(app);
    return runApp(app, argc, argv);
  });
}
