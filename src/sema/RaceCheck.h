// The parfor race check (see RaceCheck.cpp). Internal to src/sema.
#pragma once

#include "frontend/Ast.h"

namespace loopc {

// Reports every write in a parfor nest of `kernel` that two iterations may
// perform on the same element, and every read of an element that another
// iteration may write. `kernel` must have passed the rest of Sema.
void checkParforRaces(const KernelDecl &kernel, DiagnosticEngine &diagnostics);

} // namespace loopc
