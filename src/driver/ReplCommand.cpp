// `loopc repl` (see ReplCommand.h): picks where lines come from and hands
// them to the session. libedit is optional (LOOPC_HAVE_LIBEDIT): the static
// build, which must not need libraries beyond libc, leaves it out.
#include "driver/ReplCommand.h"

#include "driver/Cli.h"
#include "driver/Engines.h"
#include "driver/Repl.h"
#include "support/Interrupt.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <poll.h>
#include <unistd.h>

#if LOOPC_HAVE_LIBEDIT
#include <editline/readline.h>
#endif

namespace loopc::driver {

namespace {

struct ReplOptions {
  std::string file;
  std::string device;
  bool keepGoing = false; // a script goes on after a failed input
};

#if LOOPC_HAVE_LIBEDIT
constexpr int kHistoryLines = 1000;
constexpr unsigned char kControlC = 3;
constexpr int kInterruptPollMilliseconds = 50;

// Lines from the terminal through libedit, each one kept in the history,
// which is read from and written back to ~/.loopc_history.
class EditLineSource : public LineSource {
public:
  explicit EditLineSource(const Repl &repl) {
    completing = &repl;
    rl_attempted_completion_function = complete;
    // Ctrl-C reaches the session's handler, not libedit's (which would put
    // the terminal back in line mode and read on), and ends the wait.
    rl_catch_signals = 0;
    rl_getc_function = readKey;
    rl_initialize();
    if (const char *home = std::getenv("HOME"))
      historyPath_ = std::string(home) + "/.loopc_history";
    using_history();
    stifle_history(kHistoryLines);
    if (!historyPath_.empty())
      read_history(historyPath_.c_str());
  }

  std::optional<std::string> readLine(const std::string &prompt) override {
    char *text = readline(prompt.c_str());
    if (!text)
      return std::nullopt;
    std::string line = text;
    std::free(text);
    return line;
  }

  // Kept whole: a definition typed over several lines comes back as one.
  void remember(const std::string &input) override {
    add_history(input.c_str());
    if (!historyPath_.empty())
      write_history(historyPath_.c_str());
  }

private:
  // A key from the terminal; end of input once Ctrl-C is pressed, so that
  // readline returns and the session drops the line (Repl::run). The wait
  // polls: the signal may be delivered to another thread than this one,
  // whose read it would not interrupt.
  static int readKey(FILE *) {
    for (;;) {
      if (interruptRequested())
        return EOF;
      pollfd terminal = {STDIN_FILENO, POLLIN, 0};
      int ready = poll(&terminal, 1, kInterruptPollMilliseconds);
      if (ready == 0 || (ready < 0 && errno == EINTR))
        continue;
      unsigned char key = 0;
      if (ready < 0 || read(STDIN_FILENO, &key, 1) != 1)
        return EOF;
      // Ctrl-C read as a key, where the terminal's signals are off.
      if (key == kControlC) {
        Repl::interrupt();
        return EOF;
      }
      return key;
    }
  }

  // Tab: what the session says may complete the word before the cursor
  // (Repl::completions); where it says nothing, file names.
  static char **complete(const char *word, int start, int) {
    std::string line(rl_line_buffer, rl_line_buffer + start);
    std::vector<std::string> candidates = completing->completions(line, word);
    if (candidates.empty())
      return nullptr;
    rl_attempted_completion_over = 1;
    // readline's form: the longest common prefix, then each match.
    std::string common = candidates.front();
    for (const std::string &candidate : candidates)
      while (!candidate.starts_with(common))
        common.pop_back();
    auto **matches = static_cast<char **>(std::malloc((candidates.size() + 2) * sizeof(char *)));
    matches[0] = strdup(common.c_str());
    for (size_t i = 0; i < candidates.size(); ++i)
      matches[i + 1] = strdup(candidates[i].c_str());
    matches[candidates.size() + 1] = nullptr;
    return matches;
  }

  static inline const Repl *completing = nullptr;
  std::string historyPath_;
};
#endif

int runRepl(const ReplOptions &options) {
  // A device this machine lacks is refused at the start, not at the first run.
  if (!options.device.empty())
    if (auto engine = createEngine(options.device); !engine) {
      printError(engine.error().message);
      return 1;
    }
  Repl repl(std::cout, std::cerr);
  repl.setDefaultDevice(options.device);
  if (!options.file.empty())
    repl.loadFile(options.file);
  if (!isatty(STDIN_FILENO)) {
    // A script: it stops at its first failure unless told to go on, and
    // either way exits 1 when one failed.
    StreamLineSource script(std::cin);
    repl.stopAtFailure(!options.keepGoing);
    repl.run(script);
    return repl.failures() ? 1 : 0;
  }
  // Ctrl-C stops a run, or drops the line being typed, and the session goes
  // on (the handler does not restart the terminal's read, which returns).
  struct sigaction onInterrupt = {};
  onInterrupt.sa_handler = [](int) { Repl::interrupt(); };
  sigemptyset(&onInterrupt.sa_mask);
  sigaction(SIGINT, &onInterrupt, nullptr);
  std::cout
      << "loopc repl: type a kernel or an expression, :help for the commands, :quit or Ctrl-D "
         "to leave\n";
#if LOOPC_HAVE_LIBEDIT
  EditLineSource terminal(repl);
#else
  StreamLineSource terminal(std::cin, &std::cout);
#endif
  repl.run(terminal);
  std::cout << "\n";
  return 0;
}

} // namespace

void addReplCommand(CLI::App &app) {
  auto options = std::make_shared<ReplOptions>();
  CLI::App *command = app.add_subcommand(
      "repl", "An interactive session: define kernels, run, time and explain them");
  command->add_option("FILE", options->file, "A .loop file whose definitions to start with");
  command
      ->add_option("--device", options->device,
                   "interp, cpu, gpu or gpu-on-cpu (default: the best one available)")
      ->check(nonEmpty());
  command->add_flag("--keep-going", options->keepGoing,
                    "For a script piped in: go on after an input that fails (the exit status is "
                    "still 1)");
  command->callback([options] {
    if (int exitCode = runRepl(*options))
      throw CLI::RuntimeError(exitCode);
  });
}

} // namespace loopc::driver
