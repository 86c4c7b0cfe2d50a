// Packing the panel a column of blocks shares into a contiguous buffer.
//
// When blocks run column by column (runsColumnByColumn: matmul's B[k][j],
// read along k by every block of a column), each block walks the same
// K x 32 panel of B. In place, its rows lie a row of B apart: at a
// power-of-two row length they all fall in the same few cache sets, so the
// panel does not stay in L2 from one block to the next (matmul at 1024 took
// twice as long as at 1000 or 1040). A worker therefore copies the panel of
// its current column into a buffer of its own, row after row (K x 32
// consecutive elements), once per column it takes, and its blocks read the
// copy: as a BLAS packs its panels, but derived from the access pattern, for
// any kernel that has such a panel.
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <optional>

namespace loopc::codegen {

// The panel of one array read by a column of blocks.
struct ColumnPanel {
  // A global array the kernel only reads, of two or more dimensions, whose
  // every access has its last index `xBlock * blockWidth + xThread + c`
  // (c constant) and leading indices that depend on no block or thread
  // index.
  ir::Buffer array;
  const ir::For *xBlock;
  int64_t blockWidth; // the x threads of a block
  // The panel's rows: blockWidth plus the spread of the offsets c, the
  // smallest of which is firstOffset.
  int64_t rowLength;
  int64_t firstOffset;
  // The copy: the array's leading extents, then rowLength.
  ir::Buffer packed;
};

// The panel `kernel`'s blocks should read from a copy, if any: the kernel
// runs column by column and one array has a panel as above.
std::optional<ColumnPanel> columnPanelOf(const ir::KernelFunc &kernel);

// `blockBody` (the code of one block, inside the grid loops) reading the
// panel's array from its copy: `array[i..][e]` becomes
// `packed[i..][e - (xBlock * blockWidth + firstOffset)]`.
ir::Stmt readFromPanel(const ColumnPanel &panel, const ir::Stmt &blockBody);

// The statement that copies the current column's panel (xBlock bound) into
// `packed`, leaving out the columns outside the array.
ir::Stmt copyPanel(const ColumnPanel &panel);

} // namespace loopc::codegen
