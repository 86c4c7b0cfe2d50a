// The top-level command line: the app's shared settings and the one place
// where every failure becomes a `loopc: error: ...` line and an exit status,
// so no subcommand can end in an uncaught exception.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace loopc::driver {

// Settings shared by every subcommand: one-line errors, a subcommand required.
void configureApp(CLI::App &app);

// A validator refusing an empty value (`--kernel ''` would otherwise mean
// the default silently).
CLI::Validator nonEmpty();

// A validator of a whole number from `min` to `max`, saying which of the two
// a value fails (CLI::Range calls "abc" out of range).
CLI::Validator wholeNumberIn(int64_t min, int64_t max);

// Where a command's options are given: a subcommand of the command line
// (`loopc run FILE --kernel K ...`) or the matching command of the REPL
// (`:run K ...`, the program being the session's). One builder of options
// serves both, so they take the same options.
enum class CommandForm { CommandLine, Repl };

// Parses the command line and runs the chosen subcommand; returns the exit
// status.
int runApp(CLI::App &app, int argc, char **argv);

// Runs `body` on a thread with a stack of 1 GiB (reserved, touched only as
// used) and returns its result: the parser, the checker and the lowering
// recurse once per level of a program's nesting, which the front end bounds
// (frontend/Parser.cpp) far beyond what a default 8 MiB stack holds.
int runWithLargeStack(const std::function<int()> &body);

} // namespace loopc::driver
