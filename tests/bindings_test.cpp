// Binding kernel arguments: size inference from arrays and --set values,
// extents that are expressions, mismatches, missing values, the memory limit
// and the determinism of the seeded random inputs.
#include "TestSupport.h"

#include "engine/Bindings.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

using namespace loopc;

namespace {

const char *kProgram = R"(
kernel matmul(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) {
  parfor i in 0..M, j in 0..N {
    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];
  }
}
kernel shrink(steps: i64, x: in f64[N], y: out f64[N - 2 * steps], total: out i64) {
  parfor i in 0..N - 2 * steps { y[i] = x[i + steps]; }
  total = 0;
}
kernel params(n: i32, f: f32, flag: bool, r: out f32) {
  r = flag ? f : f32(n);
}
kernel flags(b: in bool[N], n: inout i32[N]) {
  parfor i in 0..N { n[i] = b[i] ? 1 : 0; }
}
kernel narrow(n: i32, x: in f32[N], y: out f32[n * n / 65536], z: out f32[i32(N) / 2]) {
  parfor i in 0..n * n / 65536 { y[i] = 1.0; }
}
)";

struct Fixture {
  std::unique_ptr<test::LoadedProgram> loaded = test::loadText(kProgram);
  const KernelDecl &kernel(const char *name) {
    REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
    KernelDecl *found = loaded->program->findKernel(name);
    REQUIRE(found);
    return *found;
  }
};

std::string errorOf(const Expected<KernelArgs> &args) {
  REQUIRE_FALSE(args.has_value());
  return args.error().message;
}

} // namespace

TEST_CASE_FIXTURE(Fixture, "sizes come from --set values and the arrays given") {
  ArgumentRequest request;
  request.arrays["A"] = HostArray(ScalarType::F32, {3, 5});
  request.values["N"] = "7";
  auto args = bindKernelArguments(kernel("matmul"), request);
  REQUIRE(args.has_value());
  CHECK(args->sizes == std::map<std::string, int64_t>{{"K", 5}, {"M", 3}, {"N", 7}});
  CHECK(args->params[1].shape == std::vector<int64_t>{5, 7});
  CHECK(args->params[2].shape == std::vector<int64_t>{3, 7});
  // The array given is passed as is; out arrays start zeroed.
  CHECK(args->params[0].bytes == request.arrays["A"].bytes);
  for (size_t i = 0; i < args->params[2].elementCount(); ++i)
    CHECK(args->params[2].getAsDouble(i) == 0);
}

TEST_CASE_FIXTURE(Fixture, "extents that are expressions of sizes and parameters are evaluated") {
  ArgumentRequest request;
  request.values = {{"steps", "2"}, {"N", "10"}};
  auto args = bindKernelArguments(kernel("shrink"), request);
  REQUIRE(args.has_value());
  CHECK(args->params[0].data<int64_t>()[0] == 2);
  CHECK(args->params[2].shape == std::vector<int64_t>{6});
  CHECK(args->params[3].rank() == 0);
  CHECK(args->params[3].type == ScalarType::I64);

  request.values["steps"] = "6";
  CHECK(errorOf(bindKernelArguments(kernel("shrink"), request)) ==
        "'y' would have a negative extent (-2)");

  request.values["steps"] = "1";
  request.arrays["y"] = HostArray(ScalarType::F64, {8});
  CHECK(errorOf(bindKernelArguments(kernel("shrink"), request)).find("out parameter") !=
        std::string::npos);
  request.arrays.erase("y");
  request.values.erase("N");
  request.arrays["x"] = HostArray(ScalarType::F64, {4});
  auto inferred = bindKernelArguments(kernel("shrink"), request);
  REQUIRE(inferred.has_value());
  CHECK(inferred->params[2].shape == std::vector<int64_t>{2});
}

// From a bug hunt: compiled code computes `n * n` for `n: i32` in 32 bits,
// so an extent past 2^31 wrapped there (to -32767 here, and nothing ran)
// while the arrays were allocated with its 64-bit value. Every part of an
// extent is refused where its value leaves its type.
TEST_CASE_FIXTURE(Fixture, "an extent part that leaves i32 is refused, on every engine alike") {
  ArgumentRequest request;
  request.values = {{"n", "46340"}, {"N", "9"}};
  auto fits = bindKernelArguments(kernel("narrow"), request);
  REQUIRE(fits.has_value());
  CHECK(fits->params[2].shape == std::vector<int64_t>{32766});
  CHECK(fits->params[3].shape == std::vector<int64_t>{4});

  request.values["n"] = "46341";
  auto product = bindKernelArguments(kernel("narrow"), request);
  CHECK(errorOf(product) ==
        "in the type of 'y': the extent overflows 32-bit integers (this part is 2147488281)");
  CHECK(product.error().range.begin.col == 48);

  request.values = {{"n", "1"}, {"N", "3000000000"}};
  CHECK(errorOf(bindKernelArguments(kernel("narrow"), request)) ==
        "in the type of 'z': the extent overflows 32-bit integers (this part is 3000000000)");
}

TEST_CASE_FIXTURE(Fixture, "mismatched arrays are errors naming the parameter and size") {
  ArgumentRequest request;
  request.arrays["A"] = HostArray(ScalarType::F32, {3, 5});
  request.arrays["B"] = HostArray(ScalarType::F32, {4, 2});
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), request)) ==
        "size K is 5 from 'A' (dimension 1) but 4 from 'B' (dimension 0)");

  request.arrays["B"] = HostArray(ScalarType::F64, {5, 2});
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), request)) ==
        "'B' needs an f32 array of rank 2, but an f64[5][2] array was given (convert it: "
        "x.astype(numpy.float32) in Python, or let loopc: --in B=FILE:convert)");
  request.convertible.insert("B");
  auto converted = bindKernelArguments(kernel("matmul"), request);
  REQUIRE(converted.has_value());
  CHECK(converted->params[1].type == ScalarType::F32);
  request.convertible.clear();
  request.arrays["B"] = HostArray(ScalarType::F32, {5});
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), request)).find("rank 2") !=
        std::string::npos);

  request.arrays.erase("B");
  request.values["M"] = "4";
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), request)) ==
        "size M is 4 from --set M=4 but 3 from 'A' (dimension 0)");

  ArgumentRequest shapes;
  shapes.values = {{"steps", "1"}};
  shapes.arrays["x"] = HostArray(ScalarType::F64, {2});
  // N=2 and steps=1 give an empty y, which is allowed.
  auto empty = bindKernelArguments(kernel("shrink"), shapes);
  REQUIRE(empty.has_value());
  CHECK(empty->params[2].elementCount() == 0);
}

TEST_CASE_FIXTURE(Fixture, "arrays a caller owns are used in place and outputs written into its own") {
  // A host program's memory (Python's arrays): borrowed, never copied.
  std::vector<float> a(3 * 5, 1.0f), c(3 * 2, 7.0f);
  ArgumentRequest request;
  request.arrays["A"] = HostArray::borrowing(ScalarType::F32, {3, 5}, a.data());
  request.arrays["B"] = HostArray(ScalarType::F32, {5, 2});
  request.outputs["C"] = HostArray::borrowing(ScalarType::F32, {3, 2}, c.data());
  auto shapes = inferArgumentShapes(kernel("matmul"), request);
  REQUIRE(shapes.has_value());
  CHECK(shapes->sizes == std::map<std::string, int64_t>{{"K", 5}, {"M", 3}, {"N", 2}});
  CHECK(shapes->shapes[2] == std::vector<int64_t>{3, 2});
  CHECK(c[0] == 7.0f); // shapes only: nothing written
  auto args = bindKernelArguments(kernel("matmul"), request);
  REQUIRE(args.has_value());
  CHECK(args->params[0].data<float>() == a.data());
  CHECK(args->params[2].data<float>() == c.data());
  CHECK(std::ranges::all_of(c, [](float v) { return v == 0.0f; })); // outputs start zeroed

  // An output array gives sizes too, and must fit the parameter.
  ArgumentRequest outputOnly;
  outputOnly.arrays["A"] = HostArray(ScalarType::F32, {3, 5});
  outputOnly.arrays["B"] = HostArray(ScalarType::F32, {5, 4});
  outputOnly.outputs["C"] = HostArray::borrowing(ScalarType::F32, {3, 2}, c.data());
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), outputOnly)) ==
        "size N is 4 from 'B' (dimension 1) but 2 from 'C' (dimension 1)");
  outputOnly.outputs["C"] = HostArray::borrowing(ScalarType::F64, {3, 4}, c.data());
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), outputOnly)) ==
        "'C' needs an f32 array of rank 2 to write into, but an f64[3][4] array was given");
  outputOnly.outputs.clear();
  outputOnly.outputs["A"] = HostArray(ScalarType::F32, {3, 5});
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), outputOnly)) ==
        "'A' is not an out parameter of kernel 'matmul': only out parameters take arrays to "
        "write into");
  ArgumentRequest sizeless;
  sizeless.valueOption = ""; // as Python spells a value by name
  CHECK(errorOf(bindKernelArguments(kernel("shrink"), sizeless)).find("give it with steps=...") !=
        std::string::npos);
}

TEST_CASE_FIXTURE(Fixture, "missing sizes and values are errors saying what to set") {
  ArgumentRequest request;
  request.values["K"] = "3";
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), request)) ==
        "cannot infer sizes M, N of kernel 'matmul' from the arrays given: set them with "
        "--set M=... --set N=...");
  ArgumentRequest none;
  CHECK(errorOf(bindKernelArguments(kernel("shrink"), none)) ==
        "kernel 'shrink' needs a value for steps: give it with --set steps=...");
}

TEST_CASE_FIXTURE(Fixture, "values are parsed by their declared type") {
  ArgumentRequest request;
  request.values = {{"n", "1"}, {"f", "0.5"}, {"flag", "true"}};
  auto args = bindKernelArguments(kernel("params"), request);
  REQUIRE(args.has_value());
  CHECK(args->params[0].getAsInt(0) == 1);
  CHECK(args->params[1].getAsDouble(0) == 0.5);
  CHECK(args->params[2].getAsInt(0) == 1);
  auto errorFor = [&](const std::string &name, const std::string &value) {
    ArgumentRequest changed = request;
    changed.values[name] = value;
    return errorOf(bindKernelArguments(kernel("params"), changed));
  };
  CHECK(errorFor("n", "abc") == "invalid value 'abc' for 'n' (a i32)");
  CHECK(errorFor("n", "1.5") == "invalid value '1.5' for 'n' (a i32)");
  // In range but not integers (a bug hunt saw "out of range" for these).
  CHECK(errorFor("n", "1.0") == "invalid value '1.0' for 'n' (a i32)");
  CHECK(errorFor("n", "1e3") == "invalid value '1e3' for 'n' (a i32)");
  CHECK(errorFor("n", "-3000000000") == "value -3000000000 for 'n' is out of range for i32");
  CHECK(errorFor("n", "3000000000") == "value 3000000000 for 'n' is out of range for i32");
  CHECK(errorFor("n", "99999999999999999999") ==
        "value 99999999999999999999 for 'n' is out of range for i32");
  CHECK(errorFor("f", "1e39") == "value 1e39 for 'f' is out of range for f32");
  CHECK(errorFor("f", "3.40282357e38") == "value 3.40282357e38 for 'f' is out of range for f32");
  request.values["f"] = "3.4028235e38"; // FLT_MAX as printed rounds to FLT_MAX
  CHECK(bindKernelArguments(kernel("params"), request).has_value());
  CHECK(errorFor("f", "0.5x") == "invalid value '0.5x' for 'f' (a f32)");
  CHECK(errorFor("flag", "yes") == "invalid value 'yes' for 'flag' (a bool)");

  request.values = {{"steps", "1"}};
  request.values["steps"] = "1";
  request.values["N"] = "-3";
  CHECK(errorOf(bindKernelArguments(kernel("shrink"), request)) ==
        "invalid value '-3' for size N (a non-negative integer)");
  request.values["N"] = "4";
  request.values["bogus"] = "1";
  CHECK(errorOf(bindKernelArguments(kernel("shrink"), request)) ==
        "kernel 'shrink' has no parameter or size named 'bogus' (it has steps, x, y, total, N)");
  request.values.erase("bogus");
  request.arrays["N"] = HostArray(ScalarType::F64, {4});
  CHECK(errorOf(bindKernelArguments(kernel("shrink"), request)) ==
        "'N' is a size of kernel 'shrink', not an array: give its value with --set N=...");
  request.arrays.erase("N");
  request.values["x"] = "1";
  CHECK(errorOf(bindKernelArguments(kernel("shrink"), request)).find("is an array") !=
        std::string::npos);
  request.values.erase("x");
  request.values["total"] = "1";
  CHECK(errorOf(bindKernelArguments(kernel("shrink"), request)).find("cannot be set") !=
        std::string::npos);
}

TEST_CASE_FIXTURE(Fixture,
                  "arrays larger than the memory available are refused before allocation") {
  ArgumentRequest request;
  request.values = {{"M", "100000"}, {"N", "100000"}, {"K", "100000"}};
  request.memoryLimitBytes = 23'000'000'000;
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), request)) ==
        "arrays need 120 GB but the machine has 23 GB available");
  request.values = {{"M", "4000000000"}, {"N", "4000000000"}, {"K", "4000000000"}};
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), request)).find("more bytes than") !=
        std::string::npos);
  ArgumentRequest machine; // the real MemAvailable
  machine.values = {{"M", "1000000"}, {"N", "1000000"}, {"K", "1000000"}};
  CHECK(errorOf(bindKernelArguments(kernel("matmul"), machine)).find("arrays need 12 TB") == 0);
  CHECK(formatByteCount(0) == "0 B");
  CHECK(formatByteCount(1'200'000'000'000) == "1.2 TB");
  CHECK(formatByteCount(999) == "999 B");
}

TEST_CASE_FIXTURE(Fixture, "random inputs are deterministic, in range and differ by seed") {
  ArgumentRequest request;
  request.values = {{"M", "16"}, {"N", "16"}, {"K", "16"}};
  request.seed = 42;
  auto first = bindKernelArguments(kernel("matmul"), request);
  auto second = bindKernelArguments(kernel("matmul"), request);
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  CHECK(first->params[0].bytes == second->params[0].bytes);
  CHECK(first->params[0].bytes != first->params[1].bytes); // per-parameter streams
  double low = 1, high = -1;
  for (size_t i = 0; i < first->params[0].elementCount(); ++i) {
    low = std::min(low, first->params[0].getAsDouble(i));
    high = std::max(high, first->params[0].getAsDouble(i));
  }
  CHECK(low >= -1);
  CHECK(low < -0.8);
  CHECK(high < 1);
  CHECK(high > 0.8);
  request.seed = 43;
  auto other = bindKernelArguments(kernel("matmul"), request);
  REQUIRE(other.has_value());
  CHECK(other->params[0].bytes != first->params[0].bytes);

  ArgumentRequest ints;
  ints.values = {{"N", "1000"}};
  auto flags = bindKernelArguments(kernel("flags"), ints);
  REQUIRE(flags.has_value());
  int64_t trueCount = 0, largest = 0, smallest = 16;
  for (size_t i = 0; i < 1000; ++i) {
    trueCount += flags->params[0].getAsInt(i);
    largest = std::max(largest, flags->params[1].getAsInt(i));
    smallest = std::min(smallest, flags->params[1].getAsInt(i));
  }
  CHECK(trueCount > 400);
  CHECK(trueCount < 600);
  CHECK(smallest == 0);
  CHECK(largest == 15);
}

TEST_CASE_FIXTURE(Fixture,
                  "a large random input, filled by several threads, has a small one's values "
                  "where they overlap") {
  // Element i of a parameter's stream does not depend on the array's size
  // nor on how many threads fill it: x of 2^21 elements (filled in parallel)
  // starts as x of 100 (filled by one thread), and its later parts differ.
  ArgumentRequest small, large;
  small.values = {{"N", "100"}, {"steps", "0"}};
  large.values = {{"N", std::to_string(1 << 21)}, {"steps", "0"}};
  auto few = bindKernelArguments(kernel("shrink"), small);
  auto many = bindKernelArguments(kernel("shrink"), large);
  REQUIRE(few.has_value());
  REQUIRE(many.has_value());
  // shrink's x is its second parameter (after steps).
  const HostArray &shortX = few->params[1], &longX = many->params[1];
  REQUIRE(shortX.elementCount() == 100);
  for (size_t i = 0; i < 100; ++i)
    CHECK(shortX.getAsDouble(i) == longX.getAsDouble(i));
  size_t last = longX.elementCount() - 1;
  CHECK(longX.getAsDouble(last) != longX.getAsDouble(last - (1 << 20)));
  double sum = 0;
  for (size_t i = 0; i < longX.elementCount(); ++i)
    sum += longX.getAsDouble(i);
  CHECK(std::abs(sum / static_cast<double>(longX.elementCount())) < 0.01); // uniform in [-1, 1)
}
