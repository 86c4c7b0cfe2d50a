// Helpers shared by the test executables: where the source tree and the loopc
// binary are, running loopc as a user would, and loading programs from text.
#pragma once

#include "frontend/Ast.h"
#include "ir/IR.h"
#include "passes/Pipeline.h"
#include "support/Diagnostics.h"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace loopc::test {

// An absolute path inside the source tree: sourcePath("samples/matmul.loop").
std::string sourcePath(const std::string &relative);

// The path of the loopc executable under test.
std::string loopcBinary();

struct CommandResult {
  int exitCode = 0;
  std::string output; // stdout and stderr interleaved
};

// Runs `command` through the shell from the source root, stderr with stdout.
CommandResult runShell(const std::string &command);

// Runs `loopc <arguments>` through the shell from the source root.
CommandResult runLoopc(const std::string &arguments);

// A program loaded and checked from files or text. `diagnostics` holds every
// message printed while loading and checking, formatted as the CLI prints them.
struct LoadedProgram {
  SourceManager sources;
  std::unique_ptr<Program> program; // null when loading or checking failed
  std::string diagnostics;
};

std::unique_ptr<LoadedProgram> loadFile(const std::string &path);
std::unique_ptr<LoadedProgram> loadText(const std::string &text);

// `kernel` lowered and through the pass pipeline; fails the current test on
// an internal error.
ir::Function compiledKernel(const Program &program, const KernelDecl &kernel,
                            passes::PipelineTarget target = passes::PipelineTarget::Gpu,
                            const passes::PassChoices &choices = {});

// The IR, as `loopc explain` prints it, of the kernel `kernelName` of
// `source` after the pipeline for `target`; fails the current test when the
// source does not check or holds no such kernel.
std::string compiledKernelText(const std::string &source, const std::string &kernelName,
                               passes::PipelineTarget target,
                               const passes::PassChoices &choices = {});

// The IR after every pass of the GPU pipeline, in order, as `loopc explain`
// prints it, and the compiled Function; fails the current test on an
// internal error.
struct PassTrace {
  std::vector<std::pair<std::string, std::string>> printed; // pass, IR after it
  ir::Function function;

  // The IR after the last run of `pass`, and before its first.
  const std::string &after(const std::string &pass) const;
  const std::string &before(const std::string &pass) const;
};
PassTrace tracePasses(const Program &program, const std::string &kernelName,
                      const passes::PassChoices &choices = {});

// The default choices but for `assignments` (NAME=VALUE, as --pass-param).
passes::PassChoices withParameters(const std::vector<std::string> &assignments);

// The GPU pipeline sized for a GPU of one SM: at a test's small sizes it
// makes the code a large run makes on a full GPU (register tiles, their
// variants by size), which a grid too small to fill 132 SMs does without.
passes::PipelineOptions gpuPipelineOnOneSM(const passes::PassChoices &choices = {});

// The IR of `kernelName` before the first run of `pass` and after its last.
std::pair<std::string, std::string> aroundPass(const Program &program,
                                               const std::string &kernelName,
                                               const std::string &pass,
                                               const passes::PassChoices &choices = {});

// True when `part` occurs in `text`; how many times it does.
bool contains(const std::string &text, const std::string &part);
size_t occurrences(const std::string &text, const std::string &part);

// ptxas assembles `ptx` for sm_80 and sm_90 and no kernel spills (nor uses
// more than `maxRegisters` registers a thread, when given); says it skipped
// where ptxas is missing.
void checkAssemblesWithoutSpills(const std::string &ptx, int maxRegisters = 0);

// Whether libdevice, the CUDA toolkit's GPU math functions, can be read (GPU
// code calling exp, sin, ... needs it; loopc builds and runs without it).
bool haveLibdevice();
// True, having said so, when a GPU compile failed with `message` for want of
// libdevice, which is missing: the caller skips that kernel.
bool skippedForLibdevice(const std::string &message);

// The contents of a file; fails the current test when it cannot be read.
std::string readFile(const std::string &path);

// A fresh temporary directory, removed with everything in it when destroyed.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;

  // Writes `contents` to the file `name` in the directory; returns its path.
  std::string file(const std::string &name, const std::string &contents) const;
  // The path of `name` in the directory (nothing is created).
  std::string at(const std::string &name) const;

private:
  std::filesystem::path path_;
};

// One row of a calibration table (tests/perf/*_measured.tsv): a program run
// with its sizes and compiler options, and the time it measured.
struct MeasuredRow {
  std::string name, file, kernel, sizes;
  std::map<std::string, int64_t> values; // the integer sizes and scalars
  passes::PassChoices choices;           // --skip-pass, --pass-param, --bounds-check
  double measuredSeconds = 0;
};

// The rows of the table at `relativePath` (tab-separated: case, file,
// kernel, sizes, options, measured ms, commit; '#' lines are comments);
// fails the current test on a malformed row.
std::vector<MeasuredRow> readMeasuredRows(const std::string &relativePath);

// The loops of a census (codegen::LoopCensus's kernel, perf::CompiledKernel's
// loops) of the Loop IR variable `variable`: every copy of that loop a pass
// made (a nest's interior and edge tiles) that the code generator kept.
template <typename Loop>
std::vector<Loop> loopsOfVariable(const std::map<std::string, Loop> &loops,
                                  const std::string &variable) {
  std::vector<Loop> found;
  for (const auto &[name, loop] : loops)
    if (name.starts_with(variable + "#"))
      found.push_back(loop);
  return found;
}

} // namespace loopc::test
