// Semantic analysis of a loaded program: names and scopes, types (no implicit
// conversions), shapes, intents, redomap operators and the parfor race check.
// It fills in every AST field marked "set by Sema"; later stages (the
// interpreter, the lowering to Loop IR) rely on a program that passed it.
#pragma once

#include "frontend/Ast.h"

namespace loopc {

// Checks every module of `program`, reporting all errors it can find through
// `diagnostics`. Returns true when the program has no error. `checkChoice`
// checks each choice of a kernel's `@schedule` against the passes (the
// driver's checkProgramAndSchedules gives passes::scheduleChoiceError);
// without it, only a schedule's shape and the arrays it names are checked.
bool checkProgram(Program &program, DiagnosticEngine &diagnostics,
                  const ScheduleChoiceCheck &checkChoice = {});

} // namespace loopc
