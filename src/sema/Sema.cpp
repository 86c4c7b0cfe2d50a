// The semantic checker's entry point and the order of its checks: resolves
// names and scopes, infers and checks types (literals take their type from
// context; there are no implicit conversions), declares the symbolic sizes
// of kernels, checks intents, calls, redomap operators, missing returns and
// recursion, then runs the parfor race check (RaceCheck.cpp) on every kernel
// that is otherwise well formed. The checks themselves live in the files
// listed in Checker.h; this file keeps their order readable in one place,
// with the message helpers they share.
#include "sema/Sema.h"

#include "sema/Checker.h"

namespace loopc {

bool checkProgram(Program &program, DiagnosticEngine &diagnostics,
                  const ScheduleChoiceCheck &checkChoice) {
  return sema::Checker(program, diagnostics, checkChoice).run();
}

namespace sema {

bool Checker::run() {
  // Every signature is known before any body is checked, so a body may call
  // a kernel or function defined after it.
  collectGlobalNames();
  for (const auto &module : program_.modules) {
    for (const auto &kernel : module->kernels)
      declareKernelSignature(*kernel);
    for (const auto &fn : module->fns)
      checkFnSignature(*fn);
  }
  // Bodies in source order, so that errors come out in reading order.
  forEachInSourceOrder([&](FnDecl &fn) { checkFnBody(fn); },
                       [&](KernelDecl &kernel) { checkKernel(kernel); });
  reportRecursion();
  checkOperatorBodies();
  return !diagnostics_.hasErrors();
}

std::string quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

std::string describe(Ty type) {
  switch (type.kind) {
  case Ty::Kind::Known:
    return quoted(scalarTypeName(type.scalar));
  case Ty::Kind::IntLiteral:
    return "an integer literal";
  case Ty::Kind::FloatLiteral:
    return "a float literal";
  case Ty::Kind::Poison:
    break;
  }
  return "an erroneous expression";
}

std::string conversionHint(ScalarType wanted, Ty got) {
  if (!got.isKnown())
    return "";
  return std::string("; convert explicitly, e.g. ") + scalarTypeName(wanted) + "(...)";
}

std::string argumentCountMismatch(size_t expected, size_t got) {
  return " takes " + std::to_string(expected) + " argument" + (expected == 1 ? "" : "s") +
         ", got " + std::to_string(got);
}

} // namespace sema
} // namespace loopc
