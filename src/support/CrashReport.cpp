#include "support/CrashReport.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <unistd.h>
#include <vector>

namespace loopc {

namespace {

// The report's middle, preformatted: a signal handler may only write it.
char runningReport[512] = "";

void setReport(const std::string &text) {
  size_t length = std::min(text.size(), sizeof runningReport - 1);
  std::memcpy(runningReport, text.data(), length);
  runningReport[length] = '\0';
}

void write(const char *text) {
  size_t length = std::strlen(text);
  while (length > 0) {
    ssize_t written = ::write(STDERR_FILENO, text, length);
    if (written <= 0)
      return;
    text += written;
    length -= static_cast<size_t>(written);
  }
}

// Set by the first thread to fault. The kernels run on every core, and an
// index out of range faults in all of them at once: the others wait for the
// first to finish its report, which then ends the process.
std::atomic_flag reporting = ATOMIC_FLAG_INIT;

void onCrash(int signal) {
  if (reporting.test_and_set()) {
    for (;;)
      pause();
  }
  const char *what = signal == SIGSEGV  ? "a segmentation fault"
                     : signal == SIGBUS ? "a bus error"
                     : signal == SIGFPE ? "an arithmetic fault"
                                        : "an illegal instruction";
  write("\nloopc: ");
  write(what);
  if (runningReport[0] != '\0') {
    write(" in ");
    write(runningReport);
    write(": most likely an array index out of range in code compiled with --unsafe; rerun "
          "without it (or with --device interp) to have it reported at its source line (a crash "
          "of checked code is a bug in loopc: please report it)\n");
  } else {
    write(" in loopc itself: please report it with the command and the program that caused it\n");
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

} // namespace

RunningKernel::RunningKernel(const std::string &kernel, const std::string &engine)
    : previous_(runningReport) {
  setReport("kernel '" + kernel + "' on " + engine);
}

RunningKernel::~RunningKernel() { setReport(previous_); }

void installCrashReport() {
  // A stack of its own, so an overflowed stack can still be reported.
  static std::vector<char> alternateStack(1 << 16);
  stack_t stack{};
  stack.ss_sp = alternateStack.data();
  stack.ss_size = alternateStack.size();
  sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_handler = onCrash;
  action.sa_flags = SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
    sigaction(signal, &action, nullptr);
}

} // namespace loopc
