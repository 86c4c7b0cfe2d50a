// Random programs, run on the interpreter and the CPU JIT (the kernels of the
// CPU pipeline and of the GPU pipeline, register tiles included): they must
// agree; their PTX must assemble (ptxas, when installed) and their launches pass
// the GPU engine's checks over a stand-in driver.
// Each program is a 2-D parfor whose body mixes what the passes and the CPU
// code generator take apart (CpuThreadNest.h): lets, per-thread loops with
// bounds that depend on the thread, divergent ifs around loops, guards,
// redomaps inside the parfor and at top level, stencil-like accesses,
// private arrays; 3-D nests with i32 reductions; time loops around 1-D
// parfors on inout arrays; host code around kernels; 1-D parfors over rows
// (redomaps along the row, a branch on the row, an inner parfor). The
// generator keeps every index in bounds and every write race free, so any
// disagreement is a compiler bug; the failing program is printed.
#include "TestSupport.h"
#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
#include "engine/cpu/CpuEngine.h"
#include "engine/gpu/GpuEngine.h"
#include "interp/Interpreter.h"
#include "support/Differential.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using namespace loopc;

namespace {

class ProgramGenerator {
public:
  explicit ProgramGenerator(uint32_t seed) : random_(seed) {}

  std::string kernel() {
    std::string body;
    int statements = between(1, 4);
    for (int s = 0; s < statements; ++s)
      body += statement(2, "    ");
    body += "    C[i][j] = " + value(2) + ";\n";
    // Nests whose inner bounds depend on the outer index (triangles) or
    // step, as well as plain rectangles.
    std::string columns =
        pick<std::string>({"0..N", "0..N", "0..min(N, i + 1)", "i % 3..N", "0..N by 2"});
    std::string text = userFunctions() +
                       "kernel generated(A: in f32[M][N], x: in f32[N], C: out f32[M][N], "
                       "r: out f32) {\n"
                       "  parfor i in 0..M, j in " +
                       columns + " {\n" + body + "  }\n";
    locals_.clear();
    loopVars_.clear();
    text += "  r = redomap(" + pick<std::string>({"+", "max", "min"}) + ", " +
            "0.0, i in 0..M, j in " + pick<std::string>({"0..N", "i % 3..N", "0..min(N, i + 2)"}) +
            ") " + value(1) + ";\n}\n";
    return text;
  }

  // A 1-D parfor over rows whose redomaps and inner parfor walk along the
  // row (the GPU pipeline gives it a block per row): redomaps of the row,
  // one under a branch on the row into a private variable, an inner parfor
  // using both, a store of the row's result.
  std::string rows() {
    std::string text = userFunctions() +
                       "kernel rows(A: in f32[M][N], x: in f32[N], C: out f32[M][N], "
                       "s: out f32[M]) {\n"
                       "  parfor i in 0..M {\n"
                       "    let a: f32 = " +
                       rowReduction() +
                       ";\n"
                       "    var b: f32 = 0.5;\n"
                       "    if (" +
                       pick<std::string>({"i % 2 == 0", "i < M - 1", "x[i % N] > 0.0"}) +
                       ") {\n"
                       "      b = " +
                       rowReduction() + ";\n    }\n";
    locals_ = {"a", "b"};
    text += "    parfor j in " + pick<std::string>({"0..N", "0..N by 2", "i % 3..N"}) +
            " {\n      C[i][j] = " + value(2) + " * a + b;\n    }\n";
    locals_.clear();
    return text + "    s[i] = a - b;\n  }\n}\n";
  }

  // A time loop around 1-D parfors, each reading the other array's
  // neighbours and writing its own elements, with a redomap per element.
  std::string stepped() {
    std::string text = "kernel stepped(x: inout f32[N], y: inout f32[N], steps: i32) {\n"
                       "  for t in 0..steps {\n";
    for (const auto &[target, source] : {std::pair{"y", "x"}, std::pair{"x", "y"}}) {
      std::string over = pick<std::string>({"0..N", "1..N - 1", "0..N by 2", "N / 2..N"});
      text += "    parfor i in " + over + " {\n      " + target +
              "[i] = " + neighbours(2, target, source) + ";\n    }\n";
    }
    return text + "  }\n}\n";
  }

  // Host code around kernels: a kernel-level array and variable carried
  // through a time loop, a whole-array reduction into the variable, parfors
  // reading both.
  std::string composite() {
    std::string op = pick<std::string>({"+", "max", "min"});
    std::string neutral = op == "+" ? "0.0" : op == "max" ? "-4.0" : "4.0";
    std::string rowSum = pick<std::string>({"redomap(+, 0.0, j in 0..N) A[i][j] * x[j]",
                                            "redomap(max, -4.0, j in i % 2..N) A[i][j] - x[j]",
                                            "A[i][i % N] + x[(i + 1) % N]"});
    std::string update = pick<std::string>(
        {"x[j] * 0.5 + s * 0.01", "max(x[j], s) - 0.25", "x[j] + tmp[j % M] * 0.125"});
    return "kernel composite(A: in f32[M][N], x: inout f32[N], y: out f32[M], steps: i32) {\n"
           "  var tmp: f32[M];\n"
           "  var s: f32 = " +
           pick<std::string>({"0.5", "-1.0"}) +
           ";\n"
           "  for t in 0..steps {\n"
           "    parfor i in 0..M {\n"
           "      tmp[i] = " +
           rowSum +
           " + s;\n"
           "    }\n"
           "    s = redomap(" +
           op + ", " + neutral +
           ", i in 0..M) tmp[i] * 0.5;\n"
           "    parfor j in 0..N {\n"
           "      x[j] = " +
           update +
           ";\n"
           "    }\n"
           "  }\n"
           "  parfor i in 0..M {\n"
           "    y[i] = tmp[i] - s;\n"
           "  }\n"
           "}\n";
  }

  // A 3-D parfor with a per-thread loop and guards on several indices, and
  // an integer reduction over an i32 range.
  std::string volume() {
    std::string loop = pick<std::string>({"0..j % 4", "0..3", "i..M", "k..D + 1"});
    std::string read = pick<std::string>(
        {"A[k][(i + q) % M][j]", "A[q % D][i][(j + q) % N]", "A[k][i][(N - 1 - j + q) % N]"});
    std::string guard =
        pick<std::string>({"j < N - 1 && k > 0", "i % 2 == 1", "k + i < j", "A[k][i][j] > 0.25"});
    std::string neighbour = pick<std::string>(
        {"A[(k + D - 1) % D][i][(j + 1) % N]", "f32(k * M + i) * 0.125", "A[k][M - 1 - i][j]"});
    std::string integer =
        pick<std::string>({"iv[p] % 7", "max(iv[p], p) / (p % 3 + 1)", "iv[(p + 1) % i32(N)] - p"});
    return "kernel volume(A: in f32[D][M][N], n: i32, iv: in i32[N], B: out f32[D][M][N], "
           "total: out i32) {\n"
           "  parfor k in 0..D, i in 0..M, j in 0..N {\n"
           "    var acc: f32 = 0.0;\n"
           "    for q in " +
           loop + " {\n      acc += " + read + ";\n    }\n    if (" + guard +
           ") {\n      acc += " + neighbour + ";\n    }\n    B[k][i][j] = acc;\n  }\n" +
           "  total = redomap(" + pick<std::string>({"+", "max", "min"}) +
           ", 0, p in 0..min(n, i32(N))) " + integer + ";\n}\n";
  }

  // Parfors combining into small arrays (a histogram's bins) with every
  // builtin operator, from 1-D and 2-D nests, under branches and in loops;
  // the GPU pipeline privatizes many of them.
  std::string histograms() {
    bool twoD = chance(0.5);
    std::string body = twoD ? "" : "    let j = (i * 3) % N;\n";
    struct Target {
      const char *declaration, *name;
      std::vector<std::string> ops;
    };
    const Target targets[] = {
        {"H: out i32[B]", "H", {"+", "max", "min"}}, {"S: out f32[B]", "S", {"+"}},
        {"E: inout f32[B]", "E", {"min", "max"}},    {"T: inout f64[2][B]", "T", {"*", "+"}},
        {"seen: out bool[B]", "seen", {"||", "&&"}}, {"total: out f32", "total", {"+", "max"}}};
    std::string params;
    for (const Target &target : targets) {
      params += std::string(", ") + target.declaration;
      if (!chance(0.6))
        continue;
      std::string op = pick(target.ops);
      for (int n = between(1, 2); n > 0; --n)
        body += combine(target.name, op, "    ");
    }
    if (body.find("combine") == std::string::npos)
      body += combine("H", "+", "    ");
    std::string text = userFunctions() + "kernel histograms(A: in f32[M][N], x: in f32[N], " +
                       "keys: in i32[M]" + params + ") {\n  parfor i in 0..M" +
                       (twoD ? ", j in 0..N" : "") + " {\n" + body + "  }\n}\n";
    locals_.clear();
    loopVars_.clear();
    return text;
  }

  // Stages through kernel-level arrays, as fuse_producers meets them: each
  // stage writes a new array from x and earlier ones, read at its own index
  // (fusable), shifted, reversed, twice, along a row in a redomap, or
  // broadcast across a 2-D nest; sometimes x changes between stages or a
  // stage divides integers. y combines the last stages.
  std::string stages() {
    std::string text = "kernel stages(x: inout f32[N], k: in i32[N], y: out f32[N], "
                       "z: out f32[M][N], r: out f32) {\n";
    std::vector<std::string> arrays = {"x"};
    int count = between(2, 4);
    for (int stage = 0; stage < count; ++stage) {
      std::string name = "t" + std::to_string(stage);
      std::string from = arrays[between(0, static_cast<int>(arrays.size()) - 1)];
      std::string other = arrays[between(0, static_cast<int>(arrays.size()) - 1)];
      std::string read = pick<std::string>(
          {from + "[i]", from + "[i] * 2.0 + " + other + "[i]", from + "[(i + 1) % N]",
           from + "[N - 1 - i]", from + "[i] + " + from + "[(i + 3) % N]",
           "redomap(+, 0.0, j in 0..N) " + from + "[j] * 0.01", "f32(k[i] / 3) + " + from + "[i]",
           "exp(" + from + "[i] * 0.1)"});
      text +=
          "  var " + name + ": f32[N];\n  parfor i in 0..N { " + name + "[i] = " + read + "; }\n";
      if (between(0, 5) == 0)
        text += "  parfor i in 0..N { x[i] = x[i] * 0.5; }\n";
      arrays.push_back(name);
    }
    const std::string &last = arrays.back();
    const std::string &before = arrays[arrays.size() - 2];
    text += "  parfor i in 0..N { y[i] = " +
            pick<std::string>(
                {last + "[i]", last + "[i] - " + before + "[i]", last + "[N - 1 - i] + 1.0"}) +
            "; }\n";
    text += "  parfor i in 0..M, j in 0..N { z[i][j] = " + before + "[j] * f32(i + 1); }\n";
    text += "  r = redomap(+, 0.0, i in 0..N) " + last + "[i];\n}\n";
    return text;
  }

  // Scans at kernel level (sums, extremes, an order-sensitive user
  // operator) and one per row inside a parfor, of random bodies, some over
  // stepped ranges. Sums add eighths, exact in f32 in any order.
  std::string scans() {
    std::string text =
        userFunctions() +
        "assoc fn first_set(a: i64, b: i64) -> i64 { return a != 0 ? a : b; }\n"
        "kernel scans(A: in f32[M][N], x: in f32[N], keys: in i32[M], S: out f32[N], "
        "E: out f32[N], F: out i64[M], R: out f32[M][N]) {\n"
        "  scan(first_set, 0, i in 0..M) F[i] = keys[i] > 11 ? i + 1 : 0;\n";
    // Rows first: the kernel-level `i` below would hide theirs.
    std::string rowOp = pick<std::string>({"+", "max"});
    text += "  parfor i in 0..M {\n    scan(" + rowOp + ", " + (rowOp == "+" ? "0.0" : "-inf") +
            ", j in " + pick<std::string>({"0..N", "0..N - i % 2", "0..N by 3"}) +
            ") R[i][j] = " + (rowOp == "+" ? eighths() : "max(min(" + value(2) + ", 4.0), -4.0)") +
            ";\n  }\n";
    text += "  let i: i64 = M / 2;\n";
    std::string over = pick<std::string>({"0..N", "0..N", "1..N by 2", "N / 3..N"});
    text += "  scan(+, 0.0, j in " + over + ") S[j] = " + eighths() + ";\n";
    bool largest = chance(0.5);
    text += std::string("  scan(") + (largest ? "max, -inf" : "min, inf") +
            ", j in 0..N) E[N - 1 - j] = max(min(" + value(2) + ", 4.0), -4.0);\n}\n";
    locals_.clear();
    loopVars_.clear();
    return text;
  }

  // Sibling reductions (fuse_sibling_reductions): redomaps over one row in
  // a parfor and over the rows at top level, mostly over the same range,
  // some reading an earlier one's result or a store between them, others
  // independent, with stores of their own in between.
  std::string siblings() {
    auto reduction = [&](const std::string &over, const std::string &value) {
      auto [op, neutral] = pick<std::pair<std::string, std::string>>(
          {{"+", "0.0"}, {"max", "-100.0"}, {"min", "100.0"}, {"larger", "-100.0"}});
      return "redomap(" + op + ", " + neutral + ", " + over + ") " + value;
    };
    std::string text = "assoc fn larger(a: f32, b: f32) -> f32 { return a > b ? a : b; }\n"
                       "kernel siblings(A: in f32[M][N], x: in f32[N], y: out f32[M], "
                       "z: out f32[M], t: out f32, u: out f32, w: out f32) {\n"
                       "  parfor i in 0..M {\n";
    std::vector<std::string> lets;
    int statements = between(2, 5);
    for (int k = 0; k < statements; ++k) {
      std::string earlier = lets.empty() ? "0.5" : pick(lets);
      if (!lets.empty() && chance(0.3)) {
        text += "    " + pick<std::string>({"y", "z"}) + "[i] = " + earlier + " * 0.5;\n";
        continue;
      }
      std::string value =
          pick<std::string>({"A[i][j]", "A[i][j] * x[j]", "x[j] - A[i][j]", "A[i][j] - " + earlier,
                             "A[i][j] + y[i]", "A[i][j] * z[i]"});
      std::string name = "s" + std::to_string(k);
      text += "    let " + name + " = " +
              reduction("j in " + pick<std::string>({"0..N", "0..N", "0..N", "1..N", "0..N by 2"}),
                        value) +
              ";\n";
      lets.push_back(name);
    }
    text += "    z[i] = 0.0";
    for (const std::string &name : lets)
      text += " + " + name;
    text += ";\n  }\n";
    std::string rows = pick<std::string>({"0..M", "0..M", "1..M"});
    text += "  t = " + reduction("i in 0..M", "y[i]") + ";\n";
    if (chance(0.5))
      text += "  y[0] = t;\n"; // M >= 1 in every assignment
    text += "  u = " +
            reduction("i in " + rows, pick<std::string>({"z[i]", "z[i] - t", "y[i] * 2.0"})) +
            ";\n";
    text += "  w = " + reduction("i in 0..M", "z[i] * y[i]") + ";\n}\n";
    return text;
  }

private:
  // A value in [-4, 4] rounded to eighths: sums of such stay exact in f32.
  std::string eighths() { return "f32(i64(max(min(" + value(1) + ", 4.0), -4.0) * 8.0)) / 8.0"; }

  // `combine(op) target[...] = ...;`, maybe under a branch or in a loop.
  std::string combine(const std::string &target, const std::string &op, const std::string &indent) {
    std::string k = fresh("k"), around = pick<std::string>({"", "", "if", "for"});
    std::string opening, closing;
    if (around == "if") {
      opening = indent + "if (" + condition() + ") {\n";
      closing = indent + "}\n";
    } else if (around == "for") {
      // Short loops: an f32 sum of many terms in another order is another sum.
      opening = indent + "for " + k + " in " +
                pick<std::string>({"0..3", "0..i % 5", "j % 3..min(N, j + 4)", "1..N by 3"}) +
                " {\n";
      closing = indent + "}\n";
      loopVars_.push_back(k);
    }
    std::string bounded = "max(min(" + value(1) + ", 4.0), -4.0)";
    // Eighths sum exactly in f32 (at these sizes), in whatever order the
    // atomics take them.
    std::string eighths = "f32(i64(" + bounded + " * 8.0)) / 8.0";
    std::string bin = pick<std::string>({"i64(keys[i]) % B", "(i + j) % B", "(i * 7 + j) % B",
                                         "i64(abs(" + bounded + ") * 3.0) % B"});
    if (!loopVars_.empty() && chance(0.5))
      bin = "(" + loopVars_.back() + " + i) % B";
    std::string element = target + "[" + bin + "]";
    std::string assigned;
    if (target == "H")
      assigned = op == "+" ? pick<std::string>({"1", "i32(j % 5)"}) : "i32(i - j)";
    else if (target == "T") {
      element = "T[i % 2][" + bin + "]";
      assigned = "1.0 + f64(" + bounded + ") * 0.001";
    } else if (target == "seen")
      assigned = "(" + value(1) + ") > 0.5";
    else if (target == "total") {
      element = "total";
      assigned = eighths;
    } else
      assigned = target == "S" ? eighths : value(2);
    std::string text = opening + (opening.empty() ? indent : indent + "  ") + "combine(" + op +
                       ") " + element + " = " + assigned + ";\n" + closing;
    if (around == "for")
      loopVars_.pop_back();
    return text;
  }

  // The functions value() may call.
  static std::string userFunctions() {
    return "assoc fn absmax(a: f32, b: f32) -> f32 { return max(abs(a), abs(b)); }\n"
           "fn blend(a: f32, b: f32, k: i64) -> f32 {\n"
           "  var t: f32 = a * 0.75 + b * 0.25;\n"
           "  for s in 0..k % 3 {\n"
           "    t = max(t, a - f32(s));\n"
           "  }\n"
           "  return t;\n"
           "}\n";
  }

  // A redomap along row i (over j) reading the row, finite however empty
  // its range.
  std::string rowReduction() {
    std::string op = pick<std::string>({"+", "max", "min", "absmax"});
    std::string neutral = op == "+" || op == "absmax" ? "0.0" : op == "max" ? "-inf" : "inf";
    std::string reduced = "redomap(" + op + ", " + neutral + ", j in " +
                          pick<std::string>({"0..N", "0..N", "i % 3..N", "0..min(N, i + 5)"}) +
                          ") (A[i][j] * " + value(1) + ")";
    return op == "max" || op == "min" ? "max(min(" + reduced + ", 4.0), -4.0)" : reduced;
  }

  // An f32 expression of `source`'s neighbours of i and `target[i]`.
  std::string neighbours(int depth, const std::string &target, const std::string &source) {
    if (depth == 0 || chance(0.3))
      return pick<std::string>({source + "[(i + 1) % N]", source + "[(i + N - 1) % N]",
                                source + "[i]", target + "[i]", "f32(t)", "0.25"});
    switch (between(0, 3)) {
    case 0:
      return "(" + neighbours(depth - 1, target, source) + " + " +
             neighbours(depth - 1, target, source) + ")";
    case 1:
      return "(0.5 * " + neighbours(depth - 1, target, source) + ")";
    case 2:
      return "max(" + neighbours(depth - 1, target, source) + ", -1.0)";
    default:
      return "(redomap(+, 0.0, k in 0..min(N, 3)) " + source + "[(i + k) % N]) / 3.0";
    }
  }

  int between(int low, int high) { return std::uniform_int_distribution<int>(low, high)(random_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(random_); }
  template <typename T> T pick(std::vector<T> choices) {
    return choices[static_cast<size_t>(between(0, static_cast<int>(choices.size()) - 1))];
  }

  std::string fresh(const char *prefix) { return prefix + std::to_string(counter_++); }

  // An i64 row index in [0, M) and column index in [0, N).
  std::string row() {
    std::vector<std::string> rows{"i", "(i + 1) % M", "M - 1 - i"};
    for (const std::string &k : loopVars_)
      rows.push_back(k + " % M");
    return pick(rows);
  }
  std::string column() {
    std::vector<std::string> columns{"j", "(j + 2) % N", "N - 1 - j", "(i + j) % N"};
    for (const std::string &k : loopVars_)
      columns.push_back(k + " % N");
    return pick(columns);
  }

  // A range of non-negative i64 values, some depending on the thread.
  std::string range() {
    return pick<std::string>(
        {"0..N", "j..N", "0..i % 5", "i..M", "0..3", "1..N by 2", "j % 3..min(N, j + 4)", "0..M"});
  }

  std::string condition() {
    return pick<std::string>({"i < M - 1", "j % 2 == 0", "A[i][j] > 0.0", "i + j < N",
                              "j >= 2 && i > 0", "x[j] < 0.5 || i == 0", "N - j > 3"});
  }

  // An f32 expression.
  std::string value(int depth) {
    if (depth == 0 || chance(0.3)) {
      std::vector<std::string> leaves{"A[" + row() + "][" + column() + "]", "x[" + column() + "]",
                                      "f32(i)", "f32(j - i)", "0.5"};
      for (const std::string &local : locals_)
        leaves.push_back(local);
      for (const std::string &k : loopVars_)
        leaves.push_back("f32(" + k + ")");
      return pick(leaves);
    }
    switch (between(0, 8)) {
    case 0:
      return "(" + value(depth - 1) + " + " + value(depth - 1) + ")";
    case 1:
      return "(" + value(depth - 1) + " * " + value(depth - 1) + ")";
    case 2:
      return "(" + value(depth - 1) + " - " + value(depth - 1) + ")";
    case 3:
      return "max(" + value(depth - 1) + ", " + value(depth - 1) + ")";
    case 4:
      return "sqrt(abs(" + value(depth - 1) + "))";
    case 5:
      return "f32(" + integer(depth - 1) + ")";
    case 7: // a user's function, with a loop of its own
      return "blend(" + value(depth - 1) + ", " + value(depth - 1) + ", " + integer(depth - 1) +
             ")";
    case 6: { // a user's associative function
      std::string k = fresh("k"), over = range();
      loopVars_.push_back(k);
      std::string mapped = value(depth - 1);
      loopVars_.pop_back();
      return "redomap(absmax, 0.0, " + k + " in " + over + ") " + mapped;
    }
    default: {
      std::string k = fresh("k");
      std::string op = pick<std::string>({"+", "max", "min"});
      std::string neutral = op == "+" ? "0.0" : op == "max" ? "-inf" : "inf";
      std::string over = range();
      loopVars_.push_back(k);
      std::string mapped = value(depth - 1);
      loopVars_.pop_back();
      // An empty range gives ±inf for max and min: keep results finite.
      std::string reduced =
          "redomap(" + op + ", " + neutral + ", " + k + " in " + over + ") " + mapped;
      return op == "+" ? "(" + reduced + ")" : "max(min(" + reduced + ", 4.0), -4.0)";
    }
    }
  }

  // An i64 expression: C's integer division and remainder (divisors never
  // zero), min and max, and integer reductions.
  std::string integer(int depth) {
    std::vector<std::string> leaves{"i", "j", "(i - j)", "3"};
    for (const std::string &k : loopVars_)
      leaves.push_back(k);
    if (depth == 0 || chance(0.3))
      return pick(leaves);
    switch (between(0, 4)) {
    case 0:
      return "(" + integer(depth - 1) + " * 7 + " + integer(depth - 1) + ")";
    case 1:
      return "(" + integer(depth - 1) + " / (j % 3 + 1))";
    case 2:
      return "(" + integer(depth - 1) + " % 5)";
    case 3:
      return "min(" + integer(depth - 1) + ", " + integer(depth - 1) + ")";
    default: {
      std::string k = fresh("k"), over = range();
      loopVars_.push_back(k);
      std::string mapped = integer(depth - 1);
      loopVars_.pop_back();
      return "redomap(" + pick<std::string>({"+", "max"}) + ", 0, " + k + " in " + over + ") " +
             mapped;
    }
    }
  }

  std::string statement(int depth, const std::string &indent) {
    int kind = depth == 0 ? 0 : between(0, 5);
    if (kind == 0) {
      std::string name = fresh("a");
      std::string text = indent + "let " + name + ": f32 = " + value(2) + ";\n";
      locals_.push_back(name);
      return text;
    }
    if (kind == 1) { // an accumulation in a per-thread loop
      std::string name = fresh("v"), k = fresh("k");
      std::string text = indent + "var " + name + ": f32 = " + value(1) + ";\n";
      std::string over = range();
      loopVars_.push_back(k);
      std::string update =
          chance(0.5) ? name + " += " + value(1) : name + " = max(" + name + ", " + value(1) + ")";
      text += indent + "for " + k + " in " + over + " {\n" + indent + "  " + update + ";\n" +
              indent + "}\n";
      loopVars_.pop_back();
      locals_.push_back(name);
      return text;
    }
    if (kind == 5) { // branches inside a per-thread loop, on the loop or the thread
      std::string name = fresh("w"), k = fresh("k");
      std::string over = range();
      loopVars_.push_back(k);
      std::string cond = pick<std::string>(
          {k + " % 2 == 0", k + " < j", "i < 3", "j + " + k + " < N", "A[i][" + k + " % N] > 0.0"});
      std::string text = indent + "var " + name + ": f32 = 0.0;\n" + indent + "for " + k + " in " +
                         over + " {\n" + indent + "  if (" + cond + ") {\n" + indent + "    " +
                         name + " += " + value(1) + ";\n" + indent + "  }";
      if (chance(0.5))
        text += " else {\n" + indent + "    " + name + " = max(" + name + ", " + value(1) + ");\n" +
                indent + "  }";
      text += "\n" + indent + "}\n";
      loopVars_.pop_back();
      locals_.push_back(name);
      return text;
    }
    if (kind == 4) { // a private array filled in one loop and reduced in another
      std::string array = fresh("p"), fill = fresh("k"), read = fresh("k"), sum = fresh("s");
      std::string over = pick<std::string>({"0..4", "0..N", "j..N", "0..i % 5"});
      loopVars_.push_back(fill);
      std::string text = indent + "var " + array + ": f32[4];\n" + indent + "for " + fill + " in " +
                         over + " {\n" + indent + "  " + array + "[" + fill +
                         " % 4] = " + value(1) + ";\n" + indent + "}\n";
      loopVars_.pop_back();
      loopVars_.push_back(read);
      text += indent + "let " + sum + ": f32 = redomap(+, 0.0, " + read + " in 0..4) " + array +
              "[" + read + "] * " + value(1) + ";\n";
      loopVars_.pop_back();
      locals_.push_back(sum);
      return text;
    }
    if (kind == 2) { // a branch the threads disagree on, with loops inside
      std::string name = fresh("b");
      std::string text = indent + "var " + name + ": f32 = 0.0;\n";
      text += indent + "if (" + condition() + ") {\n";
      text += branchBody(name, depth - 1, indent + "  ");
      text += indent + "} else {\n" + branchBody(name, depth - 1, indent + "  ") + indent + "}\n";
      locals_.push_back(name);
      return text;
    }
    // a guard with no else
    std::string name = fresh("g");
    std::string text = indent + "var " + name + ": f32 = 1.0;\n";
    text += indent + "if (" + condition() + ") {\n" + branchBody(name, depth - 1, indent + "  ") +
            indent + "}\n";
    locals_.push_back(name);
    return text;
  }

  // Statements that end by assigning `target`; their own locals stay inside.
  std::string branchBody(const std::string &target, int depth, const std::string &indent) {
    size_t scope = locals_.size();
    std::string text;
    if (depth > 0 && chance(0.6))
      text += statement(depth - 1, indent);
    text += indent + target + " = " + value(2) + ";\n";
    locals_.resize(scope);
    return text;
  }

  std::mt19937 random_;
  int counter_ = 0;
  std::vector<std::string> locals_;   // f32 names in scope
  std::vector<std::string> loopVars_; // i64 loop variables in scope
};

// With LOOPC_EXPORT_RANDOM_PROGRAMS=DIR, each program is also written to
// DIR/<kernel>_<seed>.loop after a `// sizes:` line (its largest
// assignment), for scripts/gpu_check.sh to run on a real GPU against the
// interpreter.
void exportProgram(const std::string &name, const std::string &source,
                   const std::map<std::string, std::string> &sizes) {
  const char *directory = std::getenv("LOOPC_EXPORT_RANDOM_PROGRAMS");
  if (!directory)
    return;
  std::filesystem::create_directories(directory);
  std::string path = (std::filesystem::path(directory) / (name + ".loop")).string();
  std::ofstream out(path);
  out << "// sizes:";
  for (const auto &[size, value] : sizes)
    out << " " << size << "=" << value;
  out << "\n" << source;
  REQUIRE_MESSAGE(out.good(), "cannot write " << path);
}

// Runs `kernel` of `source` on the interpreter and the CPU JIT (both
// pipelines, the GPU's also with other pass parameters) with inputs from
// `seed` at each assignment of its sizes and scalars (the largest last);
// all must agree every time.
void checkAgreement(const std::string &source, const Program &program, const KernelDecl &kernel,
                    uint32_t seed,
                    const std::vector<std::map<std::string, std::string>> &assignments) {
  exportProgram(kernel.name + "_" + std::to_string(seed), source, assignments.back());
  Interpreter interpreter;
  engine::CpuEngine cpu;
  engine::CpuEngine gpuKernels(test::gpuPipelineOnOneSM());
  // The GPU passes sized otherwise too: wide and narrow tiles, short
  // stages, budgets that leave some boxes out.
  const char *const otherSizes[][2] = {{"register_tile=8", "stage_length=4"},
                                       {"register_tile=2", "shared_kib=2"},
                                       {"register_tile=1", "stage_length=64"}};
  passes::PassChoices other =
      test::withParameters({otherSizes[seed % 3][0], otherSizes[seed % 3][1]});
  engine::CpuEngine gpuKernelsSizedOtherwise(passes::PipelineTarget::Gpu, other);
  Engine *engines[] = {&interpreter, &cpu, &gpuKernels, &gpuKernelsSizedOtherwise};
  ArgumentRequest inputs;
  inputs.seed = seed;
  test::checkAgreementAt(program, kernel, engines, assignments, inputs);
}

// The GPU engine over the stand-in driver (tests/CMakeLists.txt), which
// checks launches against the kernels' PTX but runs no kernel: a program
// must run there without an error, though its results mean nothing.
std::unique_ptr<Engine> stubbedGpuEngine() {
  setenv("LOOPC_CUDA_DRIVER", LOOPC_CUDA_STUB, 1);
  auto gpu = engine::GpuEngine::create();
  unsetenv("LOOPC_CUDA_DRIVER");
  REQUIRE_MESSAGE(gpu, (gpu ? "" : gpu.error().message));
  return std::move(*gpu);
}

// Runs `kernel` on `gpu` at `values`; the run must succeed.
void checkRunsOn(Engine &gpu, const Program &program, const KernelDecl &kernel,
                 const std::map<std::string, std::string> &values) {
  ArgumentRequest request;
  request.values = values;
  auto args = bindKernelArguments(kernel, request);
  REQUIRE(args);
  auto ran = gpu.run(program, kernel, *args);
  CHECK_MESSAGE(ran, (ran ? "" : ran.error().message));
}

// How many programs a test generates: `usual`, or LOOPC_RANDOM_PROGRAMS for a
// longer hunt.
uint32_t programCount(uint32_t usual) {
  const char *count = std::getenv("LOOPC_RANDOM_PROGRAMS");
  return count ? static_cast<uint32_t>(std::stoul(count)) : usual;
}

// The program's only kernel; fails the test when the generator wrote a
// program the checker rejects.
const KernelDecl &onlyKernel(const test::LoadedProgram &loaded) {
  REQUIRE_MESSAGE(loaded.program, loaded.diagnostics);
  return *loaded.program->modules.front()->kernels.front();
}

// The program's only kernel: its PTX for `gpu` through ptxas (when
// installed), a run on the stand-in driver at `stubSizes`, and agreement
// between the interpreter and the CPU JIT at every assignment.
void checkEverywhere(const std::string &source, uint32_t seed, const std::string &gpuName,
                     const std::optional<std::string> &ptxas, Engine &gpu,
                     const std::map<std::string, std::string> &stubSizes,
                     const std::vector<std::map<std::string, std::string>> &assignments) {
  auto loaded = test::loadText(source);
  const KernelDecl &kernel = onlyKernel(*loaded);
  auto ptx = codegen::compileToPtx(test::compiledKernel(*loaded->program, kernel), gpuName);
  REQUIRE_MESSAGE(ptx, (ptx ? "" : ptx.error().message));
  if (ptxas) {
    auto assembled = codegen::runPtxas(*ptxas, *ptx, gpuName);
    CHECK_MESSAGE(assembled, (assembled ? "" : assembled.error().message));
  }
  checkRunsOn(gpu, *loaded->program, kernel, stubSizes);
  checkAgreement(source, *loaded->program, kernel, seed, assignments);
}

} // namespace

namespace {

// The programs of every fourth seed from `first` up to 40 (at most
// LOOPC_RANDOM_PROGRAMS of them, when set), each everywhere.
void checkParforPrograms(uint32_t first) {
  std::optional<std::string> ptxas = codegen::findPtxas();
  std::unique_ptr<Engine> gpu = stubbedGpuEngine();
  uint32_t count = programCount(10);
  for (uint32_t seed = first; seed <= 40 && (seed - first) / 4 < count; seed += 4) {
    std::string source = ProgramGenerator(seed).kernel();
    CAPTURE(seed);
    CAPTURE(source);
    checkEverywhere(source, seed, "sm_90", ptxas, *gpu, {{"M", "17"}, {"N", "33"}},
                    {{{"M", "1"}, {"N", "1"}},
                     {{"M", "3"}, {"N", "7"}},
                     {{"M", "17"}, {"N", "33"}},
                     {{"M", "40"}, {"N", "9"}}});
  }
}

} // namespace

// Four test cases of 10 programs each, by seed modulo 4, so ctest runs them
// side by side: one of 40 took 8 minutes alone, and each of two halves up to
// 7 (too close to a test's time limit on a slower machine).
TEST_CASE("random parfor programs agree between the interpreter and the CPU JIT, and ptxas takes "
          "them (every 4th seed from 1)") {
  checkParforPrograms(1);
}

TEST_CASE("random parfor programs agree between the interpreter and the CPU JIT, and ptxas takes "
          "them (every 4th seed from 2)") {
  checkParforPrograms(2);
}

TEST_CASE("random parfor programs agree between the interpreter and the CPU JIT, and ptxas takes "
          "them (every 4th seed from 3)") {
  checkParforPrograms(3);
}

TEST_CASE("random parfor programs agree between the interpreter and the CPU JIT, and ptxas takes "
          "them (every 4th seed from 4)") {
  checkParforPrograms(4);
}

TEST_CASE("random time loops around 1-D parfors agree between the interpreter and the CPU JIT") {
  std::vector<std::map<std::string, std::string>> assignments;
  for (const char *n : {"1", "2", "7", "257"})
    for (const char *steps : {"0", "1", "3"})
      assignments.push_back({{"N", n}, {"steps", steps}});
  for (uint32_t seed = 1; seed <= programCount(60); ++seed) {
    std::string source = ProgramGenerator(seed).stepped();
    CAPTURE(seed);
    CAPTURE(source);
    auto loaded = test::loadText(source);
    checkAgreement(source, *loaded->program, onlyKernel(*loaded), seed, assignments);
  }
}

TEST_CASE("random host code around kernels agrees between the interpreter and the CPU JIT") {
  // Kernel-level variables and arrays, reductions into them and host loops
  // through the GPU engine's host program too.
  std::unique_ptr<Engine> gpu = stubbedGpuEngine();
  std::vector<std::map<std::string, std::string>> assignments;
  for (const auto &[m, n] : {std::pair{"1", "1"}, std::pair{"5", "3"}, std::pair{"33", "70"}})
    for (const char *steps : {"0", "2"})
      assignments.push_back({{"M", m}, {"N", n}, {"steps", steps}});
  for (uint32_t seed = 1; seed <= programCount(30); ++seed) {
    std::string source = ProgramGenerator(seed).composite();
    CAPTURE(seed);
    CAPTURE(source);
    auto loaded = test::loadText(source);
    const KernelDecl &kernel = onlyKernel(*loaded);
    checkRunsOn(*gpu, *loaded->program, kernel, {{"M", "33"}, {"N", "70"}, {"steps", "2"}});
    checkAgreement(source, *loaded->program, kernel, seed, assignments);
  }
}

TEST_CASE(
    "random row kernels agree between the interpreter and the CPU JIT, and ptxas takes them") {
  std::vector<std::map<std::string, std::string>> assignments;
  for (const auto &[m, n] : {std::pair{"1", "1"}, std::pair{"3", "255"}, std::pair{"4", "257"},
                             std::pair{"2", "600"}, std::pair{"9", "7"}})
    assignments.push_back({{"M", m}, {"N", n}});
  std::optional<std::string> ptxas = codegen::findPtxas();
  std::unique_ptr<Engine> gpu = stubbedGpuEngine();
  for (uint32_t seed = 1; seed <= programCount(30); ++seed) {
    std::string source = ProgramGenerator(seed).rows();
    CAPTURE(seed);
    CAPTURE(source);
    checkEverywhere(source, seed, "sm_80", ptxas, *gpu, {{"M", "5"}, {"N", "300"}}, assignments);
  }
}

TEST_CASE("random 3-D parfors and i32 reductions agree between the interpreter and the CPU JIT") {
  std::vector<std::map<std::string, std::string>> assignments;
  for (const char *d : {"1", "3"})
    for (const auto &[m, n] : {std::pair{"1", "1"}, std::pair{"5", "7"}, std::pair{"9", "40"}})
      assignments.push_back({{"D", d}, {"M", m}, {"N", n}, {"n", "6"}});
  for (uint32_t seed = 1; seed <= programCount(30); ++seed) {
    std::string source = ProgramGenerator(seed).volume();
    CAPTURE(seed);
    CAPTURE(source);
    auto loaded = test::loadText(source);
    checkAgreement(source, *loaded->program, onlyKernel(*loaded), seed, assignments);
  }
}

TEST_CASE("random histograms agree between the interpreter and the CPU JIT, and ptxas takes them") {
  std::vector<std::map<std::string, std::string>> assignments;
  for (const auto &[m, n, b] : {std::tuple{"1", "1", "1"}, std::tuple{"3", "7", "5"},
                                std::tuple{"40", "33", "3"}, std::tuple{"150", "8", "17"}})
    assignments.push_back({{"M", m}, {"N", n}, {"B", b}});
  std::optional<std::string> ptxas = codegen::findPtxas();
  std::unique_ptr<Engine> gpu = stubbedGpuEngine();
  for (uint32_t seed = 1; seed <= programCount(20); ++seed) {
    std::string source = ProgramGenerator(seed).histograms();
    CAPTURE(seed);
    CAPTURE(source);
    checkEverywhere(source, seed, "sm_80", ptxas, *gpu, {{"M", "150"}, {"N", "8"}, {"B", "17"}},
                    assignments);
  }
}

TEST_CASE("random sibling reductions agree between the interpreter and the CPU JIT, and ptxas "
          "takes them") {
  std::vector<std::map<std::string, std::string>> assignments;
  for (const auto &[m, n] : {std::pair{"1", "1"}, std::pair{"3", "7"}, std::pair{"17", "0"},
                             std::pair{"40", "300"}, std::pair{"2", "4097"}})
    assignments.push_back({{"M", m}, {"N", n}});
  std::optional<std::string> ptxas = codegen::findPtxas();
  std::unique_ptr<Engine> gpu = stubbedGpuEngine();
  for (uint32_t seed = 1; seed <= programCount(12); ++seed) {
    std::string source = ProgramGenerator(seed).siblings();
    CAPTURE(seed);
    CAPTURE(source);
    checkEverywhere(source, seed, "sm_80", ptxas, *gpu, {{"M", "40"}, {"N", "300"}}, assignments);
  }
}

TEST_CASE("random scans agree between the interpreter and the CPU JIT, and ptxas takes them") {
  std::vector<std::map<std::string, std::string>> assignments;
  for (const auto &[m, n] : {std::pair{"1", "1"}, std::pair{"3", "7"}, std::pair{"5", "65"},
                             std::pair{"2", "4097"}, std::pair{"40", "300"}})
    assignments.push_back({{"M", m}, {"N", n}});
  std::optional<std::string> ptxas = codegen::findPtxas();
  std::unique_ptr<Engine> gpu = stubbedGpuEngine();
  for (uint32_t seed = 1; seed <= programCount(10); ++seed) {
    std::string source = ProgramGenerator(seed).scans();
    CAPTURE(seed);
    CAPTURE(source);
    checkEverywhere(source, seed, "sm_80", ptxas, *gpu, {{"M", "40"}, {"N", "300"}}, assignments);
  }
}

TEST_CASE("random chains of stages through local arrays agree between the interpreter and the "
          "CPU JIT") {
  std::vector<std::map<std::string, std::string>> assignments;
  for (const auto &[m, n] :
       {std::pair{"1", "1"}, std::pair{"2", "5"}, std::pair{"7", "64"}, std::pair{"3", "300"}})
    assignments.push_back({{"M", m}, {"N", n}});
  int fused = 0, kept = 0; // programs where fuse_producers removed an array, or left one
  for (uint32_t seed = 1; seed <= programCount(30); ++seed) {
    std::string source = ProgramGenerator(seed).stages();
    CAPTURE(seed);
    CAPTURE(source);
    auto loaded = test::loadText(source);
    checkAgreement(source, *loaded->program, onlyKernel(*loaded), seed, assignments);
    auto [before, after] = test::aroundPass(*loaded->program, "stages", "fuse_producers");
    fused += before != after;
    kept += test::contains(after, "global f32 t");
  }
  CHECK(fused > 0);
  CHECK(kept > 0);
}
