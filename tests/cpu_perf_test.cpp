// The CPU performance model (perf/CpuModel.h): what it counts on small
// programs, `explain --perf --target cpu`, and its predictions against the
// runs of tests/perf/cpu_measured.tsv.
#include "TestSupport.h"
#include "driver/PerfReport.h"
#include "driver/Session.h"
#include "perf/CpuModel.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

using namespace loopc;

namespace {

// The share of the calibration rows the model must predict within 1.5x and
// within 2x of the measured time.
constexpr double kCpuShareWithin15 = 0.5;
constexpr double kCpuShareWithin2 = 0.75;

perf::CpuProgramPrediction predictLoaded(const test::LoadedProgram &loaded,
                                         const std::string &kernel,
                                         const std::map<std::string, int64_t> &values,
                                         const passes::PassChoices &choices,
                                         const perf::CpuDevice &device) {
  REQUIRE_MESSAGE(loaded.program, loaded.diagnostics);
  auto declaration = driver::selectKernel(*loaded.program, kernel);
  REQUIRE(declaration);
  auto prediction = driver::predictCpuRun(*loaded.program, **declaration, choices, values, device);
  REQUIRE(prediction);
  return *prediction;
}

perf::CpuProgramPrediction predictFile(const std::string &path, const std::string &kernel,
                                       const std::map<std::string, int64_t> &values,
                                       const passes::PassChoices &choices,
                                       const perf::CpuDevice &device) {
  return predictLoaded(*test::loadFile(path), kernel, values, choices, device);
}

perf::CpuProgramPrediction predictSource(const std::string &source, const std::string &kernel,
                                         const std::map<std::string, int64_t> &values,
                                         const perf::CpuDevice &device,
                                         const passes::PassChoices &choices = {}) {
  return predictLoaded(*test::loadText(source), kernel, values, choices, device);
}

perf::CpuDevice epyc2() { return *perf::findCpuDevice("epyc-2"); }

// Spearman's rank correlation of two equally long lists without ties.
double spearman(const std::vector<double> &a, const std::vector<double> &b) {
  auto ranks = [](const std::vector<double> &values) {
    std::vector<size_t> order(values.size());
    std::iota(order.begin(), order.end(), 0);
    std::ranges::sort(order, {}, [&](size_t i) { return values[i]; });
    std::vector<double> rank(values.size());
    for (size_t r = 0; r < order.size(); ++r)
      rank[order[r]] = static_cast<double>(r);
    return rank;
  };
  std::vector<double> ra = ranks(a), rb = ranks(b);
  double n = static_cast<double>(a.size()), squares = 0;
  for (size_t i = 0; i < a.size(); ++i)
    squares += (ra[i] - rb[i]) * (ra[i] - rb[i]);
  return 1 - 6 * squares / (n * (n * n - 1));
}

} // namespace

TEST_CASE("cpu perf: the named CPUs, and an unknown name") {
  perf::CpuDevice device = epyc2();
  CHECK(device.threads == 2);
  CHECK(device.vectorLanes == 16);
  auto unknown = perf::findCpuDevice("pentium");
  REQUIRE(!unknown);
  CHECK(unknown.error().message.find("known: native, epyc-2") != std::string::npos);
}

TEST_CASE("cpu perf: a launch runs alone below the hand-over, and is shared above it") {
  const char *source = R"(
kernel scale(x: inout f32[N]) {
  parfor i in 0..N {
    x[i] = x[i] * 2.0 + 1.0;
  }
}
)";
  perf::CpuProgramPrediction small = predictSource(source, "scale", {{"N", 64}}, epyc2());
  REQUIRE(small.launches.size() == 1);
  CHECK(small.launches[0].alone);
  CHECK(small.launches[0].bound == "launch");
  perf::CpuProgramPrediction large = predictSource(source, "scale", {{"N", 1 << 26}}, epyc2());
  REQUIRE(large.launches.size() == 1);
  CHECK(!large.launches[0].alone);
  CHECK(large.launches[0].bound == "memory");
  // 2^26 floats read and written from DRAM: 512 MiB at 35 GB/s.
  CHECK(large.seconds == doctest::Approx(double(1 << 26) * 8 / 35e9).epsilon(0.05));
}

TEST_CASE("cpu perf: host code at the vector rate, the scalar rate, or a recurrence's latency") {
  // Along j: a row streamed (vectorized), a column walked (a cache line
  // per element of a 64 MiB array; interchange_column_walks left out, as it
  // would walk rows), and a dot product accumulated into one element (one
  // dependent step after another).
  const char *source = R"(
kernel rows(A: inout f32[N][N]) {
  for i in 0..N {
    for j in 0..N {
      A[i][j] = A[i][j] * 0.5 + 1.0;
    }
  }
}
kernel columns(A: inout f32[N][N]) {
  for i in 0..N {
    for j in 0..N {
      A[j][i] = A[j][i] * 0.5 + 1.0;
    }
  }
}
kernel chain(L: in f32[N][N], x: inout f32[N]) {
  for i in 0..N {
    for j in 0..i {
      x[i] -= L[i][j] * x[j];
    }
  }
}
)";
  std::map<std::string, int64_t> values{{"N", 4096}};
  perf::CpuProgramPrediction rows = predictSource(source, "rows", values, epyc2());
  passes::PassChoices asWritten;
  asWritten.skipped.insert("interchange_column_walks");
  perf::CpuProgramPrediction columns = predictSource(source, "columns", values, epyc2(), asWritten);
  perf::CpuProgramPrediction chain = predictSource(source, "chain", values, epyc2());
  CHECK(rows.launches.empty());
  CHECK(rows.hostLatencySeconds == 0);
  CHECK(columns.hostSeconds > 4 * rows.hostSeconds);
  CHECK(chain.hostLatencySeconds > 0);
  // N^2 / 2 dependent steps of 0.9 ns.
  CHECK(chain.hostLatencySeconds == doctest::Approx(4096.0 * 4096 / 2 * 0.9e-9).epsilon(0.1));
}

TEST_CASE("cpu perf: explain --perf --target cpu") {
  auto explained = test::runLoopc(
      "explain " + test::sourcePath("samples/matmul.loop") +
      " --perf --target cpu --device-model epyc-2 --set M=512 --set N=512 --set K=512");
  REQUIRE(explained.exitCode == 0);
  CHECK(explained.output.find("// performance model: AMD EPYC (virtual machine), 2 threads") !=
        std::string::npos);
  CHECK(explained.output.find("shared out to the pool") != std::string::npos);
  CHECK(explained.output.find("compute-bound") != std::string::npos);
  auto unknown = test::runLoopc("explain " + test::sourcePath("samples/matmul.loop") +
                                " --perf --target cpu --device-model h100 --set M=5 --set N=5 "
                                "--set K=5");
  CHECK(unknown.exitCode == 1);
  CHECK(unknown.output.find("unknown CPU model 'h100'") != std::string::npos);
}

TEST_CASE("cpu perf: predictions against the runs of tests/perf/cpu_measured.tsv") {
  struct Row {
    std::string name, group;
    double measured = 0, predicted = 0;
  };
  std::vector<Row> rows;
  for (const test::MeasuredRow &row : test::readMeasuredRows("tests/perf/cpu_measured.tsv")) {
    perf::CpuProgramPrediction prediction =
        predictFile(test::sourcePath(row.file), row.kernel, row.values, row.choices, epyc2());
    rows.push_back({row.name, row.file + " " + row.kernel + " " + row.sizes, row.measuredSeconds,
                    prediction.seconds});
  }
  REQUIRE(rows.size() >= 25);

  size_t within15 = 0, within2 = 0;
  double worst = 1;
  for (const Row &row : rows) {
    double error = std::max(row.predicted / row.measured, row.measured / row.predicted);
    within15 += error <= 1.5 ? 1 : 0;
    within2 += error <= 2.0 ? 1 : 0;
    worst = std::max(worst, error);
    if (error > 1.5)
      MESSAGE(row.name << ": measured " << row.measured * 1e3 << " ms, predicted "
                       << row.predicted * 1e3 << " ms");
  }
  MESSAGE("epyc-2: within 1.5x: " << within15 << " of " << rows.size() << ", within 2x: " << within2
                                  << ", worst " << worst << "x");
  auto share = [&](size_t count) {
    return static_cast<double>(count) / static_cast<double>(rows.size());
  };
  CHECK(share(within15) >= kCpuShareWithin15);
  CHECK(share(within2) >= kCpuShareWithin2);

  // A pass left out against the program as compiled: the model must say
  // which runs faster.
  std::map<std::string, std::vector<const Row *>> groups;
  for (const Row &row : rows)
    groups[row.group].push_back(&row);
  for (const auto &[group, variants] : groups) {
    if (variants.size() < 2)
      continue;
    std::vector<double> predicted, measured;
    for (const Row *row : variants) {
      predicted.push_back(row->predicted);
      measured.push_back(row->measured);
    }
    CAPTURE(group);
    CHECK(spearman(predicted, measured) == doctest::Approx(1.0));
  }
}
