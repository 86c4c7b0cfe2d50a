// The front end: parsing into the AST (precedence, ranges, source ranges of
// nodes) and loading imports; syntax errors are covered by the goldens of
// diagnostics_test.cpp.
#include "TestSupport.h"

#include "frontend/Loader.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace loopc;
using loopc::test::contains;

TEST_CASE("a kernel parses into its parameters and body") {
  SourceManager sources;
  DiagnosticEngine diagnostics(sources);
  auto program = loadProgramFromText(
      "t.loop", "kernel k(A: in f32[N], B: out f32[N]) { parfor i in 0..N { B[i] = A[i]; } }",
      sources, diagnostics);
  REQUIRE(program);
  KernelDecl *kernel = program->findKernel("k");
  REQUIRE(kernel);
  CHECK(kernel->params.size() == 2);
  CHECK(kernel->params[1]->intent == Intent::Out);
  REQUIRE(kernel->body->stmts.size() == 1);
  CHECK(kernel->body->stmts[0]->as<ParforStmt>() != nullptr);
}

namespace {

struct Parsed {
  SourceManager sources;
  std::unique_ptr<DiagnosticEngine> diagnostics = std::make_unique<DiagnosticEngine>(sources);
  std::unique_ptr<Program> program;
  std::string messages() const {
    std::ostringstream text;
    diagnostics->print(text);
    return text.str();
  }
};

std::unique_ptr<Parsed> parse(const std::string &text) {
  auto parsed = std::make_unique<Parsed>();
  parsed->program = loadProgramFromText("t.loop", text, parsed->sources, *parsed->diagnostics);
  return parsed;
}

// The initializer of the first statement of kernel `k`, a `let`.
const Expr &firstLetValue(const Parsed &parsed) {
  REQUIRE(parsed.program);
  KernelDecl *kernel = parsed.program->findKernel("k");
  REQUIRE(kernel);
  REQUIRE(!kernel->body->stmts.empty());
  const auto *decl = kernel->body->stmts[0]->as<DeclStmt>();
  REQUIRE(decl);
  return *decl->init;
}

const BinaryExpr &binary(const Expr &expr) {
  const auto *result = expr.as<BinaryExpr>();
  REQUIRE(result);
  return *result;
}

} // namespace

TEST_CASE("binary operators bind by precedence and associate to the left") {
  auto parsed = parse("kernel k() { let x = 1 + 2 * 3 - 4 < 5 && 6 == 7 || !true; }");
  const BinaryExpr &orExpr = binary(firstLetValue(*parsed));
  CHECK(orExpr.op == BinaryOp::Or);
  CHECK(orExpr.rhs->as<UnaryExpr>() != nullptr);
  const BinaryExpr &andExpr = binary(*orExpr.lhs);
  CHECK(andExpr.op == BinaryOp::And);
  CHECK(binary(*andExpr.rhs).op == BinaryOp::Eq);
  const BinaryExpr &less = binary(*andExpr.lhs);
  CHECK(less.op == BinaryOp::Lt);
  const BinaryExpr &minus = binary(*less.lhs); // (1 + 2 * 3) - 4
  CHECK(minus.op == BinaryOp::Sub);
  const BinaryExpr &plus = binary(*minus.lhs);
  CHECK(plus.op == BinaryOp::Add);
  CHECK(binary(*plus.rhs).op == BinaryOp::Mul);
}

TEST_CASE("comparisons parse beside the shift and bitwise operators loopc lacks") {
  // `<<`, `>>`, `&`, `|`, `^` and `~` are tokens of their own, for their
  // error message; comparisons written without spaces, or next to a unary
  // minus or a parenthesis, must still lex as before.
  auto parsed = parse("kernel k() { let x = 1<2 && 3>-4 || 5<=(6) && 7>=8 && 9<-1 && 2>(3); "
                      "let y = true && !false || false; }");
  INFO(parsed->messages());
  CHECK(parsed->messages().empty());
  const BinaryExpr &orExpr = binary(firstLetValue(*parsed));
  REQUIRE(orExpr.op == BinaryOp::Or);
  const BinaryExpr &greater = binary(*binary(*orExpr.lhs).rhs);
  CHECK(greater.op == BinaryOp::Gt);
  CHECK(greater.rhs->as<UnaryExpr>() != nullptr);
  CHECK(binary(*binary(*orExpr.lhs).lhs).op == BinaryOp::Lt);
  const BinaryExpr &last = binary(*orExpr.rhs); // ... && 2>(3)
  CHECK(last.op == BinaryOp::And);
  CHECK(binary(*last.rhs).op == BinaryOp::Gt);
  auto shifted = parse("kernel k() { let x = 1 << 2; }");
  CHECK(shifted->program == nullptr);
  CHECK(shifted->messages().find("no shift operators") != std::string::npos);
}

TEST_CASE("the conditional is looser than || and a redomap body extends to the right") {
  auto parsed = parse("kernel k() { let x = true || false ? 1 : 2 + 3; "
                      "let y = redomap(+, 0, i in 0..4) i * 2; }");
  const auto *conditional = firstLetValue(*parsed).as<ConditionalExpr>();
  REQUIRE(conditional);
  CHECK(binary(*conditional->cond).op == BinaryOp::Or);
  CHECK(binary(*conditional->elseExpr).op == BinaryOp::Add);
  const auto *second = parsed->program->findKernel("k")->body->stmts[1]->as<DeclStmt>();
  REQUIRE(second);
  const auto *redomap = second->init->as<RedomapExpr>();
  REQUIRE(redomap);
  CHECK(binary(*redomap->body).op == BinaryOp::Mul);
}

TEST_CASE("ranges keep their bounds and optional step") {
  auto parsed = parse("kernel k(A: out f32[N]) {\n"
                      "  for t in 0..N by 2 { }\n"
                      "  parfor i in 1..N - 1, j in i..N { }\n"
                      "}");
  REQUIRE(parsed->program);
  KernelDecl *kernel = parsed->program->findKernel("k");
  const auto *loop = kernel->body->stmts[0]->as<ForStmt>();
  REQUIRE(loop);
  CHECK(loop->range.var->name == "t");
  REQUIRE(loop->range.step);
  REQUIRE(loop->range.step->as<IntLitExpr>());
  CHECK(loop->range.step->as<IntLitExpr>()->value == 2);
  const auto *parfor = kernel->body->stmts[1]->as<ParforStmt>();
  REQUIRE(parfor);
  REQUIRE(parfor->ranges.size() == 2);
  CHECK(parfor->ranges[0].step == nullptr);
  CHECK(binary(*parfor->ranges[0].hi).op == BinaryOp::Sub);
  const auto *innerLo = parfor->ranges[1].lo->as<NameExpr>();
  REQUIRE(innerLo);
  CHECK(innerLo->name == "i");
}

TEST_CASE("nodes carry the source range of their text") {
  auto parsed = parse("kernel k(A: inout f32[N]) {\n"
                      "  parfor i in 0..N { A[i] = A[i] * 2.0; }\n"
                      "}");
  REQUIRE(parsed->program);
  KernelDecl *kernel = parsed->program->findKernel("k");
  CHECK(kernel->nameRange.begin.line == 1);
  CHECK(kernel->nameRange.begin.col == 8);
  CHECK(kernel->nameRange.end.col == 8);
  const auto *parfor = kernel->body->stmts[0]->as<ParforStmt>();
  REQUIRE(parfor);
  CHECK(parfor->range.begin.line == 2);
  CHECK(parfor->range.begin.col == 3);
  CHECK(parfor->range.end.col == 41);
  const auto *assign = parfor->body->stmts[0]->as<AssignStmt>();
  REQUIRE(assign);
  CHECK(assign->targetRange.begin.col == 22);
  CHECK(assign->targetRange.end.col == 25); // `A[i]`
  const BinaryExpr &product = binary(*assign->value);
  CHECK(product.range.begin.col == 29);
  CHECK(product.range.end.col == 38); // `A[i] * 2.0`
  CHECK(product.rhs->range.begin.col == 36);
}

TEST_CASE("a standard-library import loads the module once") {
  auto parsed =
      parse("import linalg;\nimport linalg;\n"
            "kernel k(A: in f32[M][K], B: in f32[K][N], C: out f32[M][N]) { gemm(A, B, C); }");
  INFO(parsed->messages());
  REQUIRE(parsed->program);
  CHECK(parsed->program->modules.size() == 2);
  CHECK(parsed->program->findKernel("gemm") != nullptr);
  CHECK(parsed->program->findKernel("k") != nullptr);
}

TEST_CASE("relative imports resolve against the importing file") {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("loopc_frontend_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "lib");
  std::ofstream(dir / "main.loop")
      << "import \"lib/helpers.loop\";\nkernel k(r: out f32) { r = twice(1.0); }\n";
  std::ofstream(dir / "lib" / "helpers.loop")
      << "import \"./more.loop\";\nfn twice(x: f32) -> f32 { return x + x; }\n";
  std::ofstream(dir / "lib" / "more.loop") << "import \"missing.loop\";\n";

  SourceManager sources;
  DiagnosticEngine diagnostics(sources);
  auto program = loadProgram((dir / "main.loop").string(), sources, diagnostics);
  std::ostringstream text;
  diagnostics.print(text);
  CHECK(program == nullptr);
  // The missing file is looked up next to more.loop, which imports it.
  CHECK(text.str().find("more.loop:1:1: error: cannot find module 'missing.loop'") !=
        std::string::npos);
  CHECK(text.str().find((dir / "lib" / "missing.loop").string()) != std::string::npos);

  std::ofstream(dir / "lib" / "more.loop") << "fn unused(x: f32) -> f32 { return x; }\n";
  SourceManager fixedSources;
  DiagnosticEngine fixedDiagnostics(fixedSources);
  auto fixed = loadProgram((dir / "main.loop").string(), fixedSources, fixedDiagnostics);
  REQUIRE(fixed);
  CHECK(fixed->modules.size() == 3);
  CHECK(fixed->findFn("twice") != nullptr);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an unknown standard-library module is an error naming it") {
  auto parsed = parse("import nosuchmodule;\nkernel k() { }");
  CHECK(parsed->program == nullptr);
  CHECK(parsed->messages().find("t.loop:1:1: error: cannot find module 'nosuchmodule'") !=
        std::string::npos);
}

TEST_CASE("a byte that starts no UTF-8 character is reported where it is") {
  // From a bug hunt: every such file was reported at 1:1. Columns count
  // characters (the 'é' before the bad byte is one).
  auto latin1 = parse("kernel k(x: out f32[N]) {\n  // caf\xC3\xA9 \xE9t\xE9\n}\n");
  CHECK(latin1->program == nullptr);
  CHECK(contains(latin1->messages(), "t.loop:2:11: error: the file is not valid UTF-8"));
  for (const char *bad : {"\xC0\xAF", "\xF4\x90\x80\x80", "\xE2\x82"}) {
    CAPTURE(bad);
    auto parsed = parse(std::string("kernel k() { }\n// ") + bad + "\n");
    CHECK(contains(parsed->messages(), "t.loop:2:4: error: the file is not valid UTF-8"));
  }
}
