// Kernels compiled ahead of time for programs that embed them (`loopc compile
// --emit object|header`, docs/embedding.md): an object file for the host CPU
// and the C header declaring it. Each kernel becomes a C function taking
// its parameters in order (arrays as pointers, `in` ones const; scalar values
// by value, scalar results by pointer), then its sizes as int64_t, in order of
// first appearance, and a second one taking a loopc_buffer (the runtime's
// memory on the device the functions run on) for each array and scalar
// result:
//
//   loopc_status matmul(const float *A, const float *B, float *C,
//                       int64_t M, int64_t K, int64_t N);
//   loopc_status matmul_buffers(const loopc_buffer *A, const loopc_buffer *B,
//                               loopc_buffer *C, int64_t M, int64_t K, int64_t N);
//
// The function checks its arguments (no negative size or extent, no NULL
// array with elements), zeroes `out` arrays, runs the kernel's CPU code on the
// runtime's thread pool and returns LOOPC_SUCCESS, or a status whose message
// (loopc_runtime_last_error(NULL)) names the problem and, for a run-time
// fault, its .loop source location. Calls run one at a time (the runtime's
// call lock). The object needs only the runtime library (loopc::runtime) and
// libm: no LLVM.
//
// Compiled with GPU code too (`--gpu sm_80,sm_90`), the object also holds
// each kernel's PTX per architecture and its GPU host code (GpuHostCode.h);
// the function then runs on the GPU when the runtime says so
// (loopc_gpu_selected: a CUDA device present, LOOPC_DEVICE, loopc_use_device),
// copying the arrays to device memory and back around the host code, and on
// the CPU otherwise.
#pragma once

#include "frontend/Ast.h"
#include "ir/IR.h"
#include "passes/Pipeline.h"
#include "support/Diagnostics.h"
#include "support/Error.h"

#include <string>
#include <vector>

namespace loopc::codegen {

// A kernel's code for one GPU architecture: its Function after the GPU pass
// pipeline for it.
struct LibraryGpuCode {
  std::string gpu;           // sm_80
  int computeCapability = 0; // 80
  ir::Function function;
};

// A kernel to export: its declaration, its Function after the CPU pass
// pipeline, the name of its C function (librarySymbol) and its GPU code, by
// ascending architecture (none: CPU only).
struct LibraryKernel {
  const KernelDecl *declaration = nullptr;
  ir::Function function;
  std::string symbol;
  std::vector<LibraryGpuCode> gpu = {};
};

// `prefix` + the kernel's name as a C function name, or an error (at the
// kernel) when that is a C or C++ keyword or `main`.
Expected<std::string> librarySymbol(const KernelDecl &kernel, const std::string &prefix);

// The name of the C function of the kernel whose function is `symbol` that
// takes a loopc_buffer for each array: symbol + "_buffers".
std::string bufferFunctionName(const std::string &symbol);

// The object file (ELF) defining the C functions of each kernel, for the CPU named
// `cpu` (an LLVM CPU name such as x86-64-v3; "native": the host's CPU and
// features), with the kernels' GPU code where they have some.
Expected<std::string> compileLibraryObject(const std::vector<LibraryKernel> &kernels,
                                           const SourceManager &sources, const std::string &cpu);

// The vector registers of the CPU named `cpu` (as compileLibraryObject
// takes it; "native": the host's), by which the CPU pipeline sizes register
// tiles; none (zero lanes) for a name LLVM does not know.
passes::CpuVectors cpuVectorsOf(const std::string &cpu);

// Sets what `pipeline` knows of the CPU named `cpu` (its cpuVectors) where
// it is the CPU pipeline; leaves a GPU pipeline as it is.
void targetCpu(passes::PipelineOptions &pipeline, const std::string &cpu = "native");

// The C header declaring those functions, guarded by `guard`.
std::string libraryHeader(const std::vector<LibraryKernel> &kernels, const SourceManager &sources,
                          const std::string &guard);

} // namespace loopc::codegen
