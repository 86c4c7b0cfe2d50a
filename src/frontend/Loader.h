// Loads a program: the main file and, transitively, every file it imports.
// `import linalg;` names a standard-library module (<stdlib dir>/linalg.loop,
// searched in LoadOptions::stdlibDirs); `import "x/y.loop";` is a path
// relative to the importing file. Each file is loaded once, identified by
// its canonical path, so import cycles are harmless.
#pragma once

#include "frontend/Ast.h"
#include "support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace loopc {

// Where `import name;` looks, in order: $LOOPC_STDLIB (a ':'-separated list)
// when set, <exe dir>/../stdlib, <exe dir>/../share/loopc/stdlib, then the
// source tree's stdlib/ (LOOPC_SOURCE_STDLIB_DIR). `argv0` locates the
// executable; when null or not a path, /proc/self/exe is used.
std::vector<std::string> defaultStdlibDirs(const char *argv0 = nullptr);

struct LoadOptions {
  std::vector<std::string> stdlibDirs = defaultStdlibDirs();
  // Files whose definitions the main module's text already holds (the
  // REPL's :load): an import of one adds nothing, as a second import of a
  // file does.
  std::vector<std::string> includedFiles;
};

// The identity of a file for "each file is loaded once": its canonical path.
std::string fileIdentity(const std::string &path);

// Loads the program whose main file is `path`. Returns null after reporting
// every error (unreadable files, syntax errors, missing imports).
std::unique_ptr<Program> loadProgram(const std::string &path, SourceManager &sources,
                                     DiagnosticEngine &diagnostics,
                                     const LoadOptions &options = {});

// The same for a main module given as text (the REPL, tests): diagnostics
// name it `displayName`, and its relative imports resolve against the
// current directory.
// The text of a source file, or why it cannot be read ("is a directory",
// the system's reason).
Expected<std::string> readSourceFile(const std::string &path);

std::unique_ptr<Program> loadProgramFromText(std::string displayName, std::string text,
                                             SourceManager &sources, DiagnosticEngine &diagnostics,
                                             const LoadOptions &options = {});

} // namespace loopc
