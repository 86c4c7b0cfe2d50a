// Placeholder until the checker lands: accepts nothing.
#include "sema/Sema.h"

namespace loopc {

bool checkProgram(Program &program, DiagnosticEngine &diagnostics) {
  diagnostics.error({}, "the semantic checker is not implemented yet");
  return false;
}

} // namespace loopc
