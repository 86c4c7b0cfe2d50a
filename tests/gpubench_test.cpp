// The GPU benchmark's scripts (bench/gpu/run.sh, bench/gpu/report.py) are
// meant for a lent GPU machine, where a mistake costs a whole device session.
// These tests check here what can be checked without a GPU: that report.py
// joins loopc results with the peers' figures of the stored H100 run
// (tests/gpubench/h100_2026-11-22.jsonl) into the right ratios, and that
// run.sh's cases still name existing samples, kernels and sizes (it runs them
// all at small sizes on the CPU JIT with SMOKE=1).
#include "TestSupport.h"

#include <doctest/doctest.h>

#include <string>

using namespace loopc::test;

namespace {

// A loopc.tsv line as run.sh writes it, for a GPU result with the given median.
std::string okCase(const std::string &name, const std::string &kernel, const std::string &sets,
                   const std::string &peers, const std::string &sizesJson, double medianMs,
                   double gflops, double gbytesPerS) {
  return name + "\t" + name + ":" + kernel + "\t" + sets + "\t" + peers + "\tok\t3\t" +
         R"({"approximate":false,"device":"gpu","kernel":")" + kernel + R"(","median_ms":)" +
         std::to_string(medianMs) + R"(,"gflops":)" + std::to_string(gflops) +
         R"(,"gbytes_per_s":)" + std::to_string(gbytesPerS) + R"(,"sizes":)" + sizesJson + "}\n";
}

// The table row of `kernel` whose text contains `marker`, or "" when none.
std::string rowWith(const std::string &table, const std::string &kernel,
                    const std::string &marker) {
  size_t start = 0;
  while ((start = table.find("| " + kernel + " |", start)) != std::string::npos) {
    std::string row = table.substr(start, table.find('\n', start) - start);
    if (row.find(marker) != std::string::npos)
      return row;
    start += row.size();
  }
  return "";
}

} // namespace

TEST_CASE("report.py turns peer figures into times and divides them by loopc's") {
  TempDir dir;
  std::string tsv =
      okCase("matmul", "matmul", "M=4096 N=4096 K=4096", "cublas_sgemm,triton_sgemm",
             R"({"M":4096,"N":4096,"K":4096})", 13.94, 9859.0, 14.4) +
      okCase("dot", "dot", "N=268435456", "torch_dot", R"({"N":268435456})", 0.8, 0.7, 2684.0) +
      okCase("sum_and_max", "sum_and_max", "N=268435456", "torch_sum_amax", R"({"N":268435456})",
             0.5, 1.0, 2147.0) +
      okCase("cnn_conv", "cnn_conv_valid", "Ic=64 Oc=64 H=256 W=256 K=3", "cudnn_conv64",
             R"({"Ic":64,"Oc":64,"H":256,"W":256,"K":3})", 1.0, 9500.0, 30.0) +
      okCase("cnn_conv", "cnn_conv_valid", "Ic=64 Oc=64 H=1024 W=1024 K=5", "cudnn_conv64",
             R"({"Ic":64,"Oc":64,"H":1024,"W":1024,"K":5})", 30.0, 9000.0, 30.0) +
      okCase("conv2d_11x11", "conv2d_11x11", "H=8192 W=8192", "cudnn_conv1",
             R"({"H":8192,"W":8192})", 10.0, 1600.0, 53.0) +
      "transpose\ttranspose:transpose\tM=8192 N=8192\ttorch_transpose\ttimeout\t120\tstopped "
      "after 120s\n";
  CommandResult result =
      runShell("python3 bench/gpu/report.py --loopc '" + dir.file("loopc.tsv", tsv) +
               "' --anchors '" + sourcePath("tests/gpubench/h100_2026-11-22.jsonl") +
               "' --device-name H100 --commit abc1234 --date 2026-11-24");
  INFO(result.output);
  REQUIRE(result.exitCode == 0);
  CHECK(result.output.find("commit: abc1234") != std::string::npos);
  CHECK(result.output.find("on NVIDIA H100 80GB HBM3") != std::string::npos);

  // cuBLAS 49.29 TFLOP/s at 4096: 2 * 4096^3 flops in 2.788 ms; 2.788 / 13.94 = 0.20.
  std::string cublas = rowWith(result.output, "matmul", "cuBLAS SGEMM");
  CHECK(cublas.find("| 13.940 |") != std::string::npos);
  CHECK(cublas.find("| 49.29 TFLOP/s | 2.788 | 0.20 |") != std::string::npos);
  // Triton 42.92 TFLOP/s: 3.202 ms; and loopc's 9.86 TFLOP/s is 0.15 of the 66.9 peak.
  std::string triton = rowWith(result.output, "matmul", "Triton");
  CHECK(triton.find("| 42.92 TFLOP/s | 3.202 | 0.23 |") != std::string::npos);
  CHECK(triton.find("| 9.86 TFLOP/s | 0.15 |") != std::string::npos);
  // torch.dot counts 2 * 2^28 * 4 bytes at 2916.7 GB/s: 0.736 ms; loopc's
  // 2684 GB/s is 0.93 of the 2871 GB/s copy.
  CHECK(rowWith(result.output, "dot", "torch.dot").find("| 2684 GB/s | 0.93 |") !=
        std::string::npos);
  CHECK(rowWith(result.output, "dot", "torch.dot").find("| 0.736 | 0.92 |") != std::string::npos);
  // Two torch calls of 2^30 bytes each: 0.371 + 0.375 ms.
  CHECK(rowWith(result.output, "sum_and_max", "torch.sum + torch.amax")
            .find("| 2893 + 2866 GB/s | 0.746 | 1.49 |") != std::string::npos);
  // cuDNN 32.46 TFLOP/s, 2 * 64 * 64 * 9 * 254^2 flops: 0.147 ms.
  CHECK(rowWith(result.output, "cnn_conv", "256").find("| 32.46 TFLOP/s | 0.147 | 0.15 |") !=
        std::string::npos);
  // No peer ran at 1024^2 with a 5x5 filter: the row stays, without a ratio.
  std::string unmatched = rowWith(result.output, "cnn_conv", "1024");
  CHECK(unmatched.find("peer not measured") != std::string::npos);
  CHECK(unmatched.find("| - | - |") != std::string::npos);
  // 3523.9 GFLOP/s for 2 * 121 * 8182^2 flops: 4.597 ms.
  CHECK(rowWith(result.output, "conv2d_11x11", "cuDNN").find("| 3.52 TFLOP/s | 4.597 | 0.46 |") !=
        std::string::npos);
  // A case that did not finish keeps its row and says why below the table.
  CHECK(rowWith(result.output, "transpose", "torch").find("| timeout | - | - |") !=
        std::string::npos);
  CHECK(result.output.find("- transpose (M = 8192, N = 8192): timeout: stopped after 120s") !=
        std::string::npos);
}

TEST_CASE("report.py gives no ratio for a CPU run or for sizes the peer did not use") {
  TempDir dir;
  std::string cpu = okCase("matmul", "matmul", "M=4096 N=4096 K=4096", "cublas_sgemm",
                           R"({"M":4096,"N":4096,"K":4096})", 1000.0, 137.0, 0.2);
  cpu.replace(cpu.find(R"("device":"gpu")"), 14, R"("device":"cpu")");
  std::string tsv =
      cpu + okCase("dot", "dot", "N=1000", "torch_dot", R"({"N":1000})", 0.01, 0.2, 0.8);
  CommandResult result =
      runShell("python3 bench/gpu/report.py --loopc '" + dir.file("loopc.tsv", tsv) +
               "' --anchors '" + sourcePath("tests/gpubench/h100_2026-11-22.jsonl") + "'");
  INFO(result.output);
  REQUIRE(result.exitCode == 0);
  CHECK(rowWith(result.output, "matmul", "cuBLAS").find("| 2.788 | - |") != std::string::npos);
  CHECK(rowWith(result.output, "dot", "torch.dot (peer at N = 2^28)").find("| - | - |") !=
        std::string::npos);
}

TEST_CASE("report.py times a program against the peer's time for the same program") {
  TempDir dir;
  std::string sets = "T=1024 D=768 NH=12 HD=64";
  std::string sizes = R"({"T":1024,"D":768,"NH":12,"HD":64})";
  std::string tsv =
      okCase("attention block", "block", sets, "torch_attention_block", sizes, 1.6, 2000.0, 50.0) +
      okCase("attention block", "block", "T=17 D=48 NH=12 HD=4", "torch_attention_block",
             R"({"T":17,"D":48,"NH":12,"HD":4})", 0.05, 7.0, 1.0);
  std::string anchors =
      readFile(sourcePath("tests/gpubench/h100_2026-11-22.jsonl")) +
      R"json({"kind": "program", "op": "attention block T=1024 D=768 NH=12 HD=64 (torch)", "ms": 0.8})json" +
      "\n";
  CommandResult result =
      runShell("python3 bench/gpu/report.py --loopc '" + dir.file("loopc.tsv", tsv) +
               "' --anchors '" + dir.file("anchors.jsonl", anchors) + "'");
  INFO(result.output);
  REQUIRE(result.exitCode == 0);
  // 0.8 ms against loopc's 1.6: 0.50; at other sizes the row has no ratio.
  CHECK(rowWith(result.output, "attention block", "1024").find("| 0.800 ms | 0.800 | 0.50 |") !=
        std::string::npos);
  CHECK(rowWith(result.output, "attention block", "T = 17").find("(peer at ") != std::string::npos);
  CHECK(rowWith(result.output, "attention block", "T = 17").find("| - | - |") != std::string::npos);
}

TEST_CASE("run.sh's cases all run at small sizes on the CPU JIT") {
  TempDir dir;
  CommandResult result =
      runShell("OUT='" + dir.at("out") + "' DEVICE=cpu SMOKE=1 REPS=1 ANCHORS_JSONL='" +
               sourcePath("tests/gpubench/h100_2026-11-22.jsonl") + "' bench/gpu/run.sh '" +
               loopcBinary() + "'");
  INFO(result.output);
  REQUIRE(result.exitCode == 0);
  std::string tsv = readFile(dir.at("out") + "/bench-gpu/loopc.tsv");
  INFO(tsv);
  size_t cases = 0;
  for (size_t line = 0; line < tsv.size(); line = tsv.find('\n', line) + 1) {
    ++cases;
    CHECK(tsv.find("\tok\t", line) < tsv.find('\n', line));
  }
  CHECK(cases >= 18);
  CHECK(readFile(dir.at("out") + "/bench-gpu/table.md").find("| cnn_conv | Ic = 4") !=
        std::string::npos);
}
