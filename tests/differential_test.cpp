// Every kernel of samples/*.loop and stdlib/*.loop on the interpreter and the
// CPU JIT with the same seeded inputs: the two must agree. One test case per
// file, so ctest spreads the files over cores, and a last case fails when a
// file has no case. Each case lists its size assignments: 1, 7, 33, about 100
// and mixed sizes that are multiples of no tile where the interpreter is fast
// enough, smaller ones for deep nests (the interpreter runs a few million
// operations a second, and a 5-deep convolution at 20 is hundreds of millions).
#include "TestSupport.h"
#include "codegen/CpuEngine.h"
#include "interp/Interpreter.h"
#include "support/Differential.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <string>

using namespace loopc;

namespace {

// Source-relative paths of the files that have a test case.
std::set<std::string> &coveredFiles() {
  static std::set<std::string> files;
  return files;
}

bool cover(const char *file) { return coveredFiles().insert(file).second; }

// "M=7 N=33 dt=0.01" as a name -> value map.
std::map<std::string, std::string> parseAssignment(const std::string &assignment) {
  std::map<std::string, std::string> values;
  std::istringstream words(assignment);
  for (std::string word; words >> word;) {
    size_t equals = word.find('=');
    REQUIRE_MESSAGE(equals != std::string::npos, "not NAME=VALUE: " << word);
    values[word.substr(0, equals)] = word.substr(equals + 1);
  }
  return values;
}

bool kernelHasName(const KernelDecl &kernel, const std::string &name) {
  auto named = [&](const VarDeclPtr &decl) { return decl->name == name; };
  return std::ranges::any_of(kernel.params, named) || std::ranges::any_of(kernel.sizes, named);
}

// Runs every kernel of `file` (not those it imports) at every assignment. One
// assignment serves all kernels of a file: each takes the names it has. An
// assignment the interpreter cannot run (an empty convolution output) is
// skipped, but every kernel must be compared at least once.
void checkFile(const std::string &file, std::initializer_list<const char *> assignments) {
  auto loaded = test::loadFile(test::sourcePath(file));
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const auto &kernels = loaded->program->modules.front()->kernels;
  Interpreter interpreter;
  // One engine for all assignments: it compiles each kernel once.
  codegen::CpuEngine cpu;
  Engine *engines[] = {&interpreter, &cpu};
  std::map<std::string, int> comparedByKernel;
  std::map<std::string, std::string> lastSkip;
  for (const char *assignment : assignments) {
    CAPTURE(assignment);
    std::map<std::string, std::string> values = parseAssignment(assignment);
    for (const auto &[name, value] : values)
      CHECK_MESSAGE(std::ranges::any_of(
                        kernels, [&](const auto &kernel) { return kernelHasName(*kernel, name); }),
                    "no kernel of " << file << " has a size or parameter named " << name);
    for (const auto &kernel : kernels) {
      ArgumentRequest request;
      request.seed = 42;
      for (const auto &[name, value] : values)
        if (kernelHasName(*kernel, name))
          request.values[name] = value;
      test::DifferentialOutcome outcome =
          test::runDifferential(*loaded->program, *kernel, request, engines);
      if (outcome.skipped) {
        lastSkip[kernel->name] = outcome.report;
        continue;
      }
      ++comparedByKernel[kernel->name];
      CHECK_MESSAGE(outcome.agree, outcome.report);
    }
  }
  for (const auto &kernel : kernels)
    CHECK_MESSAGE(comparedByKernel[kernel->name] > 0,
                  kernel->name << " was never compared; last skip: " << lastSkip[kernel->name]);
}

} // namespace

// Registers `file` as covered and defines its test case.
#define DIFFERENTIAL_CASE(file, ...)                                                               \
  [[maybe_unused]] static const bool DOCTEST_ANONYMOUS(covered_) = cover(file);                    \
  TEST_CASE(file) { checkFile(file, {__VA_ARGS__}); }

DIFFERENTIAL_CASE("samples/cnn_conv.loop", "Ic=1 Oc=1 H=1 W=1 K=1", "Ic=2 Oc=3 H=7 W=9 K=3",
                  "Ic=3 Oc=2 H=33 W=17 K=5", "Ic=4 Oc=5 H=20 W=33 K=3", "Ic=1 Oc=2 H=5 W=6 K=7")
DIFFERENTIAL_CASE("samples/conv2d_11x11.loop", "H=11 W=11", "H=12 W=40", "H=33 W=33", "H=100 W=61")
DIFFERENTIAL_CASE("samples/conv2d_5x5.loop", "H=1 W=1", "H=5 W=5", "H=7 W=7", "H=33 W=33",
                  "H=100 W=100", "H=7 W=33", "H=33 W=9")
DIFFERENTIAL_CASE("samples/dot.loop", "N=1", "N=7", "N=33", "N=100", "N=10007")
DIFFERENTIAL_CASE("samples/gauss.loop", "N=1", "N=7", "N=33", "N=100")
DIFFERENTIAL_CASE("samples/gaussian_blur.loop", "H=1 W=1", "H=5 W=5", "H=7 W=7", "H=33 W=33",
                  "H=100 W=100", "H=7 W=33", "H=33 W=9")
DIFFERENTIAL_CASE("samples/jacobi1d.loop", "N=1 steps=2", "N=7 steps=2", "N=33 steps=3",
                  "N=100 steps=2", "N=10007 steps=3")
DIFFERENTIAL_CASE("samples/jacobi2d.loop", "N=1 steps=2", "N=7 steps=2", "N=33 steps=3",
                  "N=100 steps=2")
DIFFERENTIAL_CASE("samples/laplace.loop", "H=1 W=1", "H=7 W=7", "H=33 W=33", "H=100 W=100",
                  "H=7 W=33", "H=33 W=7")
DIFFERENTIAL_CASE("samples/matmul.loop", "M=1 N=1 K=1", "M=7 N=7 K=7", "M=33 N=33 K=33",
                  "M=100 N=100 K=100", "M=7 N=33 K=5", "M=33 N=5 K=7", "M=65 N=17 K=129")
DIFFERENTIAL_CASE("samples/mv.loop", "M=1 N=1", "M=7 N=7", "M=33 N=33", "M=100 N=100", "M=7 N=33",
                  "M=33 N=7", "M=1000 N=77")
DIFFERENTIAL_CASE("samples/mv_transposed.loop", "M=1 N=1", "M=7 N=7", "M=33 N=33", "M=100 N=100",
                  "M=7 N=33", "M=33 N=7", "M=1000 N=77")
DIFFERENTIAL_CASE("samples/nbody.loop", "N=1 dt=0.01 softening=0.1", "N=7 dt=0.01 softening=0.1",
                  "N=33 dt=0.01 softening=0.1", "N=100 dt=0.01 softening=0.1",
                  "N=301 dt=0.5 softening=0.05")
DIFFERENTIAL_CASE("samples/reverse.loop", "N=1", "N=7", "N=33", "N=100", "N=10007")
DIFFERENTIAL_CASE("samples/softmax.loop", "R=1 C=1", "R=7 C=7", "R=33 C=33", "R=100 C=100",
                  "R=7 C=33", "R=33 C=7", "R=3 C=1000")
DIFFERENTIAL_CASE("samples/sqdist.loop", "M=1 N=1 K=1", "M=7 N=7 K=7", "M=33 N=33 K=33",
                  "M=100 N=100 K=100", "M=7 N=33 K=5", "M=33 N=5 K=7")
DIFFERENTIAL_CASE("samples/sum_max.loop", "N=1 threshold=0.5", "N=7 threshold=0.5",
                  "N=33 threshold=0", "N=100 threshold=0.5", "N=10007 threshold=-0.25")
DIFFERENTIAL_CASE("samples/transpose.loop", "M=1 N=1", "M=7 N=7", "M=33 N=33", "M=100 N=100",
                  "M=7 N=33", "M=33 N=7", "M=130 N=67")
DIFFERENTIAL_CASE("stdlib/conv.loop", "H=1 W=1 K=1", "H=7 W=7 K=3", "H=33 W=33 K=5",
                  "H=100 W=100 K=3", "H=7 W=33 K=5", "H=33 W=9 K=7")
DIFFERENTIAL_CASE("stdlib/linalg.loop", "M=1 N=1 K=1 alpha=1.5", "M=7 N=7 K=7 alpha=1.5",
                  "M=33 N=33 K=33 alpha=-0.5", "M=100 N=100 K=100 alpha=2",
                  "M=7 N=33 K=5 alpha=1.5", "M=33 N=5 K=7 alpha=1.5")
DIFFERENTIAL_CASE("stdlib/reduce.loop", "N=1", "N=7", "N=33", "N=100", "N=10007")
DIFFERENTIAL_CASE("stdlib/stencil.loop", "N=1 H=1 W=1 D=1 steps=2", "N=7 H=7 W=7 D=7 steps=2",
                  "N=33 H=33 W=33 D=33 steps=3", "N=100 H=100 W=100 D=20 steps=2",
                  "N=33 H=7 W=33 D=5 steps=1")

TEST_CASE("every sample and stdlib file has a differential case") {
  std::set<std::string> onDisk;
  for (const char *dir : {"samples", "stdlib"})
    for (const auto &entry : std::filesystem::directory_iterator(test::sourcePath(dir)))
      if (entry.path().extension() == ".loop")
        onDisk.insert(std::string(dir) + "/" + entry.path().filename().string());
  for (const std::string &file : onDisk)
    CHECK_MESSAGE(coveredFiles().contains(file), file << " has no DIFFERENTIAL_CASE");
  for (const std::string &file : coveredFiles())
    CHECK_MESSAGE(onDisk.contains(file), file << " has a case but no file");
}
