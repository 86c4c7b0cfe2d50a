// Every kernel of samples/*.loop and stdlib/*.loop on the interpreter and the
// CPU JIT, with the same seeded inputs, at sizes 1, 7, 33 and 100 and some
// non-square combinations: the two must agree.
#include "TestSupport.h"
#include "codegen/CpuEngine.h"
#include "interp/Interpreter.h"
#include "support/Differential.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <vector>

using namespace loopc;

namespace {

std::vector<std::string> kernelFiles() {
  std::vector<std::string> files;
  for (const char *dir : {"samples", "stdlib"})
    for (const auto &entry : std::filesystem::directory_iterator(test::sourcePath(dir)))
      if (entry.path().extension() == ".loop")
        files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// Size assignments: all sizes equal, then rotations of distinct sizes. Kernels
// with many sizes (convolutions, n-body) stay smaller so the interpreter keeps
// the suite fast.
std::vector<std::vector<int64_t>> sizeCombinations(size_t sizeCount) {
  std::vector<int64_t> equal =
      sizeCount <= 2 ? std::vector<int64_t>{1, 7, 33, 100} : std::vector<int64_t>{1, 7, 20};
  std::vector<std::vector<int64_t>> combinations;
  for (int64_t size : equal)
    combinations.push_back(std::vector<int64_t>(sizeCount, size));
  const std::vector<int64_t> mixed = {7, 33, 5};
  for (size_t rotation = 0; rotation < 2 && sizeCount > 1; ++rotation) {
    std::vector<int64_t> combination;
    for (size_t i = 0; i < sizeCount; ++i)
      combination.push_back(mixed[(i + rotation) % mixed.size()]);
    combinations.push_back(combination);
  }
  return combinations;
}

} // namespace

TEST_CASE("every sample and stdlib kernel agrees on interp and cpu") {
  size_t compared = 0;
  for (const std::string &file : kernelFiles()) {
    CAPTURE(file);
    auto loaded = test::loadFile(file);
    REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
    Interpreter interpreter;
    codegen::CpuEngine cpu;
    Engine *engines[] = {&interpreter, &cpu};
    for (const auto &kernel : loaded->program->modules.front()->kernels) {
      for (const std::vector<int64_t> &sizes : sizeCombinations(kernel->sizes.size())) {
        ArgumentRequest request;
        request.seed = 42;
        int64_t longest = 1;
        for (size_t i = 0; i < sizes.size(); ++i) {
          request.values[kernel->sizes[i]->name] = std::to_string(sizes[i]);
          longest = std::max(longest, sizes[i]);
        }
        // Integer scalar parameters (time steps, pivots) stay small.
        for (const auto &param : kernel->params)
          if (!param->isArray() && param->intent != Intent::Out && isInteger(param->type.element))
            request.values[param->name] = std::to_string(2);
        CompareOptions options;
        options.reductionLength = static_cast<uint64_t>(longest * longest);
        test::DifferentialOutcome outcome =
            test::runDifferential(*loaded->program, *kernel, request, engines, options);
        if (outcome.skipped)
          continue;
        ++compared;
        CHECK_MESSAGE(outcome.agree, outcome.report);
      }
    }
  }
  CHECK(compared > 20);
}
