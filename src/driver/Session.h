// What every subcommand that runs a program shares: loading and checking the
// program with the one DiagnosticEngine (diagnostics go to stderr), picking
// the kernel, turning --set/--in/--seed into an ArgumentRequest, and printing
// errors, source-located ones with the file, line, column and caret.
#pragma once

#include "driver/Cli.h"
#include "engine/Bindings.h"
#include "engine/Engine.h"
#include "frontend/Ast.h"
#include "passes/Pipeline.h"
#include "support/Diagnostics.h"
#include "support/Error.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace loopc::driver {

// A loaded and checked program. Not movable: the diagnostics engine refers
// to the sources.
struct Session {
  SourceManager sources;
  DiagnosticEngine diagnostics{sources};
  std::unique_ptr<Program> program;

  // Prints `error` to stderr: with its source line when it has a range,
  // otherwise as one `loopc: error: ...` line.
  void report(const Error &error);
};

// Loads and checks `path`, printing every diagnostic to stderr. Returns null
// when the program has errors.
std::unique_ptr<Session> openSession(const std::string &path);

// Sema's checks (checkProgram), each kernel's `@schedule` among them against
// the passes: a name that is no pass parameter, a value out of its range, a
// pass that cannot be left out, each a located error in source order. True
// when there is none.
bool checkProgramAndSchedules(Program &program, DiagnosticEngine &diagnostics);

// The kernel named `name`, or the last kernel of the main file when `name`
// is empty. An unknown name is an error listing the kernels there are;
// `verb` says what the kernel is for in the error of a program without any
// ("the program has no kernel to compile").
Expected<const KernelDecl *> selectKernel(const Program &program, const std::string &name,
                                          const std::string &verb = "run");

// Prints `loopc: error: <message>` to stderr (a warning: to `out`).
void printError(const std::string &message);
void printWarning(const std::string &message, std::ostream &out = std::cerr);

// Warns of the --pass-param and --skip-pass choices the pipeline `engine`
// compiles with never acts on (passes::choicesWithoutEffect), or of any
// choice at all for an engine that compiles nothing (the interpreter).
void warnChoicesWithoutEffect(const Engine &engine, const passes::PassChoices &choices,
                              std::ostream &out = std::cerr);

// The options that describe a kernel's inputs (`--set`, `--in`, `--seed`),
// shared by the subcommands that run kernels.
struct ArgumentOptions {
  std::vector<std::string> sets;   // NAME=VALUE
  std::vector<std::string> inputs; // NAME=FILE.npy
  uint64_t seed = 0;
  std::string randomRange = "0:16"; // LO:HI of random integer inputs

  void addTo(CLI::App &command);
  // Reads the .npy files and splits the NAME=VALUE pairs.
  Expected<ArgumentRequest> toRequest() const;
};

// The command-line choices about the optimization passes, on every command
// that compiles: `--skip-pass PASS` and `--pass-param NAME=VALUE`, both
// repeatable.
struct PassChoiceOptions {
  std::vector<std::string> skippedPasses;
  std::vector<std::string> parameters;
  bool boundsCheck = false; // --bounds-check: the default, said again
  bool unsafe = false;      // --unsafe: indices left unchecked
  std::string fpContract;   // --fp-contract on|off; empty: on

  void addTo(CLI::App &command);
  // Sets how the multiply-adds of the kernels that do not say (with
  // `@fp_contract`) round: as --fp-contract says, else fused.
  void applyFpContract(Program &program) const;
  // `--unsafe` alone (`tune`, which makes the other choices itself).
  void addUnsafeTo(CLI::App &command);
  void addFpContractTo(CLI::App &command);
  // Checks the parameters (the skipped passes are checked by the pipeline).
  Expected<passes::PassChoices> toChoices() const;
  // toChoices, and --fp-contract applied to `program`'s kernels: what a
  // command compiles `program` with.
  Expected<passes::PassChoices> choicesFor(Program &program) const;
};

// What names a kernel run: the file (on the command line), the kernel, the
// device and the inputs. Shared by `run`, `bench` and `tune`, and by the
// REPL's :run and :time.
struct RunTargetOptions {
  std::string file;
  std::string kernel;
  std::string device;
  ArgumentOptions arguments;
  PassChoiceOptions passes;
  bool tuned = false;      // --tuned: the choices `loopc tune` kept for this run (Tuning.h)
  std::string tuningCache; // --tuning-cache FILE
  bool remarks = false;    // --remarks: the optimization remarks on stderr before the runs

  // Adds FILE and --kernel (the REPL: KERNEL, of the session), --device, the argument
  // options, --tuning-cache and, with `passChoices`, the pass choices,
  // --tuned and --remarks (`tune` makes those choices itself); `verb` says
  // what the command does with the kernel ("run", "time").
  void addTo(CLI::App &command, const std::string &verb, bool passChoices = true,
             CommandForm form = CommandForm::CommandLine);
};

// A kernel ready to run: its checked program, its bound arguments and the
// engine of the chosen device.
struct PreparedRun {
  std::unique_ptr<Session> ownedSession; // the command line's (the REPL keeps its own)
  Session *session = nullptr;
  const KernelDecl *kernel = nullptr;
  KernelArgs args;
  std::unique_ptr<Engine> engine;
  passes::PassChoices choices; // what the engine compiles with (--tuned's too)
};

// Loads and checks the program, picks the kernel, binds its arguments and
// creates the engine, reporting the first failure (and returning nothing);
// with --remarks, prints the remarks of the kernel the engine compiles for
// these arguments to stderr.
std::optional<PreparedRun> prepareRun(const RunTargetOptions &options);

// What prepareRun does once the program is loaded and checked (the REPL,
// which keeps its program, calls it alone): the pass choices (with
// --fp-contract applied to the program), the kernel (see selectKernel), its
// bound arguments, the engine of the device (empty: the best one
// available), and --tuned's choices; its warnings and notes go to `notes`.
// --remarks is the caller's to print.
Expected<PreparedRun> prepareRunIn(Session &session, const RunTargetOptions &options,
                                   std::ostream &notes = std::cerr);

// Whether `loopc tune` times choices on `engine`, and `--tuned` uses them:
// the GPU and the CPU. The interpreter has no optimizations to choose, and
// gpu-on-cpu's timings would say nothing of a GPU (its cache key would be
// the CPU's, whose choices are for the CPU pipeline).
bool isTunable(const Engine &engine);

// The file of `--in NAME=FILE[:convert]`, and whether its elements are to
// be converted to the parameter's type.
struct InputFile {
  std::string path;
  bool convert = false;
};
InputFile parseInputFile(const std::string &value);

// Splits "NAME=VALUE"; `option` names the flag in the error message.
Expected<std::pair<std::string, std::string>> splitAssignment(const std::string &text,
                                                              const std::string &option);

} // namespace loopc::driver
