// Whether a statement ties the threads of a block together (barriers, shared
// memory). The passes that reorganise a thread's work (tile_registers,
// stage_shared) leave such nests alone: they were already organised by block
// (a tree reduction, a row per block, an earlier staging), and rewriting one
// thread's work could break what the barriers order.
#pragma once

#include "ir/IR.h"

namespace loopc::passes {

bool cooperatesAcrossThreads(const ir::Stmt &stmt);

} // namespace loopc::passes
