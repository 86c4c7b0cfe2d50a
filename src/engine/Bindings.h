// Binds the arguments of one kernel run from what the user supplied: values of
// sizes and scalar parameters (`--set N=1024`), arrays (`--in A=a.npy`), and
// seeded random data for every input not given. Shapes are checked against
// the parameter types, sizes are inferred from the arrays passed, and sizes
// too large to allocate are rejected with a message rather than a crash.
#pragma once

#include "engine/Engine.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace loopc {

struct ArgumentRequest {
  // Sizes and scalar parameters by name, as written by the user ("1024",
  // "0.5", "true"); parsed according to the declared type.
  std::map<std::string, std::string> values;
  // Whole arrays (and scalar inputs given as rank-0 arrays) by parameter name.
  std::map<std::string, HostArray> arrays;
  // The names of `arrays` to convert to the parameter's element type when
  // theirs differs (`--in x=x.npy:convert`): f64 to f32 and back, integers to
  // either, i64 to i32 and floats to integers where every value fits exactly.
  std::set<std::string> convertible;
  // Seed of the random data generated for inputs not given.
  uint64_t seed = 0;
  // Random integer inputs are drawn from [randomLow, randomHigh).
  int64_t randomLow = 0, randomHigh = 16;
  // The most bytes the arrays may take together; 0 means the memory the
  // machine has available (MemAvailable in /proc/meminfo).
  uint64_t memoryLimitBytes = 0;
  // Arrays for out parameters by name (a host program's memory: Python's
  // arrays), instead of new ones: checked against the parameter's type and
  // shape as inputs are, they may give sizes, and they are zeroed, as every
  // out parameter starts, then written by the run.
  std::map<std::string, HostArray> outputs;
  // How the caller gives a value by name, in the message for a missing one:
  // "--set " on the command line (`--set N=...`), "" in Python (`N=...`).
  std::string valueOption = "--set ";
};

// The sizes of a kernel's call and the shape of each array parameter (by
// position; empty for scalars), as bindKernelArguments infers them: what a
// host program allocates its outputs by.
struct ArgumentShapes {
  std::map<std::string, int64_t> sizes;
  std::vector<std::vector<int64_t>> shapes;
};
Expected<ArgumentShapes> inferArgumentShapes(const KernelDecl &kernel,
                                             const ArgumentRequest &request);

// Returns the arguments, or an error naming the parameter or size at fault.
// Inputs not given are filled with random data drawn from `request.seed` and
// the parameter's position (floats in [-1, 1), integers in [randomLow,
// randomHigh), by default [0, 16), bools 50/50), so every engine sees the
// same inputs; out parameters start zeroed. A range an i32 input cannot hold
// is an error naming it.
// A scalar value parameter has no default: a missing one is an error that
// says what to set, since a guessed value (a step count, a coefficient)
// would silently give meaningless results.
Expected<KernelArgs> bindKernelArguments(const KernelDecl &kernel, const ArgumentRequest &request);

// An error naming the first array of `args` in GPU memory
// (HostArray::deviceAddress), which `engine`, running on the host, cannot
// take; none when every array is in host memory.
Status refuseDeviceArrays(const KernelDecl &kernel, const KernelArgs &args,
                          const std::string &engine);

// `array` filled as a run fills an input not given, from `seed`: floats in
// [-1, 1), integers in [low, high), bools 50/50.
void fillRandomValues(HostArray &array, uint64_t seed, int64_t low = 0, int64_t high = 16);

// The sizes and integer scalar arguments of bound arguments, by name: what
// extents and trip counts are computed from.
std::map<std::string, int64_t> integerValues(const KernelDecl &kernel, const KernelArgs &args);

// "1.2 TB", "23 GB", "512 B": decimal units, two significant digits.
std::string formatByteCount(uint64_t bytes);

} // namespace loopc
