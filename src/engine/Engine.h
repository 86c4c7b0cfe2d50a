// One way to run a kernel on any engine: the reference interpreter, the CPU
// JIT and the GPU implement this interface, so differential tests, `loopc
// run`, benchmarks and the REPL share one code path.
#pragma once

#include "engine/HostArray.h"
#include "frontend/Ast.h"
#include "support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace loopc {

// The arguments of one kernel invocation. `params[i]` is the value of
// `kernel.params[i]`; out and inout parameters are updated in place by run().
// `sizes` binds every symbolic size of the kernel (see bindKernelArguments).
struct KernelArgs {
  std::map<std::string, int64_t> sizes;
  std::vector<HostArray> params;
};

struct RunStats {
  double seconds = 0; // wall time of the kernel's execution on the engine
  // The combine statements the interpreter ran (0 elsewhere): the longest
  // sum of combined values an output element can hold, for --check's
  // tolerance (a float histogram's bins sum in another order when compiled).
  uint64_t combinesRun = 0;
};

class Engine {
public:
  virtual ~Engine() = default;
  // How messages name it: its kind, and what it does otherwise than by
  // default ("cpu (unchecked)").
  virtual std::string name() const = 0;
  // The --device that makes it: interp, cpu, gpu-on-cpu or gpu.
  virtual std::string kind() const = 0;
  // The machine it runs kernels on, for results that hold only there (tuned
  // choices): the GPU's model, the CPU's name and threads.
  virtual std::string device() const { return name(); }
  virtual Expected<RunStats> run(const Program &program, const KernelDecl &kernel,
                                 KernelArgs &args) = 0;
};

} // namespace loopc
