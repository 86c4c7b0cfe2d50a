// map_rows_to_blocks: which parfors get a block per row, what the shared row
// looks like, and that the GPU pipeline's kernels compute what the
// interpreter computes at row lengths below, at and above the block's 256
// threads.
#include "TestSupport.h"
#include "ir/IRPrinter.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "support/Differential.h"

#include <doctest/doctest.h>

#include <map>
#include <string>

using namespace loopc;
using loopc::test::contains;

namespace {

// The IR around map_rows_to_blocks alone: split_reductions, before it, would
// add a second version of few-row parfors (split_reductions_test.cpp).
std::pair<std::string, std::string> aroundRowMapping(const Program &program,
                                                     const std::string &kernelName) {
  passes::PassChoices choices;
  choices.skipped.insert("split_reductions");
  return test::aroundPass(program, kernelName, "map_rows_to_blocks", choices);
}

bool mapsRows(const Program &program, const std::string &kernelName) {
  auto [before, after] = aroundRowMapping(program, kernelName);
  return before != after;
}

std::unique_ptr<test::LoadedProgram> sample(const std::string &name) {
  auto loaded = test::loadFile(test::sourcePath("samples/" + name + ".loop"));
  REQUIRE(loaded->program);
  return loaded;
}

} // namespace

TEST_CASE("softmax and mv: a block per row, redomaps as block trees, stores by thread 0") {
  auto softmax = sample("softmax");
  std::string rows = aroundRowMapping(*softmax->program, "softmax").second;
  // Rows of 64 or more elements get a block each, chosen on the host.
  CHECK(contains(rows, "  if (C >= 64) {\n"
                       "    gpu_block.x for r.block in [0, max(R, 0)) {\n"
                       "      shared f32 acc.tile[256]\n"
                       "      shared f32 acc_2.tile[256]\n"
                       "      gpu_thread.x for r.thread in [0, 256) {\n"
                       "        let r = 0 + r.block\n"));
  CHECK(contains(rows, "for c.step in [0, (C + 256 - (r.thread + 1)) / 256) {\n"
                       "          let c = 0 + (r.thread + c.step * 256)\n"
                       "          acc.part = max(acc.part, X[r][c])  (reduction step max= from -inf)\n"));
  CHECK(contains(rows, "acc = max(acc, acc.tile[0])\n        let m = acc\n"));
  CHECK(contains(rows, "Y[r][c_3] = exp(X[r][c_3] - m) / s"));
  // Shorter rows keep a thread each.
  CHECK(contains(rows, "  } else {\n    parallel for r in [0, R) {\n"));

  auto mv = sample("mv");
  std::string mvRows = aroundRowMapping(*mv->program, "mv").second;
  CHECK(contains(mvRows, "if (i.thread == 0) {\n          y[i] = acc\n"));
  // Rows of 1 and 63 take the thread per row, the others a block per row.
  test::checkGpuKernelsOnCpu(*mv->program, "mv",
                             {{{"M", "1"}, {"N", "1"}},
                              {{"M", "9"}, {"N", "63"}},
                              {{"M", "3"}, {"N", "64"}},
                              {{"M", "3"}, {"N", "255"}},
                              {{"M", "5"}, {"N", "256"}},
                              {{"M", "70"}, {"N", "1000"}}},
                             11);
  test::checkGpuKernelsOnCpu(
      *softmax->program, "softmax",
      {{{"R", "1"}, {"C", "1"}}, {{"R", "4"}, {"C", "257"}}, {{"R", "33"}, {"C", "700"}}}, 11);
}

TEST_CASE("parfors whose threads already read consecutive addresses keep a thread per row") {
  // mv_transposed reads A[j][i] (consecutive along the row index), nbody's
  // inner loop reads the same body for every thread, matmul is a 2-D nest.
  for (const char *name : {"mv_transposed", "nbody", "matmul", "transpose", "jacobi2d"}) {
    CAPTURE(name);
    auto loaded = sample(name);
    CHECK(!mapsRows(*loaded->program, name));
  }
}

TEST_CASE("rows that read what they write, or repeat global stores, keep a thread per row") {
  auto loaded = test::loadText(R"(
kernel normalize_in_place(X: inout f32[R][C]) {
  parfor r in 0..R {
    let s = redomap(+, 0.0, c in 0..C) X[r][c];
    parfor c in 0..C {
      X[r][c] = X[r][c] / s;
    }
  }
}

kernel prefix_rows(X: in f32[R][C], P: out f32[R][C]) {
  parfor r in 0..R {
    let total = redomap(+, 0.0, c in 0..C) X[r][c];
    var running: f32 = 0.0;
    for c in 0..C {
      running += X[r][c];
      P[r][c] = running / total;
    }
  }
}
)");
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  CHECK(!mapsRows(*loaded->program, "normalize_in_place"));
  CHECK(!mapsRows(*loaded->program, "prefix_rows"));
}

TEST_CASE("rows whose threads would split a private array, race on stores, or diverge keep a "
          "thread per row") {
  // Found by a bug hunt: each was wrong, or invalid IR, with a block per row.
  auto loaded = test::loadText(R"(
kernel private_row(X: in f32[R][C], y: out f32[R]) {
  parfor r in 0..R {
    var t: f32[C];
    parfor c in 0..C { t[c] = X[r][c]; }
    y[r] = t[C - 1];
  }
}

kernel overwrite_last(X: in f32[R][C], Y: out f32[R][C]) {
  parfor r in 0..R {
    parfor c in 0..C { Y[r][c] = X[r][c]; }
    Y[r][C - 1] = -1.0;
  }
}

kernel two_writers(X: in f32[R][C], Y: out f32[R][C]) {
  parfor r in 0..R {
    parfor c in 0..C { Y[r][c] = X[r][c]; }
    parfor c in 0..C / 2 { Y[r][2 * c] = 5.0; }
  }
}

kernel reduce_if_positive(X: in f32[R][C], z: out f32[R]) {
  parfor r in 0..R {
    let s = redomap(+, 0.0, c in 0..C) X[r][c];
    if s > 0.0 { z[r] = redomap(max, -inf, c in 0..C) X[r][c]; }
  }
}

kernel reduce_if_row(X: in f32[R][C], z: out f32[R]) {
  parfor r in 0..R {
    let s = redomap(+, 0.0, c in 0..C) X[r][c];
    if r % 2 == 0 { z[r] = s + redomap(max, -inf, c in 0..C) X[r][c]; }
  }
}
)");
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  for (const char *kernel :
       {"private_row", "overwrite_last", "two_writers", "reduce_if_positive"}) {
    CAPTURE(kernel);
    CHECK(!mapsRows(*loaded->program, kernel));
    test::checkGpuKernelsOnCpu(*loaded->program, kernel,
                               {{{"R", "3"}, {"C", "300"}}, {{"R", "2"}, {"C", "64"}}}, 5);
  }
  // A condition on the row alone is uniform: the tree under it stays.
  CHECK(mapsRows(*loaded->program, "reduce_if_row"));
  test::checkGpuKernelsOnCpu(*loaded->program, "reduce_if_row", {{{"R", "3"}, {"C", "300"}}}, 5);
}

TEST_CASE("a shared row with branches, private arrays, windows, user operators and integers") {
  // Every piece a row body may hold: a let and a branch on the row, a
  // private array, a redomap over two loops (the outer one shared), a user
  // operator, an integer redomap, an inner parfor with a redomap of its own,
  // and a store of the row's result.
  auto loaded = test::loadText(R"(
assoc fn absmax(a: f32, b: f32) -> f32 {
  return max(abs(a), abs(b));
}

kernel rows(X: in f32[R][C], K: in i32[R][C], Y: out f32[R][C], S: out f32[R], N: out i32[R]) {
  parfor r in 0..R {
    var scale: f32[2];
    scale[0] = 1.0;
    if (r % 2 == 0) {
      scale[0] = redomap(absmax, 0.0, c in 0..C) X[r][c];
    }
    let window = redomap(+, 0.0, c in 0..C, d in 0..3) X[r][c] * f32(d + 1);
    let count = redomap(min, 1000, c in 0..C) K[r][c];
    parfor c in 0..C {
      Y[r][c] = X[r][c] / (scale[0] + 1.0) + redomap(+, 0.0, d in 0..min(c + 1, 4)) X[r][c - d];
    }
    S[r] = window;
    N[r] = count;
  }
}
)");
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  CHECK(mapsRows(*loaded->program, "rows"));
  test::checkGpuKernelsOnCpu(*loaded->program, "rows",
                             {{{"R", "1"}, {"C", "1"}},
                              {{"R", "5"}, {"C", "256"}},
                              {{"R", "6"}, {"C", "300"}},
                              {{"R", "3"}, {"C", "17"}}},
                             11);
}
