// The REPL session driven line by line (definitions over several lines,
// replacement, errors pointing into the typed input, every command), and
// `loopc repl` reading a script piped into it.
#include "TestSupport.h"

#include "StubDriver.h"

#include "driver/Repl.h"

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <poll.h>
#include <pty.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using loopc::driver::Repl;
using loopc::test::contains;
using loopc::test::runLoopc;

namespace {

// A Repl with its output and errors captured; `type` feeds it lines and
// returns what they printed.
struct Session {
  std::ostringstream out;
  std::ostringstream err;
  Repl repl{out, err};
  bool open = true;

  Session() { repl.setDefaultDevice("interp"); }

  // What the lines printed, output then errors; both are cleared.
  std::string type(const std::vector<std::string> &lines) {
    for (const std::string &line : lines)
      open = repl.handleLine(line) && open;
    std::string printed = out.str() + err.str();
    out.str("");
    err.str("");
    return printed;
  }
  std::string type(const std::string &line) { return type(std::vector<std::string>{line}); }
};

const std::vector<std::string> kIota = {
    "kernel iota(y: out i64[N]) {", "  parfor i in 0..N {", "    y[i] = i;", "  }", "}",
};

} // namespace

TEST_CASE("a kernel typed over several lines is defined once its braces close, then runs") {
  Session session;
  CHECK(session.repl.prompt() == "loop> ");
  CHECK(session.type(std::vector<std::string>(kIota.begin(), kIota.end() - 1)) == "");
  CHECK(session.repl.prompt() == "...> ");
  CHECK(session.type(kIota.back()) == "defined kernel 'iota'\n");
  CHECK(session.repl.prompt() == "loop> ");

  std::string run = session.type(":run iota --set N=10");
  CHECK(contains(run, "y: i64[10] sum=45"));
  CHECK(contains(run, "kernel 'iota' ran on interp in "));
  // The kernel defaults to the last one defined.
  CHECK(contains(session.type(":run --set N=4"), "y: i64[4] sum=6"));
  CHECK(contains(session.type(":time iota --set N=10 --repeat 3"),
                 "kernel 'iota' on interp: median "));
}

TEST_CASE(":time takes loopc bench's options and :run and :explain the command line's") {
  Session session;
  session.type(kIota);
  // Bench's report, its JSON and the model's prediction.
  std::string timed = session.type(":time --set N=64 --repeat 2 --warmup 0 --device cpu");
  CHECK(contains(timed, "kernel 'iota' on cpu: median "));
  CHECK(contains(timed, "over 2 runs"));
  CHECK(contains(timed, "GB/s"));
  CHECK(contains(timed, "predicted "));
  std::string json = session.type(":time --set N=8 --repeat 1 --json");
  CHECK(contains(json, "\"kernel\":\"iota\""));
  CHECK(contains(json, "\"sizes\":{\"N\":8}"));
  CHECK(contains(json, "\"runs\":1"));
  CHECK(contains(session.type(":time --set N=8 --repeat 0"), "--repeat"));
  // --tuned and --tuning-cache, as on the command line.
  loopc::test::TempDir dir;
  std::string tuned =
      session.type(":run --set N=4 --device cpu --tuned --tuning-cache " + dir.at("tuning.json"));
  CHECK(contains(tuned, "no tuned choices"));
  CHECK(contains(tuned, "y: i64[4] sum=6"));
  CHECK(contains(session.type(":run --set N=4 --tuned"), "nothing is tuned on device 'interp'"));
  // :explain's pass choices and --fp-contract.
  CHECK(contains(session.type(":explain --skip-pass tile_registers --after map_to_gpu --set N=9"),
                 "// after map_to_gpu"));
  CHECK(contains(session.type(":explain --skip-pass nosuchpass"), "cannot skip pass 'nosuchpass'"));
  CHECK(contains(session.type(":explain --fp-contract off --after lower_reductions"),
                 "// after lower_reductions"));
}

TEST_CASE("a definition that does not check is dropped with a caret into the typed lines") {
  Session session;
  session.type(kIota);
  std::string error = session.type({
      "kernel bad(y: out i64[N]) {",
      "  parfor i in 0..N {",
      "    y[i] = 1.5;",
      "  }",
      "}",
  });
  CHECK(contains(error, "<input>:3:"));
  CHECK(contains(error, "    y[i] = 1.5;\n"));
  CHECK(contains(error, "^"));
  CHECK_FALSE(contains(error, "defined"));
  // The session goes on with the earlier definitions and without the bad one.
  CHECK(session.type(":list") == "kernel iota(y: out i64[N])\n");
  CHECK(contains(session.type(":run bad --set N=2"), "no kernel named 'bad'"));
  CHECK(contains(session.type(":run iota --set N=3"), "sum=3"));
}

TEST_CASE("a fn is checked with the kernels using it, and defining a name again replaces it") {
  Session session;
  CHECK(session.type("fn twice(v: i64) -> i64 { return 2 * v; }") == "defined fn 'twice'\n");
  session.type(kIota);
  CHECK(session.type({
            "kernel iota(y: out i64[N]) {",
            "  parfor i in 0..N { y[i] = twice(i); }",
            "}",
        }) == "replaced kernel 'iota'\n");
  CHECK(contains(session.type(":run iota --set N=10"), "sum=90"));
  // A fn whose new type breaks its caller is refused; the old one stays.
  std::string error = session.type("fn twice(v: f32) -> f32 { return 2.0 * v; }");
  CHECK(contains(error, "error"));
  CHECK_FALSE(contains(error, "replaced"));
  CHECK(contains(session.type(":run iota --set N=10"), "sum=90"));
  CHECK(session.type(":list") == "fn twice(v: i64) -> i64\nkernel iota(y: out i64[N])\n");
}

TEST_CASE(":explain --remarks and :run --remarks quote the typed input") {
  Session session;
  session.type({"kernel mv(A: in f32[M][N], x: in f32[N], y: out f32[M]) {", "  parfor i in 0..M {",
                "    y[i] = redomap(+, 0.0, j in 0..N) A[i][j] * x[j];", "  }", "}"});
  CHECK(session.type(":explain --remarks --after map_rows_to_blocks") ==
        "<input 1>:2:10: remark: map_rows_to_blocks: a block of 256 threads per row of i when N >= "
        "64 (tested at run time; shorter rows keep a thread each)\n"
        "  parfor i in 0..M {\n"
        "         ^~~~~~~~~\n");
  CHECK(session.type(":explain --remarks --after stage_shared --target cpu")
            .starts_with("loopc: error: pass 'stage_shared' is not run with --target cpu"));
  // :run's remarks are diagnostics: on the error stream, before the results.
  CHECK(session.repl.handleLine(":run --set M=2 --set N=100 --device cpu --remarks"));
  CHECK(contains(session.err.str(), "<input 1>:3:12: remark: split_reductions: a second version "
                                    "splits each row of i into parts (blocks)"));
  CHECK(!contains(session.out.str(), "remark:"));
  CHECK(contains(session.out.str(), "ran on cpu"));
  session.out.str("");
  session.err.str("");
  CHECK(contains(session.type(":run --set M=2 --set N=100 --remarks"),
                 "loopc: note: --remarks: the interp engine runs no optimization passes"));
}

TEST_CASE(":explain, :llvm, :device, :load, :reset, :help and unknown commands") {
  Session session;
  CHECK(contains(session.type(":run"), "nothing is defined yet"));
  session.type(kIota);
  std::string explained = session.type(":explain iota");
  CHECK(contains(explained, "// after "));
  CHECK(contains(explained, "gpu_block"));
  CHECK(contains(session.type(":explain iota --after nosuchpass"), "no pass named 'nosuchpass'"));
  std::string changes = session.type(":explain iota --changes --after map_to_gpu");
  CHECK(contains(changes, "// changes by map_to_gpu\n@@ "));
  CHECK(contains(changes, "\n+    gpu_thread.x for "));
  CHECK(contains(session.type(":llvm iota"), "define "));
  CHECK(contains(session.type(":ptx iota"), ".entry iota"));
  CHECK(contains(session.type(":device"), "device: interp"));
  CHECK(contains(session.type(":device tpu"), "error"));
  CHECK(contains(session.type(":device cpu"), "runs use cpu"));
  CHECK(contains(session.type(":run iota --set N=10"), "ran on cpu"));
  CHECK(contains(session.type(":run iota --sett N=1"), "error: :run"));
  CHECK(contains(session.type(":help"), ":explain"));
  CHECK(contains(session.type(":frobnicate"), "unknown command ':frobnicate'"));

  std::filesystem::path file = std::filesystem::temp_directory_path() / "loopc_repl_test.loop";
  std::ofstream(file) << "// two kernels\n\nkernel ones(y: out i64[N]) {\n"
                         "  parfor i in 0..N { y[i] = true; }\n}\n";
  std::string loadError = session.type(":load " + file.string());
  CHECK(contains(loadError, file.string() + ":4:"));
  std::ofstream(file) << "kernel ones(y: out i64[N]) {\n  parfor i in 0..N { y[i] = 1; }\n}\n";
  CHECK(session.type(":load " + file.string()) == "defined kernel 'ones'\n");
  std::filesystem::remove(file);
  CHECK(session.type(":load " + file.string()) ==
        "loopc: error: cannot read '" + file.string() + "': No such file or directory\n");
  std::string folder = std::filesystem::temp_directory_path().string();
  CHECK(session.type(":load " + folder) ==
        "loopc: error: cannot read '" + folder + "': is a directory\n");
  CHECK(session.type(":list") == "kernel iota(y: out i64[N])\nkernel ones(y: out i64[N])\n");

  CHECK(session.type(":reset") == "every definition and value forgotten\n");
  CHECK(session.type(":list") == "nothing is defined\n");
  CHECK(session.open);
  session.type(":quit");
  CHECK_FALSE(session.open);
}

TEST_CASE("loopc repl reads a script piped into it") {
  std::filesystem::path script = std::filesystem::temp_directory_path() / "loopc_repl_script.txt";
  std::ofstream(script) << "kernel iota(y: out i64[N]) {\n  parfor i in 0..N {\n    y[i] = i;\n"
                           "  }\n}\n:run iota --set N=10\nkernel oops() { x = 1; }\n:list\n";
  // A script stops at its first failure and exits 1; with --keep-going it
  // goes on, and still exits 1.
  auto result = runLoopc("repl --device interp < " + script.string());
  CHECK(result.exitCode == 1);
  CHECK(contains(result.output, "y: i64[10] sum=45"));
  CHECK(contains(result.output, "<input>:1:"));
  CHECK(contains(result.output, "loopc: the session stops at this failure (--keep-going goes on)"));
  CHECK_FALSE(contains(result.output, "kernel iota(y: out i64[N])"));
  auto going = runLoopc("repl --device interp --keep-going < " + script.string());
  std::filesystem::remove(script);
  CHECK(going.exitCode == 1);
  CHECK(contains(going.output, "kernel iota(y: out i64[N])"));
  CHECK_FALSE(contains(going.output, "loop> "));
}

// The transcript of docs/repl.md's tutorial (its ```loopc-repl block): the
// lines after "loop> " or "...> " typed, the others what the session prints.
struct Transcript {
  std::string input, output;
};

Transcript tutorialTranscript() {
  std::ifstream file(loopc::test::sourcePath("docs/repl.md"));
  Transcript transcript;
  bool inside = false;
  for (std::string line; std::getline(file, line);) {
    if (line == "```loopc-repl") {
      inside = true;
    } else if (inside && line == "```") {
      break;
    } else if (inside && line.starts_with("loop> ")) {
      transcript.input += line.substr(6) + "\n";
    } else if (inside && line.starts_with("...> ")) {
      transcript.input += line.substr(5) + "\n";
    } else if (inside) {
      transcript.output += line + "\n";
    }
  }
  return transcript;
}

TEST_CASE("the tutorial of docs/repl.md gives its transcript on every device") {
  Transcript transcript = tutorialTranscript();
  REQUIRE(!transcript.input.empty());
  std::filesystem::path script = std::filesystem::temp_directory_path() / "loopc_repl_tutorial.txt";
  std::ofstream(script) << transcript.input;
  for (const char *device : {"interp", "cpu", "gpu-on-cpu"}) {
    CAPTURE(device);
    auto result = runLoopc(std::string("repl --device ") + device + " < " + script.string());
    CHECK(result.exitCode == 0);
    CHECK(result.output == transcript.output);
  }
  std::filesystem::remove(script);
}

TEST_CASE("a closing bracket matching no open one ends the input at its line, and the next "
          "commands run") {
  Session session;
  std::string error = session.type("kernel k(r: out f32) { r = 1.0; } )");
  CHECK(contains(error, "<input>:1:35: error: unexpected ')'"));
  CHECK(session.repl.prompt() == "loop> ");
  CHECK(session.type(":list") == "nothing is defined\n");
  CHECK(contains(session.type("]"), "<input>:1:1: error:"));
  CHECK(session.repl.prompt() == "loop> ");
  // A closer of another kind than the bracket open is as wrong.
  CHECK(contains(session.type("kernel k(r: out f32) { r = 1.0; )"), "error"));
  CHECK(session.repl.prompt() == "loop> ");
  CHECK(contains(session.type(":help"), ":explain"));
  // Brackets still open keep the input going, even across a blank line.
  CHECK(session.type({"kernel k(r: out f32) {", "", "  r = (1.0);"}) == "");
  CHECK(session.repl.prompt() == "...> ");
  CHECK(session.type("}") == "defined kernel 'k'\n");
}

TEST_CASE("a /* comment left open at the end of the input is reported") {
  Session session;
  session.type("kernel k(r: out f32) { r = 1.0; }");
  CHECK(session.type("/* never closed") == "");
  session.repl.finishInput();
  std::string error = session.err.str();
  CHECK(contains(error, "<input>:1:1: error: unterminated comment"));
}

TEST_CASE("a redefinition breaking an earlier definition is refused, naming both where typed") {
  Session session;
  session.type("fn twice(v: i32) -> i32 { return 2 * v; }");
  session.type(
      {"kernel iota(y: out i32[N]) {", "  parfor i in 0..N { y[i] = twice(i32(i)); }", "}"});
  std::string error = session.type("fn twice(v: i32) -> i64 { return 2; }");
  CHECK(contains(error, "<input>:1:4: error: the new definition of fn 'twice' is refused: it "
                        "breaks kernel 'iota', defined before"));
  CHECK(contains(error, "the old definition stays"));
  // The broken caller is quoted in its own input, the second typed.
  CHECK(contains(error, "<input 2>:2:29: error: cannot assign 'i64'"));
  CHECK_FALSE(contains(error, "<input>:2:"));
  CHECK(contains(session.type(":run iota --set N=3"), "sum=6"));

  // A kernel whose new parameters break the kernel calling it.
  session.type("kernel inner(a: in f32[N], b: out f32[N]) { parfor i in 0..N { b[i] = a[i]; } }");
  session.type({"kernel outer(x: in f32[N], y: out f32[N]) {", "  inner(x, y);", "}"});
  std::string kernelError = session.type("kernel inner(b: out f32[N]) { parfor i in 0..N "
                                         "{ b[i] = 1.0; } }");
  CHECK(contains(kernelError, "error: the new definition of kernel 'inner' is refused: it breaks "
                              "kernel 'outer'"));
  CHECK(contains(kernelError, "<input 5>:2:"));
}

TEST_CASE("a file loaded with :load and imported is loaded once, in either order") {
  // From a bug hunt: both gave its kernels twice, a "duplicate definition"
  // pointing at itself.
  loopc::test::TempDir dir;
  std::string file =
      dir.file("once.loop", "kernel ones(y: out i64[N]) {\n  parfor i in 0..N { y[i] = 1; }\n}\n");
  std::string import = "import \"" + file + "\";";
  Session session;
  CHECK(session.type(":load " + file) == "defined kernel 'ones'\n");
  CHECK(session.type(import) == import + " adds nothing: '" + file + "' is loaded\n");
  CHECK(contains(session.type(":run ones --set N=3"), "sum=3"));

  session.type(":reset");
  CHECK(session.type(import) == import + "\n");
  CHECK(session.type(":load " + file) ==
        import + " adds nothing now: '" + file + "' is loaded\ndefined kernel 'ones'\n");
  CHECK(contains(session.type(":run ones --set N=4"), "sum=4"));
  // Loading it again replaces its definitions, as for any file.
  CHECK(session.type(":load " + file) == "replaced kernel 'ones'\n");
}

namespace {

// `loopc repl` on a pseudo-terminal, as a person at a terminal runs it.
class Terminal {
public:
  explicit Terminal(const std::string &device) {
    pid_ = forkpty(&fd_, nullptr, nullptr, nullptr);
    if (pid_ == 0) {
      setenv("HOME", std::filesystem::temp_directory_path().c_str(), 1); // its history
      std::string binary = loopc::test::loopcBinary();
      execl(binary.c_str(), binary.c_str(), "repl", "--device", device.c_str(), nullptr);
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    close(fd_);
  }
  bool started() const { return pid_ > 0; }
  // Types `keys` as a person would, a moment after the last output: the
  // session puts the terminal in its key-by-key mode once its prompt is out,
  // and keys typed before that are the terminal's to buffer and echo.
  void type(const std::string &keys) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(write(fd_, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size()));
  }
  // What it printed until `text` appeared (within `seconds`), from the last
  // wait on.
  std::string waitFor(const std::string &text, double seconds = 20) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (seen_.find(text, from_) == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      pollfd ready = {fd_, POLLIN, 0};
      if (poll(&ready, 1, 50) > 0) {
        char buffer[4096];
        ssize_t got = read(fd_, buffer, sizeof buffer);
        if (got <= 0)
          break;
        seen_.append(buffer, static_cast<size_t>(got));
      }
    }
    size_t found = seen_.find(text, from_);
    std::string printed =
        seen_.substr(from_, found == std::string::npos ? std::string::npos : found - from_);
    from_ = found == std::string::npos ? seen_.size() : found + text.size();
    INFO(seen_);
    CHECK(found != std::string::npos);
    return printed;
  }
  int exitStatus() {
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string seen_;
  size_t from_ = 0;
};

} // namespace

TEST_CASE("Ctrl-C at the prompt drops the line and during a run stops it, and the session goes "
          "on") {
  for (const char *device : {"interp", "cpu"}) {
    CAPTURE(device);
    Terminal terminal(device);
    REQUIRE(terminal.started());
    // Each input is typed at a prompt, once the session reads the terminal
    // key by key (what is typed before is the terminal's to echo).
    terminal.waitFor("loop> ");
    terminal.type("let keep = 41\n");
    terminal.waitFor("keep: i64");
    terminal.waitFor("loop> ");
    // At the prompt: the line typed so far goes, the prompt comes back.
    terminal.type("1 + 2 + 3");
    terminal.waitFor("1 + 2 + 3");
    terminal.type("\x03");
    terminal.waitFor("loop> ");
    terminal.type("keep + 1\n");
    CHECK_FALSE(contains(terminal.waitFor("42"), "6"));
    terminal.waitFor("loop> ");
    // During a run of many short blocks (seconds of work on either device).
    terminal.type("kernel slow(y: out f64[N]) { parfor i in 0..N { var s: f64 = 0.0; "
                  "for k in 0..400000 { s = s * 0.999 + f64(k + i); } y[i] = s; } }\n");
    terminal.waitFor("defined kernel 'slow'");
    terminal.waitFor("loop> ");
    terminal.type(":run slow --set N=4000000\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    terminal.type("\x03");
    terminal.waitFor("error: interrupted (Ctrl-C)", 15);
    terminal.waitFor("loop> ");
    terminal.type("keep + 1\n");
    terminal.waitFor("42");
    terminal.waitFor("loop> ");
    terminal.type(":quit\n");
    CHECK(terminal.exitStatus() == 0);
  }
}

TEST_CASE("Tab completes commands, options, kernels, values, devices and modules") {
  Session session;
  session.type("kernel iota(y: out i64[N]) { parfor i in 0..N { y[i] = i; } }");
  session.type("let items = 3");
  using Words = std::vector<std::string>;
  CHECK(session.repl.completions("", ":r") == Words{":reset", ":run"});
  CHECK(session.repl.completions(":run ", "") == Words{"iota"});
  CHECK(session.repl.completions(":run iota ", "--s") ==
        Words{"--save-inputs", "--seed", "--set", "--skip-pass"});
  CHECK(session.repl.completions(":device ", "gpu") == Words{"gpu", "gpu-on-cpu"});
  CHECK(session.repl.completions(":print ", "") == Words{"items"});
  CHECK(session.repl.completions("", "i") ==
        Words{"i32", "i64", "if", "import", "in", "inout", "iota", "items"});
  CHECK(session.repl.completions("let x = ", "lin") == Words{"linspace"});
  CHECK(session.repl.completions("import ", "lin") == Words{"linalg;"});
  // A file name: the terminal completes it.
  CHECK(session.repl.completions(":load ", "sam").empty());
  CHECK(session.repl.completions("let a = load(\"", "sam").empty());
}

TEST_CASE("at the terminal Tab completes a command and a definition typed over lines comes back "
          "whole from the history") {
  Terminal terminal("interp");
  REQUIRE(terminal.started());
  terminal.waitFor("loop> ");
  terminal.type(":wh\t\n");
  terminal.waitFor("no values yet");
  terminal.waitFor("loop> ");
  terminal.type("kernel ones(y: out i64[N]) {\n");
  terminal.waitFor("...> ");
  terminal.type("  parfor i in 0..N { y[i] = 1; }\n");
  terminal.waitFor("...> ");
  terminal.type("}\n");
  terminal.waitFor("defined kernel 'ones'");
  terminal.waitFor("loop> ");
  terminal.type("\x1b[A\n"); // the arrow up, then Enter: the whole definition again
  terminal.waitFor("replaced kernel 'ones'");
  terminal.waitFor("loop> ");
  terminal.type(":quit\n");
  CHECK(terminal.exitStatus() == 0);
}

TEST_CASE("evaluation errors point into the input and comments and a final semicolon are let be") {
  Session session;
  CHECK(session.type("1 + 1 // two") == "2\n");
  CHECK(session.type("2 * 3; /* six */") == "6\n");
  std::string unknown = session.type("let z = 1 + missing");
  CHECK(contains(unknown, "<input>:1:13: error: unknown name 'missing'"));
  CHECK(contains(unknown, "  let z = 1 + missing\n              ^\n"));
  CHECK(contains(session.type("zeros(f16, [2])"), "'f16' is not a type"));
  CHECK(contains(session.type("zeros(f32, [-2])"), "an extent of -2 is negative"));
  CHECK(contains(session.type("let a = iota(i32, [2, 3])"), "a: i32[2][3]"));
  CHECK(contains(session.type("a[2]"), "index 2 is out of range for dimension 0 (extent 2)"));
  CHECK(session.type("a[-1]") == "i32[3] [3, 4, 5]\n");
  CHECK(session.type("a[:, 1]") == "i32[2] [1, 4]\n");
  CHECK(contains(session.type("let (b, c) = a"), "one value to bind to 2 names"));
  CHECK(contains(session.type(":print nothing"), "no value named 'nothing'"));
}

TEST_CASE("array literals are typed as the language types literals and their rows must be alike") {
  Session session;
  CHECK(session.type("[1, 2, 3]") == "i64[3] [1, 2, 3]\n");
  CHECK(session.type("[[1.5, 2], [3, 4]]") == "f64[2][2] [[1.5, 2.0],\n           [3.0, 4.0]]\n");
  CHECK(session.type("[true, false]") == "bool[2] [true, false]\n");
  CHECK(session.type("[-inf, 1e3]") == "f64[2] [-inf, 1000.0]\n");
  // A type given, and values evaluated: their type wins over the literals'.
  CHECK(session.type("let v = f32([1, -2.5])") == "v: f32[2]\n");
  CHECK(session.type("[v[0], 3]") == "f32[2] [1.0, 3.0]\n");
  CHECK(session.type("[i32(7), 2]") == "i32[2] [7, 2]\n");
  CHECK(session.type("f64([])") == "f64[0] []\n");
  CHECK(session.type("i32([9223372036854775807])") == "i32[1] [-1]\n"); // the low bits
  // T(A): an array value converted element by element.
  CHECK(session.type("let m = [[1, 2], [3, 4]]") == "m: i64[2][2]\n");
  CHECK(session.type("let w = f32(m)") == "w: f32[2][2]\n");
  CHECK(session.type("w[1]") == "f32[2] [3.0, 4.0]\n");
  CHECK(session.type("i32([2.5])").find("i32 takes whole numbers") != std::string::npos);
  CHECK(session.type("let t = f64([1e300, -1e300, 2.9])") == "t: f64[3]\n");
  CHECK(session.type("i32(t)") == "i32[3] [2147483647, -2147483648, 2]\n"); // saturating
  // Errors, located.
  CHECK(contains(session.type("[[1, 2], [3]]"),
                 "<input>:1:10: error: this list has 1 element where the first list at its "
                 "depth has 2"));
  CHECK(
      contains(session.type("[[1, 2], 3]"), "<input>:1:10: error: a list mixes values and lists"));
  CHECK(contains(session.type("[1, [2]]"), "<input>:1:5: error: a list mixes values and lists"));
  CHECK(contains(session.type("[]"), "an empty list has no elements to give it a type"));
  CHECK(contains(session.type("[true, 1]"), "a list mixes bools and numbers"));
  CHECK(contains(session.type("[m, 1]"), "'m' is an array of i64[2][2]"));
  CHECK(contains(session.type("[99999999999999999999]"), "does not fit in i64"));
  CHECK(contains(session.type("[1, nothing]"), "unknown name 'nothing'"));
}

TEST_CASE(":explain takes --perf, --set and --device-model as loopc explain does") {
  Session session;
  session.type("import linalg;");
  std::string gpu =
      session.type(":explain gemv --perf --set M=1000 --set N=1000 --device-model h200");
  CHECK(contains(gpu, "// performance model: NVIDIA H200"));
  CHECK(contains(gpu, "kernel gemv_kernel0 (19:10)"));
  CHECK(contains(gpu, "predicted"));
  CHECK(contains(session.type(":explain gemv --perf --set M=1000"),
                 "explain --perf needs every size of 'gemv': --set N=VALUE"));
  std::string cpu = session.type(
      ":explain gemv --perf --target cpu --set M=100 --set N=100 --device-model epyc-2");
  CHECK(contains(cpu, "// performance model: AMD EPYC"));
  // Sizes specialize the IR as at a run.
  CHECK(contains(session.type(":explain gemv --after map_to_gpu --set M=4 --set N=4"),
                 "compiled for sizes where N == 4 is true"));
  CHECK(contains(session.type(":explain gemv --perf --remarks"), "excludes"));
}
TEST_CASE("with the GPU as the session's device values stay there between kernel calls") {
  // Over the stand-in driver, whose device memory is host memory and which
  // runs no kernel: what is checked is where each value lives, what a launch
  // is given and what comes back to be printed.
  loopc::test::StubDriver stub(LOOPC_CUDA_STUB, /*pointDriverAtIt=*/true);
  Session session;
  session.repl.setDefaultDevice("gpu");
  session.type({"kernel double(x: in f32[N], y: out f32[N]) {",
                "  parfor i in 0..N { y[i] = 2.0 * x[i]; }", "}"});
  CHECK(session.type("let x = iota(f32, [5])") == "x: f32[5]\n");
  CHECK(session.type(":who") == "x: f32[5] (gpu)\n");
  // Printed from the device's copy (the stand-in keeps it in host memory).
  CHECK(session.type("x") == "f32[5] [0.0, 1.0, 2.0, 3.0, 4.0]\n");
  int allocations = stub.allocationCount();
  CHECK(session.type("let y = double(x)") == "y: f32[5]\n");
  CHECK(stub.launchCount() >= 1);
  CHECK(session.type(":who") == "x: f32[5] (gpu)\ny: f32[5] (gpu)\n");
  // x was passed where it is, y made on the device: one allocation for y
  // and the run's own small ones, none for a copy of x.
  CHECK(stub.allocationCount() - allocations <= 2);
  CHECK(session.type("y") == "f32[5] [0.0, 0.0, 0.0, 0.0, 0.0]\n"); // zeroed, not run
  // Parts, copies and conversions come through the host.
  CHECK(session.type("x[1:3]") == "f32[2] [1.0, 2.0]\n");
  CHECK(session.type("let z = x") == "z: f32[5]\n");
  CHECK(session.type("f64(z)") == "f64[5] [0.0, 1.0, 2.0, 3.0, 4.0]\n");
  // On another device the values are copied to the host for the run.
  CHECK(session.type(":device cpu") == "runs use cpu\n");
  CHECK(session.type("let w = double(x)") == "w: f32[5]\n");
  CHECK(session.type("w") == "f32[5] [0.0, 2.0, 4.0, 6.0, 8.0]\n");
  CHECK(contains(session.type(":who"), "w: f32[5] (host)\nx: f32[5] (gpu)\n"));
}
