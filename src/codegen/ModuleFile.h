// The module file `loopc compile --emit module` writes: everything needed to
// run a compiled kernel on a GPU without the compiler, in one JSON document.
// It holds the PTX, and a manifest: each kernel's name and parameters (types,
// shapes as expressions of the sizes, whether written), its launch geometry
// (grid and block as expressions), its occupancy hints and the source location
// of the parfor it came from; the entry function's parameters; and the host
// program in the IR's printed form, for people and tools to read (GpuEngine
// runs the host program from the IR itself).
#pragma once

#include "ir/IR.h"
#include "support/Diagnostics.h"
#include "support/Error.h"

#include <string>
#include <vector>

namespace loopc::codegen {

struct ModuleParameter {
  std::string name = {};
  std::string type = {};               // f32, i64, ...
  std::vector<std::string> shape = {}; // extents, outermost first; empty for scalars
  bool isBuffer = false;
  bool isWritten = false;
  bool operator==(const ModuleParameter &) const = default;
};

struct ModuleLaunch {
  std::vector<std::string> grid = {}; // x, y, z
  std::vector<std::string> block = {};
  bool operator==(const ModuleLaunch &) const = default;
};

struct ModuleKernel {
  std::string name = {};
  // Buffers, scalars, then the device error record: the PTX order.
  std::vector<ModuleParameter> parameters = {};
  std::vector<ModuleLaunch> launches = {}; // every launch of it in the host program
  int maxThreadsPerBlock = 0;
  int minBlocksPerSM = 0;
  std::string source = {}; // "file:line:col" of its parfor, empty when unknown
  bool operator==(const ModuleKernel &) const = default;
};

struct ModuleFile {
  static constexpr int kVersion = 1;
  std::string function = {}; // the .loop kernel
  std::string gpu = {};      // sm_80, ...
  std::vector<ModuleParameter> parameters = {};
  std::vector<ModuleKernel> kernels = {};
  std::string hostProgram = {}; // the printed IR of the host code
  std::string ptx = {};
  bool operator==(const ModuleFile &) const = default;
};

// The module of `function` (after the pass pipeline), compiled to `ptx`.
ModuleFile describeModule(const ir::Function &function, const std::string &gpu, std::string ptx,
                          const SourceManager &sources);

std::string serializeModule(const ModuleFile &module);
Expected<ModuleFile> parseModule(const std::string &text);

} // namespace loopc::codegen
