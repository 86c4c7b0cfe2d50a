// Implementation of the shared test helpers (see TestSupport.h).
#include "TestSupport.h"

#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
#include "driver/Session.h"
#include "frontend/Loader.h"
#include "ir/IRPrinter.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "sema/Sema.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <sys/wait.h>

namespace loopc::test {

std::string sourcePath(const std::string &relative) {
  return std::string(LOOPC_SOURCE_DIR) + "/" + relative;
}

std::string loopcBinary() { return LOOPC_BINARY; }

CommandResult runShell(const std::string &command) {
  std::string full = "cd '" + std::string(LOOPC_SOURCE_DIR) + "' && " + command + " 2>&1";
  CommandResult result;
  FILE *pipe = popen(full.c_str(), "r");
  REQUIRE_MESSAGE(pipe != nullptr, "cannot run: " << full);
  std::array<char, 4096> buffer;
  while (size_t count = fread(buffer.data(), 1, buffer.size(), pipe))
    result.output.append(buffer.data(), count);
  int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

CommandResult runLoopc(const std::string &arguments) {
  return runShell("'" + loopcBinary() + "' " + arguments);
}

namespace {

// Checks a freshly loaded program and records every diagnostic as text.
void checkLoaded(LoadedProgram &loaded, DiagnosticEngine &diagnostics) {
  if (loaded.program && !driver::checkProgramAndSchedules(*loaded.program, diagnostics))
    loaded.program.reset();
  std::ostringstream text;
  diagnostics.print(text);
  loaded.diagnostics = text.str();
}

} // namespace

std::unique_ptr<LoadedProgram> loadFile(const std::string &path) {
  auto loaded = std::make_unique<LoadedProgram>();
  DiagnosticEngine diagnostics(loaded->sources);
  loaded->program = loadProgram(path, loaded->sources, diagnostics);
  checkLoaded(*loaded, diagnostics);
  return loaded;
}

std::unique_ptr<LoadedProgram> loadText(const std::string &text) {
  auto loaded = std::make_unique<LoadedProgram>();
  DiagnosticEngine diagnostics(loaded->sources);
  loaded->program = loadProgramFromText("test.loop", text, loaded->sources, diagnostics);
  checkLoaded(*loaded, diagnostics);
  return loaded;
}

void checkAssemblesWithoutSpills(const std::string &ptx, int maxRegisters) {
  std::optional<std::string> ptxas = codegen::findPtxas();
  if (!ptxas) {
    MESSAGE("skipped assembling the PTX: ptxas not found (set LOOPC_PTXAS)");
    return;
  }
  for (const char *gpu : {"sm_80", "sm_90"}) {
    CAPTURE(gpu);
    auto reports = codegen::runPtxas(*ptxas, ptx, gpu);
    REQUIRE_MESSAGE(reports, (reports ? "" : reports.error().message));
    for (const codegen::PtxasKernelReport &report : *reports) {
      CAPTURE(report.name);
      CHECK(report.spillStoreBytes == 0);
      CHECK(report.spillLoadBytes == 0);
      if (maxRegisters > 0)
        CHECK(report.registers <= maxRegisters);
    }
  }
}

bool haveLibdevice() {
  std::error_code error;
  return std::filesystem::is_regular_file(codegen::libdevicePath(), error);
}

bool skippedForLibdevice(const std::string &message) {
  if (haveLibdevice() || !contains(message, "comes from libdevice in the CUDA toolkit"))
    return false;
  MESSAGE("skipped (no libdevice, the CUDA toolkit's GPU math functions): " << message);
  return true;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

size_t occurrences(const std::string &text, const std::string &part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++count;
  return count;
}

const std::string &PassTrace::after(const std::string &pass) const {
  auto found = std::ranges::find(printed.rbegin(), printed.rend(), pass,
                                 &std::pair<std::string, std::string>::first);
  REQUIRE_MESSAGE(found != printed.rend(), "no pass " << pass);
  return found->second;
}

const std::string &PassTrace::before(const std::string &pass) const {
  auto found = std::ranges::find(printed, pass, &std::pair<std::string, std::string>::first);
  bool hasOneBefore = found != printed.end() && found != printed.begin();
  REQUIRE_MESSAGE(hasOneBefore, "no pass before " << pass);
  return std::prev(found)->second;
}

passes::PipelineOptions gpuPipelineOnOneSM(const passes::PassChoices &choices) {
  passes::PipelineOptions pipeline;
  pipeline.target = passes::PipelineTarget::Gpu;
  pipeline.choices = choices;
  pipeline.multiprocessors = 1;
  return pipeline;
}

passes::PassChoices withParameters(const std::vector<std::string> &assignments) {
  passes::PassChoices choices;
  for (const std::string &assignment : assignments) {
    Status set = passes::setPassParameter(choices.parameters, assignment);
    REQUIRE_MESSAGE(set, (set ? "" : set.error().message));
  }
  return choices;
}

PassTrace tracePasses(const Program &program, const std::string &kernelName,
                      const passes::PassChoices &choices) {
  const KernelDecl *kernel = program.findKernel(kernelName);
  REQUIRE_MESSAGE(kernel, "no kernel " << kernelName);
  PassTrace trace;
  passes::PipelineOptions options;
  options.choices = choices;
  options.afterPass = [&](const std::string &pass, const ir::Function &function) {
    trace.printed.emplace_back(pass, ir::toString(function));
  };
  Expected<ir::Function> function = passes::runPipeline(ir::lowerKernel(program, *kernel), options);
  REQUIRE_MESSAGE(function, (function ? "" : function.error().message));
  trace.function = std::move(*function);
  return trace;
}

std::pair<std::string, std::string> aroundPass(const Program &program,
                                               const std::string &kernelName,
                                               const std::string &pass,
                                               const passes::PassChoices &choices) {
  PassTrace trace = tracePasses(program, kernelName, choices);
  return {trace.before(pass), trace.after(pass)};
}

ir::Function compiledKernel(const Program &program, const KernelDecl &kernel,
                            passes::PipelineTarget target, const passes::PassChoices &choices) {
  passes::PipelineOptions options;
  options.target = target;
  options.choices = choices;
  Expected<ir::Function> function = passes::runPipeline(ir::lowerKernel(program, kernel), options);
  REQUIRE_MESSAGE(function, (function ? "" : function.error().message));
  return std::move(*function);
}

std::string compiledKernelText(const std::string &source, const std::string &kernelName,
                               passes::PipelineTarget target, const passes::PassChoices &choices) {
  auto loaded = loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  for (const auto &kernel : loaded->program->modules.front()->kernels)
    if (kernel->name == kernelName)
      return ir::toString(compiledKernel(*loaded->program, *kernel, target, choices));
  FAIL("no kernel " << kernelName);
  return "";
}

TempDir::TempDir() {
  // mkdtemp: unique among the test processes ctest runs side by side.
  std::string pattern = (std::filesystem::temp_directory_path() / "loopc_test_XXXXXX").string();
  REQUIRE_MESSAGE(mkdtemp(pattern.data()) != nullptr, "cannot create a directory like " << pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::file(const std::string &name, const std::string &contents) const {
  std::string full = at(name);
  std::ofstream out(full, std::ios::binary);
  out << contents;
  REQUIRE_MESSAGE(out.good(), "cannot write " << full);
  return full;
}

std::string TempDir::at(const std::string &name) const { return (path_ / name).string(); }

std::vector<MeasuredRow> readMeasuredRows(const std::string &relativePath) {
  auto words = [](const std::string &text) {
    std::istringstream stream(text);
    std::vector<std::string> result;
    for (std::string word; stream >> word;)
      result.push_back(word);
    return result;
  };
  std::vector<MeasuredRow> rows;
  std::ifstream in(sourcePath(relativePath));
  REQUIRE(in);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#')
      continue;
    std::vector<std::string> fields;
    std::istringstream split(line);
    for (std::string field; std::getline(split, field, '\t');)
      fields.push_back(field);
    REQUIRE(fields.size() == 7);
    MeasuredRow row;
    row.name = fields[0], row.file = fields[1], row.kernel = fields[2], row.sizes = fields[3];
    row.measuredSeconds = std::stod(fields[5]) * 1e-3;
    for (const std::string &assignment : words(fields[3])) {
      size_t equals = assignment.find('=');
      std::string value = assignment.substr(equals + 1);
      if (value.find_first_not_of("-0123456789") == std::string::npos)
        row.values[assignment.substr(0, equals)] = std::stoll(value);
    }
    // A row without --bounds-check measured unchecked code (every row
    // before checks were the default, and those run with --unsafe).
    std::vector<std::string> options = words(fields[4]);
    for (size_t i = 0; i < options.size(); ++i) {
      if (options[i] == "--bounds-check") {
        row.choices.boundsChecks = true;
        continue;
      }
      if (options[i] == "--unsafe")
        continue;
      REQUIRE(i + 1 < options.size());
      if (options[i] == "--skip-pass")
        row.choices.skipped.insert(options[++i]);
      else
        REQUIRE(passes::setPassParameter(row.choices.parameters, options[++i]));
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

} // namespace loopc::test
