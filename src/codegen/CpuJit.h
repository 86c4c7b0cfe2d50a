// Compiling a Function for the host CPU: the CPU module (CpuTarget.h),
// optimized by LLVM's O3 pipeline for the host's CPU name and features (so
// loops vectorize for the machine it runs on), then loaded with ORC LLJIT.
#pragma once

#include "codegen/DeviceErrors.h"
#include "ir/IR.h"
#include "support/Error.h"

#include <memory>
#include <string>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace loopc::codegen {

// A Function compiled and loaded in this process.
class CpuProgram {
public:
  static Expected<std::unique_ptr<CpuProgram>> compile(const ir::Function &function);
  ~CpuProgram();

  // buffers[i] is Function::buffers[i]; scalars holds one 8-byte slot per
  // Function::scalars[i] (see CpuTarget.h). The error is the first device
  // error of the run (DeviceErrors.h), such as an integer division by zero;
  // the outputs are then unspecified. One run at a time per program.
  Status run(void **buffers, void *scalars) const;

private:
  CpuProgram() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  void (*entry_)(void **, void *) = nullptr;
  DeviceErrorRecord *errorRecord_ = nullptr;
  DeviceErrorSites errorSites_;
};

// The LLVM IR of `function` for the host, optimized or as emitted.
Expected<std::string> cpuLlvmText(const ir::Function &function, bool optimize);

} // namespace loopc::codegen
