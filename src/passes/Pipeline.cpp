// The middle end as a list of passes, read top to bottom (after Halide's
// Lower.cpp). After each one the verifier checks the IR and `afterPass` sees
// it (`loopc explain` prints it), so a broken pass is caught where it broke.
#include "passes/Pipeline.h"

#include "ir/Verifier.h"
#include "passes/Passes.h"

#include <cstdlib>
#include <iostream>

namespace loopc::passes {

namespace {

class PassRunner {
public:
  explicit PassRunner(const PipelineOptions &options) : options_(options) {}

  // Records that `function` is the output of `pass`: verifies it and logs it.
  ir::Function done(const std::string &pass, ir::Function function) {
    if (pass == "lower_reductions")
      verify_.reductionsLowered = true;
    // An invalid IR is a compiler bug, not a user error: stop here, naming
    // the pass, rather than let code generation miscompile it.
    if (Status status = ir::verifyFunction(function, pass, verify_); !status) {
      std::cerr << "loopc: internal error: " << status.error().message << "\n";
      std::abort();
    }
    if (options_.afterPass)
      options_.afterPass(pass, function);
    return function;
  }

private:
  const PipelineOptions &options_;
  ir::VerifyOptions verify_;
};

} // namespace

ir::Function runPipeline(ir::Function function, const PipelineOptions &options) {
  PassRunner run(options);
  function = run.done("lower", std::move(function));
  function = run.done("simplify", simplify(std::move(function)));
  function = run.done("map_to_gpu", mapToGpu(std::move(function)));
  function = run.done("lower_reductions", lowerReductions(std::move(function)));
  function = run.done("simplify", simplify(std::move(function)));
  function = run.done("extract_kernels", extractKernels(std::move(function)));
  return function;
}

} // namespace loopc::passes
