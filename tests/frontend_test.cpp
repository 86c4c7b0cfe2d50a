// The front end: parsing into the AST with source ranges, and syntax errors.
#include "TestSupport.h"

#include "frontend/Loader.h"

#include <doctest/doctest.h>

using namespace loopc;

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
