// The reference interpreter: every statement and expression kind, the integer
// and float semantics it pins down, reductions, kernel calls, and the run-time
// errors it reports with their source locations.
#include "TestSupport.h"

#include "interp/Interpreter.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <functional>
#include <limits>

using namespace loopc;

namespace {

std::unique_ptr<test::LoadedProgram> load(const std::string &text) {
  auto loaded = test::loadText(text);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  return loaded;
}

Expected<RunStats> runKernel(const test::LoadedProgram &loaded, const std::string &kernelName,
                             KernelArgs &args) {
  const KernelDecl *kernel = loaded.program->findKernel(kernelName);
  REQUIRE_MESSAGE(kernel, "no kernel " << kernelName);
  Interpreter interpreter;
  return interpreter.run(*loaded.program, *kernel, args);
}

// Runs a kernel that must succeed.
void runOk(const test::LoadedProgram &loaded, const std::string &kernelName, KernelArgs &args) {
  Expected<RunStats> stats = runKernel(loaded, kernelName, args);
  REQUIRE_MESSAGE(stats.has_value(), (stats ? "" : stats.error().message));
  CHECK(stats->seconds >= 0);
}

HostArray array(ScalarType type, std::vector<int64_t> shape, const std::vector<double> &values) {
  HostArray result(type, std::move(shape));
  REQUIRE(values.size() == result.elementCount());
  for (size_t i = 0; i < values.size(); ++i)
    result.setFromDouble(i, values[i]);
  return result;
}

HostArray zeros(ScalarType type, std::vector<int64_t> shape) {
  return HostArray(type, std::move(shape));
}

template <typename T> HostArray scalar(ScalarType type, T value) {
  HostArray result(type, {});
  *result.data<T>() = value;
  return result;
}

template <typename T> T scalarOf(const HostArray &array) { return *array.data<T>(); }

} // namespace

TEST_CASE("the interpreter is named interp") { CHECK(Interpreter().name() == "interp"); }

TEST_CASE("the interpreter reports its progress through the outermost loops, then 1") {
  // Two outer loops, each half of the body: the first report comes at the
  // first outer iteration (1/400 of the first half); the reports never go
  // back, and the last is 1. Without a callback nothing is reported.
  auto loaded = load(R"(
kernel twice(x: in f32[N], y: out f32[N]) {
  parfor i in 0..N { y[i] = redomap(+, 0.0, k in 0..N) x[k] * x[i]; }
  for t in 0..N { y[t] += 1.0; }
}
)");
  KernelArgs args;
  args.sizes["N"] = 200;
  args.params.push_back(zeros(ScalarType::F32, {200}));
  args.params.push_back(zeros(ScalarType::F32, {200}));
  std::vector<double> reported;
  Interpreter interpreter;
  interpreter.setProgress([&](double fraction) { reported.push_back(fraction); });
  REQUIRE(interpreter.run(*loaded->program, *loaded->program->findKernel("twice"), args));
  REQUIRE(reported.size() >= 2);
  CHECK(reported.front() == doctest::Approx(1.0 / 400));
  CHECK(reported.back() == 1.0);
  CHECK(std::ranges::is_sorted(reported));
  CHECK(std::ranges::all_of(reported, [](double f) { return f > 0 && f <= 1; }));
}

TEST_CASE("i32 arithmetic wraps in two's complement") {
  auto loaded = load(R"(
kernel k(a: i32, b: i32, sum: out i32, product: out i32, negated: out i32, quotient: out i32,
         remainder: out i32) {
  sum = a + b;
  product = a * b;
  negated = -a;
  quotient = a / (0 - 1);
  remainder = a % (0 - 1);
})");
  KernelArgs args;
  int32_t min = std::numeric_limits<int32_t>::min();
  args.params = {scalar(ScalarType::I32, min), scalar(ScalarType::I32, int32_t(-1)),
                 zeros(ScalarType::I32, {}),   zeros(ScalarType::I32, {}),
                 zeros(ScalarType::I32, {}),   zeros(ScalarType::I32, {}),
                 zeros(ScalarType::I32, {})};
  runOk(*loaded, "k", args);
  CHECK(scalarOf<int32_t>(args.params[2]) == std::numeric_limits<int32_t>::max());
  CHECK(scalarOf<int32_t>(args.params[3]) == min);
  CHECK(scalarOf<int32_t>(args.params[4]) == min);
  CHECK(scalarOf<int32_t>(args.params[5]) == min);
  CHECK(scalarOf<int32_t>(args.params[6]) == 0);

  args.params[0] = scalar(ScalarType::I32, int32_t(65536));
  args.params[1] = scalar(ScalarType::I32, int32_t(65537));
  runOk(*loaded, "k", args);
  CHECK(scalarOf<int32_t>(args.params[3]) == 65536); // 2^32 + 2^16 wraps to 2^16
}

TEST_CASE("integer division and modulo truncate toward zero") {
  auto loaded = load(R"(
kernel k(a: i64, b: i64, q: out i64, r: out i64, q32: out i32, r32: out i32) {
  q = a / b;
  r = a % b;
  q32 = i32(a) / i32(b);
  r32 = i32(a) % i32(b);
})");
  struct Case {
    int64_t a, b, q, r;
  };
  for (Case c : {Case{7, 2, 3, 1}, Case{-7, 2, -3, -1}, Case{7, -2, -3, 1}, Case{-7, -2, 3, -1}}) {
    CAPTURE(c.a);
    CAPTURE(c.b);
    KernelArgs args;
    args.params = {scalar(ScalarType::I64, c.a), scalar(ScalarType::I64, c.b),
                   zeros(ScalarType::I64, {}),   zeros(ScalarType::I64, {}),
                   zeros(ScalarType::I32, {}),   zeros(ScalarType::I32, {})};
    runOk(*loaded, "k", args);
    CHECK(scalarOf<int64_t>(args.params[2]) == c.q);
    CHECK(scalarOf<int64_t>(args.params[3]) == c.r);
    CHECK(scalarOf<int32_t>(args.params[4]) == c.q);
    CHECK(scalarOf<int32_t>(args.params[5]) == c.r);
  }
}

TEST_CASE("integer division and modulo by zero are errors at the operator") {
  auto loaded = load("kernel k(a: i32, b: i32, r: out i32) {\n"
                     "  r = a / b;\n"
                     "}\n"
                     "kernel m(a: i32, b: i32, r: out i32) {\n"
                     "  r = 1;\n"
                     "  r %= b;\n"
                     "}\n");
  KernelArgs args;
  args.params = {scalar(ScalarType::I32, int32_t(5)), scalar(ScalarType::I32, int32_t(0)),
                 zeros(ScalarType::I32, {})};
  Expected<RunStats> division = runKernel(*loaded, "k", args);
  REQUIRE_FALSE(division.has_value());
  CHECK(division.error().message == "integer division by zero");
  CHECK(division.error().range.begin.line == 2);
  CHECK(division.error().range.begin.col == 7);

  Expected<RunStats> modulo = runKernel(*loaded, "m", args);
  REQUIRE_FALSE(modulo.has_value());
  CHECK(modulo.error().message == "integer modulo by zero");
  CHECK(modulo.error().range.begin.line == 6);
}

TEST_CASE("f32 arithmetic rounds to float, f64 to double") {
  auto loaded = load(R"(
kernel k(single: out f32, wide: out f64, third: out f32, root: out f32) {
  var a: f32 = 16777216.0;
  a = a + 1.0;
  single = a;
  var b: f64 = 16777216.0;
  b += 1.0;
  wide = b;
  let one: f32 = 1.0;
  third = one / 3.0;
  root = sqrt(one + one);
})");
  KernelArgs args;
  args.params = {zeros(ScalarType::F32, {}), zeros(ScalarType::F64, {}), zeros(ScalarType::F32, {}),
                 zeros(ScalarType::F32, {})};
  runOk(*loaded, "k", args);
  CHECK(scalarOf<float>(args.params[0]) == 16777216.0f);
  CHECK(scalarOf<double>(args.params[1]) == 16777217.0);
  CHECK(scalarOf<float>(args.params[2]) == 1.0f / 3.0f);
  CHECK(scalarOf<float>(args.params[3]) == std::sqrt(2.0f));
}

TEST_CASE("math builtins on floats and integers") {
  auto loaded = load(R"(
kernel k(x: in f32[N], r: out f32[13], n: in i32[2], ir: out i32[3]) {
  r[0] = sqrt(x[0]);
  r[1] = exp(x[0]);
  r[2] = log(x[0]);
  r[3] = sin(x[0]);
  r[4] = cos(x[0]);
  r[5] = tanh(x[0]);
  r[6] = floor(x[1]);
  r[7] = ceil(x[1]);
  r[8] = abs(x[1]);
  r[9] = min(x[0], x[1]);
  r[10] = max(x[0], x[1]);
  r[11] = pow(x[0], x[1]);
  r[12] = fma(x[0], x[1], x[0]);
  ir[0] = abs(n[0]);
  ir[1] = min(n[0], n[1]);
  ir[2] = max(n[0], n[1]);
})");
  KernelArgs args;
  float a = 2.5f, b = -1.25f;
  args.params = {array(ScalarType::F32, {2}, {a, b}), zeros(ScalarType::F32, {13}),
                 array(ScalarType::I32, {2}, {-7, 3}), zeros(ScalarType::I32, {3})};
  runOk(*loaded, "k", args);
  const float *r = args.params[1].data<float>();
  CHECK(r[0] == std::sqrt(a));
  CHECK(r[1] == std::exp(a));
  CHECK(r[2] == std::log(a));
  CHECK(r[3] == std::sin(a));
  CHECK(r[4] == std::cos(a));
  CHECK(r[5] == std::tanh(a));
  CHECK(r[6] == -2.0f);
  CHECK(r[7] == -1.0f);
  CHECK(r[8] == 1.25f);
  CHECK(r[9] == b);
  CHECK(r[10] == a);
  CHECK(r[11] == std::pow(a, b));
  CHECK(r[12] == std::fma(a, b, a));
  const int32_t *ir = args.params[3].data<int32_t>();
  CHECK(ir[0] == 7);
  CHECK(ir[1] == -7);
  CHECK(ir[2] == 3);
}

TEST_CASE("casts truncate toward zero, saturate out of range and wrap when narrowing") {
  auto loaded = load(R"(
kernel k(x: in f64[5], big: i64, r: out i32[5], narrowed: out i32, truth: out bool, back: out f32) {
  parfor i in 0..5 { r[i] = i32(x[i]); }
  narrowed = i32(big);
  truth = bool(big) && !bool(big - big);
  back = f32(narrowed) / 2.0;
})");
  KernelArgs args;
  args.params = {array(ScalarType::F64, {5}, {2.7, -2.7, 1e20, -1e20, std::nan("")}),
                 scalar(ScalarType::I64, int64_t(0x100000003)),
                 zeros(ScalarType::I32, {5}),
                 zeros(ScalarType::I32, {}),
                 zeros(ScalarType::Bool, {}),
                 zeros(ScalarType::F32, {})};
  runOk(*loaded, "k", args);
  const int32_t *r = args.params[2].data<int32_t>();
  CHECK(r[0] == 2);
  CHECK(r[1] == -2);
  CHECK(r[2] == std::numeric_limits<int32_t>::max());
  CHECK(r[3] == std::numeric_limits<int32_t>::min());
  CHECK(r[4] == 0);
  CHECK(scalarOf<int32_t>(args.params[3]) == 3);
  CHECK(scalarOf<uint8_t>(args.params[4]) == 1);
  CHECK(scalarOf<float>(args.params[5]) == 1.5f);
}

TEST_CASE("conditionals and logical operators evaluate only what they need") {
  auto loaded = load(R"(
kernel k(n: i32, A: in i32[N], r: out i32[4]) {
  r[0] = n != 0 && 10 / n > 1 ? 1 : 2;
  r[1] = n == 0 || 10 / n > 1 ? 3 : 4;
  r[2] = n == 0 ? 5 : 10 / n;
  r[3] = N > 9 && A[9] > 0 ? 6 : 7;
})");
  KernelArgs args;
  args.params = {scalar(ScalarType::I32, int32_t(0)), array(ScalarType::I32, {2}, {1, 2}),
                 zeros(ScalarType::I32, {4})};
  runOk(*loaded, "k", args);
  const int32_t *r = args.params[2].data<int32_t>();
  CHECK(r[0] == 2);
  CHECK(r[1] == 3);
  CHECK(r[2] == 5);
  CHECK(r[3] == 7);
}

TEST_CASE("if, else if and else choose one branch") {
  auto loaded = load(R"(
kernel k(x: in i64[N], r: out i64[N]) {
  parfor i in 0..N {
    if x[i] < 0 {
      r[i] = -1;
    } else if x[i] == 0 {
      r[i] = 0;
    } else {
      r[i] = 1;
    }
  }
})");
  KernelArgs args;
  args.params = {array(ScalarType::I64, {4}, {-5, 0, 7, -1}), zeros(ScalarType::I64, {4})};
  runOk(*loaded, "k", args);
  const int64_t *r = args.params[1].data<int64_t>();
  CHECK(r[0] == -1);
  CHECK(r[1] == 0);
  CHECK(r[2] == 1);
  CHECK(r[3] == -1);
}

TEST_CASE("for loops honour their step and the half-open range") {
  auto loaded = load(R"(
kernel k(lo: i32, hi: i32, step: i32, sum: out i32, count: out i64) {
  for i in lo..hi by step {
    sum += i;
    count += 1;
  }
})");
  struct Case {
    int32_t lo, hi, step, sum;
    int64_t count;
  };
  for (Case c :
       {Case{0, 10, 3, 18, 4}, Case{0, 9, 3, 9, 3}, Case{5, 5, 1, 0, 0}, Case{5, 2, 1, 0, 0},
        Case{-4, 0, 1, -10, 4}, Case{2147483640, 2147483647, 5, -11, 2} /* the sum wraps */}) {
    CAPTURE(c.lo);
    CAPTURE(c.step);
    KernelArgs args;
    args.params = {scalar(ScalarType::I32, c.lo), scalar(ScalarType::I32, c.hi),
                   scalar(ScalarType::I32, c.step), zeros(ScalarType::I32, {}),
                   zeros(ScalarType::I64, {})};
    runOk(*loaded, "k", args);
    CHECK(scalarOf<int32_t>(args.params[3]) == c.sum);
    CHECK(scalarOf<int64_t>(args.params[4]) == c.count);
  }
}

TEST_CASE("a step that is not positive is an error at the step") {
  auto loaded = load("kernel k(step: i64, r: out i64) {\n"
                     "  for i in 0..10 by step { r += i; }\n"
                     "}\n");
  for (int64_t step : {int64_t(0), int64_t(-2)}) {
    KernelArgs args;
    args.params = {scalar(ScalarType::I64, step), zeros(ScalarType::I64, {})};
    Expected<RunStats> result = runKernel(*loaded, "k", args);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().message ==
          "the step of a range must be positive, but it is " + std::to_string(step));
    CHECK(result.error().range.begin.line == 2);
    CHECK(result.error().range.begin.col == 21);
  }
}

TEST_CASE("triangular parfor nests visit exactly the lower triangle") {
  auto loaded = load(R"(
kernel k(L: out i32[N][N]) {
  parfor i in 0..N, j in 0..i + 1 {
    L[i][j] = i32(i * 10 + j);
  }
})");
  KernelArgs args;
  args.params = {array(ScalarType::I32, {4, 4}, std::vector<double>(16, 99))};
  runOk(*loaded, "k", args);
  const int32_t *l = args.params[0].data<int32_t>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      CHECK(l[i * 4 + j] == (j <= i ? i * 10 + j : 0)); // out arrays start zeroed
}

TEST_CASE("parfor ranges with steps and sequential loops around parfors") {
  auto loaded = load(R"(
kernel k(steps: i32, A: in f64[N], B: inout f64[N]) {
  for t in 0..steps {
    parfor i in 1..N by 2 {
      B[i] = B[i] + A[i - 1];
    }
  }
})");
  KernelArgs args;
  args.params = {scalar(ScalarType::I32, int32_t(3)),
                 array(ScalarType::F64, {5}, {1, 10, 2, 20, 3}),
                 array(ScalarType::F64, {5}, {0.5, 0.5, 0.5, 0.5, 0.5})};
  runOk(*loaded, "k", args);
  const double *b = args.params[2].data<double>();
  CHECK(b[0] == 0.5);
  CHECK(b[1] == 3.5);
  CHECK(b[2] == 0.5);
  CHECK(b[3] == 6.5);
  CHECK(b[4] == 0.5);
}

TEST_CASE("redomap folds with every built-in operator") {
  auto loaded = load(R"(
kernel k(x: in f32[N], n: in i32[N], sum: out f32, product: out f32, smallest: out f32,
         largest: out f32, isum: out i32, imax: out i32, all: out bool, any: out bool) {
  sum = redomap(+, 0.0, i in 0..N) x[i];
  product = redomap(*, 1.0, i in 0..N) x[i];
  smallest = redomap(min, inf, i in 0..N) x[i];
  largest = redomap(max, -inf, i in 0..N) x[i];
  isum = redomap(+, 0, i in 0..N) n[i] * n[i];
  imax = redomap(max, -2147483647 - 1, i in 0..N) n[i];
  all = redomap(&&, true, i in 0..N) n[i] > -10;
  any = redomap(||, false, i in 0..N) n[i] > 5;
})");
  KernelArgs args;
  args.params = {array(ScalarType::F32, {4}, {1.5, -2, 4, 0.25}),
                 array(ScalarType::I32, {4}, {3, -4, 5, 1}),
                 zeros(ScalarType::F32, {}),
                 zeros(ScalarType::F32, {}),
                 zeros(ScalarType::F32, {}),
                 zeros(ScalarType::F32, {}),
                 zeros(ScalarType::I32, {}),
                 zeros(ScalarType::I32, {}),
                 zeros(ScalarType::Bool, {}),
                 scalar(ScalarType::Bool, uint8_t(1))};
  runOk(*loaded, "k", args);
  CHECK(scalarOf<float>(args.params[2]) == 3.75f);
  CHECK(scalarOf<float>(args.params[3]) == -3.0f);
  CHECK(scalarOf<float>(args.params[4]) == -2.0f);
  CHECK(scalarOf<float>(args.params[5]) == 4.0f);
  CHECK(scalarOf<int32_t>(args.params[6]) == 51);
  CHECK(scalarOf<int32_t>(args.params[7]) == 5);
  CHECK(scalarOf<uint8_t>(args.params[8]) == 1);
  CHECK(scalarOf<uint8_t>(args.params[9]) == 0); // `out` starts at false, nothing exceeds 5
}

TEST_CASE("redomap with a user assoc fn, several ranges and an empty range") {
  auto loaded = load(R"(
assoc fn absmax(a: f32, b: f32) -> f32 { return max(abs(a), abs(b)); }

kernel k(A: in f32[M][N], norm: out f32, trace: out f32, empty: out f32) {
  norm = redomap(absmax, 0.0, i in 0..M, j in 0..N) A[i][j];
  trace = redomap(+, 0.0, i in 0..M, j in i..i + 1) A[i][j];
  empty = redomap(max, 7.0, i in 0..0) A[i][i];
})");
  KernelArgs args;
  args.params = {array(ScalarType::F32, {2, 2}, {1, -9, 3, 2}), zeros(ScalarType::F32, {}),
                 zeros(ScalarType::F32, {}), zeros(ScalarType::F32, {})};
  runOk(*loaded, "k", args);
  CHECK(scalarOf<float>(args.params[1]) == 9.0f);
  CHECK(scalarOf<float>(args.params[2]) == 3.0f);
  CHECK(scalarOf<float>(args.params[3]) == 7.0f);
}

TEST_CASE("redomap inside a parfor: matmul, fast enough at 257 per dimension") {
  auto loaded = load(R"(
kernel matmul(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
})");
  const int64_t n = 257;
  std::vector<double> a(n * n), b(n * n);
  for (int64_t i = 0; i < n * n; ++i) {
    a[i] = double(i % 7) - 3;
    b[i] = double(i % 5) * 0.5;
  }
  KernelArgs args;
  args.params = {array(ScalarType::F32, {n, n}, a), array(ScalarType::F32, {n, n}, b),
                 zeros(ScalarType::F32, {n, n})};
  args.sizes = {{"M", n}, {"N", n}, {"K", n}};
  // Processor time, not wall time, so a loaded machine does not fail the test.
  std::clock_t start = std::clock();
  runOk(*loaded, "matmul", args);
  double seconds = double(std::clock() - start) / CLOCKS_PER_SEC;
  MESSAGE("257^3 matmul in the interpreter: " << seconds << " s of processor time");
  CHECK(seconds < 2.0);
  const float *c = args.params[2].data<float>();
  for (int64_t i : {int64_t(0), int64_t(100), n - 1})
    for (int64_t j : {int64_t(0), int64_t(37), n - 1}) {
      float expected = 0;
      for (int64_t k = 0; k < n; ++k)
        expected += float(a[i * n + k]) * float(b[k * n + j]);
      CHECK(c[i * n + j] == expected); // in order, in float: bit-exact
    }
}

TEST_CASE("fns with locals, loops, branches and early returns") {
  auto loaded = load(R"(
fn sumTo(n: i64) -> i64 {
  var total: i64;
  for i in 0..n + 1 { total += i; }
  return total;
}
fn firstAbove(limit: i64) -> i64 {
  for i in 0..100 {
    if i * i > limit { return i; }
  }
  return -1;
}
fn clamp(x: f64, lo: f64, hi: f64) -> f64 {
  if x < lo { return lo; } else if x > hi { return hi; }
  return x;
}
kernel k(r: out i64[3], c: out f64[3]) {
  r[0] = sumTo(10);
  r[1] = firstAbove(50);
  r[2] = firstAbove(100000);
  parfor i in 0..3 { c[i] = clamp(f64(i) - 1.0, -0.5, 0.5); }
})");
  KernelArgs args;
  args.params = {zeros(ScalarType::I64, {3}), zeros(ScalarType::F64, {3})};
  runOk(*loaded, "k", args);
  const int64_t *r = args.params[0].data<int64_t>();
  CHECK(r[0] == 55);
  CHECK(r[1] == 8);
  CHECK(r[2] == -1);
  const double *c = args.params[1].data<double>();
  CHECK(c[0] == -0.5);
  CHECK(c[1] == 0.0);
  CHECK(c[2] == 0.5);
}

TEST_CASE("kernel calls pass arrays by reference and bind the callee's sizes") {
  auto loaded = load(R"(
kernel scale(X: inout f32[L], factor: f32) {
  parfor i in 0..L { X[i] = X[i] * factor; }
}
kernel total(X: in f32[L], r: out f32) {
  r = redomap(+, 0.0, i in 0..L) X[i];
}
kernel k(A: inout f32[N], s: out f32, local: out f32) {
  scale(A, 2.0);
  total(A, s);
  var t: f32 = 100.0;
  total(A, t);
  local = t;
  var half: f32[3];
  half[1] = 5.0;
  scale(half, 0.5);
  s += half[1];
})");
  KernelArgs args;
  args.params = {array(ScalarType::F32, {4}, {1, 2, 3, 4}), zeros(ScalarType::F32, {}),
                 zeros(ScalarType::F32, {})};
  runOk(*loaded, "k", args);
  const float *a = args.params[0].data<float>();
  CHECK(a[0] == 2);
  CHECK(a[3] == 8);
  CHECK(scalarOf<float>(args.params[1]) == 22.5f);
  CHECK(scalarOf<float>(args.params[2]) == 20.0f);
}

TEST_CASE("local arrays are zeroed and private to each parfor iteration") {
  auto loaded = load(R"(
kernel k(A: in f32[N], B: out f32[N]) {
  parfor i in 0..N {
    var t: f32[3];
    t[0] += A[i];
    t[2] += t[0] * 2.0;
    B[i] = t[2] + t[1];
  }
})");
  KernelArgs args;
  args.params = {array(ScalarType::F32, {3}, {1, 2, 3}), zeros(ScalarType::F32, {3})};
  runOk(*loaded, "k", args);
  const float *b = args.params[1].data<float>();
  CHECK(b[0] == 2);
  CHECK(b[1] == 4);
  CHECK(b[2] == 6);
}

TEST_CASE("scalar inout parameters are read and updated, and out parameters start at zero") {
  auto loaded = load(R"(
kernel k(acc: inout i64, fresh: out i64, n: i64) {
  acc += n;
  fresh += n;
})");
  KernelArgs args;
  args.params = {scalar(ScalarType::I64, int64_t(40)), scalar(ScalarType::I64, int64_t(1000)),
                 scalar(ScalarType::I64, int64_t(2))};
  runOk(*loaded, "k", args);
  CHECK(scalarOf<int64_t>(args.params[0]) == 42);
  CHECK(scalarOf<int64_t>(args.params[1]) == 2);
}

TEST_CASE("extents may be expressions of sizes and scalar parameters") {
  auto loaded = load(R"(
kernel conv(K: i64, x: in f64[N], w: in f64[K], y: out f64[N - K + 1]) {
  parfor i in 0..N - K + 1 {
    y[i] = redomap(+, 0.0, k in 0..K) x[i + k] * w[k];
  }
})");
  KernelArgs args;
  args.params = {scalar(ScalarType::I64, int64_t(2)), array(ScalarType::F64, {4}, {1, 2, 3, 4}),
                 array(ScalarType::F64, {2}, {1, 10}), zeros(ScalarType::F64, {3})};
  runOk(*loaded, "conv", args); // N is inferred from x when not given
  const double *y = args.params[3].data<double>();
  CHECK(y[0] == 21);
  CHECK(y[1] == 32);
  CHECK(y[2] == 43);

  args.params[3] = zeros(ScalarType::F64, {4});
  Expected<RunStats> wrongShape = runKernel(*loaded, "conv", args);
  REQUIRE_FALSE(wrongShape.has_value());
  CHECK(wrongShape.error().message == "'y' has extent 4 in dimension 0, but its type needs 3");
}

TEST_CASE("an out-of-range access names the array, the index and the extent") {
  auto loaded = load("kernel k(A: in f32[N], B: out f32[N]) {\n"
                     "  parfor i in 0..N {\n"
                     "    B[i] = A[i] + A[i + 1];\n"
                     "  }\n"
                     "}\n"
                     "kernel w(A: in f32[N], B: out f32[N][2]) {\n"
                     "  parfor i in 0..N { B[i][i] = A[i]; }\n"
                     "}\n");
  KernelArgs args;
  args.params = {zeros(ScalarType::F32, {5}), zeros(ScalarType::F32, {5})};
  Expected<RunStats> read = runKernel(*loaded, "k", args);
  REQUIRE_FALSE(read.has_value());
  CHECK(read.error().message == "index 5 out of range for dimension 0 of 'A' (extent 5)");
  CHECK(read.error().range.begin.line == 3);
  CHECK(read.error().range.begin.col == 19);
  CHECK(read.error().range.end.col == 26);

  args.params[1] = zeros(ScalarType::F32, {5, 2});
  Expected<RunStats> write = runKernel(*loaded, "w", args);
  REQUIRE_FALSE(write.has_value());
  CHECK(write.error().message == "index 2 out of range for dimension 1 of 'B' (extent 2)");
  CHECK(write.error().range.begin.line == 7);
  CHECK(write.error().range.begin.col == 22);
}

TEST_CASE("arguments that do not match the kernel are rejected") {
  auto loaded = load("kernel k(A: in f32[N], B: out f32[N], n: i32) {\n"
                     "  parfor i in 0..N { B[i] = A[i]; }\n"
                     "}\n");
  KernelArgs args;
  args.params = {zeros(ScalarType::F32, {3}), zeros(ScalarType::F32, {3})};
  Expected<RunStats> count = runKernel(*loaded, "k", args);
  REQUIRE_FALSE(count.has_value());
  CHECK(count.error().message == "kernel 'k' takes 3 arguments, but 2 were given");

  args.params.push_back(scalar(ScalarType::I64, int64_t(1)));
  Expected<RunStats> type = runKernel(*loaded, "k", args);
  REQUIRE_FALSE(type.has_value());
  CHECK(type.error().message == "argument 'n' has element type i64, but the kernel declares i32");

  args.params[2] = scalar(ScalarType::I32, int32_t(1));
  args.params[1] = zeros(ScalarType::F32, {3, 1});
  Expected<RunStats> rank = runKernel(*loaded, "k", args);
  REQUIRE_FALSE(rank.has_value());
  CHECK(rank.error().message == "argument 'B' has rank 2, but the kernel declares rank 1");

  args.params[1] = zeros(ScalarType::F32, {4});
  Expected<RunStats> shape = runKernel(*loaded, "k", args);
  REQUIRE_FALSE(shape.has_value());
  CHECK(shape.error().message == "'B' has extent 4 in dimension 0, but its type needs 3");

  args.params[1] = zeros(ScalarType::F32, {3});
  args.sizes = {{"N", 2}};
  Expected<RunStats> sizes = runKernel(*loaded, "k", args);
  REQUIRE_FALSE(sizes.has_value());
  CHECK(sizes.error().message == "'A' has extent 3 in dimension 0, but its type needs 2");
}

TEST_CASE("bool arrays and comparisons") {
  auto loaded = load(R"(
kernel k(x: in f64[N], positive: out bool[N], count: out i32) {
  parfor i in 0..N { positive[i] = x[i] > 0.0; }
  for i in 0..N {
    if positive[i] == true { count += 1; }
  }
})");
  KernelArgs args;
  args.params = {array(ScalarType::F64, {4}, {1, -1, 0, 3}), zeros(ScalarType::Bool, {4}),
                 zeros(ScalarType::I32, {})};
  runOk(*loaded, "k", args);
  const uint8_t *positive = args.params[1].data<uint8_t>();
  CHECK(positive[0] == 1);
  CHECK(positive[1] == 0);
  CHECK(positive[2] == 0);
  CHECK(positive[3] == 1);
  CHECK(scalarOf<int32_t>(args.params[2]) == 2);
}

TEST_CASE("reductions accumulate in the declared precision") {
  auto loaded = load(R"(
assoc fn larger(a: i64, b: i64) -> i64 { return a > b ? a : b; }
kernel k(x: in f32[N], y: in f64[N], n: in i64[N], single: out f32, wide: out f64, top: out i64) {
  single = redomap(+, 0.0, i in 0..N) x[i];
  wide = redomap(+, 0.0, i in 0..N) y[i];
  top = redomap(larger, -1000, i in 0..N) n[i] * (i % 3 - 1);
})");
  const int64_t n = 1000;
  std::vector<double> x(n, 0.1), ns(n);
  for (int64_t i = 0; i < n; ++i)
    ns[i] = double(i);
  KernelArgs args;
  args.params = {array(ScalarType::F32, {n}, x),  array(ScalarType::F64, {n}, x),
                 array(ScalarType::I64, {n}, ns), zeros(ScalarType::F32, {}),
                 zeros(ScalarType::F64, {}),      zeros(ScalarType::I64, {})};
  runOk(*loaded, "k", args);
  // Float sums are folded pairwise: blocks of 2^k consecutive terms, each a
  // perfect binary tree, added to the neutral element largest block first.
  auto pairwise = [n](auto term) {
    using T = decltype(term);
    std::function<T(int64_t)> tree = [&](int64_t size) {
      return size == 1 ? term : tree(size / 2) + tree(size / 2);
    };
    T sum = 0;
    for (int64_t block = int64_t{1} << 20; block >= 1; block /= 2)
      if (n & block)
        sum += tree(block);
    return sum;
  };
  float single = pairwise(0.1f);
  double wide = pairwise(0.1);
  float sequential = 0;
  for (int64_t i = 0; i < n; ++i)
    sequential += 0.1f;
  CHECK(scalarOf<float>(args.params[3]) == single);
  CHECK(scalarOf<double>(args.params[4]) == wide);
  CHECK(double(single) != wide);
  // Closer to the exact 100 than a sequential f32 sum.
  CHECK(std::fabs(single - 100.0f) < std::fabs(sequential - 100.0f));
  CHECK(scalarOf<int64_t>(args.params[5]) == 998); // i = 998 has i % 3 == 2
}

TEST_CASE("errors inside fns and called kernels point into their bodies") {
  auto loaded = load("fn pick(v: f32, d: i32) -> f32 {\n"
                     "  return v / f32(10 / d);\n"
                     "}\n"
                     "kernel inner(X: inout f32[L]) {\n"
                     "  X[L] = 1.0;\n"
                     "}\n"
                     "kernel viaFn(A: inout f32[N], d: i32) {\n"
                     "  parfor i in 0..N { A[i] = pick(A[i], d); }\n"
                     "}\n"
                     "kernel viaKernel(A: inout f32[N]) {\n"
                     "  var local: f32[2];\n"
                     "  inner(local);\n"
                     "}\n");
  KernelArgs args;
  args.params = {zeros(ScalarType::F32, {3}), scalar(ScalarType::I32, int32_t(0))};
  Expected<RunStats> division = runKernel(*loaded, "viaFn", args);
  REQUIRE_FALSE(division.has_value());
  CHECK(division.error().message == "integer division by zero");
  CHECK(division.error().range.begin.line == 2);
  CHECK(division.error().range.begin.col == 18);

  args.params.pop_back();
  Expected<RunStats> bounds = runKernel(*loaded, "viaKernel", args);
  REQUIRE_FALSE(bounds.has_value());
  CHECK(bounds.error().message == "index 2 out of range for dimension 0 of 'X' (extent 2)");
  CHECK(bounds.error().range.begin.line == 5);
}
