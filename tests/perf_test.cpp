// The performance model: the facts it counts from a kernel (coalescing,
// merged shared loads, repeated loads, occupancy, the loops LLVM leaves),
// the bound it names, and its predictions against every run recorded on an
// H100 and an H200 (tests/perf/*_measured.tsv, from bench/gpu/results): the
// share within 1.5x and 2x of the measured time and the ranking of each
// kernel's variants must not get worse when the model changes.
#include "TestSupport.h"
#include "codegen/NvptxTarget.h"
#include "codegen/Ptxas.h"
#include "driver/PerfReport.h"
#include "driver/Session.h"
#include "lower/Lower.h"
#include "passes/Passes.h"
#include "perf/GpuModel.h"

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
using loopc::test::contains;

namespace {

const perf::GpuDevice &h100() { return **perf::findGpuDevice("h100"); }

// What the model predicts for `kernel` of the file at `path` with `values`.
perf::ProgramPrediction predict(const std::string &path, const std::string &kernel,
                                const std::map<std::string, int64_t> &values,
                                const passes::PassChoices &choices = {},
                                const perf::GpuDevice &device = h100()) {
  auto loaded = test::loadFile(test::sourcePath(path));
  REQUIRE(loaded->program);
  auto declaration = driver::selectKernel(*loaded->program, kernel);
  REQUIRE(declaration);
  auto prediction = driver::predictGpuRun(*loaded->program, **declaration, choices, values, device);
  REQUIRE(prediction);
  return *prediction;
}

perf::ProgramPrediction predictText(const std::string &source, const std::string &kernel,
                                    const std::map<std::string, int64_t> &values,
                                    const passes::PassChoices &choices = {}) {
  auto loaded = test::loadText(source);
  REQUIRE_MESSAGE(loaded->program, loaded->diagnostics);
  auto declaration = driver::selectKernel(*loaded->program, kernel);
  REQUIRE(declaration);
  auto prediction = driver::predictGpuRun(*loaded->program, **declaration, choices, values, h100());
  REQUIRE(prediction);
  return *prediction;
}

// The access of `array` of `kind` in the launch of `kernel` (the first).
const perf::AccessProfile &accessOf(const perf::ProgramPrediction &prediction,
                                    const std::string &kernel, const std::string &array,
                                    perf::AccessProfile::Kind kind, ir::MemorySpace memory) {
  for (const perf::LaunchPrediction &launch : prediction.launches)
    if (launch.profile.kernel == kernel)
      for (const perf::AccessProfile &access : launch.profile.accesses)
        if (access.array == array && access.kind == kind && access.memory == memory)
          return access;
  FAIL("no such access of " << array << " in " << kernel);
  static perf::AccessProfile none;
  return none;
}

const perf::LaunchPrediction &launchOf(const perf::ProgramPrediction &prediction,
                                       const std::string &kernel) {
  for (const perf::LaunchPrediction &launch : prediction.launches)
    if (launch.profile.kernel == kernel)
      return launch;
  FAIL("no launch of " << kernel);
  return prediction.launches.front();
}

// Spearman's rank correlation of two series (ties share their mean rank).
double spearman(const std::vector<double> &a, const std::vector<double> &b) {
  auto ranks = [](const std::vector<double> &values) {
    std::vector<size_t> order(values.size());
    std::iota(order.begin(), order.end(), 0);
    std::ranges::sort(order, {}, [&](size_t i) { return values[i]; });
    std::vector<double> rank(values.size());
    for (size_t i = 0; i < order.size();) {
      size_t j = i;
      while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]])
        ++j;
      for (size_t k = i; k <= j; ++k)
        rank[order[k]] = (static_cast<double>(i) + static_cast<double>(j)) / 2;
      i = j + 1;
    }
    return rank;
  };
  std::vector<double> ra = ranks(a), rb = ranks(b);
  double meanA = std::accumulate(ra.begin(), ra.end(), 0.0) / static_cast<double>(ra.size());
  double meanB = std::accumulate(rb.begin(), rb.end(), 0.0) / static_cast<double>(rb.size());
  double covariance = 0, varianceA = 0, varianceB = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    covariance += (ra[i] - meanA) * (rb[i] - meanB);
    varianceA += (ra[i] - meanA) * (ra[i] - meanA);
    varianceB += (rb[i] - meanB) * (rb[i] - meanB);
  }
  return varianceA > 0 && varianceB > 0 ? covariance / std::sqrt(varianceA * varianceB) : 1.0;
}

} // namespace

TEST_CASE("perf: the device table") {
  CHECK(h100().fp32PeakFlops() == doctest::Approx(66.9e12).epsilon(0.01));
  CHECK((*perf::findGpuDevice("NVIDIA H100 80GB HBM3"))->name == "h100");
  CHECK((*perf::findGpuDevice("NVIDIA H100 PCIe"))->name == "h100-pcie");
  CHECK((*perf::findGpuDevice("A100"))->ptxTarget == "sm_80");
  auto unknown = perf::findGpuDevice("v100");
  REQUIRE(!unknown);
  CHECK(unknown.error().message ==
        "unknown device model 'v100'; the models are h100, h100-pcie, h200, a100, l4");
}

TEST_CASE("perf: occupancy is limited by registers, shared memory or threads") {
  perf::LaunchShape launch;
  launch.grid = {1024, 1, 1};
  launch.block = {256, 1, 1};
  // matmul's 4 x 4 tiles: 128 registers leave room for two blocks.
  perf::Occupancy tiled = perf::occupancyOf(h100(), launch, {128, 0, 20480, true, {}});
  CHECK(tiled.blocksPerSM == 2);
  CHECK(tiled.limiter == "registers");
  // A reduction's 40 registers: six blocks (ncu says the same of dot).
  CHECK(perf::occupancyOf(h100(), launch, {40, 0, 1024, true, {}}).blocksPerSM == 6);
  perf::Occupancy shared = perf::occupancyOf(h100(), launch, {32, 0, 100 * 1024, true, {}});
  CHECK(shared.blocksPerSM == 2);
  CHECK(shared.limiter == "shared memory");
  perf::Occupancy light = perf::occupancyOf(h100(), launch, {16, 0, 0, true, {}});
  CHECK(light.blocksPerSM == 8);
  CHECK(light.limiter == "threads");
  CHECK(light.fraction == doctest::Approx(1.0));
}

TEST_CASE("perf: coalescing from the lanes' addresses") {
  const char *source = R"(
kernel flip(A: in f32[M][N], B: out f32[N][M]) {
  parfor i in 0..M, j in 0..N { B[j][i] = A[i][j]; }
}
)";
  passes::PassChoices unstaged;
  unstaged.skipped = {"stage_shared"};
  perf::ProgramPrediction flip = predictText(source, "flip", {{"M", 4096}, {"N", 4096}}, unstaged);
  // Consecutive lanes read consecutive floats of a row: 4 sectors, all used.
  const perf::AccessProfile &read =
      accessOf(flip, "flip_kernel0", "A", perf::AccessProfile::Kind::Load, ir::MemorySpace::Global);
  CHECK(read.sectorsPerRequest() == doctest::Approx(4));
  CHECK(read.sectorEfficiency() == doctest::Approx(1));
  // They write down a column: a sector each, 4 bytes used of 32.
  const perf::AccessProfile &write = accessOf(
      flip, "flip_kernel0", "B", perf::AccessProfile::Kind::Store, ir::MemorySpace::Global);
  CHECK(write.sectorsPerRequest() == doctest::Approx(32));
  CHECK(write.sectorEfficiency() == doctest::Approx(0.125));
  // The transpose sample stages its column read: both sides coalesced, and
  // the shared tile's column (padded odd) read without bank conflicts.
  perf::ProgramPrediction staged =
      predict("samples/transpose.loop", "transpose", {{"M", 4096}, {"N", 4096}});
  const perf::AccessProfile &tile =
      accessOf(staged, "transpose_kernel0", "A.shared", perf::AccessProfile::Kind::Load,
               ir::MemorySpace::Shared);
  CHECK(tile.wavefronts / tile.requests == doctest::Approx(1));
  CHECK(accessOf(staged, "transpose_kernel0", "B", perf::AccessProfile::Kind::Store,
                 ir::MemorySpace::Global)
            .sectorsPerRequest() == doctest::Approx(4));
}

TEST_CASE("perf: matmul's shared loads merge along k and across copies, repeat loads count once") {
  perf::ProgramPrediction matmul =
      predict("samples/matmul.loop", "matmul", {{"M", 2048}, {"N", 2048}, {"K", 2048}},
              test::withParameters({"register_tile=4"}));
  const perf::LaunchPrediction &launch = launchOf(matmul, "matmul_kernel0");
  // A thread's four rows of A are read 4 k at a time (ld.shared.v4), each
  // row once for the four columns that use it.
  const perf::AccessProfile &a = accessOf(matmul, "matmul_kernel0", "A.shared",
                                          perf::AccessProfile::Kind::Load, ir::MemorySpace::Shared);
  CHECK(a.vectorBytes == 16);
  double kSteps = 2048.0 * 2048 / 16 / 32 * 2048; // warp-k steps of the launch
  CHECK(a.requests == doctest::Approx(kSteps));   // 4 rows / 4 k
  const perf::AccessProfile &b = accessOf(matmul, "matmul_kernel0", "B.shared",
                                          perf::AccessProfile::Kind::Load, ir::MemorySpace::Shared);
  // A thread's four columns of B are neighbours (tile_registers' grouped
  // layout): one ld.shared.v4 a k, the warp's 512 contiguous bytes in the
  // fewest cycles, 4.
  CHECK(b.vectorBytes == 16);
  CHECK(b.requests == doctest::Approx(kSteps));
  CHECK(b.wavefronts / b.requests == doctest::Approx(4));
  CHECK(launch.profile.flops == doctest::Approx(2.0 * 2048 * 2048 * 2048));
  CHECK(launch.profile.fp32Instructions == doctest::Approx(2048.0 * 2048 * 2048 / 32));
}

TEST_CASE("perf: the loops LLVM leaves decide the memory round trips") {
  auto loaded = test::loadFile(test::sourcePath("samples/dot.loop"));
  REQUIRE(loaded->program);
  auto kernel = driver::selectKernel(*loaded->program, "dot");
  REQUIRE(kernel);
  ir::Function dot = test::compiledKernel(*loaded->program, **kernel);
  codegen::LoopCensus census;
  REQUIRE(codegen::compileToPtx(dot, "sm_90", nullptr, &census));
  // The strided walk over x and y survives, unrolled by 4 at run time: 8
  // loads an iteration.
  std::vector<codegen::CensusLoop> walks =
      test::loopsOfVariable(census["dot_kernel0"], "red0.step");
  REQUIRE(walks.size() == 1);
  CHECK(walks[0].globalLoads == 8);
  // Its trip count is not a constant: ptxas cannot unroll it.
  CHECK(walks[0].constantTrips == 0);

  perf::ProgramPrediction prediction = predict("samples/dot.loop", "dot", {{"N", 1 << 28}});
  const perf::LaunchPrediction &walk = launchOf(prediction, "dot_kernel0");
  CHECK(walk.bound == "DRAM");
  // 64 points a thread, four at a time.
  CHECK(walk.profile.criticalMemoryRounds == doctest::Approx(16));

  // matmul's copy of B into shared memory stays a loop of 8 iterations of
  // 2 loads (LLVM unrolled it by 2), short enough for ptxas to unroll whole:
  // a stage's loads of A (unrolled whole by LLVM) and B go out together.
  perf::ProgramPrediction matmul =
      predict("samples/matmul.loop", "matmul", {{"M", 2048}, {"N", 2048}, {"K", 2048}},
              test::withParameters({"pipeline_depth=1"}));
  const perf::LaunchPrediction &staged = launchOf(matmul, "matmul_kernel0");
  // (One copy of the loop in the interior tile, one in the edge tile.)
  std::vector<perf::CompiledLoop> copies =
      test::loopsOfVariable(staged.compiled.loops, "B.shared.fill");
  REQUIRE(copies.size() == 2);
  for (const perf::CompiledLoop &copy : copies) {
    CHECK(copy.globalLoads == 2);
    CHECK(copy.constantTrips == 8);
  }
  CHECK(staged.profile.criticalMemoryRounds == doctest::Approx(64));
  // Grouped copies (8 loads at a time) are a loop LLVM runs twice on a
  // flag, not a counter: ptxas leaves it, and a stage waits twice for B.
  perf::ProgramPrediction grouped =
      predict("samples/matmul.loop", "matmul", {{"M", 2048}, {"N", 2048}, {"K", 2048}},
              test::withParameters({"pipeline_depth=1", "copies_in_flight=8"}));
  const perf::LaunchPrediction &groups = launchOf(grouped, "matmul_kernel0");
  std::vector<perf::CompiledLoop> groupLoops =
      test::loopsOfVariable(groups.compiled.loops, "B.shared.group");
  REQUIRE(groupLoops.size() == 2);
  for (const perf::CompiledLoop &group : groupLoops)
    CHECK(group.constantTrips == 0);
  CHECK(groups.profile.criticalMemoryRounds == doctest::Approx(64 * 3));
}

TEST_CASE("perf: pipelined stages wait only for the latency their compute does not cover") {
  std::map<std::string, int64_t> sizes{{"M", 2048}, {"N", 2048}, {"K", 2048}};
  const perf::LaunchPrediction staged = launchOf(
      predict("samples/matmul.loop", "matmul", sizes, test::withParameters({"pipeline_depth=1"})),
      "matmul_kernel0");
  for (int depth : {2, 3}) {
    CAPTURE(depth);
    perf::ProgramPrediction prediction = predict(
        "samples/matmul.loop", "matmul", sizes,
        test::withParameters({"register_tile=4", "pipeline_depth=" + std::to_string(depth)}));
    const perf::LaunchPrediction &launch = launchOf(prediction, "matmul_kernel0");
    // Stages of 16 k at depth 2 (128 of them), 8 at depth 3 (256): every
    // stage's wait but the first is covered by the stages between; the
    // first waits for the prologue's copies, one round trip.
    double stages = depth == 2 ? 128 : 256;
    CHECK(launch.profile.criticalAsyncWaits == doctest::Approx(stages - 1));
    CHECK(launch.profile.asyncStagesAhead == doctest::Approx(depth - 1));
    CHECK(launch.profile.criticalMemoryRounds == doctest::Approx(1));
    CHECK(launch.profile.asyncCoverInstructions > 100 * (depth - 1));
    CHECK(launch.asyncExposedCycles == doctest::Approx(0));
    // 16-byte copies of B: 4 sectors a request, all used; the same bytes
    // from DRAM as the synchronous stages.
    const perf::AccessProfile &b =
        accessOf(prediction, "matmul_kernel0", "B", perf::AccessProfile::Kind::Load,
                 ir::MemorySpace::Global);
    CHECK(b.vectorBytes == 16);
    CHECK(b.sectorEfficiency() == doctest::Approx(1));
    CHECK(launch.profile.compulsoryReadBytes ==
          doctest::Approx(staged.profile.compulsoryReadBytes));
    CHECK(launch.seconds < staged.seconds);
  }
  // One stage at a time: no async copies.
  CHECK(staged.profile.criticalAsyncWaits == 0);
}

TEST_CASE("perf: the bound names what limits a launch") {
  // Four rows of 2^26 each, one block a row: a thread's loads wait in turn.
  passes::PassChoices unsplit;
  unsplit.skipped = {"split_reductions"};
  perf::ProgramPrediction mv =
      predict("samples/mv.loop", "mv", {{"M", 4}, {"N", 1 << 26}}, unsplit);
  CHECK(mv.launches.front().bound == "latency");
  // A 256-bin histogram: shared memory updates one lane's bin a cycle.
  perf::ProgramPrediction histogram =
      predict("samples/histogram.loop", "histogram", {{"N", 1 << 28}, {"B", 256}});
  const perf::AccessProfile &bins =
      accessOf(histogram, "histogram_kernel0", "H.private", perf::AccessProfile::Kind::Atomic,
               ir::MemorySpace::Shared);
  CHECK(bins.wavefronts == doctest::Approx(bins.activeLanes));
  // Global atomics on 256 bins follow one another on each bin.
  passes::PassChoices global;
  global.skipped = {"privatize_combines"};
  perf::ProgramPrediction atomics =
      predict("samples/histogram.loop", "histogram", {{"N", 1 << 28}, {"B", 256}}, global);
  CHECK(atomics.launches.front().bound == "atomics");
}

TEST_CASE("perf: explain --perf on the command line") {
  auto result = test::runLoopc("explain samples/matmul.loop --perf --set M=1000 --set N=1000 "
                               "--set K=1000");
  CHECK(result.exitCode == 0);
  CHECK(contains(result.output, "// performance model: NVIDIA H100 SXM5 80 GB (HBM3)"));
  // One kernel, compiled for these sizes: 4 x 4 tiles, as a grid of 8 x 8
  // tiles would have 64 blocks for 132 SMs.
  CHECK(contains(result.output, "kernel matmul_kernel0 (7:10)"));
  CHECK(!contains(result.output, "kernel matmul_kernel1"));
  if (codegen::findPtxas())
    CHECK(contains(result.output,
                   "occupancy    2 blocks per SM (16 warps, 25%), limited by registers"));
  else // without ptxas the model says it guessed
    CHECK(contains(result.output, "resources    unknown (no ptxas): 32 registers assumed"));
  CHECK(contains(result.output, "total"));
  auto a100 = test::runLoopc("explain samples/dot.loop --perf --set N=1000000 --device-model a100");
  CHECK(a100.exitCode == 0);
  CHECK(contains(a100.output, "NVIDIA A100 SXM4 80 GB (HBM2e)"));

  // bench prints the prediction beside the measurement.
  auto bench = test::runLoopc("bench samples/dot.loop --set N=100000 --device gpu-on-cpu "
                              "--device-model h100 --repeat 1 --json");
  CHECK(bench.exitCode == 0);
  CHECK(contains(bench.output, "\"device_model\":\"h100\""));
  CHECK(contains(bench.output, "\"predicted_bound\":"));
  CHECK(contains(bench.output, "\"predicted_ms\":"));
  // On the CPU, the CPU's model: a named one, or this machine's; a GPU's
  // name still predicts for that GPU.
  auto cpu = test::runLoopc("bench samples/dot.loop --set N=100000 --device cpu --repeat 1 "
                            "--device-model epyc-2 --json");
  CHECK(cpu.exitCode == 0);
  CHECK(contains(cpu.output, "\"device_model\":\"epyc-2\""));
  CHECK(contains(cpu.output, "\"predicted_ms\":"));
  auto plain = test::runLoopc("bench samples/dot.loop --set N=100000 --device cpu --repeat 1");
  CHECK(plain.exitCode == 0);
  CHECK(contains(plain.output, "on native"));
  CHECK(contains(plain.output, "(loopc explain --perf --target cpu says why)"));
  auto onGpu = test::runLoopc("bench samples/dot.loop --set N=1000 --device cpu --repeat 1 "
                              "--device-model h100");
  CHECK(contains(onGpu.output, "on h100"));
  auto neither =
      test::runLoopc("bench samples/dot.loop --set N=10 --device cpu --device-model z80");
  CHECK(neither.exitCode == 1);
  CHECK(contains(neither.output, "unknown device model 'z80': a GPU (h100, h100-pcie, h200, a100, "
                                 "l4) or a CPU (native, epyc-2, xeon-2)"));

  auto missing = test::runLoopc("explain samples/matmul.loop --perf --set M=100");
  CHECK(missing.exitCode == 1);
  CHECK(contains(missing.output, "explain --perf needs every size of 'matmul': --set K=VALUE"));
  auto unknown = test::runLoopc("explain samples/dot.loop --perf --set N=10 --device-model v100");
  CHECK(unknown.exitCode == 1);
  CHECK(contains(unknown.output, "unknown device model 'v100'"));
}

// What the model must keep reaching on a table of recorded runs: the share of
// rows predicted within 1.5x and within 2x of the measured time, and the
// Spearman rank correlation of each kernel's variants at one size (skipped
// passes, other parameters). The goals are 80% within 1.5x, all within 2x
// and 0.9 for every kernel; docs/perf.md says where the model falls short.
struct CalibrationTargets {
  double shareWithin15 = 0, shareWithin2 = 0;
  double medianCorrelation = 0;
  double worstCorrelation = -1;
};

// Predicts every row of `table` (a tests/perf/*_measured.tsv) for `device` and
// checks the predictions against the measured times.
void checkCalibration(const std::string &table, const perf::GpuDevice &device,
                      const CalibrationTargets &targets) {
  if (!codegen::findPtxas()) {
    MESSAGE("ptxas not found: the calibration needs the registers it reports; skipped");
    return;
  }
  if (!test::haveLibdevice()) {
    MESSAGE("no libdevice: the calibration compiles kernels calling math functions; skipped");
    return;
  }
  struct Row {
    std::string name, group;
    double measured = 0, predicted = 0;
  };
  std::vector<Row> rows;
  for (const test::MeasuredRow &row : test::readMeasuredRows(table)) {
    perf::ProgramPrediction prediction =
        predict(row.file, row.kernel, row.values, row.choices, device);
    rows.push_back({row.name, row.file + " " + row.kernel + " " + row.sizes, row.measuredSeconds,
                    prediction.seconds});
  }
  REQUIRE(rows.size() >= 50);

  size_t within15 = 0, within2 = 0;
  double worst = 1;
  for (const Row &row : rows) {
    double error = std::max(row.predicted / row.measured, row.measured / row.predicted);
    within15 += error <= 1.5 ? 1 : 0;
    within2 += error <= 2.0 ? 1 : 0;
    worst = std::max(worst, error);
    if (error > 1.5)
      MESSAGE(row.name << " (" << row.group << "): measured " << row.measured * 1e3
                       << " ms, predicted " << row.predicted * 1e3 << " ms");
  }
  double share15 = static_cast<double>(within15) / static_cast<double>(rows.size());
  MESSAGE(device.name << ": within 1.5x: " << within15 << " of " << rows.size()
                      << ", within 2x: " << within2 << ", worst " << worst << "x");
  CHECK(share15 >= targets.shareWithin15);
  CHECK(static_cast<double>(within2) / static_cast<double>(rows.size()) >= targets.shareWithin2);

  // The variants of one kernel at one size (skipped passes, other
  // parameters) in the order the GPU ranked them. Rows the compiler makes
  // the same kernel of (the same prediction) are one variant, measured as
  // their mean.
  std::map<std::string, std::map<double, std::vector<double>>> groups;
  for (const Row &row : rows)
    groups[row.group][row.predicted].push_back(row.measured);
  std::vector<double> correlations;
  for (const auto &[group, variants] : groups) {
    if (variants.size() < 3)
      continue;
    std::vector<double> predicted, measured;
    for (const auto &[prediction, times] : variants) {
      predicted.push_back(prediction);
      measured.push_back(std::accumulate(times.begin(), times.end(), 0.0) /
                         static_cast<double>(times.size()));
    }
    double correlation = spearman(predicted, measured);
    MESSAGE("variants of " << group << ": Spearman " << correlation);
    correlations.push_back(correlation);
  }
  REQUIRE(correlations.size() >= 4);
  std::ranges::sort(correlations);
  CHECK(correlations[correlations.size() / 2] >= targets.medianCorrelation);
  CHECK(correlations.front() >= targets.worstCorrelation);
}

TEST_CASE("perf: predictions against the H100 runs in bench/gpu/results") {
  checkCalibration("tests/perf/h100_measured.tsv", h100(),
                   {.shareWithin15 = 0.96,
                    .shareWithin2 = 1.0,
                    .medianCorrelation = 0.9,
                    .worstCorrelation = 0.5});
}

// The H200 table has the grouped copies into shared memory
// (copies_in_flight) and the pipelined stages: the model still predicts the
// pipelined stages of matmul too fast, which puts matmul 1000's two-stage
// variant first where it ran last (a Spearman correlation of -0.5).
// Its rows of matmul's 8 x 8 tiles with pipelined stages measured a kernel of
// one block per SM at up to 255 registers; their options now compile to two
// blocks per SM at 128 (A's stages transposed), predicted 1.5x faster at 2048
// than the old kernel ran (1 row beyond 1.5x until they are measured
// again).
TEST_CASE("perf: predictions against the H200 runs in bench/gpu/results") {
  checkCalibration("tests/perf/h200_measured.tsv", **perf::findGpuDevice("h200"),
                   {.shareWithin15 = 0.83,
                    .shareWithin2 = 0.96,
                    .medianCorrelation = 0.85,
                    .worstCorrelation = -0.5});
}
