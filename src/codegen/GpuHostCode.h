// The host code of the GPU pipeline, compiled ahead of time for an object
// that embeds GPU kernels (CpuLibrary.h): a Function's host body (its serial
// loops, scalar code, temporaries and launches) becomes a function of the host
// CPU that drives the GPU through the runtime's calls for generated code
// (loopc/generated.h). Launches go through loopc_gpu_launch, numbering the
// kernels as Function::kernels does; temporaries in device memory through
// loopc_gpu_alloc; the host code's reads and writes of arrays in device
// memory through loopc_gpu_read and loopc_gpu_write. Host scalars and
// registers live in the host function itself. GpuEngine runs the same host
// code from the IR when loopc runs a kernel itself.
#pragma once

#include "codegen/DeviceErrors.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"
#include "support/Error.h"

#include <llvm/IR/Module.h>

#include <string>

namespace loopc::codegen {

// Adds to `module` the internal function `name` running `function`'s host
// code:
//   void name(ptr call, ptr buffers, ptr scalars, ptr record)
// where `call` is the loopc_gpu_call, buffers[i] the device address (i64) of
// Function::buffers[i], scalars one 8-byte slot per Function::scalars[i]
// holding the value in its own type, and `record` the host code's own error
// record (DeviceErrors.h: bounds checks and integer divisions of the host
// code), whose sites go to `sites`.
Expected<llvm::Function *> emitGpuHostCode(llvm::Module &module, const ir::Function &function,
                                           const std::string &name, const SourceManager &sources,
                                           DeviceErrorSites &sites);

} // namespace loopc::codegen
