// A short, human-readable summary of a kernel's output, printed by `loopc
// run`: enough to see at a glance that a result is plausible and to compare
// two runs by eye, without dumping the array.
#pragma once

#include "engine/HostArray.h"

#include <string>

namespace loopc {

// One line: "C: f32[64][64] sum=12.5 first: 0.25 -1.5 ...". Integer sums are
// exact; a bool array reports how many elements are true.
std::string summarizeArray(const std::string &name, const HostArray &array, size_t valueCount = 6);

} // namespace loopc
