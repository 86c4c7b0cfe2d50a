// A report instead of a bare signal when generated code crashes. Kernels
// compiled with `--unsafe` run without bounds checks, so an index out of
// range can fault; the command line installs a handler that names the
// kernel that was running and says how to find the access at its source
// line. The engines say what they run (RunningKernel) whether a handler is
// installed or not: a program embedding loopc keeps its own signal handling.
#pragma once

#include <string>

namespace loopc {

// While alive: the kernel the process runs, and on which engine.
class RunningKernel {
public:
  RunningKernel(const std::string &kernel, const std::string &engine);
  ~RunningKernel();
  RunningKernel(const RunningKernel &) = delete;
  RunningKernel &operator=(const RunningKernel &) = delete;

private:
  std::string previous_;
};

// Segmentation faults, bus errors, arithmetic faults and illegal
// instructions print what was running (the kernel and the engine, when one
// ran, and how to rerun it checked) and end the process by the same signal.
// For the calling thread, also on a stack that has overflowed.
void installCrashReport();

} // namespace loopc
