// The example programs (samples/) and the standard library (stdlib/): every
// file loads and passes the checker, and every kernel, run on the reference
// interpreter with seeded random inputs at small and odd sizes, computes what
// a plain C++ loop nest written here computes. The references accumulate in
// double; each expected element carries the sum of the magnitudes of the terms
// that produced it, which bounds the f32 rounding error of any summation order
// while a wrong index, a missing term or a wrong bound stays far outside it.
#include "TestSupport.h"

#include "engine/Bindings.h"
#include "interp/Interpreter.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace loopc;
using loopc::test::LoadedProgram;

namespace {

using Values = std::map<std::string, std::string>;
using Arrays = std::map<std::string, HostArray>;

// Every kernel of every sample and stdlib module, by file: the coverage test
// fails when a file gains a kernel that no test case below runs.
const std::map<std::string, std::set<std::string>> kTestedKernels = {
    {"samples/matmul.loop", {"matmul"}},
    {"samples/mv.loop", {"mv"}},
    {"samples/mv_transposed.loop", {"mv_transposed", "mv_transposed_via_linalg"}},
    {"samples/dot.loop", {"dot"}},
    {"samples/transpose.loop", {"transpose"}},
    {"samples/reverse.loop", {"reverse"}},
    {"samples/conv2d_5x5.loop", {"conv2d_5x5"}},
    {"samples/conv2d_11x11.loop", {"conv2d_11x11"}},
    {"samples/cnn_conv.loop", {"cnn_conv_valid", "cnn_conv_same", "cnn_conv_full"}},
    {"samples/jacobi1d.loop", {"jacobi1d"}},
    {"samples/jacobi2d.loop", {"jacobi2d"}},
    {"samples/gauss.loop", {"gauss"}},
    {"samples/nbody.loop", {"nbody"}},
    {"samples/sqdist.loop", {"sqdist"}},
    {"samples/laplace.loop", {"laplace"}},
    {"samples/gaussian_blur.loop", {"gaussian_blur3", "gaussian_blur5", "gaussian_blur5_via_conv"}},
    {"samples/sum_max.loop", {"sum_and_max", "sum_i32", "count_above"}},
    {"samples/softmax.loop", {"softmax"}},
    {"samples/row_stats.loop", {"row_stats"}},
    {"samples/histogram.loop", {"histogram", "bin_stats"}},
    {"samples/scan.loop", {"prefix_sum", "running_max", "row_sums", "exclusive_count"}},
    {"stdlib/linalg.loop", {"dot", "axpy", "gemv", "gemm", "transpose"}},
    {"stdlib/conv.loop", {"conv2d_valid", "conv2d_same", "conv2d_full"}},
    {"stdlib/stencil.loop",
     {"jacobi1d_sweep", "jacobi2d_sweep", "jacobi2d_pingpong", "laplace2d", "laplace3d"}},
    {"stdlib/reduce.loop", {"sum", "max_value", "min_value", "mean", "norm1", "norm2", "norm_inf"}},
    {"stdlib/cumulative.loop", {"cumsum", "cumprod", "cummax", "cummin", "exclusive_cumsum"}},
    {"stdlib/histogram.loop", {"bincount", "weighted_bincount"}},
};

std::unique_ptr<LoadedProgram> loadChecked(const std::string &relativePath) {
  auto loaded = loopc::test::loadFile(loopc::test::sourcePath(relativePath));
  REQUIRE_MESSAGE(loaded->program != nullptr, relativePath << " does not load and check:\n"
                                                           << loaded->diagnostics);
  return loaded;
}

// Element `index` of an array, bounds-checked (a wrong reference loop should
// fail loudly, not read garbage).
double at(const HostArray &array, std::initializer_list<int64_t> index) {
  if (index.size() != array.rank())
    throw std::out_of_range("wrong number of indices");
  size_t flat = 0;
  size_t dim = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= array.shape[dim])
      throw std::out_of_range("index out of range");
    flat = flat * static_cast<size_t>(array.shape[dim]) + static_cast<size_t>(i);
    ++dim;
  }
  return array.getAsDouble(flat);
}

// The expected contents of an output array in C order, with the magnitude of
// each element's terms (see the file comment).
struct Expectation {
  std::vector<double> values;
  std::vector<double> magnitudes;
  void add(double value, double magnitude) {
    values.push_back(value);
    magnitudes.push_back(magnitude);
  }
  void addExact(double value) { add(value, std::abs(value)); }
};

// Checks `actual` element by element, reporting the first mismatch and how
// many there are. An element matches when it is within relativeTolerance of
// its magnitude (exact copies have a zero error, so they must match exactly).
void checkClose(const HostArray &actual, const Expectation &expected, const std::string &what,
                double relativeTolerance = 1e-5) {
  REQUIRE_MESSAGE(actual.elementCount() == expected.values.size(),
                  what << ": " << actual.elementCount() << " elements, expected "
                       << expected.values.size());
  size_t mismatches = 0;
  size_t first = 0;
  for (size_t i = 0; i < expected.values.size(); ++i) {
    double error = std::abs(actual.getAsDouble(i) - expected.values[i]);
    if (!(error <= relativeTolerance * expected.magnitudes[i] + 1e-30)) {
      if (mismatches++ == 0)
        first = i;
    }
  }
  CHECK_MESSAGE(mismatches == 0, what << ": " << mismatches << " of " << expected.values.size()
                                      << " elements differ; first at flat index " << first
                                      << ": got " << actual.getAsDouble(first) << ", expected "
                                      << expected.values[first]);
}

void checkScalar(const HostArray &actual, double value, double magnitude, const std::string &what,
                 double relativeTolerance = 1e-5) {
  Expectation expected;
  expected.add(value, magnitude);
  checkClose(actual, expected, what, relativeTolerance);
}

// One kernel run on the interpreter: the arguments as bound (before) and as
// left by the kernel (after).
struct KernelRun {
  const KernelDecl *kernel = nullptr;
  KernelArgs before;
  KernelArgs after;

  size_t paramIndex(const std::string &name) const {
    for (size_t i = 0; i < kernel->params.size(); ++i)
      if (kernel->params[i]->name == name)
        return i;
    throw std::out_of_range("no parameter " + name);
  }
  const HostArray &input(const std::string &name) const { return before.params[paramIndex(name)]; }
  const HostArray &output(const std::string &name) const { return after.params[paramIndex(name)]; }
  int64_t size(const std::string &name) const { return after.sizes.at(name); }
};

// Binds `values` (sizes and scalar parameters) and `arrays`, fills the other
// inputs with seeded random data, and runs `kernelName` on the interpreter.
KernelRun runKernel(const LoadedProgram &loaded, const std::string &kernelName,
                    const Values &values, Arrays arrays = {}, uint64_t seed = 7) {
  KernelRun run;
  run.kernel = loaded.program->findKernel(kernelName);
  REQUIRE_MESSAGE(run.kernel != nullptr, "no kernel " << kernelName);
  ArgumentRequest request;
  request.values = values;
  request.arrays = std::move(arrays);
  request.seed = seed;
  Expected<KernelArgs> bound = bindKernelArguments(*run.kernel, request);
  // The messages are built only on failure: error() is not there on success.
  if (!bound)
    FAIL(kernelName << ": " << bound.error().message);
  run.before = *bound;
  run.after = std::move(*bound);
  Interpreter interpreter;
  Expected<RunStats> stats = interpreter.run(*loaded.program, *run.kernel, run.after);
  if (!stats)
    FAIL(kernelName << " failed: " << stats.error().message);
  return run;
}

std::string describe(const Values &values) {
  std::string text;
  for (const auto &[name, value] : values)
    text += name + "=" + value + " ";
  return text;
}

// ------------------------------------------------------------- references ---

Expectation matmulReference(const HostArray &A, const HostArray &B) {
  int64_t M = A.shape[0], K = A.shape[1], N = B.shape[1];
  Expectation expected;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0, magnitude = 0;
      for (int64_t k = 0; k < K; ++k) {
        sum += at(A, {i, k}) * at(B, {k, j});
        magnitude += std::abs(at(A, {i, k}) * at(B, {k, j}));
      }
      expected.add(sum, magnitude);
    }
  return expected;
}

// y = A x, or y = A^T x when `transposed`.
Expectation matvecReference(const HostArray &A, const HostArray &x, bool transposed) {
  int64_t rows = transposed ? A.shape[1] : A.shape[0];
  int64_t cols = transposed ? A.shape[0] : A.shape[1];
  Expectation expected;
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0, magnitude = 0;
    for (int64_t j = 0; j < cols; ++j) {
      double term = (transposed ? at(A, {j, i}) : at(A, {i, j})) * at(x, {j});
      sum += term;
      magnitude += std::abs(term);
    }
    expected.add(sum, magnitude);
  }
  return expected;
}

Expectation transposeReference(const HostArray &A) {
  Expectation expected;
  for (int64_t i = 0; i < A.shape[1]; ++i)
    for (int64_t j = 0; j < A.shape[0]; ++j)
      expected.addExact(at(A, {j, i}));
  return expected;
}

// The padded single-channel correlation of conv.loop: padding 0, K/2 or K-1.
Expectation conv2dReference(const HostArray &image, const HostArray &filter, int64_t padding) {
  int64_t H = image.shape[0], W = image.shape[1], K = filter.shape[0];
  int64_t outH = H + 2 * padding - K + 1, outW = W + 2 * padding - K + 1;
  Expectation expected;
  for (int64_t y = 0; y < outH; ++y)
    for (int64_t x = 0; x < outW; ++x) {
      double sum = 0, magnitude = 0;
      for (int64_t u = 0; u < K; ++u)
        for (int64_t v = 0; v < K; ++v) {
          int64_t row = y + u - padding, col = x + v - padding;
          if (row < 0 || row >= H || col < 0 || col >= W)
            continue;
          double term = at(image, {row, col}) * at(filter, {u, v});
          sum += term;
          magnitude += std::abs(term);
        }
      expected.add(sum, magnitude);
    }
  return expected;
}

Expectation cnnConvReference(const HostArray &input, const HostArray &filters, int64_t padding) {
  int64_t Ic = input.shape[0], H = input.shape[1], W = input.shape[2];
  int64_t Oc = filters.shape[0], K = filters.shape[2];
  int64_t outH = H + 2 * padding - K + 1, outW = W + 2 * padding - K + 1;
  Expectation expected;
  for (int64_t o = 0; o < Oc; ++o)
    for (int64_t y = 0; y < outH; ++y)
      for (int64_t x = 0; x < outW; ++x) {
        double sum = 0, magnitude = 0;
        for (int64_t c = 0; c < Ic; ++c)
          for (int64_t u = 0; u < K; ++u)
            for (int64_t v = 0; v < K; ++v) {
              int64_t row = y + u - padding, col = x + v - padding;
              if (row < 0 || row >= H || col < 0 || col >= W)
                continue;
              double term = at(input, {c, row, col}) * at(filters, {o, c, u, v});
              sum += term;
              magnitude += std::abs(term);
            }
        expected.add(sum, magnitude);
      }
  return expected;
}

// A Gaussian blur with the binomial weights of `width` 3 or 5, valid output.
Expectation gaussianBlurReference(const HostArray &image, int width) {
  std::vector<double> weights =
      width == 3 ? std::vector<double>{1, 2, 1} : std::vector<double>{1, 4, 6, 4, 1};
  double norm = width == 3 ? 16 : 256;
  int64_t H = image.shape[0], W = image.shape[1];
  Expectation expected;
  for (int64_t y = 0; y + width <= H; ++y)
    for (int64_t x = 0; x + width <= W; ++x) {
      double sum = 0, magnitude = 0;
      for (int u = 0; u < width; ++u)
        for (int v = 0; v < width; ++v) {
          double term = weights[u] * weights[v] / norm * at(image, {y + u, x + v});
          sum += term;
          magnitude += std::abs(term);
        }
      expected.add(sum, magnitude);
    }
  return expected;
}

// A grid as a flat vector with its magnitudes, for the time-stepped stencils.
struct Grid {
  std::vector<double> values, magnitudes;
};

Grid gridOf(const HostArray &array) {
  Grid grid;
  for (size_t i = 0; i < array.elementCount(); ++i) {
    grid.values.push_back(array.getAsDouble(i));
    grid.magnitudes.push_back(std::abs(array.getAsDouble(i)));
  }
  return grid;
}

Expectation expectationOf(const Grid &grid) { return Expectation{grid.values, grid.magnitudes}; }

// One 5-point Jacobi sweep from `in` into the interior of `out`, H x W.
void jacobi2dSweep(Grid &in, Grid &out, int64_t H, int64_t W) {
  for (int64_t i = 1; i + 1 < H; ++i)
    for (int64_t j = 1; j + 1 < W; ++j) {
      double sum = 0, magnitude = 0;
      for (auto [di, dj] : {std::pair{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}}) {
        size_t neighbour = static_cast<size_t>((i + di) * W + j + dj);
        sum += in.values[neighbour];
        magnitude += in.magnitudes[neighbour];
      }
      out.values[i * W + j] = 0.2 * sum;
      out.magnitudes[i * W + j] = 0.2 * magnitude;
    }
}

void copyInterior(const Grid &from, Grid &to, int64_t H, int64_t W) {
  for (int64_t i = 1; i + 1 < H; ++i)
    for (int64_t j = 1; j + 1 < W; ++j) {
      to.values[i * W + j] = from.values[i * W + j];
      to.magnitudes[i * W + j] = from.magnitudes[i * W + j];
    }
}

Expectation laplace2dReference(const HostArray &U) {
  int64_t H = U.shape[0], W = U.shape[1];
  Expectation expected;
  for (int64_t i = 0; i < H; ++i)
    for (int64_t j = 0; j < W; ++j) {
      if (i == 0 || j == 0 || i == H - 1 || j == W - 1) {
        expected.addExact(0);
        continue;
      }
      double value = at(U, {i - 1, j}) + at(U, {i + 1, j}) + at(U, {i, j - 1}) + at(U, {i, j + 1}) -
                     4 * at(U, {i, j});
      double magnitude = std::abs(at(U, {i - 1, j})) + std::abs(at(U, {i + 1, j})) +
                         std::abs(at(U, {i, j - 1})) + std::abs(at(U, {i, j + 1})) +
                         4 * std::abs(at(U, {i, j}));
      expected.add(value, magnitude);
    }
  return expected;
}

// ---------------------------------------------------------------- sizes ---

// Matrix shapes (M, N, K) covering degenerate, odd and non-square cases.
const std::vector<Values> kMatrixSizes = {
    {{"M", "1"}, {"N", "1"}, {"K", "1"}},
    {{"M", "7"}, {"N", "13"}, {"K", "5"}},
    {{"M", "13"}, {"N", "7"}, {"K", "16"}},
};

// Image shapes (H, W) for the stencils and convolutions.
const std::vector<Values> kImageSizes = {
    {{"H", "1"}, {"W", "1"}},
    {{"H", "7"}, {"W", "13"}},
    {{"H", "16"}, {"W", "11"}},
};

const std::vector<int64_t> kVectorLengths = {1, 7, 13, 100};

Values vectorSize(int64_t n) { return {{"N", std::to_string(n)}}; }

} // namespace

// ---------------------------------------------------- loading and coverage ---

TEST_CASE("every sample and stdlib module loads and passes the checker") {
  size_t files = 0;
  for (const char *folder : {"samples", "stdlib"}) {
    for (const auto &entry : std::filesystem::directory_iterator(loopc::test::sourcePath(folder))) {
      if (entry.path().extension() != ".loop")
        continue;
      std::string relative = std::string(folder) + "/" + entry.path().filename().string();
      CAPTURE(relative);
      loadChecked(relative);
      ++files;
    }
  }
  CHECK(files == kTestedKernels.size());
}

TEST_CASE("every kernel of every sample and stdlib module is run by this test") {
  for (const auto &[file, tested] : kTestedKernels) {
    CAPTURE(file);
    auto loaded = loadChecked(file);
    std::set<std::string> defined;
    for (const auto &kernel : loaded->program->modules.front()->kernels)
      defined.insert(kernel->name);
    CHECK(defined == tested);
  }
}

TEST_CASE("the stdlib modules can be imported together") {
  std::string imports;
  for (const auto &entry : std::filesystem::directory_iterator(loopc::test::sourcePath("stdlib")))
    if (entry.path().extension() == ".loop")
      imports += "import " + entry.path().stem().string() + ";\n";
  CAPTURE(imports);
  auto loaded = loopc::test::loadText(imports);
  CHECK_MESSAGE(loaded->program != nullptr, loaded->diagnostics);
}

TEST_CASE("samples/matmul.loop's default kernel is matmul (scripts/demo.sh runs it)") {
  auto loaded = loadChecked("samples/matmul.loop");
  CHECK(loaded->program->modules.front()->kernels.back()->name == "matmul");
}

// ------------------------------------------------------------- samples ---

TEST_CASE("samples/matmul.loop: C = A * B") {
  auto loaded = loadChecked("samples/matmul.loop");
  for (const Values &sizes : kMatrixSizes) {
    CAPTURE(describe(sizes));
    KernelRun run = runKernel(*loaded, "matmul", sizes);
    checkClose(run.output("C"), matmulReference(run.input("A"), run.input("B")), "C");
  }
}

TEST_CASE("samples/mv.loop and mv_transposed.loop: y = A x and y = A^T x") {
  auto mv = loadChecked("samples/mv.loop");
  auto mvTransposed = loadChecked("samples/mv_transposed.loop");
  for (const Values &sizes : kMatrixSizes) {
    Values shape = {{"M", sizes.at("M")}, {"N", sizes.at("N")}};
    CAPTURE(describe(shape));
    KernelRun run = runKernel(*mv, "mv", shape);
    checkClose(run.output("y"), matvecReference(run.input("A"), run.input("x"), false), "mv");
    for (const char *kernel : {"mv_transposed", "mv_transposed_via_linalg"}) {
      CAPTURE(kernel);
      KernelRun transposed = runKernel(*mvTransposed, kernel, shape);
      checkClose(transposed.output("y"),
                 matvecReference(transposed.input("A"), transposed.input("x"), true), kernel);
    }
  }
}

TEST_CASE("samples/dot.loop: r = x . y") {
  auto loaded = loadChecked("samples/dot.loop");
  for (int64_t n : kVectorLengths) {
    CAPTURE(n);
    KernelRun run = runKernel(*loaded, "dot", vectorSize(n));
    double sum = 0, magnitude = 0;
    for (int64_t i = 0; i < n; ++i) {
      sum += at(run.input("x"), {i}) * at(run.input("y"), {i});
      magnitude += std::abs(at(run.input("x"), {i}) * at(run.input("y"), {i}));
    }
    checkScalar(run.output("r"), sum, magnitude, "r");
  }
}

TEST_CASE("samples/transpose.loop and reverse.loop: data movement") {
  auto transpose = loadChecked("samples/transpose.loop");
  for (const Values &sizes : kMatrixSizes) {
    Values shape = {{"M", sizes.at("M")}, {"N", sizes.at("N")}};
    CAPTURE(describe(shape));
    KernelRun run = runKernel(*transpose, "transpose", shape);
    checkClose(run.output("B"), transposeReference(run.input("A")), "B");
  }
  auto reverse = loadChecked("samples/reverse.loop");
  for (int64_t n : kVectorLengths) {
    CAPTURE(n);
    KernelRun run = runKernel(*reverse, "reverse", vectorSize(n));
    Expectation expected;
    for (int64_t i = 0; i < n; ++i)
      expected.addExact(at(run.input("x"), {n - 1 - i}));
    checkClose(run.output("y"), expected, "y");
  }
}

TEST_CASE("samples/conv2d_5x5.loop and conv2d_11x11.loop: valid 2-D convolution") {
  auto conv5 = loadChecked("samples/conv2d_5x5.loop");
  auto conv11 = loadChecked("samples/conv2d_11x11.loop");
  // The image must be at least as large as the filter.
  for (const Values &sizes : std::vector<Values>{
           {{"H", "5"}, {"W", "5"}}, {{"H", "11"}, {"W", "13"}}, {{"H", "17"}, {"W", "12"}}}) {
    CAPTURE(describe(sizes));
    KernelRun run5 = runKernel(*conv5, "conv2d_5x5", sizes);
    checkClose(run5.output("O"), conv2dReference(run5.input("I"), run5.input("F"), 0),
               "conv2d_5x5");
    if (std::stoi(sizes.at("H")) < 11)
      continue;
    KernelRun run11 = runKernel(*conv11, "conv2d_11x11", sizes);
    checkClose(run11.output("O"), conv2dReference(run11.input("I"), run11.input("F"), 0),
               "conv2d_11x11");
  }
}

TEST_CASE("samples/cnn_conv.loop: multi-channel convolution, valid, same and full") {
  auto loaded = loadChecked("samples/cnn_conv.loop");
  for (const Values &sizes :
       std::vector<Values>{{{"Ic", "1"}, {"Oc", "1"}, {"H", "1"}, {"W", "1"}, {"K", "1"}},
                           {{"Ic", "2"}, {"Oc", "3"}, {"H", "7"}, {"W", "6"}, {"K", "3"}},
                           {{"Ic", "3"}, {"Oc", "2"}, {"H", "5"}, {"W", "9"}, {"K", "5"}}}) {
    CAPTURE(describe(sizes));
    int64_t K = std::stoi(sizes.at("K"));
    for (auto [kernel, padding] : {std::pair<const char *, int64_t>{"cnn_conv_valid", 0},
                                   {"cnn_conv_same", K / 2},
                                   {"cnn_conv_full", K - 1}}) {
      CAPTURE(kernel);
      KernelRun run = runKernel(*loaded, kernel, sizes);
      checkClose(run.output("O"), cnnConvReference(run.input("I"), run.input("F"), padding),
                 kernel);
    }
  }
}

TEST_CASE("samples/jacobi1d.loop: a time loop of 3-point sweeps") {
  auto loaded = loadChecked("samples/jacobi1d.loop");
  for (int64_t n : kVectorLengths) {
    for (int steps : {0, 1, 4}) {
      CAPTURE(n);
      CAPTURE(steps);
      Values values = vectorSize(n);
      values["steps"] = std::to_string(steps);
      KernelRun run = runKernel(*loaded, "jacobi1d", values);
      Grid a = gridOf(run.input("A")), b = gridOf(run.input("B"));
      for (int t = 0; t < steps; ++t) {
        for (int64_t i = 1; i + 1 < n; ++i) {
          b.values[i] = (a.values[i - 1] + a.values[i] + a.values[i + 1]) / 3;
          b.magnitudes[i] = (a.magnitudes[i - 1] + a.magnitudes[i] + a.magnitudes[i + 1]) / 3;
        }
        for (int64_t i = 1; i + 1 < n; ++i) {
          a.values[i] = b.values[i];
          a.magnitudes[i] = b.magnitudes[i];
        }
      }
      checkClose(run.output("A"), expectationOf(a), "A");
      checkClose(run.output("B"), expectationOf(b), "B");
    }
  }
}

TEST_CASE("samples/jacobi2d.loop: a time loop of 5-point sweeps") {
  auto loaded = loadChecked("samples/jacobi2d.loop");
  for (int64_t n : {1, 3, 8, 13}) {
    for (int steps : {0, 3}) {
      CAPTURE(n);
      CAPTURE(steps);
      KernelRun run = runKernel(*loaded, "jacobi2d",
                                {{"N", std::to_string(n)}, {"steps", std::to_string(steps)}});
      Grid a = gridOf(run.input("A")), b = gridOf(run.input("B"));
      for (int t = 0; t < steps; ++t) {
        jacobi2dSweep(a, b, n, n);
        copyInterior(b, a, n, n);
      }
      checkClose(run.output("A"), expectationOf(a), "A");
      checkClose(run.output("B"), expectationOf(b), "B");
    }
  }
}

TEST_CASE("samples/gauss.loop: Gaussian elimination without pivoting") {
  auto loaded = loadChecked("samples/gauss.loop");
  for (int64_t n : {1, 2, 7, 13}) {
    CAPTURE(n);
    // A diagonally dominant matrix: the pivots stay away from zero.
    HostArray matrix(ScalarType::F32, {n, n});
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        matrix.setFromDouble(static_cast<size_t>(i * n + j),
                             i == j ? double(n) + 1 : std::sin(double(3 * i + 7 * j + 1)));
    Arrays arrays;
    arrays.emplace("A", matrix);
    KernelRun run = runKernel(*loaded, "gauss", vectorSize(n), std::move(arrays));

    // The same elimination in double; the magnitude of an element sums the
    // magnitudes of every update it received.
    Grid a = gridOf(matrix);
    Grid l{std::vector<double>(n * n, 0.0), std::vector<double>(n * n, 0.0)};
    for (int64_t k = 0; k < n; ++k) {
      l.values[k * n + k] = 1;
      l.magnitudes[k * n + k] = 1;
      for (int64_t i = k + 1; i < n; ++i) {
        l.values[i * n + k] = a.values[i * n + k] / a.values[k * n + k];
        l.magnitudes[i * n + k] = std::abs(l.values[i * n + k]);
      }
      for (int64_t i = k + 1; i < n; ++i)
        for (int64_t j = k + 1; j < n; ++j) {
          double update = l.values[i * n + k] * a.values[k * n + j];
          a.values[i * n + j] -= update;
          a.magnitudes[i * n + j] += std::abs(update);
        }
    }
    // Errors of earlier pivots propagate through later ones: a looser bound.
    checkClose(run.output("A"), expectationOf(a), "A", 1e-4);
    checkClose(run.output("L"), expectationOf(l), "L", 1e-4);

    // Independently of the algorithm: L times the upper triangle of A is the
    // input matrix.
    Expectation product;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t k = 0; k <= std::min(i, j); ++k) {
          double term = at(run.output("L"), {i, k}) * at(run.output("A"), {k, j});
          sum += term;
          magnitude += std::abs(term);
        }
        product.add(sum, magnitude);
      }
    checkClose(matrix, product, "L * U", 1e-4);
  }
}

TEST_CASE("samples/nbody.loop: one N-body step") {
  auto loaded = loadChecked("samples/nbody.loop");
  const double dt = 0.01, softening = 0.1;
  for (int64_t n : {1, 2, 7, 13}) {
    CAPTURE(n);
    KernelRun run = runKernel(*loaded, "nbody",
                              {{"N", std::to_string(n)}, {"dt", "0.01"}, {"softening", "0.1"}});
    const HostArray &pos = run.input("pos"), &vel = run.input("vel"), &mass = run.input("mass");
    Expectation expectedPos, expectedVel;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < 3; ++c) {
        double acc = 0, accMagnitude = 0;
        for (int64_t j = 0; j < n; ++j) {
          double d[3];
          for (int64_t e = 0; e < 3; ++e)
            d[e] = at(pos, {j, e}) - at(pos, {i, e});
          double r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + softening * softening;
          double term = at(mass, {j}) * d[c] / (r2 * std::sqrt(r2));
          acc += term;
          accMagnitude += std::abs(term);
        }
        double v = at(vel, {i, c}) + dt * acc;
        double vMagnitude = std::abs(at(vel, {i, c})) + dt * accMagnitude;
        expectedVel.add(v, vMagnitude);
        expectedPos.add(at(pos, {i, c}) + dt * v, std::abs(at(pos, {i, c})) + dt * vMagnitude);
      }
    checkClose(run.output("vel"), expectedVel, "vel");
    checkClose(run.output("pos"), expectedPos, "pos");
  }
}

TEST_CASE("samples/sqdist.loop: squared distance matrix") {
  auto loaded = loadChecked("samples/sqdist.loop");
  for (const Values &sizes : kMatrixSizes) {
    CAPTURE(describe(sizes));
    KernelRun run = runKernel(*loaded, "sqdist", sizes);
    const HostArray &X = run.input("X"), &Y = run.input("Y");
    Expectation expected;
    for (int64_t i = 0; i < run.size("M"); ++i)
      for (int64_t j = 0; j < run.size("N"); ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t k = 0; k < run.size("K"); ++k) {
          double d = at(X, {i, k}) - at(Y, {j, k});
          sum += d * d;
          double dMagnitude = std::abs(at(X, {i, k})) + std::abs(at(Y, {j, k}));
          magnitude += dMagnitude * dMagnitude;
        }
        expected.add(sum, magnitude);
      }
    checkClose(run.output("D"), expected, "D");
  }
}

TEST_CASE("samples/laplace.loop: 5-point Laplacian") {
  auto loaded = loadChecked("samples/laplace.loop");
  for (const Values &sizes : kImageSizes) {
    CAPTURE(describe(sizes));
    KernelRun run = runKernel(*loaded, "laplace", sizes);
    checkClose(run.output("L"), laplace2dReference(run.input("U")), "L");
  }
}

TEST_CASE("samples/gaussian_blur.loop: 3x3 and 5x5 binomial blur") {
  auto loaded = loadChecked("samples/gaussian_blur.loop");
  for (const Values &sizes : std::vector<Values>{
           {{"H", "5"}, {"W", "5"}}, {{"H", "7"}, {"W", "13"}}, {{"H", "12"}, {"W", "9"}}}) {
    CAPTURE(describe(sizes));
    KernelRun blur3 = runKernel(*loaded, "gaussian_blur3", sizes);
    checkClose(blur3.output("O"), gaussianBlurReference(blur3.input("I"), 3), "gaussian_blur3");
    for (const char *kernel : {"gaussian_blur5", "gaussian_blur5_via_conv"}) {
      CAPTURE(kernel);
      KernelRun blur5 = runKernel(*loaded, kernel, sizes);
      checkClose(blur5.output("O"), gaussianBlurReference(blur5.input("I"), 5), kernel);
    }
  }
}

TEST_CASE("samples/sum_max.loop: float and integer reductions") {
  auto loaded = loadChecked("samples/sum_max.loop");
  for (int64_t n : kVectorLengths) {
    CAPTURE(n);
    KernelRun run = runKernel(*loaded, "sum_and_max", vectorSize(n));
    const HostArray &x = run.input("x");
    double sum = 0, magnitude = 0, largest = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) {
      sum += at(x, {i});
      magnitude += std::abs(at(x, {i}));
      largest = std::max(largest, at(x, {i}));
    }
    checkScalar(run.output("total"), sum, magnitude, "total");
    checkScalar(run.output("largest"), largest, std::abs(largest), "largest");

    // Signed values, so a sum that ignored the sign would be caught.
    HostArray values(ScalarType::I32, {n});
    int64_t expectedTotal = 0;
    for (int64_t i = 0; i < n; ++i) {
      int32_t value = static_cast<int32_t>((i * 37) % 23) - 11;
      values.data<int32_t>()[i] = value;
      expectedTotal += value;
    }
    Arrays arrays;
    arrays.emplace("v", values);
    KernelRun sumRun = runKernel(*loaded, "sum_i32", vectorSize(n), std::move(arrays));
    CHECK(sumRun.output("total").getAsInt(0) == expectedTotal);

    KernelRun countRun =
        runKernel(*loaded, "count_above", {{"N", std::to_string(n)}, {"threshold", "0.25"}});
    int64_t expectedCount = 0;
    for (int64_t i = 0; i < n; ++i)
      expectedCount += at(countRun.input("x"), {i}) > 0.25 ? 1 : 0;
    CHECK(countRun.output("count").getAsInt(0) == expectedCount);
  }
}

TEST_CASE("samples/softmax.loop: row-wise softmax") {
  auto loaded = loadChecked("samples/softmax.loop");
  for (const Values &sizes : std::vector<Values>{
           {{"R", "1"}, {"C", "1"}}, {{"R", "7"}, {"C", "13"}}, {{"R", "3"}, {"C", "32"}}}) {
    CAPTURE(describe(sizes));
    KernelRun run = runKernel(*loaded, "softmax", sizes);
    const HostArray &X = run.input("X");
    Expectation expected;
    for (int64_t r = 0; r < run.size("R"); ++r) {
      double largest = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t c = 0; c < run.size("C"); ++c)
        largest = std::max(largest, at(X, {r, c}));
      for (int64_t c = 0; c < run.size("C"); ++c)
        sum += std::exp(at(X, {r, c}) - largest);
      for (int64_t c = 0; c < run.size("C"); ++c) {
        double value = std::exp(at(X, {r, c}) - largest) / sum;
        expected.add(value, value);
      }
    }
    checkClose(run.output("Y"), expected, "Y");
  }
}

TEST_CASE("samples/row_stats.loop: each row's mean and variance") {
  auto loaded = loadChecked("samples/row_stats.loop");
  for (const Values &sizes : std::vector<Values>{{{"R", "1"}, {"C", "1"}},
                                                 {{"R", "7"}, {"C", "13"}},
                                                 {{"R", "3"}, {"C", "300"}},
                                                 {{"R", "2"}, {"C", "0"}}}) {
    CAPTURE(describe(sizes));
    KernelRun run = runKernel(*loaded, "row_stats", sizes);
    const HostArray &X = run.input("X");
    Expectation means, variances;
    for (int64_t r = 0; r < run.size("R"); ++r) {
      double sum = 0, squares = 0, magnitude = 0;
      for (int64_t c = 0; c < run.size("C"); ++c) {
        sum += at(X, {r, c});
        squares += at(X, {r, c}) * at(X, {r, c});
        magnitude += std::abs(at(X, {r, c}));
      }
      double n = static_cast<double>(std::max<int64_t>(run.size("C"), 1));
      means.add(sum / n, magnitude / n);
      variances.add(squares / n - (sum / n) * (sum / n), squares / n + 1);
    }
    checkClose(run.output("mean"), means, "mean");
    checkClose(run.output("variance"), variances, "variance");
  }
}

TEST_CASE("samples/histogram.loop: counts, sums and maxima by index") {
  auto loaded = loadChecked("samples/histogram.loop");
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(100), int64_t(1000)}) {
    CAPTURE(n);
    // Bins of [-0.5, 0.75): a part of the values in [-1, 1) falls outside.
    KernelRun run =
        runKernel(*loaded, "histogram",
                  {{"N", std::to_string(n)}, {"B", "5"}, {"lo", "-0.5"}, {"hi", "0.75"}});
    const HostArray &x = run.input("x");
    std::vector<int64_t> counts(5);
    for (int64_t i = 0; i < n; ++i) {
      double value = static_cast<float>(at(x, {i}));
      if (value >= -0.5 && value < 0.75)
        ++counts[std::min<int64_t>(static_cast<int64_t>((value + 0.5) / 1.25 * 5), 4)];
    }
    for (int64_t b = 0; b < 5; ++b)
      CHECK_MESSAGE(run.output("H").getAsInt(b) == counts[b], "bin " << b);

    // Keys -2..7 against 6 bins: negative and too large keys are ignored.
    HostArray keys(ScalarType::I32, {n});
    for (int64_t i = 0; i < n; ++i)
      keys.data<int32_t>()[i] = static_cast<int32_t>((i * 7) % 10) - 2;
    HostArray largest(ScalarType::F32, {6});
    std::ranges::fill(std::span(largest.data<float>(), 6), -2.0f);
    Arrays arrays;
    arrays.emplace("keys", keys);
    arrays.emplace("largest", largest);
    KernelRun stats =
        runKernel(*loaded, "bin_stats", {{"N", std::to_string(n)}, {"B", "6"}}, std::move(arrays));
    Expectation sums, maxima;
    for (int64_t b = 0; b < 6; ++b) {
      double sum = 0, magnitude = 0, top = -2.0;
      for (int64_t i = 0; i < n; ++i)
        if (keys.data<int32_t>()[i] == b) {
          double value = at(stats.input("values"), {i});
          sum += value;
          magnitude += std::abs(value);
          top = std::max(top, value);
        }
      sums.add(sum, magnitude);
      maxima.addExact(top);
    }
    checkClose(stats.output("sum"), sums, "sum");
    checkClose(stats.output("largest"), maxima, "largest");
  }
}

TEST_CASE("samples/scan.loop: inclusive and exclusive scans, of a vector and of rows") {
  auto loaded = loadChecked("samples/scan.loop");
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(100), int64_t(5000)}) {
    CAPTURE(n);
    KernelRun sums = runKernel(*loaded, "prefix_sum", vectorSize(n));
    KernelRun maxima = runKernel(*loaded, "running_max", vectorSize(n));
    KernelRun counts = runKernel(*loaded, "exclusive_count", vectorSize(n));
    Expectation expectedSums, expectedMaxima, expectedCounts;
    double sum = 0, magnitude = 0, largest = -std::numeric_limits<double>::infinity();
    int64_t positive = 0;
    expectedCounts.addExact(0);
    for (int64_t i = 0; i < n; ++i) {
      sum += at(sums.input("x"), {i});
      magnitude += std::abs(at(sums.input("x"), {i}));
      expectedSums.add(sum, magnitude);
      largest = std::max(largest, at(maxima.input("x"), {i}));
      expectedMaxima.addExact(largest);
      positive += at(counts.input("x"), {i}) > 0 ? 1 : 0;
      expectedCounts.addExact(static_cast<double>(positive));
    }
    checkClose(sums.output("y"), expectedSums, "prefix_sum y");
    checkClose(maxima.output("y"), expectedMaxima, "running_max y");
    checkClose(counts.output("c"), expectedCounts, "exclusive_count c");
  }
  KernelRun rows = runKernel(*loaded, "row_sums", {{"R", "3"}, {"C", "17"}});
  Expectation expected;
  for (int64_t r = 0; r < 3; ++r) {
    double sum = 0, magnitude = 0;
    for (int64_t c = 0; c < 17; ++c) {
      sum += at(rows.input("X"), {r, c});
      magnitude += std::abs(at(rows.input("X"), {r, c}));
      expected.add(sum, magnitude);
    }
  }
  checkClose(rows.output("Y"), expected, "row_sums Y");
}

// -------------------------------------------------------------- stdlib ---

TEST_CASE("stdlib/linalg.loop: dot, axpy, gemv, gemm, transpose") {
  auto loaded = loadChecked("stdlib/linalg.loop");
  for (const Values &sizes : kMatrixSizes) {
    CAPTURE(describe(sizes));
    KernelRun gemm = runKernel(*loaded, "gemm", sizes);
    checkClose(gemm.output("C"), matmulReference(gemm.input("A"), gemm.input("B")), "gemm");

    Values shape = {{"M", sizes.at("M")}, {"N", sizes.at("N")}};
    KernelRun gemv = runKernel(*loaded, "gemv", shape);
    checkClose(gemv.output("y"), matvecReference(gemv.input("A"), gemv.input("x"), false), "gemv");
    KernelRun transpose = runKernel(*loaded, "transpose", shape);
    checkClose(transpose.output("At"), transposeReference(transpose.input("A")), "transpose");
  }
  for (int64_t n : kVectorLengths) {
    CAPTURE(n);
    KernelRun dot = runKernel(*loaded, "dot", vectorSize(n));
    double sum = 0, magnitude = 0;
    for (int64_t i = 0; i < n; ++i) {
      sum += at(dot.input("x"), {i}) * at(dot.input("y"), {i});
      magnitude += std::abs(at(dot.input("x"), {i}) * at(dot.input("y"), {i}));
    }
    checkScalar(dot.output("r"), sum, magnitude, "dot");

    KernelRun axpy = runKernel(*loaded, "axpy", {{"N", std::to_string(n)}, {"alpha", "-1.5"}});
    Expectation expected;
    for (int64_t i = 0; i < n; ++i) {
      double x = at(axpy.input("x"), {i}), y = at(axpy.input("y"), {i});
      expected.add(-1.5 * x + y, std::abs(1.5 * x) + std::abs(y));
    }
    checkClose(axpy.output("y"), expected, "axpy");
  }
}

TEST_CASE("stdlib/conv.loop: valid, same and full single-channel convolution") {
  auto loaded = loadChecked("stdlib/conv.loop");
  for (const Values &image : kImageSizes) {
    for (const char *k : {"1", "3", "5"}) {
      Values sizes = image;
      sizes["K"] = k;
      CAPTURE(describe(sizes));
      int64_t K = std::stoi(k);
      if (K <= std::stoi(sizes.at("H")) && K <= std::stoi(sizes.at("W"))) {
        KernelRun valid = runKernel(*loaded, "conv2d_valid", sizes);
        checkClose(valid.output("O"), conv2dReference(valid.input("In"), valid.input("F"), 0),
                   "conv2d_valid");
      }
      KernelRun same = runKernel(*loaded, "conv2d_same", sizes);
      checkClose(same.output("O"), conv2dReference(same.input("In"), same.input("F"), K / 2),
                 "conv2d_same");
      KernelRun full = runKernel(*loaded, "conv2d_full", sizes);
      checkClose(full.output("O"), conv2dReference(full.input("In"), full.input("F"), K - 1),
                 "conv2d_full");
    }
  }
}

TEST_CASE("stdlib/stencil.loop: Jacobi sweeps and Laplacians") {
  auto loaded = loadChecked("stdlib/stencil.loop");
  for (int64_t n : kVectorLengths) {
    CAPTURE(n);
    KernelRun run = runKernel(*loaded, "jacobi1d_sweep", vectorSize(n));
    Grid in = gridOf(run.input("In")), out = gridOf(run.input("Out"));
    for (int64_t i = 1; i + 1 < n; ++i) {
      out.values[i] = (in.values[i - 1] + in.values[i] + in.values[i + 1]) / 3;
      out.magnitudes[i] = (in.magnitudes[i - 1] + in.magnitudes[i] + in.magnitudes[i + 1]) / 3;
    }
    checkClose(run.output("Out"), expectationOf(out), "jacobi1d_sweep");
  }
  for (const Values &sizes : kImageSizes) {
    CAPTURE(describe(sizes));
    int64_t H = std::stoi(sizes.at("H")), W = std::stoi(sizes.at("W"));
    KernelRun sweep = runKernel(*loaded, "jacobi2d_sweep", sizes);
    Grid in = gridOf(sweep.input("In")), out = gridOf(sweep.input("Out"));
    jacobi2dSweep(in, out, H, W);
    checkClose(sweep.output("Out"), expectationOf(out), "jacobi2d_sweep");

    Values withSteps = sizes;
    withSteps["steps"] = "2";
    KernelRun pingpong = runKernel(*loaded, "jacobi2d_pingpong", withSteps);
    Grid a = gridOf(pingpong.input("A")), b = gridOf(pingpong.input("B"));
    for (int t = 0; t < 2; ++t) {
      jacobi2dSweep(a, b, H, W);
      jacobi2dSweep(b, a, H, W);
    }
    checkClose(pingpong.output("A"), expectationOf(a), "jacobi2d_pingpong A");
    checkClose(pingpong.output("B"), expectationOf(b), "jacobi2d_pingpong B");

    KernelRun laplace = runKernel(*loaded, "laplace2d", sizes);
    checkClose(laplace.output("L"), laplace2dReference(laplace.input("U")), "laplace2d");
  }
  for (const Values &sizes : std::vector<Values>{{{"D", "1"}, {"H", "1"}, {"W", "1"}},
                                                 {{"D", "3"}, {"H", "7"}, {"W", "5"}},
                                                 {{"D", "6"}, {"H", "4"}, {"W", "9"}}}) {
    CAPTURE(describe(sizes));
    KernelRun run = runKernel(*loaded, "laplace3d", sizes);
    const HostArray &U = run.input("U");
    int64_t D = U.shape[0], H = U.shape[1], W = U.shape[2];
    Expectation expected;
    for (int64_t k = 0; k < D; ++k)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          if (k == 0 || i == 0 || j == 0 || k == D - 1 || i == H - 1 || j == W - 1) {
            expected.addExact(0);
            continue;
          }
          double value = -6 * at(U, {k, i, j}), magnitude = 6 * std::abs(at(U, {k, i, j}));
          for (auto [dk, di, dj] :
               {std::tuple{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}}) {
            value += at(U, {k + dk, i + di, j + dj});
            magnitude += std::abs(at(U, {k + dk, i + di, j + dj}));
          }
          expected.add(value, magnitude);
        }
    checkClose(run.output("L"), expected, "laplace3d");
  }
}

TEST_CASE("stdlib/cumulative.loop: running sums, products and extremes") {
  auto loaded = loadChecked("stdlib/cumulative.loop");
  for (int64_t n : kVectorLengths) {
    CAPTURE(n);
    Expectation sums, products, largest, smallest, exclusive;
    KernelRun cumsum = runKernel(*loaded, "cumsum", vectorSize(n));
    const HostArray &x = cumsum.input("x"); // every kernel gets the same seeded x
    double sum = 0, magnitude = 0, product = 1, top = -std::numeric_limits<double>::infinity();
    double bottom = std::numeric_limits<double>::infinity();
    exclusive.addExact(0);
    for (int64_t i = 0; i < n; ++i) {
      double value = at(x, {i});
      sum += value;
      magnitude += std::abs(value);
      product *= value;
      top = std::max(top, value);
      bottom = std::min(bottom, value);
      sums.add(sum, magnitude);
      exclusive.add(sum, magnitude);
      products.add(product, std::abs(product));
      largest.addExact(top);
      smallest.addExact(bottom);
    }
    checkClose(cumsum.output("y"), sums, "cumsum");
    checkClose(runKernel(*loaded, "cumprod", vectorSize(n)).output("y"), products, "cumprod");
    checkClose(runKernel(*loaded, "cummax", vectorSize(n)).output("y"), largest, "cummax");
    checkClose(runKernel(*loaded, "cummin", vectorSize(n)).output("y"), smallest, "cummin");
    checkClose(runKernel(*loaded, "exclusive_cumsum", vectorSize(n)).output("y"), exclusive,
               "exclusive_cumsum");
  }
}

TEST_CASE("stdlib/histogram.loop: counts and sums by key") {
  auto loaded = loadChecked("stdlib/histogram.loop");
  for (int64_t n : kVectorLengths) {
    CAPTURE(n);
    // Keys -1..8 against 7 bins: negative and too large keys are ignored.
    HostArray keys(ScalarType::I32, {n});
    for (int64_t i = 0; i < n; ++i)
      keys.data<int32_t>()[i] = static_cast<int32_t>((i * 3) % 10) - 1;
    Arrays countArgs, sumArgs;
    countArgs.emplace("keys", keys);
    sumArgs.emplace("keys", keys);
    Values sizes = {{"N", std::to_string(n)}, {"B", "7"}};
    KernelRun counts = runKernel(*loaded, "bincount", sizes, std::move(countArgs));
    KernelRun sums = runKernel(*loaded, "weighted_bincount", sizes, std::move(sumArgs));
    Expectation expectedSums;
    for (int32_t b = 0; b < 7; ++b) {
      int64_t count = 0;
      double sum = 0, magnitude = 0;
      for (int64_t i = 0; i < n; ++i)
        if (keys.data<int32_t>()[i] == b) {
          ++count;
          sum += at(sums.input("weights"), {i});
          magnitude += std::abs(at(sums.input("weights"), {i}));
        }
      CHECK_MESSAGE(counts.output("counts").getAsInt(b) == count, "bin " << b);
      expectedSums.add(sum, magnitude);
    }
    checkClose(sums.output("sums"), expectedSums, "weighted_bincount");
  }
}

TEST_CASE("stdlib/reduce.loop: sum, extremes, mean and norms") {
  auto loaded = loadChecked("stdlib/reduce.loop");
  for (int64_t n : kVectorLengths) {
    CAPTURE(n);
    // Every kernel takes x as its first parameter: one seed gives them all
    // the same input.
    double sum = 0, norm1 = 0, squares = 0, largest = -INFINITY, smallest = INFINITY, absMax = 0;
    KernelRun first = runKernel(*loaded, "sum", vectorSize(n));
    const HostArray &x = first.input("x");
    for (int64_t i = 0; i < n; ++i) {
      double v = at(x, {i});
      sum += v;
      norm1 += std::abs(v);
      squares += v * v;
      largest = std::max(largest, v);
      smallest = std::min(smallest, v);
      absMax = std::max(absMax, std::abs(v));
    }
    struct Case {
      const char *kernel;
      double value, magnitude;
    };
    for (const Case &c :
         {Case{"sum", sum, norm1}, Case{"max_value", largest, std::abs(largest)},
          Case{"min_value", smallest, std::abs(smallest)},
          Case{"mean", sum / double(n), norm1 / double(n)}, Case{"norm1", norm1, norm1},
          Case{"norm2", std::sqrt(squares), std::sqrt(squares)},
          Case{"norm_inf", absMax, absMax}}) {
      CAPTURE(c.kernel);
      KernelRun run = runKernel(*loaded, c.kernel, vectorSize(n));
      REQUIRE(run.input("x").bytes == x.bytes);
      checkScalar(run.output("r"), c.value, c.magnitude, c.kernel);
    }
  }
}
