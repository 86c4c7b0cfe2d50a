// Async copies on the CPU. A block's threads run there one after another
// between barriers (CpuThreadNest), and nothing copies in the background, so
// each ir::AsyncCopy becomes the plain copy it stands for, element by
// element, and the commits and waits go: a copy that has landed when it is
// issued satisfies every wait. The GPU pipeline's pipelined stages thus run
// on the CPU with the meaning they have on the GPU.
#pragma once

#include "ir/IR.h"

namespace loopc::codegen {

ir::Function copyAsyncCopiesInPlace(ir::Function function);

} // namespace loopc::codegen
