// fuse_sibling_reductions: which reductions join a group (same loops, the
// statements between them movable, no member reading another's result), the
// IR of a group (one loop nest, one pair of tree kernels), and that fused
// programs compute what the interpreter computes on both pipelines.
#include "TestSupport.h"
#include "support/Differential.h"

#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"
#include "ir/IRPrinter.h"
#include "passes/Pipeline.h"

#include <doctest/doctest.h>

#include <string>

using namespace loopc;
using loopc::test::contains;
using loopc::test::occurrences;

namespace {

// The IR of the program's last kernel after the CPU pipeline, with or
// without the pass.
std::string compiled(const std::string &source, bool fused = true) {
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  passes::PipelineOptions options;
  options.target = passes::PipelineTarget::Cpu;
  if (!fused)
    options.choices.skipped.insert("fuse_sibling_reductions");
  options.choices.skipped.insert("split_reductions");      // one version of each row
  options.choices.skipped.insert("interleave_reductions"); // one step per reduction
  auto function = passes::runPipeline(
      ir::lowerKernel(*loaded->program, *loaded->program->modules.front()->kernels.back()),
      options);
  REQUIRE_MESSAGE(function, (function ? "" : function.error().message));
  return ir::toString(*function);
}

// The program's kernels on the interpreter and the CPU JIT (both pipelines'
// kernels): they must agree at every assignment.
void checkAgrees(const std::string &source, std::initializer_list<const char *> assignments) {
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  Interpreter interpreter;
  engine::CpuEngine cpu;
  engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
  Engine *engines[] = {&interpreter, &cpu, &gpuKernels};
  for (const auto &kernel : loaded->program->modules.front()->kernels)
    for (const char *assignment : assignments) {
      CAPTURE(kernel->name);
      CAPTURE(assignment);
      ArgumentRequest request;
      request.seed = 11;
      std::string text = assignment;
      for (size_t at = 0; at < text.size();) {
        size_t end = text.find(' ', at);
        std::string pair = text.substr(at, end == std::string::npos ? end : end - at);
        size_t equals = pair.find('=');
        request.values[pair.substr(0, equals)] = pair.substr(equals + 1);
        at = end == std::string::npos ? text.size() : end + 1;
      }
      test::DifferentialOutcome outcome =
          test::runDifferential(*loaded->program, *kernel, request, engines);
      REQUIRE_MESSAGE(!outcome.skipped, outcome.report);
      CHECK_MESSAGE(outcome.agree, outcome.report);
    }
}

constexpr const char *kRowStats = R"(
kernel row_stats(X: in f32[R][C], s: out f32[R], q: out f32[R], m: out f32[R]) {
  parfor r in 0..R {
    let a = redomap(+, 0.0, c in 0..C) X[r][c];
    let b = redomap(+, 0.0, c in 0..C) X[r][c] * X[r][c];
    s[r] = a;
    q[r] = b - a * a / f32(C);
    m[r] = redomap(max, -inf, c in 0..C) X[r][c] - a;
  }
}
)";

constexpr const char *kWholeArrays = R"(
assoc fn larger(a: f32, b: f32) -> f32 { return a > b ? a : b; }

kernel moments(x: in f32[N], total: out f32, largest: out f32, smallest: out f32, count: out i32) {
  total = redomap(+, 0.0, i in 0..N) x[i];
  largest = redomap(larger, -inf, i in 0..N) x[i];
  smallest = redomap(min, inf, i in 0..N) x[i] * 2.0;
  count = redomap(+, 0, i in 0..N) x[i] > 0.0 ? 1 : 0;
}
)";

} // namespace

TEST_CASE("sibling reductions in a thread share one loop, a later dependent one does not") {
  std::string fused = compiled(kRowStats);
  // a and b: one `for c` with two reduction steps; m reads a, so it waits.
  CHECK(occurrences(fused, "for c in [0, C)") == 2); // both block widths
  CHECK(occurrences(fused, "for c_3 in [0, C)") == 2);
  CHECK(occurrences(fused, "(reduction step ") == 6);
  CHECK(occurrences(fused, "for c_2 in") == 0);
  std::string separate = compiled(kRowStats, /*fused=*/false);
  CHECK(occurrences(separate, "for c_2 in [0, C)") == 2);
  checkAgrees(kRowStats, {"R=0 C=3", "R=3 C=0", "R=1 C=1", "R=7 C=33", "R=100 C=70", "R=33 C=300"});
}

TEST_CASE("whole-array reductions over one range become one pair of kernels") {
  // Four members (a user operator, i32 and f32): one first kernel with four
  // tiles and one second kernel, against four pairs without the pass.
  auto kernels = [](const std::string &ir) { return occurrences(ir, "\nkernel "); };
  CHECK(kernels(compiled(kWholeArrays)) == 2);
  CHECK(kernels(compiled(kWholeArrays, /*fused=*/false)) == 8);
  CHECK(contains(compiled(kWholeArrays), "fused.red0.tile3"));
  checkAgrees(kWholeArrays, {"N=0", "N=1", "N=7", "N=257", "N=10007", "N=300001"});
}

TEST_CASE("reductions stay apart when moving one would change what runs") {
  // Whether the second reduction kept its own loop (over c_2), in each of
  // the two block widths' versions.
  auto separateLoops = [](const std::string &body) {
    return occurrences(compiled("kernel k(X: in f32[R][C], y: out f32[R], z: out f32[R]) {\n"
                                "  parfor r in 0..R {\n" +
                                body + "\n  }\n}\n"),
                       "for c_2 in");
  };
  // Joined: independent, with an unrelated store between them.
  CHECK(separateLoops("let a = redomap(+, 0.0, c in 0..C) X[r][c];\n z[r] = a;\n"
                      "y[r] = redomap(max, -inf, c in 0..C) X[r][c];") == 0);
  // The second reads the first's result.
  CHECK(separateLoops("let a = redomap(+, 0.0, c in 0..C) X[r][c];\n"
                      "y[r] = redomap(+, 0.0, c in 0..C) X[r][c] - a;") == 2);
  // Different ranges.
  CHECK(separateLoops("let a = redomap(+, 0.0, c in 0..C) X[r][c];\n z[r] = a;\n"
                      "y[r] = redomap(+, 0.0, c in 1..C) X[r][c];") == 2);
  // A store between them that the second reads and that needs the first.
  const char *storeBetween = "let a = redomap(+, 0.0, c in 0..C) X[r][c];\n z[r] = a;\n"
                             "y[r] = redomap(+, 0.0, c in 0..C) X[r][c] * z[r];";
  CHECK(separateLoops(storeBetween) == 2);
  checkAgrees(std::string("kernel k(X: in f32[R][C], y: out f32[R], z: out f32[R]) {\n"
                          "  parfor r in 0..R {\n") +
                  storeBetween + "\n  }\n}\n",
              {"R=5 C=9", "R=40 C=100"});
}

TEST_CASE("in a row given a block, sibling reductions share one strided walk of the row") {
  // map_rows_to_blocks (GPU): a and b in one walk with two tiles and one
  // barrier per halving step; m, which reads a, in a walk of its own.
  auto loaded = test::loadText(kRowStats);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  passes::PassChoices choices;
  choices.skipped.insert("split_reductions");
  std::string mapped =
      test::aroundPass(*loaded->program, "row_stats", "map_rows_to_blocks", choices).second;
  CHECK(occurrences(mapped, "for c.step in") == 1);
  CHECK(occurrences(mapped, "for c_2.step in") == 0);
  CHECK(occurrences(mapped, "for c_3.step in") == 1);
  CHECK(occurrences(mapped,
                    "acc_2.tile[r.thread] = acc_2.tile[r.thread] + acc_2.tile[r.thread + 128]") ==
        1);
  CHECK(occurrences(mapped, "barrier") == 2 * 9); // two trees of 8 halving steps and a share each
  // Leaving fuse_sibling_reductions out leaves them apart here too.
  choices.skipped.insert("fuse_sibling_reductions");
  std::string apart =
      test::aroundPass(*loaded->program, "row_stats", "map_rows_to_blocks", choices).second;
  CHECK(occurrences(apart, "for c_2.step in") == 1);
}
