// Run-time errors of generated code at the CLI: `loopc run --device cpu` on a
// program that divides by zero prints the interpreter's message with the
// source line and exits 1, instead of dying of SIGFPE.
#include "TestSupport.h"
#include "engine/Npy.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

using loopc::test::runLoopc;

namespace {

// A .loop file in a fresh temporary directory, removed with it.
struct TempProgram {
  loopc::test::TempDir directory;
  std::string path;
  explicit TempProgram(const std::string &text) : path(directory.file("program.loop", text)) {}
};

constexpr const char *kDivide = "kernel divide(x: in i32[N], d: i32, q: out i32[N]) {\n"
                                "  parfor i in 0..N {\n"
                                "    q[i] = x[i] / d;\n"
                                "  }\n"
                                "}\n";

// `loopc run ARGUMENTS` on every engine: each must fail (exit 1) printing
// `message`, the same error at the same place.
void failsOnEveryEngine(const std::string &arguments, const std::string &message) {
  for (std::string device : {"interp", "cpu", "gpu-on-cpu"}) {
    CAPTURE(device);
    auto result = runLoopc("run " + arguments + " --device " + device);
    CHECK(result.exitCode == 1);
    CHECK(result.output.find(message) != std::string::npos);
  }
}

// `loopc run ARGUMENTS --check` on the compiled engines: each must agree with
// the interpreter.
void agreesOnCompiledEngines(const std::string &arguments) {
  for (std::string device : {"cpu", "gpu-on-cpu"}) {
    CAPTURE(device);
    CHECK(runLoopc("run " + arguments + " --check --device " + device).exitCode == 0);
  }
}

} // namespace

TEST_CASE("run --device cpu reports an integer division by zero and exits 1") {
  TempProgram program(kDivide);
  auto result = runLoopc("run " + program.path + " --set N=5 --set d=0 --device cpu");
  CHECK(result.exitCode == 1);
  // At the division, as the interpreter reports it.
  CHECK(result.output.find("program.loop:3:12: error: integer division by zero") !=
        std::string::npos);
  CHECK(result.output.find("q[i] = x[i] / d;") != std::string::npos);
  auto interpreted = runLoopc("run " + program.path + " --set N=5 --set d=0 --device interp");
  CHECK(interpreted.output.find("program.loop:3:12: error: integer division by zero") !=
        std::string::npos);
}

TEST_CASE("a modulo by zero inside a function is reported there, as by the interpreter") {
  TempProgram program("fn wrap(v: i32, m: i32) -> i32 { return v % m; }\n"
                      "kernel k(x: in i32[N], m: i32, y: out i32[N]) {\n"
                      "  parfor i in 0..N { y[i] = wrap(x[i], m); }\n"
                      "}\n");
  failsOnEveryEngine(program.path + " --set N=5 --set m=0",
                     "program.loop:1:41: error: integer modulo by zero");
}

TEST_CASE("run --device cpu divides by a nonzero input as before") {
  TempProgram program(kDivide);
  auto result = runLoopc("run " + program.path + " --set N=5 --set d=-1 --device cpu --check");
  CHECK(result.exitCode == 0);
  CHECK(result.output.find("PASS: 1 output matches the interpreter") != std::string::npos);
}

// Where a run-time step or extent can appear: each lowering puts its check
// before the loop or allocation (ir::Check), and the code after a failed
// check must stay harmless.
constexpr const char *kRunTimeShapes =
    "kernel for_step(x: in i64[N], s: i64, r: out i64) { for i in 0..10 by s { r += 1; } }\n"
    "kernel parfor_step(x: in f32[N], s: i64, y: out f32[N]) {\n"
    "  parfor i in 0..N by s { y[i] = x[i]; }\n"
    "}\n"
    "kernel inner_parfor_step(x: in f32[N][N], s: i32, y: out f32[N][N]) {\n"
    "  parfor i in 0..N, j in 0..N by i64(s) { y[i][j] = x[i][j]; }\n"
    "}\n"
    "kernel redomap_step(x: in f32[N], s: i64, r: out f32) {\n"
    "  r = redomap(+, 0.0, i in 0..N by s) x[i];\n"
    "}\n"
    "kernel redomap_inner_step(x: in f32[N][N], s: i64, y: out f32[N]) {\n"
    "  parfor i in 0..N { y[i] = redomap(+, 0.0, a in 0..1, j in 0..N by s) x[i][j]; }\n"
    "}\n"
    "kernel scan_step(x: in f32[N], s: i64, y: out f32[N]) {\n"
    "  scan(+, 0.0, i in 0..N by s) y[i] = x[i];\n"
    "}\n"
    "kernel i32_step(x: in i32[N], s: i32, r: out i32) { for i in 0..10 by s { r += i; } }\n"
    "kernel global_extent(x: in f32[N], y: out f32[N], s: i64) {\n"
    "  var t: f32[N][s - 1];\n"
    "  parfor i in 0..N { y[i] = x[i]; }\n"
    "}\n"
    "kernel private_extent(x: in f32[N], y: out f32[N], s: i32) {\n"
    "  parfor i in 0..N {\n"
    "    var t: f32[s];\n"
    "    for j in 0..s { t[j] = x[i]; }\n"
    "    y[i] = redomap(+, 0.0, j in 0..s) t[j];\n"
    "  }\n"
    "}\n"
    "kernel redomap_neutral(x: in f32[N], s: i64, r: out f32) {\n"
    "  r = redomap(+, f32(s - 3), i in 0..N) x[i];\n"
    "}\n"
    "kernel scan_neutral(x: in f64[N], s: i64, y: out f64[N]) {\n"
    "  scan(*, f64(s - 2), i in 0..N) y[i] = x[i];\n"
    "}\n"
    "kernel row_neutral(x: in i32[N][N], s: i32, y: out i32[N]) {\n"
    "  parfor i in 0..N { y[i] = redomap(+, s - 3, j in 0..N) x[i][j]; }\n"
    "}\n";

TEST_CASE("a step, local extent or neutral element that is wrong at run time fails there on every "
          "engine") {
  // Found by bug hunts: a negative step ran no iteration silently and a zero
  // one was called a division by zero; a negative extent ran silently.
  TempProgram program(kRunTimeShapes);
  struct Case {
    const char *kernel, *step, *message;
  };
  const Case cases[] = {
      {"for_step", "0", "1:71: error: the step of a range must be positive, but it is 0"},
      {"parfor_step", "-1", "3:23: error: the step of a range must be positive, but it is -1"},
      {"inner_parfor_step", "-2",
       "6:34: error: the step of a range must be positive, but it is -2"},
      {"redomap_step", "0", "9:36: error: the step of a range must be positive, but it is 0"},
      {"redomap_inner_step", "-1",
       "12:69: error: the step of a range must be positive, but it is -1"},
      {"scan_step", "-5", "15:29: error: the step of a range must be positive, but it is -5"},
      {"i32_step", "-3", "17:71: error: the step of a range must be positive, but it is -3"},
      {"global_extent", "-1", "19:17: error: extent -2 of local array 't' is negative"},
      {"private_extent", "-4", "24:16: error: extent -4 of local array 't' is negative"},
      // From a bug hunt: a neutral element from a variable was combined in
      // once per partial result, a different total on every engine.
      {"redomap_neutral", "-1",
       "30:18: error: the neutral element of 'redomap(+)' must be 0: it may be combined in once "
       "per partial result"},
      {"scan_neutral", "-1",
       "33:11: error: the neutral element of 'scan(*)' must be 1: it may be combined in once per "
       "partial result"},
      {"row_neutral", "-1",
       "36:40: error: the neutral element of 'redomap(+)' must be 0: it may be combined in once "
       "per partial result"},
  };
  for (const Case &each : cases)
    for (std::string device : {"interp", "cpu", "gpu-on-cpu"}) {
      std::string kernel = each.kernel;
      CAPTURE(kernel);
      CAPTURE(device);
      auto result = runLoopc("run " + program.path + " --kernel " + kernel +
                             " --set N=7 --set s=" + each.step + " --device " + device);
      CHECK(result.exitCode == 1);
      CHECK(result.output.find(std::string("program.loop:") + each.message) != std::string::npos);
      // Valid values run as the interpreter does.
      if (device == "interp")
        continue;
      auto fine = runLoopc("run " + program.path + " --kernel " + kernel +
                           " --set N=37 --set s=3 --check --device " + device);
      CHECK(fine.exitCode == 0);
    }
}

TEST_CASE("an i32 range of more iterations than i32 counts fails on every engine") {
  // Compiled code counts an unstepped range's iterations in its type; the
  // interpreter refuses such a range alike instead of running it.
  TempProgram program("kernel wide(lo: i32, hi: i32, x: in f32[N], r: out f32) {\n"
                      "  r = redomap(+, 0.0, i in lo..hi) x[abs(i % 2)];\n"
                      "}\n");
  failsOnEveryEngine(program.path + " --set N=2 --set lo=-2000000000 --set hi=2000000000",
                     "program.loop:2:23: error: the range -2000000000..2000000000 has more "
                     "iterations than an i32 range may have (2^31 - 1): use i64 bounds");
  agreesOnCompiledEngines(program.path + " --set N=2 --set lo=-20 --set hi=2000");
}

TEST_CASE("a called kernel's extents that differ from its arguments' fail at the call") {
  // From bug hunts: an image pyramid level of H / 2 rows passed where the
  // callee's type needs (H + 1) / 2 ran the callee over the wrong extents on
  // the compiled engines (heap corruption for odd H; zero padding for too
  // large an argument), and an extent from a scalar argument likewise.
  TempProgram program(
      "kernel down2(X: in f32[H][W], Y: out f32[(H + 1) / 2][(W + 1) / 2]) {\n"
      "  parfor i in 0..(H + 1) / 2, j in 0..(W + 1) / 2 {\n"
      "    Y[i][j] = X[2 * i][2 * j] + X[min(2 * i + 1, H - 1)][min(2 * j + 1, W - 1)];\n"
      "  }\n"
      "}\n"
      "kernel pyramid(X: in f32[H][W], L1: out f32[H / 2][W / 2]) {\n"
      "  var level: f32[H / 2][W / 2];\n"
      "  down2(X, level);\n"
      "  parfor i in 0..H / 2, j in 0..W / 2 { L1[i][j] = level[i][j]; }\n"
      "}\n"
      "kernel fill(n: i64, y: out f32[n]) { parfor i in 0..n { y[i] = 1.0; } }\n"
      "kernel caller(B: out f32[M]) { fill(M + 1, B); }\n");
  failsOnEveryEngine(program.path + " --kernel pyramid --set H=7 --set W=8",
                     "program.loop:8:12: error: 'level' has extent 3 in dimension 0, but "
                     "parameter 'Y' of 'down2' needs 4");
  failsOnEveryEngine(program.path + " --kernel caller --set M=5",
                     "program.loop:12:44: error: 'B' has extent 5 in dimension 0, but "
                     "parameter 'y' of 'fill' needs 6");
  agreesOnCompiledEngines(program.path + " --kernel pyramid --set H=8 --set W=10");
}

TEST_CASE(
    "a division by zero whose value is not needed is still reported, as the interpreter does") {
  // From a bug hunt: simplify removed dead lets and folded `e * 0`, and the
  // fault went with them on the compiled engines.
  TempProgram program("kernel dead_let(a: in i32[N], b: in i32[N], q: out i32[N]) {\n"
                      "  parfor i in 0..N { let z = a[i] / b[i]; q[i] = a[i]; }\n"
                      "}\n"
                      "kernel times_zero(a: in i32[N], b: in i32[N], q: out i32[N]) {\n"
                      "  parfor i in 0..N { q[i] = (a[i] % b[i]) * 0; }\n"
                      "}\n"
                      "kernel and_false(a: in i32[N], b: in i32[N], q: out bool[N]) {\n"
                      "  parfor i in 0..N { q[i] = (a[i] / b[i] > 0) && false; }\n"
                      "}\n"
                      "kernel dead_read(x: in i32[N], b: in i32[N], q: out i32[N]) {\n"
                      "  parfor i in 0..N { let z = x[b[i] + 100]; q[i] = 0; }\n"
                      "}\n");
  auto write = [&](const std::string &name, std::initializer_list<int32_t> values) {
    std::string path = program.directory.at(name);
    loopc::HostArray array(loopc::ScalarType::I32, {static_cast<int64_t>(values.size())});
    std::ranges::copy(values, array.data<int32_t>());
    REQUIRE(loopc::writeNpy(path, array).has_value());
    return path;
  };
  std::string a = write("a.npy", {1, 2, 3}), b = write("b.npy", {1, 0, 1});
  const char *cases[][2] = {{"dead_let", "2:30"}, {"times_zero", "5:29"}, {"and_false", "8:30"}};
  for (const auto &[kernel, place] : cases)
    for (std::string device : {"interp", "cpu", "gpu-on-cpu"}) {
      CAPTURE(kernel);
      CAPTURE(device);
      auto result = runLoopc("run " + program.path + " --kernel " + kernel + " --in a=" + a +
                             " --in b=" + b + " --device " + device);
      CHECK(result.exitCode == 1);
      bool reported =
          result.output.find(std::string("program.loop:") + place +
                             ": error: integer division by zero") != std::string::npos ||
          result.output.find(std::string("program.loop:") + place +
                             ": error: integer modulo by zero") != std::string::npos;
      CHECK(reported);
    }
  failsOnEveryEngine(program.path + " --kernel dead_read --bounds-check --in x=" + a +
                         " --in b=" + b,
                     "program.loop:11:30: error: index 101 out of range for dimension 0 of 'x' "
                     "(extent 3)");
}

TEST_CASE("a write out of range is marked at its target, as the interpreter marks it") {
  TempProgram program("kernel k(x: in f32[N], y: out f32[N]) {\n"
                      "  parfor i in 0..N {\n"
                      "    y[2 * i] = x[i];\n"
                      "  }\n"
                      "}\n");
  failsOnEveryEngine(program.path + " --bounds-check --set N=10",
                     "program.loop:3:5: error: index 10 out of range for dimension 0 of 'y' "
                     "(extent 10)\n    y[2 * i] = x[i];\n    ^~~~~~~~\n");
}

TEST_CASE("after a division by zero the code goes on harmlessly until the error is reported") {
  // From a bug hunt: the quotient went on as x / 1 (a loop of 2e9 / 0
  // iterations ran for minutes) and an empty array was a null pointer (its
  // element read after `t % 0` crashed).
  TempProgram program("kernel cyclic(A: in i32[C], o: out i32[T]) {\n"
                      "  parfor t in 0..T { o[t] = A[t % C]; }\n"
                      "}\n"
                      "kernel long_loop(d: i32, o: out i32[T]) {\n"
                      "  for k in 0..2000000000 / d {\n"
                      "    parfor t in 0..i32(T) { o[t] += t + k; }\n"
                      "  }\n"
                      "}\n");
  failsOnEveryEngine(program.path + " --kernel cyclic --set T=5 --set C=0",
                     "program.loop:2:31: error: integer modulo by zero");
  failsOnEveryEngine(program.path + " --kernel long_loop --set T=64 --set d=0",
                     "program.loop:5:15: error: integer division by zero");
}

TEST_CASE("a call's extents named by a let are compared when the call runs") {
  // From a bug hunt: `let N1 = (N - 1) / 2 + 1` made the checker refuse a
  // valid multigrid step (N1 was a symbol of its own); now it is the call's
  // run-time check that decides.
  TempProgram program("kernel prolong(ec: in f32[M], u: inout f32[2 * M - 1]) {\n"
                      "  parfor i in 0..M - 1 {\n"
                      "    u[2 * i] += ec[i];\n"
                      "    u[2 * i + 1] += 0.5 * (ec[i] + ec[i + 1]);\n"
                      "  }\n"
                      "}\n"
                      "kernel twolevel(u: inout f32[N]) {\n"
                      "  let N1 = (N - 1) / 2 + 1;\n"
                      "  var u1: f32[N1];\n"
                      "  parfor i in 0..N1 { u1[i] = 1.0; }\n"
                      "  prolong(u1, u);\n"
                      "}\n");
  failsOnEveryEngine(program.path + " --set N=34",
                     "program.loop:11:15: error: 'u' has extent 34 in dimension 0, but parameter "
                     "'u' of 'prolong' needs 33");
  agreesOnCompiledEngines(program.path + " --set N=33");
}

TEST_CASE("a local array too large to allocate is an error on every engine, not a crash") {
  // From a bug hunt: the compiled engines used calloc's null result.
  TempProgram program("kernel k(x: in f32[N], K: i64, y: out f32[N]) {\n"
                      "  var t: f32[K];\n"
                      "  parfor i in 0..N { y[i] = x[i] + t[i % K]; }\n"
                      "}\n");
  failsOnEveryEngine(program.path + " --set N=10 --set K=100000000000",
                     "program.loop:2:7: error: local array 't' is too large to allocate");
  // From a later hunt: an element count that wraps in i64 (2^62 x 4 is 0)
  // was allocated as 0 elements and written past; an iteration's private
  // array past the heap crashed (the block's slots from a null malloc); and
  // the interpreter's 4 GiB limit was its own (the compiled engines ran
  // 8 GB arrays).
  TempProgram limits(R"(kernel wrapped(x: in f32[N], a: i64, b: i64, y: out f32[N]) {
  var t: f32[a][b];
  parfor i in 0..N { t[i][i] = x[i]; }
  t[a - 1][b - 1] = 5.0;
  parfor i in 0..N { y[i] = t[i][i] + t[a - 1][b - 1]; }
}

kernel private_huge(x: in f32[N], a: i64, y: out f32[N]) {
  parfor i in 0..N {
    var t: f32[a];
    t[0] = x[i];
    y[i] = t[0] + t[a - 1];
  }
}

kernel over_limit(x: in f32[N], a: i64, y: out f32[N]) {
  var t: f32[a];
  parfor i in 0..N { t[i] = x[i]; }
  parfor i in 0..N { y[i] = t[i] + t[a - 1]; }
}
)");
  for (const char *bounds : {"", " --bounds-check"}) {
    CAPTURE(bounds);
    failsOnEveryEngine(limits.path +
                           " --kernel wrapped --set N=3 --set a=4611686018427387904 "
                           "--set b=4" +
                           bounds,
                       "program.loop:2:7: error: local array 't' is too large to allocate");
    failsOnEveryEngine(limits.path + " --kernel private_huge --set N=3 --set a=1000000000000" +
                           bounds,
                       "program.loop:10:9: error: local array 't' is too large to allocate");
    // 2^30 + 1 floats: 4 bytes past the limit.
    failsOnEveryEngine(limits.path + " --kernel over_limit --set N=3 --set a=1073741825" + bounds,
                       "program.loop:17:7: error: local array 't' is too large to allocate");
  }
  agreesOnCompiledEngines(limits.path + " --kernel private_huge --set N=37 --set a=5000");
}

TEST_CASE("a local array's extent is the value of its `var` at the declaration, on every engine") {
  // From a bug hunt: the compiled engines read the extent's var again at
  // every index and when sizing the storage, so assigning it afterwards gave
  // wrong rows, a heap overrun past the real storage, or an internal error.
  TempProgram program(R"(kernel grown(x: in f32[N], y: out f32[N]) {
  var n = N;
  var t: f32[n];
  n = n + 5;
  for i in 0..n { t[i] = 1.0; }
  for i in 0..N { y[i] = t[i] + x[i]; }
}

kernel shrunk(x: in f32[N], y: out f32[N]) {
  var n = N;
  var t: f32[2][n];
  n = 1;
  for i in 0..N { t[0][i] = x[i]; t[1][i] = 2.0 * x[i]; }
  for i in 0..N { y[i] = t[0][i] + t[1][i]; }
}

kernel square(x: in f32[N], y: out f32[N]) {
  var n = N;
  var t: f32[n][n];
  parfor i in 0..N { t[i][i] = x[i]; }
  parfor i in 0..N { y[i] = t[i][i] * 2.0; }
}

kernel private_rows(x: in f32[N], y: out f32[N]) {
  parfor j in 0..N {
    var m = 3;
    if j > 2 { m = 4; }
    var t: f32[m][2];
    for a in 0..m { for b in 0..2 { t[a][b] = x[j] * f32(a + b); } }
    y[j] = redomap(+, 0.0, a in 0..m, b in 0..2) t[a][b];
  }
}
)");
  failsOnEveryEngine(program.path + " --kernel grown --set N=3 --bounds-check",
                     "program.loop:5:19: error: index 3 out of range for dimension 0 of 't' "
                     "(extent 3)");
  for (const char *kernel : {"shrunk", "square"})
    for (const char *size : {"1", "7", "40"})
      for (const char *bounds : {"", " --bounds-check"})
        agreesOnCompiledEngines(program.path + " --kernel " + kernel + " --set N=" + size + bounds);
  // A private array's extents decided in its iteration: the GPU pipeline
  // refuses it (no thread can allocate it, nor the host before the launch).
  std::string privateRows = program.path + " --kernel private_rows --set N=40";
  CHECK(runLoopc("run " + privateRows + " --check --device cpu").exitCode == 0);
  auto refused = runLoopc("run " + privateRows + " --device gpu-on-cpu");
  CHECK(refused.exitCode == 1);
  CHECK(refused.output.find("program.loop:28:9: error: on the GPU, the extents of the private "
                            "array 't' must be known when its kernel launches") !=
        std::string::npos);
}
