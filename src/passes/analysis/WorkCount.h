// How much work a kernel does, for `loopc bench`'s GFLOP/s and GB/s: counted
// on the lowered Loop IR before any mapping pass, so the figures describe the
// algorithm, not the schedule (no rounded-up grids, no reduction trees).
//
//  - flops: floating-point adds, subtracts, multiplies, divides, remainders,
//    minima and maxima, one per math builtin (two per fma), and one combine
//    per element of a floating-point reduction or scan, each times the trip
//    counts of the loops around it evaluated with the bound sizes. An outer
//    loop whose variable moves an inner loop's bounds (a triangular nest) is
//    counted value by value up to 4096 iterations (exact), beyond that at the
//    middle of its range (flagged approximate); other loops count their body
//    once at the middle, which is exact for them. A conditional the sizes
//    decide counts the branch taken; one decided by data counts both (an
//    upper bound, flagged approximate).
//  - bytes: each array parameter read counted once, each one written counted
//    once more, with extents evaluated from the sizes (`N + 1`): a lower
//    bound on the memory traffic, the one any implementation must pay
//    (temporaries and re-reads excluded).
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <map>
#include <string>

namespace loopc::passes {

struct WorkCount {
  double flops = 0;
  double bytes = 0;
  // Some extent could not be evaluated from the sizes (counted as zero), a
  // branch depends on data, or a long triangular nest was sampled.
  bool approximate = false;
};

// `function` is the lowered kernel (ir::lowerKernel, before the pipeline);
// `values` binds its sizes and integer scalar parameters.
WorkCount countWork(const ir::Function &function, const std::map<std::string, int64_t> &values);

} // namespace loopc::passes
