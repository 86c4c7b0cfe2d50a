// Reading the printed Loop IR back (ir/IRParser.h): every program's IR after
// every pass reads back to the same text, hand-written IR reads as meant, and
// bad input is a located error.
#include "TestSupport.h"

#include "ir/IRParser.h"
#include "ir/IRPrinter.h"
#include "ir/Verifier.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

namespace loopc::ir {

using test::contains;

namespace {

// The programs whose IR the round trip is checked on: the samples and the
// test programs.
std::vector<std::string> programFiles() {
  std::vector<std::string> files;
  for (const char *folder : {"samples", "tests/programs"})
    for (const auto &entry :
         std::filesystem::recursive_directory_iterator(test::sourcePath(folder)))
      if (entry.path().extension() == ".loop")
        files.push_back(entry.path().string());
  std::ranges::sort(files);
  return files;
}

// Parses `text`, failing the test with the error when it does not parse.
Function parsed(const std::string &text) {
  Expected<Function> function = parseFunction(text);
  INFO(text);
  if (!function)
    FAIL_CHECK(function.error().message << " at " << function.error().range.begin.line << ":"
                                        << function.error().range.begin.col);
  REQUIRE(function);
  return std::move(*function);
}

// The error parsing `text` gives: "LINE:COL: message".
std::string parseError(const std::string &text) {
  Expected<Function> function = parseFunction(text);
  REQUIRE_FALSE(function);
  return std::to_string(function.error().range.begin.line) + ":" +
         std::to_string(function.error().range.begin.col) + ": " + function.error().message;
}

} // namespace

TEST_CASE("every program's IR after every pass of both pipelines reads back as printed") {
  size_t functionsRead = 0;
  for (const std::string &file : programFiles()) {
    auto loaded = test::loadFile(file);
    INFO(file);
    REQUIRE(loaded->program);
    for (const auto &kernel : loaded->program->modules.front()->kernels)
      for (passes::PipelineTarget target :
           {passes::PipelineTarget::Gpu, passes::PipelineTarget::Cpu}) {
        passes::PipelineOptions options;
        options.target = target;
        options.choices.boundsChecks = true;
        options.afterPass = [&](const std::string &pass, const Function &function) {
          std::string printed = toString(function);
          Expected<Function> read = parseFunction(printed);
          INFO(kernel->name << " after " << pass << "\n" << printed);
          if (!read) {
            FAIL_CHECK(read.error().message << " at " << read.error().range.begin.line << ":"
                                            << read.error().range.begin.col);
            return;
          }
          CHECK(toString(*read) == printed);
          CHECK(verifyFunction(*read, ""));
          ++functionsRead;
        };
        (void)passes::runPipeline(lowerKernel(*loaded->program, *kernel), options);
      }
  }
  CHECK(functionsRead > 5000);
}

TEST_CASE("literals take their context's type and say their own where none is given") {
  Function function =
      parsed(R"(func f(global f64 x[N] (written), global i32 c[N] (written); k: i32, N: i64) {
  parallel for i in [0, N) {
    x[i] = 0.5 * x[i] + 2.0
    c[i] = select(i < 4, 1, k % 3)
    let a = 7_i32
    let b = 2.5_f64 + 1.0_f64
    let e = -9223372036854775808
    c[i] = a + i32(-inf_f64)
  }
}
)");
  std::string printed = toString(function);
  CHECK(contains(printed, "x[i] = 0.5 * x[i] + 2.0\n"));
  CHECK(contains(printed, "let a = 7_i32\n"));
  CHECK(contains(printed, "let b = 2.5_f64 + 1.0_f64\n"));
  CHECK(contains(printed, "let e = -9223372036854775808\n"));
  CHECK(contains(printed, "i32(-inf_f64)"));
  CHECK(verifyFunction(function, ""));
  const auto &loop = *function.body->as<For>();
  const auto &store = *loop.body->as<Block>()->stmts[0]->as<Store>();
  const auto &sum = *store.value->as<Binary>();
  CHECK(sum.rhs->type == ScalarType::F64);
  CHECK(sum.lhs->as<Binary>()->lhs->type == ScalarType::F64);
}

TEST_CASE("a speculative load reads back as one, and `speculative` may still name a value") {
  Function function = parsed(R"(func f(global f32 x[N], global f32 y[N] (written); N: i64) {
  parallel for i in [0, N) {
    let speculative = speculative x[i + 1] + x[i]
    y[i] = speculative * 2.0
  }
}
)");
  std::string printed = toString(function);
  CHECK(contains(printed, "let speculative = speculative x[i + 1] + x[i]\n"));
  CHECK(contains(printed, "y[i] = speculative * 2.0\n"));
  const auto &loop = *function.body->as<For>();
  const auto &let = *loop.body->as<LetStmt>();
  const auto &sum = *let.value->as<Binary>();
  CHECK(sum.lhs->as<Load>()->speculative);
  CHECK_FALSE(sum.rhs->as<Load>()->speculative);
}

TEST_CASE("hand-written IR with kernels, reductions, user operators and checks reads as meant") {
  const std::string text = R"(// compiled for sizes where N >= 1 is true
func f(global f32 x[N], global f32 y[N] (written); N: i64) bounds_checked {
  global f32 partial[(N + 255) / 256]
  launch f_kernel0<<<grid((N + 255) / 256, 1, 1), block(256, 1, 1)>>>(x, partial; N)
  check (N > 0) else error "extent {0} is \"bad\"" with {0} = N
  reduce y[0] larger(a, b => select(a > b, a, b), commutes)= from -inf over i in [1, 1 + (N - 1)): partial[i - 1]
  scan y[j] += from 0.0 over j in [0, N) {
    let v = x[j] * 2.0
    yield v + 1.0
  }
}

kernel f_kernel0(global f32 x[N], global f32 partial[(N + 255) / 256] (written); N: i64) maxntid(256) {
  gpu_block.x for b in [0, (N + 255) / 256) {
    shared f32 tile[256]
    gpu_thread.x for t in [0, 256) {
      register f32 acc
      acc = 0.0  (reduction step += from 0.0)
      tile[t] = acc
      barrier
      atomic partial[b] max= tile[t]
    }
  }
}
)";
  Function function = parsed(text);
  CHECK(toString(function) == text);
  REQUIRE(function.sizeChoices.size() == 1);
  CHECK(function.sizeChoices[0].holds);
  CHECK(function.boundsChecked);
  REQUIRE(function.kernels.size() == 1);
  CHECK(function.kernels[0].maxThreadsPerBlock == 256);
  // The kernel's arrays are the function's.
  CHECK(function.kernels[0].buffers[0] == function.buffers[0]);
  CHECK(function.buffers[1]->isWritten);
  CHECK_FALSE(function.buffers[0]->isWritten);
  CHECK(verifyFunction(function, ""));
  const auto &statements = function.body->as<Allocate>()->body->as<Block>()->stmts;
  const auto &check = *statements[1]->as<Check>();
  CHECK(check.message == "extent {0} is \"bad\"");
  const auto &reduce = *statements[2]->as<Reduce>();
  CHECK(reduce.op.kind == ReduceOperator::Kind::User);
  CHECK(reduce.op.userCommutes);
  CHECK(reduce.op.combine->type == ScalarType::F32);
}

TEST_CASE("bad IR text is a located error") {
  CHECK(parseError("func f(; N: i64) {\n  for i in [0, M) {\n  }\n}\n") ==
        "2:16: no variable or array named 'M' here");
  CHECK(parseError("func f(global f32 x[N]; N: i64) {\n  x[0] = 1\n}\n") ==
        "2:10: an integer literal where f32 is expected (a float literal has a point: 2.0)");
  CHECK(parseError("func f(global f32 x[N]; N: i64) {\n  x[0] = 2.0_f64 * 3.0\n}\n") ==
        "2:10: a literal of type f64 where f32 is expected");
  CHECK(parseError("func f(global f32 x[N]; N: i64) {\n  x[0][1] = 1.0\n}\n") ==
        "2:3: 'x' has 1 dimensions, indexed by 2");
  CHECK(parseError("func f(; N: i64) {\n  wobble for i in [0, N) {\n  }\n}\n") ==
        "2:3: 'wobble' is no loop kind (parallel, unrolled, vectorized, gpu_block.x, "
        "gpu_thread.x, ...)");
  CHECK(parseError("func f(; N: i64) {\n  for i in [1, N) {\n  }\n}\n") ==
        "2:16: a range's end must be written `1 + extent`, as its start and the iterations "
        "after it");
  CHECK(parseError("func f(; N: i64) {\n  let a = 1 @ 2\n}\n") == "2:13: unexpected character '@'");
  CHECK(parseError("func f(; N: i64) {\n  let a = 1\n") ==
        "3:1: expected '}', found the end of the text");
  CHECK(parseError("func f(; N: i64) {\n}\nfunc g(; N: i64) {\n}\n") ==
        "3:1: expected a kernel after the function, found 'func'");
  CHECK(parseError("func f(; N: i64) {\n  check (N > 0) else error \"open\n}\n") ==
        "2:28: a message without its closing '\"'");
}

} // namespace loopc::ir
