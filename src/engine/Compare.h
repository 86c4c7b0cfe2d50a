// Compares the outputs of two engines run on the same inputs (`loopc run
// --check`, the differential tests). Integers and booleans must match
// exactly. Floats may differ in the last bits because the order in which a
// redomap combines values is unspecified, so they are compared with a mixed
// relative/absolute tolerance that grows with the element type's epsilon and
// the reduction length; NaN matches NaN and infinities must match exactly.
#pragma once

#include "engine/Engine.h"
#include "engine/HostArray.h"

#include <cstdint>
#include <string>
#include <vector>

namespace loopc {

struct CompareOptions {
  // The longest reduction that contributes to one element (1 when none);
  // rounding differences grow about as its square root.
  uint64_t reductionLength = 1;
  // The magnitude of the terms the outputs are computed from (about the
  // largest input): a result that cancels to near zero carries rounding
  // errors of that size, not of its own.
  double termMagnitude = 0;
  // Whether the terms are f32 values (the kernel has f32 parameters): an f64
  // result computed from them (a sum of f32 exp() values in f64) carries
  // f32's rounding, and math builtins may differ in their last bit between
  // engines, so f64 results get f32's epsilon.
  bool singlePrecisionTerms = false;
  // Overrides of the derived tolerances when positive.
  double relativeTolerance = 0;
  double absoluteTolerance = 0;
};

struct CompareReport {
  bool matches = true;
  std::string problem;        // set when the types or shapes differ
  uint64_t mismatchCount = 0; // elements outside the tolerance
  std::vector<int64_t> firstIndex;
  // The values at firstIndex, as the message writes them (integers exactly).
  std::string expectedValue, actualValue;
  double relativeTolerance = 0, absoluteTolerance = 0;

  // One line: "C[3][17]: expected 1.25, got 1.5 (42 of 4096 elements differ, ...)".
  std::string describe(const std::string &name) const;
};

// Compares `actual` against `expected` (the reference engine's result).
CompareReport compareArrays(const HostArray &expected, const HostArray &actual,
                            const CompareOptions &options = {});

// The options for comparing the outputs of `kernel` run on `inputs`: no
// reduction is longer than the largest input array or integer scalar (a
// loop bound), the largest finite float input gives the size of the terms,
// and f32 parameters make the terms single precision.
CompareOptions compareOptionsFor(const KernelDecl &kernel, const KernelArgs &inputs);

// The tolerances compareArrays uses for a float type and reduction length.
double defaultRelativeTolerance(ScalarType type, uint64_t reductionLength,
                                bool singlePrecisionTerms = false);

} // namespace loopc
