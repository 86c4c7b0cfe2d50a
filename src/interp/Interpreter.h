// The reference interpreter: runs a checked program by walking its AST. It is
// the semantic oracle the compiled engines (CPU JIT, GPU) are compared with,
// so it favours plain, obviously correct code over speed: parfor nests run
// sequentially in order, redomaps fold in order from their neutral element,
// and every array access is bounds-checked. Run-time failures (out-of-range
// indices, division by zero, non-positive steps, arguments that do not match
// the kernel) come back as Errors carrying the source range at fault.
//
// Choices where the language leaves C++ undefined behaviour (see
// docs/language.md for the rest):
//  - integer arithmetic wraps in two's complement, including INT_MIN / -1
//    (whose remainder is 0);
//  - a float to integer conversion truncates toward zero and saturates: out of
//    range values give the type's minimum or maximum and NaN gives 0 (as
//    LLVM's fptosi.sat does);
//  - float min/max follow fmin/fmax (a NaN operand yields the other one);
//  - `out` parameters, arrays and scalars, are zeroed when a kernel starts,
//    also when it is called from another kernel.
#pragma once

#include "engine/Engine.h"

#include <functional>

namespace loopc {

class Interpreter final : public Engine {
public:
  std::string name() const override { return "interp"; }
  std::string kind() const override { return "interp"; }
  Expected<RunStats> run(const Program &program, const KernelDecl &kernel,
                         KernelArgs &args) override;

  // Called during a run with the fraction of it done, in [0, 1], at most
  // five times a second, and with 1 at its end (`run --check` shows it): the
  // kernel body's statements count alike, and an outermost loop's share
  // grows with its iterations.
  using Progress = std::function<void(double)>;
  void setProgress(Progress progress) { progress_ = std::move(progress); }

private:
  Progress progress_;
};

} // namespace loopc
