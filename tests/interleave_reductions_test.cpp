// interleave_reductions: which loops of the CPU pipeline fold into lanes (a
// thread's float min/max walking memory contiguously, long enough to pay)
// and which keep their single cell. That the lanes compute what the
// interpreter computes is differential_test's "min and max reductions in
// lanes" case.
#include "TestSupport.h"

#include "passes/Pipeline.h"

#include <doctest/doctest.h>

#include <string>

using namespace loopc;
using loopc::test::contains;

namespace {

const char *kProgram = R"(
kernel extremes(X: in f32[R][C], lo: i32, hi: out f32[R], low: out f32[R]) {
  parfor r in 0..R {
    hi[r] = redomap(max, -inf, c in lo..i32(C)) X[r][c];
    low[r] = redomap(min, inf, c in lo..i32(C)) X[r][c] * 2.0;
  }
}
kernel wide(X: in f64[R][C], hi: out f64[R]) {
  parfor r in 0..R { hi[r] = redomap(max, -inf, c in 0..C) abs(X[r][c]); }
}
kernel columns(X: in f32[R][C], top: out f32[C]) {
  parfor c in 0..C { top[c] = redomap(max, -inf, r in 0..R) X[r][c]; }
}
kernel pool(X: in f64[H][W], P: out f64[H - 2][W - 2]) {
  parfor i in 0..H - 2, j in 0..W - 2 {
    P[i][j] = redomap(max, -inf, a in 0..3, b in 0..3) X[i + a][j + b];
  }
}
kernel sums(X: in f32[R][C], s: out f32[R]) {
  parfor r in 0..R { s[r] = redomap(+, 0.0, c in 0..C) X[r][c]; }
}
assoc fn absmax(a: f32, b: f32) -> f32 { return max(abs(a), abs(b)); }
assoc fn first(a: i32, b: i32) -> i32 { return a != 0 ? a : b; }
kernel norms(X: in f32[R][C], n: out f32[R], s: out f32[R]) {
  parfor r in 0..R {
    n[r] = redomap(absmax, 0.0, c in 0..C) X[r][c];
    s[r] = redomap(+, 0.0, c in 0..C) X[r][c];
  }
}
kernel firsts(X: in i32[R][C], f: out i32[R]) {
  parfor r in 0..R { f[r] = redomap(first, 0, c in 0..C) X[r][c]; }
}
fn sq(x: f32) -> f32 { return x * x; }
kernel energy(X: in f32[R][C], e: out f32[R], top: out f32[R]) {
  parfor r in 0..R {
    let b = redomap(+, 0.0, c in 0..C) sq(X[r][c]);
    let m = redomap(max, -inf, c in 0..C) X[r][c];
    e[r] = b; top[r] = m;
  }
}
kernel peaks(steps: i32, x: in f32[N], m: out f32[steps]) {
  for t in 0..steps { m[t] = redomap(max, -inf, i in 0..N) x[i] + f32(t); }
}
kernel column_peaks(steps: i32, X: in f32[R][C], m: out f32[steps]) {
  for t in 0..steps { m[t] = redomap(max, -inf, r in 0..R) X[r][i64(t) % C]; }
}
)";

// The kernel's IR after the pipeline for `target`.
std::string compiled(const std::string &kernelName,
                     passes::PipelineTarget target = passes::PipelineTarget::Cpu) {
  return test::compiledKernelText(kProgram, kernelName, target);
}

} // namespace

TEST_CASE("a row's float min and max fold into 256 bytes of lanes on the CPU") {
  std::string extremes = compiled("extremes");
  // 64 f32 lanes, used from two vectors' worth of elements on; element l
  // of each block of 64 goes to lane l; the lanes halve into the cell.
  CHECK(contains(extremes, "if (c.count >= 128) {\n"));
  CHECK(contains(extremes, "register f32 acc.lanes[64]\n"));
  CHECK(contains(extremes, "acc.lanes[acc.lane] = -inf\n")); // the neutral element
  CHECK(contains(extremes, "for c.block in [0, c.count / 64) {\n"));
  CHECK(contains(extremes, "vectorized for c.lane in [0, 64) {\n"));
  CHECK(contains(extremes, "let c = i32(c.first + (c.block * 64 + c.lane))\n"));
  CHECK(
      contains(extremes, "acc.lanes[c.lane] = max(acc.lanes[c.lane], X[r][c])  (reduction step max= from -inf)"));
  CHECK(contains(extremes, "acc.lanes[acc.lane] = max(acc.lanes[acc.lane], acc.lanes[acc.lane + "
                           "32])\n"));
  CHECK(contains(extremes, "acc = max(acc, acc.lanes[0])\n"));
  CHECK(contains(extremes, "min(acc_2.lanes["));
  // f64: 32 lanes.
  std::string wide = compiled("wide");
  CHECK(contains(wide, "register f64 acc.lanes[32]\n"));
  CHECK(contains(wide, "if (c.count >= 64) {\n"));
}

TEST_CASE("a commuting user operator folds into lanes, with a sum fused into its walk") {
  // absmax commutes (the checker's symmetry test); its lanes start at its
  // neutral element and halve through its inlined body; the row's sum,
  // fused into the same walk, gets lanes too.
  std::string norms = compiled("norms");
  CHECK(contains(norms, "register f32 acc.lanes[64]\n"));
  CHECK(contains(norms, "acc.lanes[acc.lane] = 0.0\n"));
  CHECK(contains(norms, "acc.lanes[c.lane] = max(abs(acc.lanes[c.lane]), abs(X[r][c]))"));
  CHECK(contains(norms, "acc_2.lanes[c.lane] = acc_2.lanes[c.lane] + X[r][c]"));
  // first does not commute: its points combine in order, one cell.
  CHECK(!contains(compiled("firsts"), "lanes"));
  // From a bug hunt: a member keeping a let of its own (a call's argument)
  // in the fused walk left it serial, 12x slower than not fusing.
  std::string energy = compiled("energy");
  CHECK(contains(energy, "acc_2.lanes[c.lane] = max(acc_2.lanes[c.lane], X[r][c])"));
  CHECK(contains(energy, "acc.lanes[c.lane] = acc.lanes[c.lane] + f32(x * x)"));
}

TEST_CASE("a whole-array maximum of few points, a loop of the host code, folds into lanes") {
  // lower_reductions keeps it in the host code (beside its tree, for many
  // points); a walk down a column there keeps its cell.
  std::string peaks = compiled("peaks");
  CHECK(contains(peaks, "register f32 acc.reg2.lanes[64]\n"));
  CHECK(contains(peaks, "vectorized for i.lane in [0, 64) {\n"));
  CHECK(contains(peaks, "acc.reg2.lanes[i.lane] = max(acc.reg2.lanes[i.lane], x[i] + f32(t))"));
  CHECK(!contains(compiled("column_peaks"), "lanes"));
}

TEST_CASE("columns, short constant loops, sums and the GPU keep one cell") {
  // A column's walk runs outside the thread loop, vectorized across threads
  // (a column per lane): lanes would only add work. (Its partials, when
  // split, are a row walk and do fold.)
  CHECK(!contains(compiled("columns"), "acc.lanes[(r"));
  CHECK(!contains(compiled("pool"), "lanes")); // 3 x 3: too short
  CHECK(!contains(compiled("sums"), "lanes")); // LLVM reassociates sums itself
  CHECK(!contains(compiled("extremes", passes::PipelineTarget::Gpu), "lanes"));
}
