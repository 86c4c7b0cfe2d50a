// Running NVIDIA's PTX assembler, when installed, to learn what a kernel
// costs on the hardware: `ptxas -v` reports registers, spills and shared
// memory per kernel. loopc uses it for `compile --verbose` and its tests
// (every kernel assembles with no spills); the driver's own JIT does the same
// work at load time on a GPU machine.
#pragma once

#include "support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace loopc::codegen {

struct PtxasKernelReport {
  std::string name;
  int registers = 0;
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
  int stackBytes = 0;
  int sharedBytes = 0;
};

// The ptxas to run: $LOOPC_PTXAS, else the CUDA toolkit's (in LOOPC_CUDA_ROOT
// when loopc was configured), else `ptxas` on the PATH; nullopt when there
// is none.
std::optional<std::string> findPtxas();

// Assembles `ptx` for `gpu` with `ptxas -v`; an error carries ptxas's output.
Expected<std::vector<PtxasKernelReport>> runPtxas(const std::string &ptxas, const std::string &ptx,
                                                  const std::string &gpu);

// The per-kernel reports in the text of `ptxas -v`.
std::vector<PtxasKernelReport> parsePtxasReport(const std::string &output);

} // namespace loopc::codegen
