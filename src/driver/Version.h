// What `loopc --version` prints: loopc's version and commit, the LLVM it was
// built with, and whether a CUDA driver and GPU are usable here (else what
// to run instead).
#pragma once

#include <string>

namespace loopc::driver {

std::string versionReport();

} // namespace loopc::driver
