// Parses one loaded source file into a Module: lexing, parsing with
// language-level syntax errors (SyntaxErrors.h) and AST construction
// (AstBuilder.h). The Loader calls this for the main file and each import.
#pragma once

#include "frontend/Ast.h"

namespace loopc {

// Parses the file `file` of `sources`. Returns null when the file has a
// syntax error (all of them are reported) or a malformed literal.
std::unique_ptr<Module> parseModule(uint32_t file, const SourceManager &sources,
                                    DiagnosticEngine &diagnostics);

} // namespace loopc
