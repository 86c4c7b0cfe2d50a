// unroll_around_reductions: which short loops around reductions are
// unrolled so fuse_sibling_reductions walks their copies' ranges once, and
// which are left as they are. That the unrolled and fused walks compute what
// the interpreter computes is differential_test's "short loops around
// reductions" case.
#include "TestSupport.h"

#include "passes/Pipeline.h"

#include <doctest/doctest.h>

#include <string>

using namespace loopc;
using loopc::test::contains;

namespace {

const char *kProgram = R"(
kernel components(X: in f32[N][3], F: out f32[N][3]) {
  parfor i in 0..N, c in 0..3 {
    F[i][c] = redomap(+, 0.0, j in 0..N) (X[j][c] - X[i][c]) / sqrt(X[j][0] * X[i][0] + 1.0);
  }
}
kernel offset(X: in f32[N][4], F: out f32[N][4]) {
  parfor i in 0..N {
    for c in 1..3 {
      var t: f32[2];
      t[0] = redomap(max, -inf, j in 0..N) X[j][c] * X[i][c];
      F[i][c] = t[0];
    }
  }
}
kernel triangle(X: in f32[N][3], F: out f32[N][3]) {
  parfor i in 0..N, c in 0..3 {
    F[i][c] = redomap(+, 0.0, j in 0..c + 1) X[i][j];
  }
}
kernel five(X: in f32[N][5], F: out f32[N][5]) {
  parfor i in 0..N, c in 0..5 {
    F[i][c] = redomap(+, 0.0, j in 0..N) X[j][c] * X[i][c];
  }
}
kernel guarded(X: in f32[N][3], F: out f32[N][3]) {
  parfor i in 0..N, c in 0..3 {
    if (X[i][c] > 0.0) { F[i][c] = redomap(+, 0.0, j in 0..N) X[j][c]; } else { F[i][c] = 0.0; }
  }
}
)";

// The kernel's IR after the pipeline for `target`.
std::string compiled(const std::string &kernelName,
                     passes::PipelineTarget target = passes::PipelineTarget::Cpu) {
  return test::compiledKernelText(kProgram, kernelName, target);
}

} // namespace

TEST_CASE("a parfor's short component loop becomes one walk feeding every component") {
  for (auto target : {passes::PipelineTarget::Cpu, passes::PipelineTarget::Gpu}) {
    std::string components = compiled("components", target);
    CAPTURE(components);
    CHECK_FALSE(contains(components, "for c in"));
    // One accumulator per component, all three fed at each j of one walk.
    CHECK(contains(components, "acc.c0 = acc.c0 + (X[j.c0][0] - X[i][0])"));
    CHECK(contains(components, "acc.c1 = acc.c1 + (X[j.c0][1] - X[i][1])"));
    CHECK(contains(components, "acc.c2 = acc.c2 + (X[j.c0][2] - X[i][2])"));
    CHECK_FALSE(contains(components, "j.c1"));
    CHECK(contains(components, "F[i][2] = acc.c2"));
  }
}

TEST_CASE("a serial loop from 1 with a private array: copies renamed, the array's too") {
  std::string offset = compiled("offset");
  CAPTURE(offset);
  CHECK_FALSE(contains(offset, "for c in"));
  // Copies numbered from 0, whatever the loop's first value.
  CHECK(contains(offset, "f32 t.c0[2]"));
  CHECK(contains(offset, "f32 t.c1[2]"));
  CHECK(contains(offset, "acc.c0 = max(acc.c0, X[j.c0][1] * X[i][1])"));
  CHECK(contains(offset, "acc.c1 = max(acc.c1, X[j.c0][2] * X[i][2])"));
  CHECK(contains(offset, "F[i][2] = t.c1[0]"));
}

TEST_CASE("loops whose copies could not share a walk stay loops") {
  // The range depends on the loop's variable; five copies are more than a
  // fused group holds; the reduction is under an if.
  CHECK(contains(compiled("triangle"), "for c in [0, 3) {\n"));
  CHECK(contains(compiled("five"), "for c in [0, 5) {\n"));
  CHECK(contains(compiled("guarded"), "for c in [0, 3) {\n"));
}
