// Comparing engine results: exact integers, tolerant floats, NaN, shapes.
#include "TestSupport.h"

#include "engine/Compare.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using namespace loopc;

namespace {

HostArray filled(ScalarType type, std::vector<int64_t> shape, double value) {
  HostArray array(type, std::move(shape));
  for (size_t i = 0; i < array.elementCount(); ++i)
    array.setFromDouble(i, value);
  return array;
}

} // namespace

TEST_CASE("integers and bools must match exactly") {
  HostArray expected = filled(ScalarType::I32, {2, 3}, 7);
  HostArray actual = expected;
  CHECK(compareArrays(expected, actual).matches);
  actual.data<int32_t>()[4] = 8;
  actual.data<int32_t>()[5] = 9;
  CompareReport report = compareArrays(expected, actual);
  CHECK_FALSE(report.matches);
  CHECK(report.mismatchCount == 2);
  CHECK(report.firstIndex == std::vector<int64_t>{1, 1});
  CHECK(report.describe("C") == "C[1][1]: expected 7, got 8 (2 elements differ)");

  HostArray flags = filled(ScalarType::Bool, {4}, 1);
  HostArray other = flags;
  other.data<uint8_t>()[3] = 0;
  CHECK(compareArrays(flags, other).describe("b") == "b[3]: expected 1, got 0 (1 element differ)");
}

TEST_CASE("floats match within a tolerance that depends on the type and reduction length") {
  HostArray expected = filled(ScalarType::F32, {4}, 1000);
  HostArray close = expected;
  close.data<float>()[2] = std::nextafter(1000.0f, 2000.0f);
  CHECK(compareArrays(expected, close).matches);
  HostArray far = expected;
  far.data<float>()[2] = 1000.5f;
  CHECK_FALSE(compareArrays(expected, far).matches);
  // A long reduction earns a looser tolerance.
  HostArray looser = expected;
  looser.data<float>()[2] = 1000.0f * (1 + 2e-4f);
  CHECK_FALSE(compareArrays(expected, looser).matches);
  CHECK(compareArrays(expected, looser, {.reductionLength = 1 << 20}).matches);

  // f64 is held to its own epsilon: a difference fine for f32 is not here.
  HostArray doubles = filled(ScalarType::F64, {2}, 1.0);
  HostArray nearDoubles = doubles;
  nearDoubles.data<double>()[1] = 1.0 + 1e-7;
  CHECK_FALSE(compareArrays(doubles, nearDoubles).matches);
  nearDoubles.data<double>()[1] = 1.0 + 1e-15;
  CHECK(compareArrays(doubles, nearDoubles).matches);
  CHECK(defaultRelativeTolerance(ScalarType::F64, 1) <
        defaultRelativeTolerance(ScalarType::F32, 1));
}

TEST_CASE("results near zero are compared against the array's magnitude") {
  HostArray expected = filled(ScalarType::F32, {3}, 100);
  expected.data<float>()[1] = 1e-6f; // a sum that cancelled
  HostArray actual = expected;
  actual.data<float>()[1] = 2e-6f;
  CHECK(compareArrays(expected, actual).matches);
  actual.data<float>()[1] = 0.5f;
  CHECK_FALSE(compareArrays(expected, actual).matches);
}

TEST_CASE("a result that cancels to near zero is compared against its terms' magnitude") {
  // r = sum of (A[j + 2] - A[j]) over a row telescopes to about 0: the two
  // engines' rounding leaves ~1e-7 either way, of the size of the terms.
  HostArray expected = filled(ScalarType::F32, {}, 0.0);
  HostArray actual = filled(ScalarType::F32, {}, -1.1920929e-07);
  CompareOptions options;
  options.reductionLength = 21;
  CHECK_FALSE(compareArrays(expected, actual, options).matches);
  options.termMagnitude = 1.0;
  CHECK(compareArrays(expected, actual, options).matches);
  // An error of the terms' own size is still a mismatch.
  CHECK_FALSE(compareArrays(expected, filled(ScalarType::F32, {}, 0.5), options).matches);

  auto loaded = test::loadText(
      "kernel k(A: in f32[M][N], n: i32, r: out f32) { r = redomap(+, 0.0, i in 0..n) 1.0; }");
  REQUIRE(loaded->program);
  const KernelDecl &kernel = *loaded->program->findKernel("k");
  KernelArgs inputs;
  inputs.params = {filled(ScalarType::F32, {3, 7}, -2.5), filled(ScalarType::I32, {}, 1000),
                   filled(ScalarType::F32, {}, 9.0)};
  CompareOptions derived = compareOptionsFor(kernel, inputs);
  CHECK(derived.reductionLength == 1000); // n may bound a loop; the out parameter does not count
  CHECK(derived.termMagnitude == 2.5);    // float inputs only, as magnitudes
  CHECK(derived.singlePrecisionTerms);
  inputs.params[1] = filled(ScalarType::I32, {}, -3);
  CHECK(compareOptionsFor(kernel, inputs).reductionLength == 21); // A's elements
}

TEST_CASE("only integer scalars that may bound a loop lengthen the reductions") {
  // From a bug hunt: a seed of 10^12 that bounds nothing made the tolerance
  // 190%, so --check passed wrong results.
  auto loaded = test::loadText(R"(
fn steps(n: i64) -> f32 { var s: f32 = 0.0; for i in 0..n { s += 1.0; } return s; }
kernel fill(m: i64, y: out f32[M]) { parfor i in 0..M { y[i] = f32(m); } }
kernel k(x: in f32[N], seed: i64, viaFn: i64, viaCall: i64, y: out f32[N]) {
  parfor i in 0..N { y[i] = x[i] * f32(seed % 7) + steps(viaFn); }
  fill(viaCall, y);
})");
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  const KernelDecl &kernel = *loaded->program->findKernel("k");
  KernelArgs inputs;
  inputs.params = {filled(ScalarType::F32, {5}, 1.0), filled(ScalarType::I64, {}, 1000000),
                   filled(ScalarType::I64, {}, 300), filled(ScalarType::I64, {}, 200),
                   filled(ScalarType::F32, {5}, 0.0)};
  CHECK(compareOptionsFor(kernel, inputs).reductionLength == 300);
  inputs.params[2] = filled(ScalarType::I64, {}, 2);
  CHECK(compareOptionsFor(kernel, inputs).reductionLength == 200);
  inputs.params[3] = filled(ScalarType::I64, {}, 3);
  CHECK(compareOptionsFor(kernel, inputs).reductionLength == 5); // x's elements
}

TEST_CASE("f64 results of f32 terms are compared at f32's precision") {
  // sum of f64(exp(x)) over f32 x: each term carries f32 rounding (and exp
  // may differ by an ulp between engines).
  HostArray expected = filled(ScalarType::F64, {}, 999.007683);
  HostArray actual = filled(ScalarType::F64, {}, 999.007678);
  CHECK_FALSE(compareArrays(expected, actual, {.reductionLength = 1000}).matches);
  CHECK(compareArrays(expected, actual, {.reductionLength = 1000, .singlePrecisionTerms = true})
            .matches);
  auto loaded = test::loadText("kernel k(x: in f64[N], r: out f64) { r = 0.0; }");
  REQUIRE(loaded->program);
  KernelArgs inputs;
  inputs.params = {filled(ScalarType::F64, {3}, 1.0), filled(ScalarType::F64, {}, 0.0)};
  CHECK_FALSE(compareOptionsFor(*loaded->program->findKernel("k"), inputs).singlePrecisionTerms);
}

TEST_CASE("integer mismatches are written exactly") {
  HostArray expected = filled(ScalarType::I64, {2}, 0);
  expected.setFromDouble(1, 9007199254740992.0);
  HostArray actual = expected;
  actual.data<int64_t>()[1] = 9007199254740993;
  CHECK(compareArrays(expected, actual).describe("z") ==
        "z[1]: expected 9007199254740992, got 9007199254740993 (1 element differ)");
}

TEST_CASE("NaN matches NaN, and infinities must match exactly") {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  HostArray expected = filled(ScalarType::F64, {3}, nan);
  expected.setFromDouble(1, inf);
  expected.setFromDouble(2, 1);
  HostArray actual = expected;
  CHECK(compareArrays(expected, actual).matches);
  actual.setFromDouble(1, -inf);
  CHECK_FALSE(compareArrays(expected, actual).matches);
  actual.setFromDouble(1, inf);
  actual.setFromDouble(0, 1);
  CompareReport report = compareArrays(expected, actual);
  CHECK(report.mismatchCount == 1);
  CHECK(report.firstIndex == std::vector<int64_t>{0});
  actual.setFromDouble(0, nan);
  actual.setFromDouble(2, nan);
  CHECK_FALSE(compareArrays(expected, actual).matches);
}

TEST_CASE("different types or shapes are reported as such") {
  CompareReport report =
      compareArrays(filled(ScalarType::F32, {2, 3}, 0), filled(ScalarType::F32, {3, 2}, 0));
  CHECK_FALSE(report.matches);
  CHECK(report.describe("C") == "C: expected f32[2][3], got f32[3][2]");
  CHECK_FALSE(
      compareArrays(filled(ScalarType::F32, {}, 0), filled(ScalarType::F64, {}, 0)).matches);
  CHECK(compareArrays(filled(ScalarType::F32, {}, 2), filled(ScalarType::F32, {}, 2)).matches);
}
