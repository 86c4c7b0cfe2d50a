// privatize_combines: which parfors get a private copy of the arrays they
// combine into, the kernel it makes (fill, grid-stride loop, merge), and that
// the GPU pipeline's kernels compute what the interpreter computes on both
// sides of the host's choice (copies that fit and pay, and those that do not).
#include "TestSupport.h"
#include "support/Differential.h"

#include "engine/Bindings.h"
#include "engine/cpu/CpuEngine.h"
#include "interp/Interpreter.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>

using namespace loopc;
using loopc::test::contains;

namespace {

std::unique_ptr<test::LoadedProgram> load(const std::string &source) {
  auto loaded = test::loadText(source);
  INFO(loaded->diagnostics);
  REQUIRE(loaded->program);
  return loaded;
}

} // namespace

TEST_CASE("a histogram's bins get a copy per block: filled, combined into, merged") {
  auto loaded = test::loadFile(test::sourcePath("samples/histogram.loop"));
  REQUIRE(loaded->program);
  std::string after = test::aroundPass(*loaded->program, "histogram", "privatize_combines").second;
  // The host picks the private copy when the bins fit (24 KiB of i32) and
  // the blocks' merges make no more atomics than the iterations; 4 blocks
  // an SM, 132 SMs.
  CHECK(contains(after, "  let i.iterations = 1 * max(N, 0)\n"
                        "  let i.blocks = min((i.iterations + 255) / 256, 528)\n"
                        "  if (1 * B <= 6144 && (0 + 1 * B) * i.blocks <= i.iterations) {\n"
                        "    gpu_block.x for i.block in [0, i.blocks) {\n"
                        "      shared i32 H.private[6144]\n"
                        "      gpu_thread.x for i.thread in [0, 256) {\n"));
  CHECK(contains(after, "H.private[i.fill] = 0\n"));
  // A thread's rounds 4 at a time: x's loads first, for all four.
  CHECK(contains(after, "register f32 i.loaded0[4]\n"
                        "          unrolled for i.ahead in [0, 4) {\n"
                        "            let i.flat = i.block * 256 + i.thread + (i.batch * 4 + i.ahead) "
                        "* (i.blocks * 256)\n"
                        "            if (i.flat < i.iterations) {\n"
                        "              let i = 0 + i.flat / 1\n"
                        "              i.loaded0[i.ahead] = x[i]\n"));
  CHECK(contains(after, "if (select(i.loaded0[i.ahead] >= lo, i.loaded0[i.ahead] < hi, false)) {\n"));
  CHECK(contains(after, "atomic H.private[0 * B + bin] += 1\n"));
  CHECK(contains(after, "if (H.private.value != 0) {\n"
                        "            atomic H[i.merge] += H.private.value\n"));
  CHECK(contains(after, "  } else {\n    parallel for i in [0, N) {\n"));

  // 4 blocks on the one SM these tests assume: at N = 10007, 10 rounds a
  // thread (3 batches, the last short); 300 bins are privatized (1200
  // merges), 3000 are not.
  test::checkGpuKernelsOnCpu(*loaded->program, "histogram",
                             {{{"N", "0"}, {"B", "3"}, {"lo", "-1"}, {"hi", "1"}},
                              {{"N", "10007"}, {"B", "33"}, {"lo", "-0.5"}, {"hi", "0.5"}},
                              {{"N", "10007"}, {"B", "300"}, {"lo", "-0.5"}, {"hi", "0.5"}},
                              {{"N", "10007"}, {"B", "3000"}, {"lo", "-0.5"}, {"hi", "0.5"}},
                              {{"N", "300000"}, {"B", "6144"}, {"lo", "-1"}, {"hi", "1"}},
                              {{"N", "300000"}, {"B", "6145"}, {"lo", "-1"}, {"hi", "1"}}},
                             5);
}

TEST_CASE("on the CPU a block combines a range of the iterations of its own, in order") {
  const char *source = R"(
kernel histogram(x: in i32[N], H: out i32[B]) {
  parfor i in 0..N {
    let bin = i64(x[i]);
    if bin >= 0 && bin < B {
      combine(+) H[bin] = 1;
    }
  }
}
)";
  // Rounds of 256 consecutive iterations a block, the block's range after
  // the blocks before it; the GPU's blocks stride over the whole grid.
  std::string cpu = test::compiledKernelText(source, "histogram", passes::PipelineTarget::Cpu);
  CHECK(contains(cpu, "let i.rounds = (i.iterations + (i.blocks * 256 - 1)) / (i.blocks * 256)\n"
                      "      let i.start = i.block * i.rounds * 256\n"));
  CHECK(contains(cpu, "let i.flat = i.start + i.round * 256 + i.thread"));
  std::string gpu = test::compiledKernelText(source, "histogram", passes::PipelineTarget::Gpu);
  CHECK(contains(gpu, "let i.flat = i.block * 256 + i.thread + (i.batch * 4 + i.ahead) * (i.blocks "
                      "* 256)"));
  // Several rounds a block, the last blocks' ranges short or empty.
  auto loaded = load(source);
  const KernelDecl &kernel = *loaded->program->modules.front()->kernels.front();
  Interpreter interpreter;
  engine::CpuEngine cpuEngine;
  Engine *engines[] = {&interpreter, &cpuEngine};
  std::vector<std::map<std::string, std::string>> sizes;
  for (const char *count : {"1", "257", "262143", "525288", "786433"})
    sizes.push_back({{"N", count}, {"B", "9"}});
  ArgumentRequest keys;
  keys.randomLow = -2;
  keys.randomHigh = 11;
  test::checkAgreementAt(*loaded->program, kernel, engines, sizes, keys);
}

// On the CPU each round's combines are staged: one thread loop finds where
// they go (the trash slot past the copy's extent when an iteration makes
// none), a scalar loop after the barrier makes them.
TEST_CASE("on the CPU the combines are staged: elements and values first, then the updates") {
  const char *source = R"(
kernel stats(keys: in i32[R][C], values: in f32[R][C], sum: out f32[B], largest: inout f32[B],
             seen: out i32[B]) {
  parfor r in 0..R, c in 1..C {
    let key = i64(keys[r][c]);
    if key >= 0 && key < B {
      combine(+) sum[key] = values[r][c];
      combine(max) largest[key] = values[r][c];
    }
    combine(+) seen[(r + c) % B] = 1;
  }
}
)";
  std::string cpu = test::compiledKernelText(source, "stats", passes::PipelineTarget::Cpu);
  // The copies hold one more element than their share, the trash slot.
  CHECK(contains(cpu, "shared f32 sum.private[2049]\n"));
  CHECK(contains(cpu, "shared i32 seen.private[2049]\n"));
  // sum and largest, combined together at one key with one value, share
  // their buffers; seen's constant value needs none.
  CHECK(contains(cpu, "    shared i64 sum.private.staged0.element[256]\n"
                      "    shared f32 sum.private.staged0.value[256]\n"
                      "    shared i64 seen.private.staged2.element[256]\n"
                      "    gpu_thread.x"));
  CHECK(contains(cpu, "        if (r.flat < r.iterations) {\n"
                      "          sum.private.staged0.element[r.thread] = 2048\n"
                      "          sum.private.staged0.value[r.thread] = -0.0\n"
                      "          seen.private.staged2.element[r.thread] = 2048\n"));
  CHECK(contains(cpu, "            sum.private.staged0.element[r.thread] = key\n"
                      "            sum.private.staged0.value[r.thread] = values[r][c]\n"
                      "          }\n"
                      "          seen.private.staged2.element[r.thread] = (r + c) % B\n"));
  CHECK(contains(cpu,
                 "        barrier\n"
                 "        let r.flat = r.start + r.round * 256 + r.thread\n"
                 "        if (r.flat < r.iterations) {\n"
                 "          atomic sum.private[sum.private.staged0.element[r.thread]] += "
                 "sum.private.staged0.value[r.thread]\n"
                 "          atomic largest.private[sum.private.staged0.element[r.thread]] max= "
                 "sum.private.staged0.value[r.thread]\n"
                 "          atomic seen.private[seen.private.staged2.element[r.thread]] += 1\n"
                 "        }\n"
                 "        barrier\n"));
  // Keys out of range (the trash slot's iterations), rounds cut short,
  // blocks of several rounds, with and without bounds checks.
  auto loaded = load(source);
  const KernelDecl &kernel = *loaded->program->modules.front()->kernels.front();
  Interpreter interpreter;
  engine::CpuEngine cpuEngine;
  engine::CpuEngine checked(passes::PipelineTarget::Cpu, {.boundsChecks = true});
  Engine *engines[] = {&interpreter, &cpuEngine, &checked};
  ArgumentRequest keys;
  keys.randomLow = -3;
  keys.randomHigh = 40;
  test::checkAgreementAt(*loaded->program, kernel, engines,
                         {{{"R", "1"}, {"C", "2"}, {"B", "1"}},
                          {{"R", "3"}, {"C", "100"}, {"B", "7"}},
                          {{"R", "37"}, {"C", "257"}, {"B", "31"}},
                          {{"R", "513"}, {"C", "1031"}, {"B", "100"}}},
                         keys);
}

TEST_CASE("every builtin operator's neutral element, 2-D nests flattened, scalar results") {
  auto loaded = load(R"(
kernel image(X: in f32[H][W], counts: out i32[4], lo: inout f32[3], hi: inout i64[3],
             prod: inout f64[2], any: out bool[2], all: inout bool[2], total: out f32) {
  parfor r in 1..H, c in 0..W {
    let k = i64(X[r][c] * 100.0) % 3;
    combine(+) counts[(r + c) % 4] = 1;
    combine(min) lo[(k + 3) % 3] = X[r][c];
    combine(max) hi[(k + 3) % 3] = i64(X[r][c] * 1000.0);
    combine(*) prod[r % 2] = 1.0 + f64(X[r][c]) * 0.001;
    combine(||) any[c % 2] = X[r][c] > 0.99;
    combine(&&) all[c % 2] = X[r][c] > -0.99;
    combine(+) total = X[r][c];
  }
}
)");
  std::string after = test::aroundPass(*loaded->program, "image", "privatize_combines").second;
  CHECK(contains(after, "let r.iterations = 1 * max(H - 1, 0) * max(W, 0)\n"));
  CHECK(contains(after, "let r = 1 + r.flat / (1 * max(W, 0))\n"));
  CHECK(contains(after, "let c = 0 + r.flat / 1 % max(W, 0)\n"));
  for (const char *fill : {"counts.private[r.fill] = 0\n", "lo.private[r.fill] = nan\n",
                           "hi.private[r.fill] = -9223372036854775808\n",
                           "prod.private[r.fill] = 1.0\n", "any.private[r.fill] = false\n",
                           "all.private[r.fill] = true\n", "total.private[r.fill] = -0.0\n"})
    CHECK_MESSAGE(contains(after, fill), fill);
  test::checkGpuKernelsOnCpu(*loaded->program, "image",
                             {{{"H", "1"}, {"W", "5"}},
                              {{"H", "2"}, {"W", "1"}},
                              {{"H", "33"}, {"W", "65"}},
                              {{"H", "301"}, {"W", "257"}}},
                             9);
}

// From a bug hunt: the copies started at the neutral element and the merge
// skipped elements equal to it, but a block's values may combine to it: a
// sum of +0.0 left a global -0.0 negative, and values of +inf left a NaN
// (minimumNumber(NaN, inf) is inf). The copies now start at -0.0 and NaN,
// which change nothing they are combined with.
TEST_CASE("blocks whose values combine to the neutral element still merge them") {
  auto loaded = load(R"(
kernel special(v: in f32[N], w: in f64[N], sum: inout f32[2], low: inout f32[2],
               high: inout f64[2]) {
  parfor i in 0..N {
    combine(+) sum[i % 2] = v[i];
    combine(min) low[i % 2] = v[i];
    combine(max) high[i % 2] = w[i];
  }
}
)");
  const KernelDecl &kernel = *loaded->program->modules.front()->kernels.front();
  std::string after = test::aroundPass(*loaded->program, "special", "privatize_combines").second;
  CHECK(contains(after, "if (sum.private.value != 0.0 || 1.0 / sum.private.value > 0.0) {"));
  CHECK(contains(after, "if (low.private.value == low.private.value) {"));
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    float v;              // every element of v; w holds -v as f64
    float sum, low, high; // the initial values of both elements
    float sumAfter, lowAfter, highAfter;
  };
  const Case cases[] = {
      {0.0f, -0.0f, nan, nan, 0.0f, 0.0f, -0.0f},
      {inf, 1.0f, nan, nan, inf, inf, -inf},
      {-0.0f, -0.0f, 2.0f, -3.0f, -0.0f, -0.0f, 0.0f},
      {nan, -0.0f, 2.0f, -3.0f, nan, 2.0f, -3.0f},
  };
  for (const Case &each : cases) {
    CAPTURE(each.v);
    CAPTURE(each.sum);
    CAPTURE(each.low);
    ArgumentRequest request;
    const int64_t n = 3000; // enough iterations for the private copies
    request.arrays["v"] = HostArray(ScalarType::F32, {n});
    request.arrays["w"] = HostArray(ScalarType::F64, {n});
    for (int64_t i = 0; i < n; ++i) {
      request.arrays["v"].data<float>()[i] = each.v;
      request.arrays["w"].data<double>()[i] = -static_cast<double>(each.v);
    }
    request.arrays["sum"] = HostArray(ScalarType::F32, {2});
    request.arrays["low"] = HostArray(ScalarType::F32, {2});
    request.arrays["high"] = HostArray(ScalarType::F64, {2});
    for (int k = 0; k < 2; ++k) {
      request.arrays["sum"].data<float>()[k] = each.sum;
      request.arrays["low"].data<float>()[k] = each.low;
      request.arrays["high"].data<double>()[k] = each.high;
    }
    Interpreter interpreter;
    engine::CpuEngine cpu;
    engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
    for (Engine *engine : std::initializer_list<Engine *>{&interpreter, &cpu, &gpuKernels}) {
      CAPTURE(engine->name());
      auto args = bindKernelArguments(kernel, request);
      REQUIRE(args);
      auto ran = engine->run(*loaded->program, kernel, *args);
      REQUIRE_MESSAGE(ran, (ran ? "" : ran.error().message));
      // Bit for bit: -0.0 is not +0.0 here, and NaN is NaN.
      auto same = [](double got, double expected) {
        return std::isnan(expected)
                   ? std::isnan(got)
                   : got == expected && std::signbit(got) == std::signbit(expected);
      };
      for (int k = 0; k < 2; ++k) {
        CHECK(same(args->params[2].data<float>()[k], each.sumAfter));
        CHECK(same(args->params[3].data<float>()[k], each.lowAfter));
        CHECK(same(args->params[4].data<double>()[k], each.highAfter));
      }
    }
  }
}

TEST_CASE("combines inside loops and inner parfors of the body are privatized too") {
  auto loaded = load(R"(
kernel per_row(X: in f32[R][W], signs: out i32[2], cells: out i32[4]) {
  parfor r in 0..R {
    for c in 0..W { combine(+) signs[X[r][c] > 0.0 ? 1 : 0] = 1; }
    parfor c in 0..W { combine(+) cells[(r + c) % 4] = 1; }
  }
}
)");
  std::string after = test::aroundPass(*loaded->program, "per_row", "privatize_combines").second;
  CHECK(contains(after, "shared i32 signs.private["));
  CHECK(contains(after, "shared i32 cells.private["));
  CHECK(contains(after, "for c_2 in [0, W) {\n"));
  test::checkGpuKernelsOnCpu(*loaded->program, "per_row",
                             {{{"R", "0"}, {"W", "3"}},
                              {{"R", "1000"}, {"W", "3"}},
                              {{"R", "7"}, {"W", "33"}},
                              {{"R", "3000"}, {"W", "1"}}},
                             3);
}

TEST_CASE("nests whose work is not their combines, or whose arrays are read, stay as they are") {
  auto loaded = load(R"(
assoc fn larger(a: f32, b: f32) -> f32 { return max(a, b); }
kernel with_redomap(A: in f32[M][K], C: out f32[M], count: out i32[2]) {
  parfor i in 0..M {
    C[i] = redomap(+, 0.0, k in 0..K) A[i][k];
    combine(+) count[i % 2] = 1;
  }
}
kernel with_loop(A: in f32[M][K], C: out f32[M], count: out i32[2]) {
  parfor i in 0..M {
    for k in 0..K { C[i] += A[i][k]; }
    combine(+) count[i % 2] = 1;
  }
}
kernel user_operator(x: in f32[M], best: out f32[4]) {
  parfor i in 0..M { combine(larger) best[i % 4] = x[i]; }
}
kernel triangular(x: in f32[M], count: out i32[4]) {
  parfor i in 0..M, j in i..M { combine(+) count[(i + j) % 4] = 1; }
}
kernel too_large(x: in f64[M], bins: out f64[8192]) {
  parfor i in 0..M { combine(+) bins[i % 8192] = x[i]; }
}
)");
  for (const char *name : {"with_redomap", "with_loop", "user_operator", "too_large"}) {
    CAPTURE(name);
    auto [before, after] = test::aroundPass(*loaded->program, name, "privatize_combines");
    CHECK(before == after);
  }
  // A triangular nest keeps its inner loop: only the outer one flattens.
  std::string triangular =
      test::aroundPass(*loaded->program, "triangular", "privatize_combines").second;
  CHECK(contains(triangular, "let i.iterations = 1 * max(M, 0)\n"));
  CHECK(contains(triangular, "for j in [i, i + (M - i)) {\n"));
  test::checkGpuKernelsOnCpu(*loaded->program, "triangular", {{{"M", "1"}}, {{"M", "700"}}}, 4);
}

TEST_CASE("the budget is the shared_kib parameter, shared by the arrays") {
  auto loaded = test::loadFile(test::sourcePath("samples/histogram.loop"));
  REQUIRE(loaded->program);
  passes::PassChoices choices;
  choices.parameters.sharedKiB = 2;
  CHECK(contains(
      test::aroundPass(*loaded->program, "bin_stats", "privatize_combines", choices).second,
      "shared f32 sum.private[256]\n"
      "      shared f32 largest.private[256]\n"));
  test::checkGpuKernelsOnCpu(*loaded->program, "bin_stats",
                             {{{"N", "100000"}, {"B", "256"}}, {{"N", "100000"}, {"B", "257"}}}, 2,
                             choices);
}
