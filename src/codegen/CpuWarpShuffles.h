// Warp shuffles on the CPU. A block's threads run there as loops over the
// thread indices (CpuThreadNest), where no thread can read another's
// register, so each ir::WarpShuffle of a kernel becomes an exchange through
// shared memory, split by the thread nest at its barriers:
//   scratch[t] = value; barrier; target = scratch[t ^ laneMask]; barrier
// with t the thread's index in its block (x fastest): the values the GPU's
// shfl.sync.bfly gives, so the GPU pipeline's kernels run on the CPU too.
#pragma once

#include "ir/IR.h"

namespace loopc::codegen {

ir::Function exchangeShufflesThroughShared(ir::Function function);

} // namespace loopc::codegen
