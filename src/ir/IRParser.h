// Reading the Loop IR back from its printed form (IRPrinter.h), so a pass can
// be run and tested on IR written by hand: `loopc opt --pass NAME FILE.lir`
// and the textual tests of tests/lit/ (docs/architecture.md, "Testing a
// pass").
//
// The text is what `loopc explain` prints for one kernel: optional
// `// compiled for sizes where C is true` lines, a `func`, then its `kernel`s.
// Other `//` comments are skipped, so a file may explain itself. Parsing then
// printing gives the text back (tests/ir_parser_test.cpp checks it on every
// sample and test program after every pass). The text is the program: its
// loops, accesses, reductions, checks and launches are located in it (so
// remarks and run-time errors point into the text, and its accesses are the
// program's, which bounds checks cover), where a printed Function's were in
// the .loop file or made by a pass. The program's names of renamed
// variables and arrays are not read back.
// Variables take their types from where they are bound (parameters, loops,
// lets), literals from their context or their suffix (`2_i32`).
#pragma once

#include "ir/IR.h"
#include "support/Error.h"

#include <cstdint>
#include <string_view>

namespace loopc::ir {

// The Function `text` describes; an error is located at its line and column
// in `file` (a SourceManager's id, so the driver can quote the line).
Expected<Function> parseFunction(std::string_view text, uint32_t file = 0);

} // namespace loopc::ir
