// The loopc command line, run as a user runs it: exit codes and messages of
// `check`, `run` (options, .npy input and output, --check, --repeat),
// `explain` and `compile --emit llvm`, and the errors a user can provoke.
#include "TestSupport.h"

#include "driver/RunCommand.h"
#include "engine/Npy.h"
#include "support/LineDiff.h"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace loopc;
using loopc::test::contains;
using loopc::test::runLoopc;
using loopc::test::TempDir;

namespace {

// Whether LLVM IR text has a `define` line whose function name contains `part`.
bool definesFunctionNaming(const std::string &module, const std::string &part) {
  std::istringstream lines(module);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find('@');
    if (line.starts_with("define ") && at != std::string::npos &&
        line.substr(at, line.find('(', at) - at).find(part) != std::string::npos)
      return true;
  }
  return false;
}

} // namespace

TEST_CASE("check accepts a good file and rejects a bad one with a located message") {
  auto good = runLoopc("check samples/matmul.loop");
  CHECK(good.exitCode == 0);
  CHECK(good.output == "samples/matmul.loop: ok (1 kernel)\n");

  TempDir dir;
  std::string bad = dir.file("bad.loop", "kernel k(x: in f32[N], y: out f32[N]) {\n"
                                         "  parfor i in 0..N { y[i] = x[i] + true; }\n}\n");
  auto result = runLoopc("check " + bad);
  CHECK(result.exitCode == 1);
  CHECK(contains(result.output, bad + ":2:"));
  CHECK(contains(result.output, "error:"));
  CHECK(contains(result.output, "^"));

  auto missing = runLoopc("check no/such/file.loop");
  CHECK(missing.exitCode == 1);
  CHECK(contains(missing.output, "loopc: error: cannot open 'no/such/file.loop'"));
}

TEST_CASE("every subcommand has --help") {
  for (const char *command : {"", "check ", "run "}) {
    auto result = runLoopc(std::string(command) + "--help");
    CAPTURE(command);
    CHECK(result.exitCode == 0);
    CHECK(contains(result.output, "Usage: loopc"));
  }
  CHECK(contains(runLoopc("run --help").output, "--set NAME=VALUE"));
}

TEST_CASE("usage errors are one line and exit with 2") {
  auto none = runLoopc("--seed 1");
  CHECK(none.exitCode == 2);
  CHECK(none.output.starts_with("loopc: error: "));
  CHECK(std::ranges::count(none.output, '\n') == 1);
  auto unknown = runLoopc("run samples/dot.loop --frobnicate");
  CHECK(unknown.exitCode == 2);
  CHECK(contains(unknown.output, "loopc: error: "));
}

TEST_CASE("run prints a summary of every output and the time") {
  auto result = runLoopc("run samples/matmul.loop --set M=4 --set N=3 --set K=5 --device interp");
  CHECK(result.exitCode == 0);
  CHECK(contains(result.output, "C: f32[4][3] sum="));
  CHECK(contains(result.output, "kernel 'matmul' ran on interp in "));
  auto quiet = runLoopc("run samples/matmul.loop --set M=4 --set N=3 --set K=5 --quiet");
  CHECK(quiet.exitCode == 0);
  CHECK(quiet.output.empty());
  auto scalar = runLoopc("run samples/dot.loop --set N=10");
  CHECK(scalar.exitCode == 0);
  CHECK(contains(scalar.output, "r: f32 sum="));
}

TEST_CASE("the same seed gives the same result, another seed another one") {
  auto run = [](const char *seed) {
    auto result = runLoopc(std::string("run samples/dot.loop --set N=100 --seed ") + seed);
    REQUIRE(result.exitCode == 0);
    return result.output.substr(0, result.output.find('\n'));
  };
  CHECK(run("1") == run("1"));
  CHECK(run("1") != run("2"));
}

TEST_CASE("--in and --out read and write .npy files, and --check compares") {
  TempDir dir;
  HostArray x(ScalarType::F32, {4}), y(ScalarType::F32, {4});
  for (size_t i = 0; i < 4; ++i) {
    x.setFromDouble(i, double(i + 1)); // 1 2 3 4
    y.setFromDouble(i, 2);
  }
  REQUIRE(writeNpy(dir.at("x.npy"), x).has_value());
  REQUIRE(writeNpy(dir.at("y.npy"), y).has_value());
  auto result = runLoopc("run samples/dot.loop --in x=" + dir.at("x.npy") +
                         " --in y=" + dir.at("y.npy") + " --out r=" + dir.at("r.npy") + " --check");
  CHECK(result.exitCode == 0);
  CHECK(contains(result.output, "r: f32 sum=20 value: 20"));
  CHECK(contains(result.output, "PASS: 1 output matches the interpreter"));
  auto written = readNpy(dir.at("r.npy"));
  REQUIRE(written.has_value());
  CHECK(written->rank() == 0);
  CHECK(written->getAsDouble(0) == 20);

  auto notOutput = runLoopc("run samples/dot.loop --set N=3 --out x=" + dir.at("bad.npy"));
  CHECK(notOutput.exitCode == 1);
  CHECK(contains(notOutput.output, "'x' is not an out or inout parameter of kernel 'dot'"));
}

TEST_CASE("argument errors name what is wrong") {
  TempDir dir;
  REQUIRE(writeNpy(dir.at("a.npy"), HostArray(ScalarType::F32, {3, 4})).has_value());
  REQUIRE(writeNpy(dir.at("b.npy"), HostArray(ScalarType::F32, {5, 2})).has_value());
  auto mismatch =
      runLoopc("run samples/matmul.loop --in A=" + dir.at("a.npy") + " --in B=" + dir.at("b.npy"));
  CHECK(mismatch.exitCode == 1);
  CHECK(contains(mismatch.output,
                 "samples/matmul.loop:6:42: error: size K is 4 from 'A' (dimension 1) but 5 "
                 "from 'B' (dimension 0)"));

  auto missing = runLoopc("run samples/matmul.loop --set M=2");
  CHECK(missing.exitCode == 1);
  CHECK(contains(missing.output, "loopc: error: cannot infer sizes K, N"));

  std::string malformed = dir.file("junk.npy", std::string("\x93NUMPY\x01\x00\x04\x00{'d}", 14));
  auto junk = runLoopc("run samples/dot.loop --in x=" + malformed);
  CHECK(junk.exitCode == 1);
  CHECK(contains(junk.output, "loopc: error: " + malformed + ": unparsable header"));

  auto huge = runLoopc("run samples/matmul.loop --set M=1000000 --set N=1000000 --set K=1000000");
  CHECK(huge.exitCode == 1);
  CHECK(contains(huge.output, "loopc: error: arrays need 12 TB but the machine has "));

  auto junkValue = runLoopc("run samples/dot.loop --set N=lots");
  CHECK(junkValue.exitCode == 1);
  CHECK(contains(junkValue.output, "invalid value 'lots' for size N"));
  auto noEquals = runLoopc("run samples/dot.loop --set N");
  CHECK(noEquals.exitCode == 1);
  CHECK(contains(noEquals.output, "loopc: error: --set expects NAME=VALUE, got 'N'"));
}

TEST_CASE("unknown kernels and unavailable devices are reported clearly") {
  auto kernel = runLoopc("run samples/dot.loop --kernel nope --set N=3");
  CHECK(kernel.exitCode == 1);
  CHECK(kernel.output == "loopc: error: no kernel named 'nope' (available: dot)\n");
  TempDir dir;
  std::string importer = dir.file("importer.loop", "import reduce;\n");
  auto imported = runLoopc("run " + importer + " --set N=3");
  CHECK(imported.exitCode == 1);
  CHECK(contains(imported.output, "loopc: error: the file defines no kernel of its own; choose an "
                                  "imported one with --kernel (available: "));
  auto device = runLoopc("run samples/dot.loop --set N=3 --device tpu");
  CHECK(device.exitCode == 1);
  CHECK(device.output ==
        "loopc: error: unknown device 'tpu' (choose from gpu, cpu, interp, gpu-on-cpu)\n");
}

TEST_CASE("--device gpu-on-cpu runs the GPU pipeline's kernels on the CPU JIT") {
  auto run = runLoopc("run samples/matmul.loop --set M=70 --set N=33 --set K=45 "
                      "--device gpu-on-cpu --check");
  CHECK(run.exitCode == 0);
  CHECK(contains(run.output, "cpu (GPU kernels)"));
  CHECK(contains(run.output, "PASS"));
  auto cpu = runLoopc("run samples/matmul.loop --set M=7 --set N=3 --set K=5 --device cpu");
  CHECK_FALSE(contains(cpu.output, "GPU kernels"));
}

TEST_CASE("times are printed in milliseconds with three significant digits below 0.1 ms") {
  CHECK(loopc::driver::formatMilliseconds(1.5) == "1500.000");
  CHECK(loopc::driver::formatMilliseconds(0.0001234) == "0.123");
  CHECK(loopc::driver::formatMilliseconds(0.00004123) == "0.0412");
  CHECK(loopc::driver::formatMilliseconds(4.126e-7) == "0.000413");
  CHECK(loopc::driver::formatMilliseconds(0) == "0.000");
}

TEST_CASE("LOOPC_NUM_THREADS sizes the CPU thread pool, a bad value is reported and ignored") {
  const std::string run = "'" + loopc::test::loopcBinary() +
                          "' run samples/matmul.loop --set M=70 --set N=90 --set K=33 --device cpu "
                          "--check";
  for (const char *count : {"1", "3"}) {
    CAPTURE(count);
    auto sized = loopc::test::runShell(std::string("LOOPC_NUM_THREADS=") + count + " " + run);
    CHECK(sized.exitCode == 0);
    CHECK(contains(sized.output, "PASS"));
    CHECK(!contains(sized.output, "LOOPC_NUM_THREADS"));
  }
  for (const char *bad : {"0", "many", "2x", "5000"}) {
    CAPTURE(bad);
    auto ignored = loopc::test::runShell(std::string("LOOPC_NUM_THREADS=") + bad + " " + run);
    CHECK(ignored.exitCode == 0);
    CHECK(contains(ignored.output, std::string("loopc: LOOPC_NUM_THREADS='") + bad +
                                       "' is not a thread count from 1 to 1024; using one "
                                       "thread per core"));
    CHECK(contains(ignored.output, "PASS"));
  }
}

TEST_CASE("run --repeat N reports the median of N runs and rejects a bad N") {
  auto repeated = runLoopc("run samples/dot.loop --set N=100 --device interp --repeat 5");
  CHECK(repeated.exitCode == 0);
  CHECK(contains(repeated.output, "r: f32 sum="));
  CHECK(contains(repeated.output, "kernel 'dot' ran on interp in "));
  CHECK(contains(repeated.output, " ms (median of 5 runs)"));
  auto once = runLoopc("run samples/dot.loop --set N=100 --device interp");
  CHECK(!contains(once.output, "median"));
  for (const char *bad : {"0", "-3", "lots"}) {
    CAPTURE(bad);
    auto rejected = runLoopc(std::string("run samples/dot.loop --set N=100 --repeat ") + bad);
    CHECK(rejected.exitCode == 2);
    CHECK(contains(rejected.output, "loopc: error: --repeat"));
    CHECK(contains(rejected.output, bad));
    CHECK(!contains(rejected.output, "ran on"));
  }
}

TEST_CASE("explain prints the IR after every pass, or after the one named") {
  auto all = runLoopc("explain samples/matmul.loop");
  CHECK(all.exitCode == 0);
  for (const char *pass : {"lower", "simplify", "map_rows_to_blocks", "map_to_gpu",
                           "lower_reductions", "tile_registers", "stage_shared", "extract_kernels"})
    CHECK(contains(all.output, std::string("// after ") + pass + "\n"));
  auto lowered = runLoopc("explain samples/matmul.loop --after lower");
  CHECK(lowered.exitCode == 0);
  CHECK(lowered.output.starts_with("// after lower\nfunc matmul("));
  CHECK(contains(lowered.output, "parallel for i in [0, M)"));
  CHECK(contains(lowered.output, "reduce acc += from 0.0 over k in [0, K): A[i][k] * B[k][j]"));
  CHECK(!contains(lowered.output, "// after simplify"));
  auto mapped = runLoopc("explain samples/matmul.loop --after map_to_gpu");
  CHECK(mapped.exitCode == 0);
  CHECK(contains(mapped.output, "gpu_thread.x for"));
  CHECK(!contains(mapped.output, "// after lower\n"));

  auto unknown = runLoopc("explain samples/matmul.loop --after tile_everything");
  CHECK(unknown.exitCode == 1);
  CHECK(contains(
      unknown.output,
      "loopc: error: no pass named 'tile_everything'; the passes are: "
      "lower, lower_scans, specialize_sizes, simplify, drop_overwritten_fills, fuse_producers, "
      "partition_borders, split_reductions, map_rows_to_blocks, privatize_combines, "
      "map_to_gpu, unroll_around_reductions, fuse_sibling_reductions, "
      "lower_reductions, combine_in_warps, "
      "tile_registers, stage_shared, globalize_private_arrays, drop_untaken_branches, "
      "extract_kernels"));
}

TEST_CASE("explain --changes prints what each pass changed as a diff") {
  // The lines lower_reductions replaced and added, with two lines of
  // context; a pass that changed nothing says so.
  auto reductions = runLoopc("explain samples/dot.loop --changes --after lower_reductions");
  CHECK(reductions.exitCode == 0);
  CHECK(reductions.output.starts_with("// changes by lower_reductions\n@@ -2,5 +2,"));
  CHECK(contains(reductions.output,
                 "\n   acc = 0.0\n-  reduce acc += from 0.0 over i in [0, N): x[i] * y[i]\n+"
                 "  let red0.grid = "));
  CHECK(!contains(reductions.output, "func dot("));
  auto unchanged = runLoopc("explain samples/dot.loop --changes --after fuse_producers");
  CHECK(unchanged.output == "// changes by fuse_producers: none\n");
  auto all = runLoopc("explain samples/matmul.loop --changes");
  CHECK(all.exitCode == 0);
  CHECK(contains(all.output, "// changes by tile_registers\n@@ "));
  CHECK(contains(all.output, "// changes by drop_overwritten_fills: none\n"));
  CHECK(runLoopc("explain samples/dot.loop --changes --remarks").exitCode != 0);
}

TEST_CASE("--fp-contract off rounds each product before the sum, on every command") {
  test::TempDir dir;
  std::string file = dir.file(
      "mad.loop", "kernel mad(a: f32, b: f32, c: f32, s: out f32) {\n  s = a * b + c;\n}\n");
  std::string sizes = " --set a=1.000244140625 --set b=1.000244140625 --set c=-1.00048828125";
  for (const char *device : {"interp", "cpu", "gpu-on-cpu"}) {
    CAPTURE(device);
    auto fused = runLoopc("run " + file + sizes + " --device " + device);
    CHECK(contains(fused.output, "s: f32 sum=5.960464e-08 value: 5.960464e-08"));
    std::string check = std::string(device) == "interp" ? "" : " --check";
    auto rounded =
        runLoopc("run " + file + sizes + " --fp-contract off" + check + " --device " + device);
    CHECK(rounded.exitCode == 0);
    CHECK(contains(rounded.output, "s: f32 sum=0 value: 0"));
  }
  std::string vector =
      dir.file("madv.loop", "kernel madv(a: in f32[N], s: out f32[N]) {\n"
                            "  parfor i in 0..N { s[i] = a[i] * a[i] + 1.0; }\n}\n");
  auto unfusedPtx = runLoopc("compile " + vector + " --emit ptx --fp-contract off -o -");
  CHECK(contains(unfusedPtx.output, "mul.rn.f32"));
  CHECK(!contains(unfusedPtx.output, "fma.rn.f32"));
  CHECK(contains(runLoopc("compile " + vector + " --emit ptx -o -").output, "fma.rn.f32"));
  CHECK(contains(runLoopc("explain " + file + " --after lower --fp-contract off").output,
                 "s = f32(a * b) + c"));
  auto refused = runLoopc("run " + file + sizes + " --fp-contract fast");
  CHECK(refused.exitCode != 0);
  CHECK(contains(refused.output, "--fp-contract: fast not in {on,off}"));
}

TEST_CASE("line diffs: hunks with context, merged when close, ranges as diff writes them") {
  CHECK(unifiedLineDiff("a\nb\nc\n", "a\nb\nc\n").empty());
  CHECK(unifiedLineDiff("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nD\ne\nf\ng\nh\n") ==
        "@@ -2,5 +2,5 @@\n b\n c\n-d\n+D\n e\n f\n");
  // Insertions at the start and at the end; a deletion of everything.
  CHECK(unifiedLineDiff("b\n", "a\nb\nc\n") == "@@ -1,1 +1,3 @@\n+a\n b\n+c\n");
  CHECK(unifiedLineDiff("a\nb\n", "") == "@@ -1,2 +0,0 @@\n-a\n-b\n");
  // Two changes five lines apart (more than twice the context): two hunks.
  std::string before = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
  CHECK(unifiedLineDiff(before, "x\n2\n3\n4\n5\n6\n7\n8\ny\n") ==
        "@@ -1,3 +1,3 @@\n-1\n+x\n 2\n 3\n@@ -7,3 +7,3 @@\n 7\n 8\n-9\n+y\n");
  // Three lines apart: one hunk.
  CHECK(unifiedLineDiff(before, "1\n2\nx\n4\n5\ny\n7\n8\n9\n") ==
        "@@ -1,8 +1,8 @@\n 1\n 2\n-3\n+x\n 4\n 5\n-6\n+y\n 7\n 8\n");
}

TEST_CASE("skipping passes: an optimization can be left out, a pass the program needs cannot") {
  auto explained = runLoopc("explain samples/matmul.loop --skip-pass tile_registers");
  CHECK(explained.exitCode == 0);
  CHECK(contains(explained.output, "// after lower_reductions\n"));
  CHECK(!contains(explained.output, "// after tile_registers\n"));
  auto untiled =
      runLoopc("compile samples/matmul.loop --emit llvm --target gpu --no-opt --skip-pass "
               "tile_registers");
  CHECK(untiled.exitCode == 0);
  CHECK(contains(untiled.output, "define"));
  CHECK(!contains(untiled.output, "acc.x3y3"));
  auto checked = runLoopc("run samples/matmul.loop --device cpu --skip-pass tile_registers "
                          "--set M=9 --set N=9 --set K=9 --check");
  CHECK(checked.exitCode == 0);
  for (const char *command : {"explain samples/matmul.loop --skip-pass map_to_gpu",
                              "run samples/matmul.loop --device cpu --skip-pass simplify "
                              "--set M=9 --set N=9 --set K=9"}) {
    CAPTURE(command);
    auto refused = runLoopc(command);
    CHECK(refused.exitCode == 1);
    CHECK(contains(refused.output, "loopc: error: cannot skip pass '"));
    CHECK(contains(
        refused.output,
        "': the passes that can be skipped are specialize_sizes, drop_overwritten_fills, "
        "fuse_producers, fuse_with_lag, hoist_independent_parfors, partition_borders, "
        "split_reductions, "
        "map_rows_to_blocks, "
        "privatize_combines, transpose_column_reads, jam_serial_chains, interchange_column_walks, "
        "promote_invariant_elements, "
        "unroll_around_reductions, "
        "fuse_sibling_reductions, "
        "interleave_reductions, "
        "combine_in_warps, tile_registers, stage_shared"));
  }
}

TEST_CASE("pass parameters size the optimizations, and bad names and values are refused") {
  auto wide =
      runLoopc("explain samples/matmul.loop --after stage_shared --pass-param "
               "register_tile=8 --pass-param stage_length=16 --pass-param pipeline_depth=1");
  CHECK(wide.exitCode == 0);
  CHECK(contains(wide.output, "register f32 acc.x7y7"));
  CHECK(contains(wide.output, "shared f32 A.shared[16][68]")); // 64 rows by 16 k, transposed
  CHECK(contains(wide.output, "shared f32 B.shared[16][256]"));
  CHECK(contains(wide.output, "for k.stage in [0, max((K + 15) / 16, 0)) {"));
  // A budget too small for any box stages nothing.
  auto tight =
      runLoopc("explain samples/matmul.loop --after stage_shared --pass-param shared_kib=1");
  CHECK(tight.exitCode == 0);
  CHECK(!contains(tight.output, "shared f32"));
  auto checked = runLoopc("run samples/matmul.loop --device cpu --set M=70 --set N=300 --set K=45 "
                          "--check --pass-param register_tile=2");
  CHECK(checked.exitCode == 0);
  for (const char *parameter : {"register_tile=3", "register_tile=16", "stage_length=x",
                                "shared_kib=49", "stage_min_reuse=1", "tile=4", "register_tile"}) {
    CAPTURE(parameter);
    for (const char *command : {"explain samples/matmul.loop", "compile samples/matmul.loop",
                                "run samples/matmul.loop --device cpu --set M=2 --set N=2 --set "
                                "K=2"}) {
      CAPTURE(command);
      auto refused = runLoopc(std::string(command) + " --pass-param " + parameter);
      CHECK(refused.exitCode == 1);
      CHECK(contains(refused.output, "pass parameter"));
      CHECK(contains(refused.output,
                     "register_tile (1 to 8, a power of two; 0: by the grid's size), stage_length "
                     "(4 to 64), shared_kib (1 to 48), stage_min_reuse (2 to 256)"));
    }
  }
}

TEST_CASE("explain --set shows a kernel specialized for small sizes, as the GPU engine runs it") {
  auto specialized =
      runLoopc("explain samples/cnn_conv.loop --kernel cnn_conv_valid --set K=3 --set Ic=64 "
               "--pass-param pipeline_depth=1");
  CHECK(specialized.exitCode == 0);
  CHECK(contains(specialized.output,
                 "reduce acc += from 0.0 over c in [0, Ic), u in [0, 3), v in [0, 3)"));
  CHECK(contains(specialized.output, "shared f32 I.shared[4][6][132]"));
  auto generic = runLoopc("explain samples/cnn_conv.loop --kernel cnn_conv_valid --set K=17");
  CHECK(generic.exitCode == 0);
  CHECK(contains(generic.output, "u in [0, K), v in [0, K)"));
  CHECK(!contains(generic.output, "shared f32"));
  for (const char *bad : {"K=x", "Q=3", "K"}) {
    CAPTURE(bad);
    auto refused =
        runLoopc(std::string("explain samples/cnn_conv.loop --kernel cnn_conv_valid --set ") + bad);
    CHECK(refused.exitCode == 1);
    CHECK(contains(refused.output, "--set"));
  }
  // A name that is no size says so, listing the sizes.
  auto unknown =
      runLoopc("explain samples/cnn_conv.loop --kernel cnn_conv_valid --set Q=3 --after simplify");
  CHECK(contains(unknown.output, "kernel 'cnn_conv_valid' has no size named 'Q'"));
  CHECK(contains(unknown.output, "it has "));
}

TEST_CASE("explain --remarks prints what the optimizations did, located, instead of the IR") {
  // (The 4 x 4 tiles alone; by default an 8 x 8 variant too: remarks_test.)
  auto remarks = runLoopc("explain samples/matmul.loop --remarks --pass-param register_tile=4");
  CHECK(remarks.exitCode == 0);
  const std::string tiles =
      "samples/matmul.loop:7:10: remark: tile_registers: 4 x 4 points per thread along j (grid x) "
      "and i (grid y); j (grid x) copies 4 consecutive points a thread (its reads of shared "
      "memory 128-bit, contiguous across a warp)\n"
      "  parfor i in 0..M, j in 0..N {\n"
      "         ^~~~~~~~~\n";
  CHECK(remarks.output ==
        tiles +
            "samples/matmul.loop:8:15: remark: stage_shared: the stages of k pipelined 2 deep: "
            "async copies (cp.async) into 2 buffers per box, each stage's issued 1 stage ahead of "
            "its compute\n"
            "    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];\n"
            "              ^~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
            "samples/matmul.loop:8:42: remark: stage_shared: 'A' staged in shared memory: a box "
            "of 32 x 16 f32 (2 KiB) for stages of 16 iterations of k; each element is read 128 "
            "times per iteration of k\n"
            "    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];\n"
            "                                         ^~~~~~~\n"
            "samples/matmul.loop:8:52: remark: stage_shared: 'B' staged in shared memory: a box "
            "of 16 x 128 f32 (8 KiB) for stages of 16 iterations of k; each element is read 32 "
            "times per iteration of k\n"
            "    C[i][j] = redomap(+, 0.0, k in 0..K) A[i][k] * B[k][j];\n"
            "                                                   ^~~~~~~\n");
  // --after keeps one pass's; the CPU pipeline has none for sqdist (each
  // thread walks a row of its own).
  CHECK(runLoopc("explain samples/matmul.loop --remarks --after tile_registers --pass-param "
                 "register_tile=4")
            .output == tiles);
  CHECK(runLoopc("explain samples/sqdist.loop --remarks --target cpu").output ==
        "no remarks for kernel 'sqdist'\n");
  // Warnings read as warnings.
  CHECK(contains(runLoopc("explain samples/gauss.loop --remarks --after map_to_gpu").output,
                 "samples/gauss.loop:17:7: warning: map_to_gpu: 'L' is written uncoalesced: "));
  // A pass --after cannot name is refused as without --remarks.
  auto unknown = runLoopc("explain samples/matmul.loop --remarks --after stage_everything");
  CHECK(unknown.exitCode == 1);
  CHECK(
      contains(unknown.output, "loopc: error: no pass named 'stage_everything'; the passes are: "));
  auto leftOut =
      runLoopc("explain samples/matmul.loop --remarks --target cpu --after stage_shared");
  CHECK(leftOut.exitCode == 1);
  CHECK(contains(leftOut.output, "pass 'stage_shared' is not run with --target cpu"));
}

TEST_CASE("run and bench --remarks print the device's remarks to stderr before running") {
  auto run =
      runLoopc("run samples/conv2d_5x5.loop --set H=40 --set W=40 --device gpu-on-cpu --remarks");
  CHECK(run.exitCode == 0);
  size_t remark = run.output.find("samples/conv2d_5x5.loop:10:53: remark: stage_shared: 'I' not "
                                  "staged: each element is read 4.4 times per iteration of u");
  size_t ran = run.output.find("kernel 'conv2d_5x5' ran on cpu (GPU kernels)");
  CHECK(remark != std::string::npos);
  CHECK(ran != std::string::npos);
  CHECK(remark < ran);
  // At the run's sizes: W is known, and too large to compile as a constant.
  CHECK(contains(run.output, "remark: specialize_sizes: W = 40 stays a run-time value"));
  // On stderr: the results alone on stdout.
  auto quiet = test::runShell("{ '" + test::loopcBinary() +
                              "' run samples/conv2d_5x5.loop --set H=40 --set W=40 --device "
                              "gpu-on-cpu --remarks 2>/dev/null; }");
  CHECK(quiet.exitCode == 0);
  CHECK(!contains(quiet.output, "remark:"));
  CHECK(contains(quiet.output, "kernel 'conv2d_5x5' ran"));
  // The CPU's pipeline on the CPU; none on the interpreter.
  auto cpu = runLoopc("bench samples/softmax.loop --set R=4 --set C=300 --device cpu --repeat 1 "
                      "--remarks");
  CHECK(cpu.exitCode == 0);
  CHECK(contains(cpu.output, "samples/softmax.loop:11:13: remark: interleave_reductions: the fold "
                             "(max) runs in 64 f32 lanes"));
  CHECK(!contains(cpu.output, "tile_registers"));
  CHECK(contains(cpu.output, "kernel 'softmax' on cpu: median "));
  auto interpreted = runLoopc("run samples/dot.loop --set N=10 --device interp --remarks");
  CHECK(interpreted.exitCode == 0);
  CHECK(contains(interpreted.output,
                 "loopc: note: --remarks: the interp engine runs no optimization passes\n"));
}

TEST_CASE("hoist_independent_parfors under --bounds-check: hoisted where every index is proven") {
  // Hoisted, a later step of one point could report its index out of range
  // before an earlier step of another: a loop whose accesses are not all
  // proven in range keeps its order, so the program's first error stays
  // first; trmm's are all proven, and it is hoisted either way.
  const char *explain = "explain tests/programs/polybench/trmm.loop --kernel trmm --target cpu "
                        "--after hoist_independent_parfors";
  for (const char *checks : {"", " --bounds-check"}) {
    CAPTURE(checks);
    auto hoisted = runLoopc(std::string(explain) + checks);
    CHECK(hoisted.exitCode == 0);
    CHECK(contains(hoisted.output, "  parallel for j in [0, N) {\n    for i in [0, M) {\n"));
  }
  TempDir dir;
  std::string shift = dir.file("shift.loop", "kernel shift(steps: i32, x: in f32[N], y: inout "
                                             "f32[N], k: i64) {\n"
                                             "  for t in 0..steps {\n"
                                             "    parfor i in 0..N {\n"
                                             "      y[i] = y[i] + x[(i + k) % N];\n"
                                             "    }\n"
                                             "  }\n"
                                             "}\n");
  auto kept = runLoopc("explain " + shift + " --target cpu --bounds-check --remarks");
  CHECK(kept.exitCode == 0);
  CHECK(contains(kept.output, "remark: bounds_checks: index (i + k) % N of 'x' (dimension 0) "
                              "checked at run time: not proven within [0, N)"));
  auto order =
      runLoopc("explain " + shift + " --target cpu --bounds-check --after extract_kernels");
  CHECK(contains(order.output, "  for t in [0, steps) {\n"));
}

TEST_CASE("the CPU pipeline tiles registers its own way: explain and compile follow --target") {
  auto cpu = runLoopc("explain samples/matmul.loop --target cpu --after tile_everything");
  CHECK(cpu.exitCode == 1);
  CHECK(contains(cpu.output,
                 "the passes are: lower, lower_scans, simplify, drop_overwritten_fills, "
                 "fuse_producers, fuse_with_lag, hoist_independent_parfors, partition_borders, "
                 "split_reductions, "
                 "privatize_combines, "
                 "transpose_column_reads, jam_serial_chains, interchange_column_walks, "
                 "promote_invariant_elements, map_to_gpu, "
                 "unroll_around_reductions, fuse_sibling_reductions, lower_reductions, "
                 "interleave_reductions, tile_registers, "
                 "drop_untaken_branches, extract_kernels"));
  // matmul: a GPU thread computes 4 x 4 points; a CPU thread one, its x the
  // vector lanes, since no window slides along y.
  auto gpuIr = runLoopc("compile samples/matmul.loop --emit llvm --target gpu --no-opt");
  CHECK(gpuIr.exitCode == 0);
  CHECK(contains(gpuIr.output, "acc.x3y3"));
  auto cpuIr = runLoopc("compile samples/matmul.loop --emit llvm --target cpu --no-opt");
  CHECK(cpuIr.exitCode == 0);
  CHECK(contains(cpuIr.output, "define"));
  CHECK(!contains(cpuIr.output, "acc.x"));
  CHECK(!contains(cpuIr.output, "acc.y"));
  // conv2d_5x5: two rows a CPU thread, whose windows overlap.
  auto conv = runLoopc("compile samples/conv2d_5x5.loop --emit llvm --target cpu --no-opt");
  CHECK(conv.exitCode == 0);
  CHECK(contains(conv.output, "acc.y1"));
  CHECK(!contains(conv.output, "acc.y2"));
}

TEST_CASE("compile --emit llvm prints a module defining the kernel") {
  auto result = runLoopc("compile samples/matmul.loop --emit llvm");
  CHECK(result.exitCode == 0);
  CHECK(contains(result.output, "; ModuleID = 'matmul'"));
  CHECK(definesFunctionNaming(result.output, "matmul"));
  CHECK(contains(result.output, "fmul"));
  auto other = runLoopc("compile stdlib/linalg.loop --kernel axpy --emit llvm");
  CHECK(other.exitCode == 0);
  CHECK(definesFunctionNaming(other.output, "axpy"));
  CHECK(!definesFunctionNaming(other.output, "gemm"));
}

TEST_CASE("compile --emit header and object embed every kernel of the file, or the one named") {
  TempDir dir;
  auto header = runLoopc("compile samples/histogram.loop --emit header -o " + dir.at("h.h"));
  REQUIRE(header.exitCode == 0);
  std::ifstream headerFile(dir.at("h.h"));
  std::string text((std::istreambuf_iterator<char>(headerFile)), std::istreambuf_iterator<char>());
  CHECK(contains(text, "#ifndef LOOPC_H_"));
  CHECK(contains(text, "loopc_status bin_stats(const int32_t *keys, const float *values, float "
                       "*sum, float *largest, int64_t N, int64_t B);"));
  CHECK(contains(text, "loopc_status histogram(const float *x, float lo, float hi, int32_t *H, "
                       "int64_t N, int64_t B);"));
  CHECK(contains(text, " *   largest: inout f32[B]"));
  auto one = runLoopc("compile samples/histogram.loop --emit header --kernel histogram");
  CHECK(one.exitCode == 0);
  CHECK(contains(one.output, "#ifndef LOOPC_HISTOGRAM_"));
  CHECK(!contains(one.output, "bin_stats"));
  // The guard names the functions: headers of one name from two folders
  // (or two kernels' choices) can be included together.
  auto other = runLoopc("compile samples/histogram.loop --emit header --kernel bin_stats");
  std::string guardOf = one.output.substr(one.output.find("#ifndef "), 30);
  CHECK(!contains(other.output, guardOf));
  // Several kernels by repeating --kernel (loopc_add_kernels' KERNELS).
  auto two = runLoopc("compile samples/histogram.loop --emit header --kernel histogram --kernel "
                      "bin_stats");
  CHECK(two.exitCode == 0);
  CHECK(contains(two.output, "loopc_status histogram("));
  CHECK(contains(two.output, "loopc_status bin_stats("));
  auto twoPtx = runLoopc("compile samples/histogram.loop --emit ptx --kernel histogram --kernel "
                         "bin_stats");
  CHECK(twoPtx.exitCode == 2);
  CHECK(contains(twoPtx.output, "--emit ptx compiles one kernel"));

  auto object = runLoopc("compile samples/histogram.loop --emit object --cpu x86-64-v2 -o " +
                         dir.at("h.o") + " --depfile " + dir.at("h.d"));
  REQUIRE(object.exitCode == 0);
  auto symbols = test::runShell("nm " + dir.at("h.o"));
  CHECK(contains(symbols.output, " T bin_stats"));
  CHECK(contains(symbols.output, " T histogram"));
  CHECK(contains(symbols.output, " U loopc_cpu_launch_kernel"));
  CHECK(!contains(symbols.output, " T loopc_main")); // the code behind them is internal
  std::ifstream depfile(dir.at("h.d"));
  std::string rule((std::istreambuf_iterator<char>(depfile)), std::istreambuf_iterator<char>());
  CHECK(rule == dir.at("h.o") + ": samples/histogram.loop\n");

  auto noOutput = runLoopc("compile samples/histogram.loop --emit object");
  CHECK(noOutput.exitCode == 1);
  CHECK(contains(noOutput.output, "--emit object writes a binary file: give it with -o FILE"));
  auto gpu =
      runLoopc("compile samples/histogram.loop --emit object --target gpu -o " + dir.at("g.o"));
  CHECK(gpu.exitCode == 1);
  CHECK(
      contains(gpu.output,
               "--emit object embeds CPU code, and GPU code with --gpu: it takes no --target gpu"));
  auto cpu =
      runLoopc("compile samples/histogram.loop --emit object --cpu pentium9 -o " + dir.at("p.o"));
  CHECK(cpu.exitCode == 1);
  CHECK(contains(cpu.output, "unknown CPU 'pentium9'"));
  CHECK(!contains(cpu.output, "is not a recognized processor")); // LLVM's own warning
  std::string reserved = dir.file("main.loop", "kernel main(x: in f32[N], int: out f32[N]) {\n"
                                               "  parfor i in 0..N { int[i] = x[i]; }\n}\n");
  auto unprefixed = runLoopc("compile " + reserved + " --emit header");
  CHECK(unprefixed.exitCode == 1);
  CHECK(contains(unprefixed.output, "main.loop:1:8: error: kernel 'main' cannot be a C function "
                                    "named 'main' (a C or C++ keyword, or main): give it a "
                                    "--prefix"));
  auto prefixed = runLoopc("compile " + reserved + " --emit header --prefix lib_");
  CHECK(prefixed.exitCode == 0);
  CHECK(
      contains(prefixed.output, "loopc_status lib_main(const float *x, float *int_, int64_t N);"));
  // A C library function the program (and the object itself) calls, and
  // parameter names the header uses, are not taken.
  std::string libc = dir.file("libc.loop", "kernel memset(y: out f32[N], int64_t: f32, NULL: f32) "
                                           "{ parfor i in 0..N { y[i] = int64_t + NULL; } }\n");
  auto clash = runLoopc("compile " + libc + " --emit header");
  CHECK(clash.exitCode == 1);
  CHECK(contains(clash.output, "kernel 'memset' cannot be a C function named 'memset' (a name "
                               "of the C library"));
  auto renamed = runLoopc("compile " + libc + " --emit header --prefix my_");
  CHECK(contains(renamed.output,
                 "loopc_status my_memset(float *y, float int64_t_, float NULL_, int64_t N);"));
  // From a bug hunt: any function of the C library (pthread_create made the
  // runtime's thread pool call the kernel, forever), C++'s alternative
  // tokens, the implementation's names and standard macros.
  std::string threads =
      dir.file("threads.loop", "kernel pthread_create(y: out f32[N], bitand: f32, _Bool: f32, "
                               "EOF: f32) { parfor i in 0..N { y[i] = bitand + _Bool + EOF; } }\n");
  auto pool = runLoopc("compile " + threads + " --emit header");
  CHECK(pool.exitCode == 1);
  CHECK(contains(pool.output, "kernel 'pthread_create' cannot be a C function named "
                              "'pthread_create' (a name of the C library"));
  auto escaped = runLoopc("compile " + threads + " --emit header --prefix my_");
  CHECK(contains(escaped.output, "loopc_status my_pthread_create(float *y, float bitand_, float "
                                 "_Bool_, float EOF_, int64_t N);"));
  auto badPrefix = runLoopc("compile " + reserved + " --emit header --prefix 9");
  CHECK(contains(badPrefix.output, "'9main' is not a C identifier"));
  auto depfileAlone =
      runLoopc("compile samples/histogram.loop --emit header --depfile " + dir.at("x.d"));
  CHECK(depfileAlone.exitCode == 1);
  CHECK(contains(depfileAlone.output, "--depfile needs an output file (-o FILE)"));
}

TEST_CASE("compile --emit header renames parameters that standard headers or GCC define, uniquely, "
          "and refuses such kernel names") {
  // From a bug hunt: macros of <inttypes.h> and other standard headers,
  // GCC's predefined `linux` and `unix`, and a renamed name that was already
  // another parameter's (NULL_ beside NULL, int_ beside int).
  TempDir dir;
  std::string names = dir.file(
      "names.loop", "kernel k(NULL_: in f32[NULL], int_: f32, int: f32, PRId64: f32, linux: f32, "
                    "unix: f32, i386: f32, EINVAL: f32, SIGINT: f32, M_PI: f32, si_pid: f32, "
                    "WEOF: f32, INT_FAST8_MAX: f32, y: out f32[NULL][SCNd32]) {\n"
                    "  parfor i in 0..NULL, j in 0..SCNd32 { y[i][j] = NULL_[i] + int_ + int + "
                    "PRId64 + linux + unix + i386 + EINVAL + SIGINT + M_PI + si_pid + WEOF + "
                    "INT_FAST8_MAX; }\n}\n");
  auto header = runLoopc("compile " + names + " --emit header -o " + dir.at("names.h"));
  REQUIRE(header.exitCode == 0);
  CHECK(contains(test::readFile(dir.at("names.h")),
                 "loopc_status k(const float *NULL_, float int_, float int_2, float PRId64_, float "
                 "linux_, float unix_, float i386_, float EINVAL_, float SIGINT_, float M_PI_, "
                 "float si_pid_, float WEOF_, float INT_FAST8_MAX_, float *y, int64_t NULL_2, "
                 "int64_t SCNd32_);"));
  // The header compiles after every standard header, as C11, GNU C and C++.
  std::string includes;
  for (const char *name :
       {"assert", "complex", "errno",  "fenv",   "float",  "inttypes",  "limits",
        "locale", "math",    "setjmp", "signal", "stdarg", "stdatomic", "stddef",
        "stdint", "stdio",   "stdlib", "string", "time",   "wchar",     "wctype"})
    includes += std::string("#include <") + name + ".h>\n";
  std::string program = dir.file("main.c", includes + "#include \"names.h\"\n");
  std::string include = " -fsyntax-only -I" + test::sourcePath("runtime/include") + " ";
  for (const char *compiler : {"gcc -std=c11", "gcc", "g++ -x c++"}) {
    auto compiled = test::runShell(compiler + include + program);
    CAPTURE(compiler);
    CHECK(compiled.output == "");
    CHECK(compiled.exitCode == 0);
  }
  // Kernel names: functions glibc links statically (atexit), and macros.
  for (const char *kernel : {"atexit", "at_quick_exit", "alloca", "sigsetjmp", "signbit", "PRId64",
                             "linux", "va_start", "EINVAL"}) {
    std::string source =
        dir.file(std::string(kernel) + ".loop", std::string("kernel ") + kernel +
                                                    "(x: in f32[N], y: out f32[N]) {\n"
                                                    "  parfor i in 0..N { y[i] = x[i]; }\n}\n");
    auto refused = runLoopc("compile " + source + " --emit header");
    CAPTURE(kernel);
    CHECK(refused.exitCode == 1);
    CHECK(contains(refused.output, "cannot be a C function named '" + std::string(kernel) + "'"));
    CHECK(runLoopc("compile " + source + " --emit header --prefix my_").exitCode == 0);
  }
}

TEST_CASE("tune on the CPU times candidates in the model's order and leaves out its clear losers") {
  // covariance without interchange_column_walks walks columns: the CPU
  // model predicts it tens of times slower, so it is never timed.
  TempDir dir;
  std::string cache = dir.at("tuning.json");
  auto tuned = runLoopc("tune tests/programs/polybench/covariance.loop --kernel covariance"
                        " --set M=120 --set N=140 --device cpu --repeat 1 --tuning-cache " +
                        cache);
  REQUIRE(tuned.exitCode == 0);
  CHECK(contains(tuned.output, "  the defaults: "));
  CHECK(contains(tuned.output, " ms (predicted "));
  CHECK(contains(tuned.output, "  skipping interchange_column_walks: predicted "));
  CHECK(contains(tuned.output, "x the best's "));
  CHECK(contains(tuned.output, " ms: not timed\n"));
  // The cache keeps the prediction of the candidate left out, with no time.
  std::ifstream file(cache);
  nlohmann::json entry = nlohmann::json::parse(file)["entries"][0];
  bool leftOut = false;
  for (const nlohmann::json &candidate : entry["candidates"])
    if (candidate["choices"] == "skipping interchange_column_walks")
      leftOut = candidate["predicted_ms"].is_number() && candidate["measured_ms"].is_null();
  CHECK(leftOut);
}

TEST_CASE(
    "tune keeps the fastest choices per kernel, sizes and device, and run --tuned uses them") {
  TempDir dir;
  std::string cache = dir.at("tuning.json");
  const std::string sizes = " --set N=20000 --set B=64 --set lo=-1 --set hi=1 --device cpu";
  auto tuned = runLoopc("tune samples/histogram.loop --kernel histogram" + sizes +
                        " --repeat 1 --tuning-cache " + cache);
  REQUIRE(tuned.exitCode == 0);
  CHECK(contains(tuned.output, "tuning kernel 'histogram' on cpu: "));
  CHECK(contains(tuned.output, "  the defaults: "));
  CHECK(contains(tuned.output, "  skipping privatize_combines: "));
  // The CPU's register tiles are not sized by register_tile: tune does not
  // try it.
  CHECK(!contains(tuned.output, "register_tile"));
  CHECK(contains(tuned.output, "  shared_kib=8"));
  CHECK(contains(tuned.output, "tuned kernel 'histogram' on cpu: "));
  std::ifstream file(cache);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  CHECK(contains(text, "\"kernel\": \"histogram\""));
  CHECK(contains(text, "\"B\": 64"));

  auto used = runLoopc("run samples/histogram.loop --kernel histogram" + sizes +
                       " --tuned --tuning-cache " + cache);
  CHECK(used.exitCode == 0);
  CHECK(contains(used.output, "loopc: using the tuned choices in " + cache + ": "));
  // From a bug hunt: gpu-on-cpu found the CPU's entry (its key names the same
  // CPU), then failed on its own name, "unknown device 'cpu (GPU kernels)'".
  // Nothing is tuned for it, and both commands say so with the name given.
  for (const char *command : {"run", "tune"}) {
    CAPTURE(command);
    auto onCpuKernels =
        runLoopc(std::string(command) +
                 " samples/histogram.loop --kernel histogram --set N=20000 "
                 "--set B=64 --set lo=-1 --set hi=1 --device gpu-on-cpu" +
                 (std::string(command) == "run" ? " --tuned" : "") + " --tuning-cache " + cache);
    CHECK(onCpuKernels.exitCode == 1);
    CHECK(contains(onCpuKernels.output, "on device 'gpu-on-cpu'"));
  }
  auto otherSizes = runLoopc("bench samples/histogram.loop --kernel histogram --set N=20001 "
                             "--set B=64 --set lo=-1 --set hi=1 --device cpu --repeat 1 --tuned "
                             "--tuning-cache " +
                             cache);
  CHECK(otherSizes.exitCode == 0);
  CHECK(contains(otherSizes.output, "loopc: note: no tuned choices in " + cache +
                                        " for kernel 'histogram' at these sizes on cpu: "));
  // Another program text is another key, even at the same sizes.
  std::ifstream sample(test::sourcePath("samples/histogram.loop"));
  std::string copy((std::istreambuf_iterator<char>(sample)), std::istreambuf_iterator<char>());
  std::string edited = dir.file("histogram.loop", copy + "// edited\n");
  auto changed = runLoopc("run " + edited + " --kernel histogram" + sizes +
                          " --tuned --tuning-cache " + cache);
  CHECK(contains(changed.output, "loopc: note: no tuned choices"));

  auto mixed = runLoopc("run samples/histogram.loop --kernel histogram" + sizes +
                        " --tuned --pass-param shared_kib=8 --tuning-cache " + cache);
  CHECK(mixed.exitCode == 1);
  CHECK(contains(mixed.output, "--tuned chooses the optimizations itself"));
  auto skipping = runLoopc("tune samples/histogram.loop --kernel histogram" + sizes +
                           " --skip-pass fuse_producers --tuning-cache " + cache);
  // tune makes those choices itself: it has no such options, nor lists them.
  CHECK(skipping.exitCode == 2);
  CHECK(contains(skipping.output, "not expected"));
  CHECK(contains(skipping.output, "--skip-pass"));
  std::string help = runLoopc("tune --help").output;
  for (const char *option : {"--skip-pass", "--pass-param", "--bounds-check", "--tuned "}) {
    CAPTURE(option);
    CHECK_FALSE(contains(help, option));
  }
  CHECK(contains(help, "--tuning-cache"));
  auto interpreter =
      runLoopc("tune samples/dot.loop --set N=10 --device interp --tuning-cache " + cache);
  CHECK(interpreter.exitCode == 1);
  CHECK(contains(interpreter.output, "nothing to tune on device 'interp'"));
  std::string broken = dir.file("broken.json", "{\"entries\": 3}");
  auto unreadable = runLoopc("run samples/histogram.loop --kernel histogram" + sizes +
                             " --tuned --tuning-cache " + broken);
  CHECK(unreadable.exitCode == 1);
  CHECK(contains(unreadable.output, "is not a loopc tuning cache"));
  // A directory, entries of the wrong shape and a path through a file are
  // plain errors (they were internal ones), and tune says so before its search.
  auto directory = runLoopc("run samples/dot.loop --set N=10 --device cpu --tuned --tuning-cache " +
                            dir.at("."));
  CHECK(directory.exitCode == 1);
  CHECK(contains(directory.output, "is a directory; give a file with --tuning-cache"));
  std::string oddKey = dir.file("odd.json", "{\"version\": 1, \"entries\": [{\"key\": 5}]}");
  auto odd =
      runLoopc("run samples/dot.loop --set N=10 --device cpu --tuned --tuning-cache " + oddKey);
  CHECK(odd.exitCode == 0);
  CHECK(!contains(odd.output, "internal error"));
  auto throughFile = runLoopc("tune samples/dot.loop --set N=10 --device cpu --tuning-cache " +
                              oddKey + "/t.json");
  CHECK(throughFile.exitCode == 1);
  CHECK(contains(throughFile.output, "' is not a folder"));
  CHECK(!contains(throughFile.output, "tuned kernel"));
}

TEST_CASE("check reports every error of a file, not only the first") {
  TempDir dir;
  std::string bad = dir.file("several.loop", "kernel a(x: in f32[N], y: out f32[N]) {\n"
                                             "  parfor i in 0..N { y[i] = x[i] + true; }\n"
                                             "}\n"
                                             "kernel b(x: in f32[N], y: out f32[N]) {\n"
                                             "  parfor i in 0..N { y[i] = undefinedName; }\n"
                                             "  x[0] = 1.0;\n"
                                             "}\n");
  auto result = runLoopc("check " + bad);
  CHECK(result.exitCode == 1);
  CHECK(contains(result.output, bad + ":2:29: error: '+' needs numeric operands, got 'bool'"));
  CHECK(contains(result.output, bad + ":5:29: error: unknown name 'undefinedName'"));
  CHECK(
      contains(result.output, bad + ":6:3: error: cannot assign to 'x': it is an 'in' parameter"));
  CHECK(!contains(result.output, "ok ("));
}

TEST_CASE(
    "check --describe prints each kernel's signature as JSON, or nothing when a file has errors") {
  TempDir dir;
  std::string file = dir.file("signatures.loop",
                              "kernel shift(steps: i64, x: in f64[N], y: out f64[N - 2 * steps],\n"
                              "             total: out i32) {\n"
                              "  parfor i in 0..N - 2 * steps { y[i] = x[i + steps]; }\n"
                              "  total = 0;\n"
                              "}\n");
  auto described = runLoopc("check --describe " + file);
  REQUIRE(described.exitCode == 0);
  nlohmann::json document = nlohmann::json::parse(described.output);
  REQUIRE(document.at("files").size() == 1);
  const nlohmann::json &kernel = document["files"][0]["kernels"][0];
  CHECK(kernel.at("name") == "shift");
  CHECK(kernel.at("location") == file + ":1:8");
  CHECK(kernel.at("sizes") == nlohmann::json::array({"N"}));
  CHECK(kernel.at("unsafe") == false);
  CHECK(kernel.at("fp_contract") == "on");
  const nlohmann::json &parameters = kernel.at("parameters");
  REQUIRE(parameters.size() == 4);
  CHECK(parameters[0] == nlohmann::json{{"name", "steps"},
                                        {"intent", "value"},
                                        {"type", "i64"},
                                        {"shape", nlohmann::json::array()}});
  CHECK(parameters[1] ==
        nlohmann::json{{"name", "x"}, {"intent", "in"}, {"type", "f64"}, {"shape", {"N"}}});
  CHECK(parameters[2] ==
        nlohmann::json{
            {"name", "y"}, {"intent", "out"}, {"type", "f64"}, {"shape", {"N - 2 * steps"}}});
  CHECK(parameters[3] == nlohmann::json{{"name", "total"},
                                        {"intent", "out"},
                                        {"type", "i32"},
                                        {"shape", nlohmann::json::array()}});

  std::string attributed =
      dir.file("attributed.loop", "@fp_contract(off)\n@schedule(register_tile=8, skip=stage_shared)"
                                  "\nunsafe kernel k(x: in f32[N]) { }\n");
  nlohmann::json other =
      nlohmann::json::parse(runLoopc("check --describe " + attributed).output)["files"][0];
  CHECK(other["kernels"][0].at("unsafe") == true);
  CHECK(other["kernels"][0].at("fp_contract") == "off");
  CHECK(other["kernels"][0].at("schedule") ==
        nlohmann::json{"register_tile=8", "skip=stage_shared"});
  CHECK(kernel.at("schedule") == nlohmann::json::array());

  std::string bad = dir.file("bad.loop", "kernel k(x: in f32[N]) { x[0] = 1.0; }\n");
  auto refused = runLoopc("check --describe " + file + " " + bad);
  CHECK(refused.exitCode == 1);
  CHECK(contains(refused.output, "cannot assign to 'x'"));
  CHECK(!contains(refused.output, "\"files\""));
}

// The interpreter defines MIN / -1 as MIN and MIN % -1 as 0 (wrapping, like
// every other integer operation); a bare x86 idiv would trap instead. Run as a
// subprocess so a regression shows as a failed run, not a crashed test.
TEST_CASE("the CPU JIT agrees with the interpreter on MIN / -1") {
  TempDir dir;
  std::string file = dir.file(
      "minint.loop", "kernel minint(x: in i32[N], d: i32, q: out i32[N], r: out i32[N]) {\n"
                     "  parfor i in 0..N {\n"
                     "    let smallest = x[i] * 0 - 2147483647 - 1;\n"
                     "    q[i] = smallest / d;\n"
                     "    r[i] = smallest % d;\n"
                     "  }\n"
                     "}\n");
  auto interp = runLoopc("run " + file + " --set N=3 --set d=-1 --device interp");
  REQUIRE(interp.exitCode == 0);
  REQUIRE(contains(interp.output, "q: i32[3] sum=-6442450944"));
  auto cpu = runLoopc("run " + file + " --set N=3 --set d=-1 --device cpu --check");
  CHECK(cpu.exitCode == 0);
  CHECK(contains(cpu.output, "PASS: 2 outputs match the interpreter"));
}

TEST_CASE(
    "run --check compares with the interpreter, or the CPU JIT for large work or on request") {
  // The automatic choice: the interpreter up to 5e8 operations, then the CPU
  // JIT, unless the CPU JIT is what is being checked.
  CHECK(driver::autoReferenceEngine(1e6, "gpu") == "interp");
  CHECK(driver::autoReferenceEngine(5e8, "gpu") == "interp");
  CHECK(driver::autoReferenceEngine(6e8, "gpu") == "cpu");
  CHECK(driver::autoReferenceEngine(6e8, "interp") == "cpu");
  CHECK(driver::autoReferenceEngine(6e8, "cpu") == "interp");

  std::string dot = loopc::test::sourcePath("samples/dot.loop");
  auto onRequest = runLoopc("run " + dot + " --set N=1000 --device interp --check --reference cpu");
  CHECK(onRequest.exitCode == 0);
  CHECK(contains(onRequest.output, "PASS: 1 output matches the cpu engine"));
  auto itself = runLoopc("run " + dot + " --set N=1000 --device cpu --check --reference cpu");
  CHECK(itself.exitCode == 1);
  CHECK(contains(itself.output, "--reference cpu is the engine under test"));
  CHECK_FALSE(contains(itself.output, "ran on")); // refused before running
  auto unchecked = runLoopc("run " + dot + " --set N=1000 --reference cpu");
  CHECK(unchecked.exitCode != 0);
  CHECK(contains(unchecked.output, "--reference requires --check"));
}

TEST_CASE("deeply nested and very long expressions are errors or run, never a crash") {
  test::TempDir directory;
  auto program = [&](const std::string &name, const std::string &expression) {
    return directory.file(name, "kernel f(r: out f32) { r = " + expression + "; }\n");
  };
  auto repeated = [](const std::string &text, int count, const std::string &separator = "") {
    std::string out;
    for (int i = 0; i < count; ++i)
      out += (i ? separator : "") + text;
    return out;
  };
  // Brackets are checked before the parser recurses into them.
  auto deep = runLoopc("check " +
                       program("deep.loop", repeated("(", 50000) + "1.0" + repeated(")", 50000)));
  CHECK(deep.exitCode == 1);
  CHECK(contains(deep.output, "deep.loop:1:10027: error: brackets nested more than 10000 deep"));
  // A chain of a million levels parses without recursion and is refused.
  auto chain = runLoopc("check " + program("chain.loop", repeated("1.0", 200000, "+")));
  CHECK(chain.exitCode == 1);
  // Located in the expression (it was at the start of the file).
  CHECK(contains(chain.output,
                 "chain.loop:1:28: error: the program nests more than 100000 levels deep"));
  // Where the chain starts, on its line, not at the operand where the limit falls.
  auto inner = runLoopc("check " +
                        directory.file("inner.loop", "kernel f(r: out f32) {\n  let a = "
                                                     "1.0;\n  r = a * (" +
                                                         repeated("1.0", 200000, "+") + ");\n}\n"));
  CHECK(inner.exitCode == 1);
  CHECK(contains(inner.output,
                 "inner.loop:3:12: error: the program nests more than 100000 levels deep"));
  // Within the limits, on the large stack, every engine runs it (quickly:
  // nothing in the pipeline may cost the square of an expression's size).
  std::string nested = program("nested.loop", repeated("(", 9000) + "1.0" + repeated(")", 9000) +
                                                  " + " + repeated("1.0", 50000, "+"));
  for (const char *device : {"interp", "cpu"}) {
    CAPTURE(device);
    auto run = runLoopc("run " + nested + " --device " + device);
    CHECK(run.exitCode == 0);
    CHECK(contains(run.output, "value: 50001"));
  }
}

TEST_CASE("--out paths are checked before the run, and --seed takes whole numbers only") {
  TempDir dir;
  auto missingFolder =
      runLoopc("run samples/dot.loop --set N=8 --device cpu --out r=" + dir.at("no/such/r.npy"));
  CHECK(missingFolder.exitCode == 1);
  CHECK(contains(missingFolder.output, "no/such/r.npy': No such file or directory"));
  CHECK(!contains(missingFolder.output, "ran on"));
  auto folder = runLoopc("run samples/dot.loop --set N=8 --device cpu --out r=" + dir.at("."));
  CHECK(folder.exitCode == 1);
  CHECK(contains(folder.output, "': it is a directory"));
  for (const char *seed : {"-1", "18446744073709551616", "1.5"}) {
    CAPTURE(seed);
    auto bad = runLoopc(std::string("run samples/dot.loop --set N=8 --device cpu --seed ") + seed);
    CHECK(bad.exitCode == 2);
    CHECK(contains(bad.output, "a seed is a whole number from 0 to 18446744073709551615"));
  }
  CHECK(runLoopc("run samples/dot.loop --set N=8 --device cpu --seed 18446744073709551615")
            .exitCode == 0);
}

TEST_CASE("a misspelt command is named, with the commands there are") {
  auto bogus = runLoopc("bogus samples/dot.loop");
  CHECK(bogus.exitCode == 2);
  CHECK(bogus.output == "loopc: error: unknown command 'bogus' (the commands are check, run, "
                        "explain, opt, compile, bench, tune, repl; see --help)\n");
}

TEST_CASE("empty names for --kernel, --device and --after are refused, not read as the default") {
  for (const char *option :
       {"run samples/dot.loop --set N=3 --kernel ''", "run samples/dot.loop --set N=3 --device ''",
        "explain samples/dot.loop --after ''"}) {
    CAPTURE(option);
    auto result = runLoopc(option);
    CHECK(result.exitCode == 2);
    CHECK(contains(result.output, ": needs a value, got ''"));
  }
}

TEST_CASE("a pass parameter given twice is an error, as a size is") {
  auto twice = runLoopc("run samples/dot.loop --set N=3 --device cpu --pass-param register_tile=1 "
                        "--pass-param register_tile=2");
  CHECK(twice.exitCode == 1);
  CHECK(contains(twice.output, "pass parameter 'register_tile' is given twice with --pass-param"));
}

TEST_CASE(
    "--check allows for a float combine's order: as many values as the interpreter combined") {
  // From a generated-program hunt: 257 x 257 values combined into one f32
  // element in the interpreter's order (one at a time) and in the compiled
  // engines' (per block, then blocks) differ by more than a sum over the
  // largest input (257 values) may; the interpreter counts the combines.
  TempDir dir;
  std::string program = dir.file("combined.loop", R"(
kernel total(x: in f32[N], h: out f32[1]) {
  parfor i in 0..N, j in 0..N {
    combine(+) h[0] = x[i % 8];
  }
}
)");
  for (std::string device : {"cpu", "gpu-on-cpu"}) {
    CAPTURE(device);
    auto result = runLoopc("run " + program + " --set N=257 --seed 563 --check --device " + device);
    CHECK(result.exitCode == 0);
    CHECK(contains(result.output, "PASS"));
  }
}

TEST_CASE(
    "outputs that would overwrite an input or one another are refused before any is written") {
  TempDir dir;
  const std::string program = "kernel two(x: in f32[N], a: out f32[N], b: out f32[N]) {\n"
                              "  parfor i in 0..N { a[i] = x[i]; b[i] = x[i] + x[i]; }\n}\n";
  std::string source = dir.file("two.loop", program);
  // Another spelling of the same file is the same file.
  auto overSource = runLoopc("compile " + source + " --emit header -o " + dir.at("./two.loop"));
  CHECK(overSource.exitCode == 1);
  CHECK(contains(overSource.output, "would overwrite the program file '" + source + "'"));
  auto depfileOverSource = runLoopc("compile " + source + " --emit object -o " + dir.at("two.o") +
                                    " --depfile " + source);
  CHECK(depfileOverSource.exitCode == 1);
  CHECK(contains(depfileOverSource.output, "--depfile " + source + " would overwrite"));
  auto depfileOverOutput =
      runLoopc("compile " + source + " -o " + dir.at("k.ll") + " --depfile " + dir.at("k.ll"));
  CHECK(depfileOverOutput.exitCode == 1);
  CHECK(contains(depfileOverOutput.output, "write the same file"));
  CHECK(!std::filesystem::exists(dir.at("k.ll")));

  std::string run = "run " + source + " --set N=3 --device cpu ";
  auto twoOutputs = runLoopc(run + "--out a=" + dir.at("f.npy") + " --out b=" + dir.at("f.npy"));
  CHECK(twoOutputs.exitCode == 1);
  CHECK(contains(twoOutputs.output, "--out a=" + dir.at("f.npy") + " and --out b=" +
                                        dir.at("f.npy") + " write the same file"));
  CHECK(!std::filesystem::exists(dir.at("f.npy")));
  CHECK(!contains(twoOutputs.output, "ran on"));
  auto outOverSource = runLoopc(run + "--out b=" + source);
  CHECK(outOverSource.exitCode == 1);
  CHECK(contains(outOverSource.output, "--out b=" + source + " would overwrite the program file"));
  REQUIRE(writeNpy(dir.at("x.npy"), HostArray(ScalarType::F32, {3})).has_value());
  auto outOverInput = runLoopc("run " + source + " --device cpu --in x=" + dir.at("x.npy") +
                               " --out a=" + dir.at("x.npy"));
  CHECK(outOverInput.exitCode == 1);
  CHECK(contains(outOverInput.output, "would overwrite --in x=" + dir.at("x.npy")));
  CHECK(loopc::test::readFile(source) == program);
  CHECK(runLoopc("compile " + source + " -o ''").exitCode == 2);
  CHECK(runLoopc("compile " + source + " --emit object -o " + dir.at("two.o") + " --depfile ''")
            .exitCode == 2);
}

TEST_CASE("the tuning cache: a relative XDG_CACHE_HOME is ignored, and '' is no file") {
  TempDir dir;
  std::string run = " " + loopc::test::loopcBinary() +
                    " run samples/dot.loop --set N=3 --device cpu --quiet --tuned";
  auto relative = loopc::test::runShell("env -u LOOPC_TUNING_CACHE XDG_CACHE_HOME=relative/dir "
                                        "HOME=" +
                                        dir.at("home") + run);
  CHECK(relative.exitCode == 0);
  CHECK(contains(relative.output,
                 "no tuned choices in " + dir.at("home") + "/.cache/loopc/tuning.json"));
  auto absolute =
      loopc::test::runShell("env -u LOOPC_TUNING_CACHE XDG_CACHE_HOME=" + dir.at("xdg") + run);
  CHECK(contains(absolute.output, "no tuned choices in " + dir.at("xdg") + "/loopc/tuning.json"));
  auto noHome = loopc::test::runShell("env -u LOOPC_TUNING_CACHE -u XDG_CACHE_HOME -u HOME" + run);
  CHECK(contains(noHome.output, "no tuned choices in .loopc-tuning.json"));
  auto empty = runLoopc("run samples/dot.loop --set N=3 --device cpu --tuned --tuning-cache ''");
  CHECK(empty.exitCode == 2);
  CHECK(contains(empty.output, "needs a value, got ''"));
}

TEST_CASE("messages say what is wrong with what the user typed") {
  // --check with the interpreter under test: refused before the run.
  auto itself = runLoopc("run samples/dot.loop --set N=3 --device interp --check");
  CHECK(itself.exitCode == 1);
  CHECK(contains(itself.output, "--check on --device interp would compare the interpreter with "
                                "itself: give --reference cpu"));
  CHECK_FALSE(contains(itself.output, "ran on"));
  CHECK(contains(
      runLoopc("run samples/dot.loop --set N=3 --device interp --check --reference cpu").output,
      "PASS"));

  // A pass that exists but is left out, and each pass named once.
  for (const char *option : {" --target cpu", " --skip-pass stage_shared"}) {
    CAPTURE(option);
    auto leftOut =
        runLoopc(std::string("explain samples/matmul.loop --after stage_shared") + option);
    CHECK(leftOut.exitCode == 1);
    CHECK(contains(leftOut.output, "pass 'stage_shared' is not run with" + std::string(option)));
    CHECK(loopc::test::occurrences(leftOut.output, "simplify") == 1);
  }
  // From a bug hunt: the GPU's one required pass of its own was "no pass".
  CHECK(contains(
      runLoopc("explain samples/row_stats.loop --target cpu --after globalize_private_arrays")
          .output,
      "pass 'globalize_private_arrays' is not run with --target cpu"));
  auto unknown = runLoopc("explain samples/matmul.loop --after nosuchpass");
  CHECK(contains(unknown.output, "no pass named 'nosuchpass'"));
  CHECK(loopc::test::occurrences(unknown.output, "simplify") == 1);

  auto negative = runLoopc("explain samples/dot.loop --set N=-1 --after extract_kernels");
  CHECK(negative.exitCode == 1);
  CHECK(contains(negative.output, "invalid value '-1' for size N (a non-negative integer)"));

  // The GPUs accepted are those the message names.
  for (const char *gpu : {"sm_20", "sm_35", "sm_100"}) {
    CAPTURE(gpu);
    auto refused = runLoopc(std::string("compile samples/dot.loop --emit ptx --gpu ") + gpu);
    CHECK(refused.exitCode == 1);
    CHECK(contains(refused.output, "loopc compiles for sm_50 to sm_90a"));
  }
  for (const char *gpu : {"sm_50", "sm_90a"}) {
    CAPTURE(gpu);
    CHECK(runLoopc(std::string("compile samples/dot.loop --emit ptx --gpu ") + gpu).exitCode == 0);
  }

  auto notNumber = runLoopc("bench samples/dot.loop --set N=10 --repeat abc");
  CHECK(notNumber.exitCode == 2);
  CHECK(contains(notNumber.output, "'abc' is not a whole number (expected 1 to 1000000)"));
  auto outOfRange = runLoopc("run samples/dot.loop --set N=10 --repeat 0");
  CHECK(outOfRange.exitCode == 2);
  CHECK(contains(outOfRange.output, "0 is out of range (expected 1 to 1000000)"));
}

TEST_CASE("bench --json holds the scalar inputs and the seed, to reproduce a result") {
  auto bench = runLoopc("bench samples/jacobi1d.loop --set N=100 --set steps=7 --device cpu "
                        "--repeat 1 --warmup 0 --json --seed 5");
  REQUIRE(bench.exitCode == 0);
  CHECK(contains(bench.output, "\"sizes\":{\"N\":100}"));
  CHECK(contains(bench.output, "\"scalars\":{\"steps\":7}"));
  CHECK(contains(bench.output, "\"seed\":5"));
}

TEST_CASE("messages from a bug hunt name the actual problem") {
  TempDir dir;
  std::string copy = dir.file("k.loop", "kernel k(x: in f32[N], y: out f32[N]) {\n"
                                        "  parfor i in 0..N { y[i] = x[i]; }\n}\n");
  // A prefix that makes the kernel's name one C and C++ reserve.
  for (const char *prefix : {"__", "_K"}) {
    CAPTURE(prefix);
    auto reserved = runLoopc("compile " + copy + " --emit header --prefix " + prefix);
    CHECK(reserved.exitCode == 1);
    CHECK(contains(reserved.output, "kernel 'k' cannot be a C function named '" +
                                        std::string(prefix) +
                                        "k' (a reserved identifier: C and C++ keep names "
                                        "containing '__', or beginning with '_' and an "
                                        "uppercase letter, to the compiler and its library)"));
    CHECK_FALSE(contains(reserved.output, "keyword"));
  }

  // An f64 beyond double's range is out of range, as an f32 beyond float's
  // is; one below it rounds to 0.
  std::string scaled =
      dir.file("scaled.loop", "kernel scaled(b: f64, flag: bool, x: in f64[N], y: out f64[N]) {\n"
                              "  parfor i in 0..N { y[i] = flag ? b * x[i] : x[i]; }\n}\n");
  for (const char *value : {"1e400", "-1e400"}) {
    CAPTURE(value);
    auto huge = runLoopc("run " + scaled + " --set N=4 --set flag=true --set b=" + value);
    CHECK(huge.exitCode == 1);
    CHECK(
        contains(huge.output, "value " + std::string(value) + " for 'b' is out of range for f64"));
  }
  auto tiny = runLoopc("run " + scaled + " --set N=4 --set flag=true --set b=1e-400 --device cpu");
  CHECK(tiny.exitCode == 0);
  CHECK(contains(tiny.output, "y: f64[4] sum=0 "));

  // A file without kernels has none to compile (or explain), not to run.
  std::string fnOnly = dir.file("fn.loop", "fn twice(v: i64) -> i64 { return 2 * v; }\n");
  for (const char *emit : {"header", "llvm"}) {
    CAPTURE(emit);
    auto none = runLoopc("compile " + fnOnly + " --emit " + emit);
    CHECK(none.exitCode == 1);
    CHECK(contains(none.output, "loopc: error: the program has no kernel to compile"));
  }
  CHECK(contains(runLoopc("explain " + fnOnly).output,
                 "loopc: error: the program has no kernel to explain"));
  CHECK(
      contains(runLoopc("run " + fnOnly).output, "loopc: error: the program has no kernel to run"));

  // bench --json gives a bool scalar as a JSON bool.
  auto bench = runLoopc("bench " + scaled +
                        " --set N=4 --set flag=true --set b=2 --device cpu "
                        "--repeat 1 --warmup 0 --json");
  REQUIRE(bench.exitCode == 0);
  CHECK(contains(bench.output, "\"scalars\":{\"b\":2.0,\"flag\":true}"));

  // --in of a folder says so, as --out does.
  auto folder = runLoopc("run " + scaled + " --set flag=true --set b=2 --in x=" + dir.at("."));
  CHECK(folder.exitCode == 1);
  CHECK(contains(folder.output, "cannot read '" + dir.at(".") + "': it is a directory"));
  CHECK_FALSE(contains(folder.output, "magic"));
}

// A write that fails part way (here past a file-size limit, as a full disk
// would) leaves the files that were there as they were, and no temporary.
TEST_CASE("outputs are written whole or not at all") {
  TempDir dir;
  // r is small and written first; s is past the limit: neither may change.
  std::string source = dir.file("k.loop", "kernel k(x: in f32[N], r: out f32[N], s: out f32[M]) {\n"
                                          "  parfor i in 0..N { r[i] = x[i] * 2.0; }\n"
                                          "  parfor j in 0..M { s[j] = 1.0; }\n"
                                          "}\n");
  dir.file("r.npy", "old r");
  dir.file("s.npy", "old s");
  auto limited = [&](const std::string &arguments) {
    return loopc::test::runShell("trap '' XFSZ; ulimit -f 4; '" + loopc::test::loopcBinary() +
                                 "' " + arguments);
  };
  auto outputs =
      limited("run " + source + " --set N=3 --set M=10000 --device cpu --out s=" + dir.at("s.npy") +
              " --out r=" + dir.at("r.npy"));
  CHECK(outputs.exitCode == 1);
  CHECK(contains(outputs.output, "cannot write '" + dir.at("s.npy") + "': File too large"));
  CHECK(loopc::test::readFile(dir.at("r.npy")) == "old r");
  CHECK(loopc::test::readFile(dir.at("s.npy")) == "old s");

  dir.file("k.ll", "old ll");
  auto compiled = limited("compile " + source + " --emit llvm -o " + dir.at("k.ll") +
                          " --depfile " + dir.at("k.d"));
  CHECK(compiled.exitCode == 1);
  CHECK(contains(compiled.output, "cannot write '" + dir.at("k.ll") + "': File too large"));
  CHECK(loopc::test::readFile(dir.at("k.ll")) == "old ll");
  CHECK(!std::filesystem::exists(dir.at("k.d")));
  for (const auto &entry : std::filesystem::directory_iterator(dir.at("")))
    CHECK_MESSAGE(entry.path().filename().string().find(".tmp.") == std::string::npos,
                  "temporary left: " << entry.path());

  auto written =
      runLoopc("run " + source + " --set N=3 --set M=2 --device cpu --out r=" + dir.at("r.npy"));
  CHECK(written.exitCode == 0);
  CHECK(loopc::readNpy(dir.at("r.npy")).has_value());
  auto devNull = runLoopc("run " + source + " --set N=3 --set M=2 --device cpu --out r=/dev/null");
  CHECK(devNull.exitCode == 0);
  CHECK(std::filesystem::is_character_file("/dev/null"));

  auto standardOutput = runLoopc("run " + source + " --set N=3 --set M=2 --device cpu --out r=-");
  CHECK(standardOutput.exitCode == 1);
  CHECK(contains(standardOutput.output,
                 "--out r=-: outputs are written to .npy files, not to standard output; name a "
                 "file (--out r=r.npy)"));
}

TEST_CASE("loopc --version names the commit, LLVM and the GPU, and loopc alone shows the usage") {
  auto version = runLoopc("--version");
  CHECK(version.exitCode == 0);
  CHECK(version.output.starts_with("loopc 0.1.0 (commit "));
  CHECK(contains(version.output, "\nLLVM 19."));
  CHECK(contains(version.output, "\nGPU: "));
  auto bare = runLoopc("");
  CHECK(bare.exitCode == 2);
  CHECK(contains(bare.output, "Usage: loopc [OPTIONS] SUBCOMMAND"));
  CHECK(contains(bare.output, "--version"));
  CHECK(contains(bare.output, "explain"));
}

TEST_CASE("--check says when the interpreter will take a while, and how long") {
  auto longer = runLoopc("run samples/matmul.loop --set M=300 --set N=300 --set K=300 --check");
  CHECK(longer.exitCode == 0);
  CHECK(contains(longer.output, "loopc: --check: the interpreter runs the kernel again to compare, "
                                "about 1.4 s at these sizes (--reference cpu compares in less)"));
  auto quick = runLoopc("run samples/matmul.loop --set M=64 --set N=64 --set K=64 --check");
  CHECK(quick.exitCode == 0);
  CHECK(!contains(quick.output, "--check: the interpreter runs"));
}

TEST_CASE("a crash in generated code names the kernel and says how to rerun it checked") {
  TempDir dir;
  std::string gather =
      dir.file("gather.loop", "kernel g(x: in f32[M], idx: in i32[N], r: out f32[N]) {\n"
                              "  parfor i in 0..N { r[i] = x[idx[i]]; }\n}\n");
  // Indices two billion elements past an array of 5: far outside anything
  // mapped, and unchecked under --unsafe.
  std::string far = " --set M=5 --set N=64 --device cpu --random-range 2000000000:2000000001";
  auto crashed = runLoopc("run " + gather + far + " --unsafe");
  CHECK(crashed.exitCode != 0);
  CHECK(contains(crashed.output, "loopc: a segmentation fault in kernel 'g' on cpu (unchecked): "
                                 "most likely an array index out of range in code compiled with "
                                 "--unsafe; rerun without it (or with --device interp) to have it "
                                 "reported at its source line"));
  // Checked, the default (--bounds-check says it again).
  for (const char *checks : {"", " --bounds-check"}) {
    auto checked = runLoopc("run " + gather + far + checks);
    CHECK(checked.exitCode == 1);
    CHECK(contains(checked.output, "gather.loop:2:29: error: index 2000000000 out of range"));
  }
  auto both = runLoopc("run " + gather + far + " --bounds-check --unsafe");
  CHECK(both.exitCode != 0);
  CHECK(contains(both.output, "--bounds-check and --unsafe contradict each other: give one"));
}

TEST_CASE("random integer inputs come from --random-range LO:HI, by default 0:16") {
  TempDir dir;
  std::string copy = dir.file("copy.loop", "kernel copy(a: in i64[N], b: out i64[N]) {\n"
                                           "  parfor i in 0..N { b[i] = a[i]; }\n}\n");
  auto drawn = [&](const std::string &range) {
    auto result = runLoopc("run " + copy + " --set N=4000 --device cpu --out b=" + dir.at("b.npy") +
                           " " + range);
    REQUIRE_MESSAGE(result.exitCode == 0, result.output);
    auto values = loopc::readNpy(dir.at("b.npy"));
    REQUIRE(values.has_value());
    const int64_t *data = values->data<int64_t>();
    return std::vector<int64_t>(data, data + values->elementCount());
  };
  auto chosen = drawn("--random-range -8:8");
  CHECK(std::ranges::min(chosen) == -8);
  CHECK(std::ranges::max(chosen) == 7);
  auto defaults = drawn("");
  CHECK(std::ranges::min(defaults) == 0);
  CHECK(std::ranges::max(defaults) == 15);
  CHECK(drawn("--random-range 0:16") == defaults);

  std::string gather =
      dir.file("gather.loop", "kernel g(x: in f32[M], idx: in i32[N], r: out f32[N]) {\n"
                              "  parfor i in 0..N { r[i] = x[idx[i]]; }\n}\n");
  std::string run = "run " + gather + " --set M=5 --set N=100 --device interp ";
  CHECK(runLoopc(run).exitCode == 1); // indices up to 15 into 5 elements
  CHECK(runLoopc(run + "--random-range 0:5").exitCode == 0);
  auto empty = runLoopc(run + "--random-range 5:5");
  CHECK(empty.exitCode == 1);
  CHECK(contains(empty.output, "--random-range expects LO:HI, two whole numbers with LO < HI "
                               "(e.g. 0:100), got '5:5'"));
  auto wide = runLoopc(run + "--random-range 0:3000000000");
  CHECK(wide.exitCode == 1);
  CHECK(contains(wide.output, "random integers in [0, 3000000000) do not fit 'idx', an i32 "
                              "input (give a narrower --random-range, or the array with --in)"));
  CHECK(contains(runLoopc("run --help").output, "integers in [0, 16) or --random-range"));
}

TEST_CASE("inputs a user can make: --save-inputs, :convert, and why a file cannot be read") {
  TempDir dir;
  std::string scale = dir.file("scale.loop", "kernel scale(x: in f32[N], r: out f32[N]) {\n"
                                             "  parfor i in 0..N { r[i] = x[i] * 2.0; }\n}\n");
  std::string make = dir.file("make.loop", "kernel make(d: out f64[N]) {\n"
                                           "  parfor i in 0..N { d[i] = 0.5; }\n}\n");
  std::string gather =
      dir.file("gather.loop", "kernel g(x: in f32[M], idx: in i32[N], r: out f32[N]) {\n"
                              "  parfor i in 0..N { r[i] = x[idx[i]]; }\n}\n");
  // The random inputs of one run, saved and read back, give the same outputs.
  auto first = runLoopc("run " + scale + " --set N=7 --device cpu --save-inputs " + dir.at("in"));
  REQUIRE(first.exitCode == 0);
  auto again = runLoopc("run " + scale + " --device cpu --in x=" + dir.at("in/x.npy"));
  REQUIRE(again.exitCode == 0);
  CHECK(first.output.substr(0, first.output.find("kernel")) ==
        again.output.substr(0, again.output.find("kernel")));
  CHECK(!std::filesystem::exists(dir.at("in/r.npy"))); // outputs are not inputs

  REQUIRE(runLoopc("run " + make + " --set N=3 --device cpu --out d=" + dir.at("d.npy")).exitCode ==
          0);
  auto wrongType = runLoopc("run " + scale + " --device cpu --in x=" + dir.at("d.npy"));
  CHECK(wrongType.exitCode == 1);
  CHECK(contains(wrongType.output,
                 "'x' needs an f32 array of rank 1, but an f64[3] array was given (convert it: "
                 "x.astype(numpy.float32) in Python, or let loopc: --in x=FILE:convert)"));
  auto converted =
      runLoopc("run " + scale + " --device cpu --in x=" + dir.at("d.npy") + ":convert");
  CHECK(converted.exitCode == 0);
  CHECK(contains(converted.output, "r: f32[3] sum=3 first: 1 1 1"));
  auto fraction = runLoopc("run " + gather + " --set M=2 --device cpu --in idx=" + dir.at("d.npy") +
                           ":convert");
  CHECK(fraction.exitCode == 1);
  CHECK(
      contains(fraction.output, "'idx': element 0 (0.5) does not fit i32 exactly; not converted"));

  auto missing = runLoopc("run " + scale + " --device cpu --in x=" + dir.at("none.npy"));
  CHECK(missing.exitCode == 1);
  CHECK(contains(missing.output,
                 "cannot open '" + dir.at("none.npy") + "': No such file or directory"));
}

TEST_CASE("choices the device's pipeline never acts on are warned of, and tune leaves them out") {
  std::string run = "run samples/matmul.loop --set M=9 --set N=9 --set K=9 ";
  auto cpu = runLoopc(run + "--device cpu --pass-param register_tile=8 --skip-pass stage_shared "
                            "--pass-param shared_kib=8");
  CHECK(cpu.exitCode == 0);
  CHECK(contains(cpu.output, "loopc: warning: --pass-param register_tile=8 changes nothing: "
                             "tile_registers reads it in the GPU pipeline only\n"));
  CHECK(contains(cpu.output, "loopc: warning: --skip-pass stage_shared changes nothing: it is "
                             "not in the CPU pipeline\n"));
  CHECK(!contains(cpu.output, "shared_kib=8 changes nothing")); // privatize_combines reads it
  auto skipped = runLoopc(run + "--device gpu-on-cpu --pass-param register_tile=2 "
                                "--skip-pass tile_registers");
  CHECK(contains(skipped.output, "--pass-param register_tile=2 changes nothing: tile_registers is "
                                 "left out by --skip-pass tile_registers"));
  // Under bounds checks stage_shared runs where every index is proven in
  // range, as in matmul: its parameters count.
  auto checked = runLoopc(run + "--device gpu-on-cpu --pass-param stage_length=8 --bounds-check");
  CHECK(checked.exitCode == 0);
  CHECK(!contains(checked.output, "warning"));
  auto interp = runLoopc(run + "--device interp --pass-param register_tile=2");
  CHECK(contains(interp.output, "loopc: warning: --device interp compiles nothing: --skip-pass and "
                                "--pass-param change nothing there"));
  auto used = runLoopc(run + "--device gpu-on-cpu --pass-param register_tile=2");
  CHECK(!contains(used.output, "warning"));
  auto explain = runLoopc(
      "explain samples/matmul.loop --target cpu --pass-param register_tile=8 --after simplify");
  CHECK(contains(explain.output, "register_tile=8 changes nothing"));

  auto tune = runLoopc("tune samples/dot.loop --set N=1000 --device cpu --tuning-cache ''");
  CHECK(!contains(tune.output, "register_tile"));
  CHECK(!contains(tune.output, "stage_length"));
}

TEST_CASE("opt reads IR as explain prints it and runs the passes asked for") {
  TempDir dir;
  auto explained = runLoopc("explain samples/dot.loop --after lower_reductions");
  REQUIRE(explained.exitCode == 0);
  std::string ir = dir.file("dot.lir", explained.output);
  // No pass: the IR read, checked and printed back.
  auto back = runLoopc("opt " + ir);
  CHECK(back.exitCode == 0);
  CHECK("// after lower_reductions\n" + back.output == explained.output);
  // The passes asked for, as the pipeline runs them.
  auto mapped = runLoopc("opt " + ir + " --pass simplify --pass extract_kernels");
  CHECK(mapped.exitCode == 0);
  CHECK(contains(mapped.output, "launch dot_kernel0<<<"));
  CHECK(contains(mapped.output, "let i = red0.block * 256 + red0.thread + red0.step"));
  auto changes = runLoopc("opt " + ir + " --pass simplify --changes");
  CHECK(contains(changes.output, "-        let i = 0 + (red0.block"));
}

TEST_CASE("opt refuses bad IR with a located message and unknown passes with the list") {
  TempDir dir;
  std::string syntax = dir.file("syntax.lir", "func f(global f32 x[N]; N: i64) {\n"
                                              "  for i in [0, M) {\n  }\n}\n");
  auto parse = runLoopc("opt " + syntax);
  CHECK(parse.exitCode == 1);
  CHECK(contains(parse.output, syntax + ":2:16: error: no variable or array named 'M' here"));
  CHECK(contains(parse.output, "  for i in [0, M) {\n"));
  CHECK(contains(parse.output, "^"));

  std::string typed = dir.file("typed.lir", "func f(global f32 x[N] (written); N: i64) {\n"
                                            "  let a = 2_i32\n  x[0] = f32(a) + 1.0\n"
                                            "  reduce x[0] += from 0.0 over i in [0, N): 1.0\n}\n");
  // extract_kernels runs after lower_reductions: a reduce is no input of it.
  auto lowered = runLoopc("opt " + typed + " --pass extract_kernels");
  CHECK(lowered.exitCode == 1);
  CHECK(contains(lowered.output,
                 "loopc: error: invalid IR in the host code of 'f': a reduce after "
                 "lower_reductions: reduce x[0] += from 0.0 over i in [0, N): 1.0"));
  auto printedBack = runLoopc("opt " + typed);
  INFO(printedBack.output);
  CHECK(contains(printedBack.output, "let a = 2_i32\n"));

  auto unknown = runLoopc("opt " + typed + " --pass frobnicate --target cpu");
  CHECK(unknown.exitCode == 1);
  CHECK(contains(unknown.output,
                 "loopc: error: no pass 'frobnicate' in the CPU pipeline; its passes are "
                 "lower_scans, simplify,"));
  auto missing = runLoopc("opt no/such/file.lir");
  CHECK(missing.exitCode == 1);
  CHECK(contains(missing.output, "loopc: error: cannot open 'no/such/file.lir'"));
}
