#include "driver/RemarksOutput.h"

#include "driver/ExplainCommand.h"
#include "lower/Lower.h"
#include "passes/Passes.h"

#include <algorithm>

namespace loopc::driver {

Expected<std::vector<passes::Remark>>
kernelRemarks(const Program &program, const KernelDecl &kernel, passes::PipelineOptions pipeline,
              const std::map<std::string, int64_t> &sizes, const std::string &afterPass) {
  passes::Remarks remarks;
  pipeline.remarks = &remarks;
  ir::Function lowered = ir::lowerKernel(program, kernel);
  pipeline.specializedSizes = passes::sizesToSpecialize(lowered, sizes, pipeline);
  pipeline.runSizes = sizes;
  std::vector<std::string> passNames;
  pipeline.afterPass = [&](const std::string &pass, const ir::Function &) {
    if (std::ranges::find(passNames, pass) == passNames.end())
      passNames.push_back(pass);
  };
  if (auto compiled = passes::runPipeline(std::move(lowered), pipeline); !compiled)
    return std::unexpected(compiled.error());
  std::vector<passes::Remark> shown = remarks.inSourceOrder();
  if (afterPass.empty())
    return shown;
  if (std::ranges::find(passNames, afterPass) == passNames.end())
    return std::unexpected(unknownPassError(afterPass, passNames, pipeline));
  std::erase_if(shown, [&](const passes::Remark &remark) { return remark.pass != afterPass; });
  return shown;
}

Diagnostic remarkDiagnostic(const passes::Remark &remark) {
  Severity severity =
      remark.kind == passes::RemarkKind::Warning ? Severity::Warning : Severity::Remark;
  return {severity, remark.range, remark.pass + ": " + remark.message};
}

void printRemarks(std::ostream &out, const DiagnosticEngine &diagnostics,
                  const std::vector<passes::Remark> &remarks) {
  for (const passes::Remark &remark : remarks)
    out << diagnostics.format(remarkDiagnostic(remark));
}

} // namespace loopc::driver
