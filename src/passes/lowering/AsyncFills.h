// The copy of a box of a global array into shared memory by async copies
// (ir::AsyncCopy), for stage_shared's pipelined stages: every thread of the
// block issues its share of the box and goes on, and a later AsyncWait and
// barrier make the box visible. Elements outside the array are zero-filled
// by the copy itself (a source size of 0), its source indices clamped into
// the array so the address stays valid.
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <vector>

namespace loopc::passes {

struct AsyncBox {
  ir::Buffer array;             // the global array
  std::vector<ir::Expr> origin; // of the box in the array, per dimension (i64)
  std::vector<int64_t> extents; // of the box
  ir::Buffer shared;            // [copies][rows...][row] or [rows...][row]
  ir::Expr copy;                // the leading index into `shared`, or null
  ir::Expr linearThread;        // the thread's index in its block (i64)
  int64_t threads = 1;          // of the block
  // `shared` holds the box [column][row] (its last two dimensions swapped):
  // copies of one element each, since consecutive elements of the array's
  // row land a shared row apart.
  bool transposed = false;
};

// How many elements one copy moves: 16 bytes where the array's rows and the
// box's origin along them are multiples of it and the shared rows are
// padded to it and the box is not transposed; 4 bytes (one element of 4 or
// 8 bytes) otherwise; 0 when the element is narrower than 4 bytes (no async
// copy moves it).
int64_t vectorElements(const AsyncBox &box);

// The copies of the box. With `vector` elements per copy (more than 1), a
// uniform branch picks the copies of that width where the array's rows and
// the origin are found multiples of it at run time (a size only the run
// knows, matmul's K), element copies otherwise; a condition proven at
// compile time leaves one of the two.
ir::Stmt asyncFill(const AsyncBox &box, int64_t vector);

} // namespace loopc::passes
