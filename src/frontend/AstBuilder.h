// Turns the ANTLR parse tree of one .loop file into the AST of Ast.h. The
// builder runs only on trees without syntax errors, so it may rely on every
// part the grammar makes mandatory; what it still checks are properties the
// grammar cannot express (integer literals that overflow uint64, float
// literals out of the double range), reported through the DiagnosticEngine.
#pragma once

#include "frontend/Ast.h"

#include "LoopParser.h"

namespace loopc {

class AstBuilder {
public:
  using G = grammar::LoopParser;

  AstBuilder(uint32_t file, DiagnosticEngine &diagnostics)
      : file_(file), diagnostics_(diagnostics) {}

  // Returns the module, or null when a literal was rejected.
  std::unique_ptr<Module> build(G::ProgramContext *program);

private:
  // Top level.
  ImportDecl buildImport(G::ImportDeclContext *ctx);
  std::unique_ptr<KernelDecl> buildKernel(G::KernelDeclContext *ctx);
  std::unique_ptr<FnDecl> buildFn(G::FnDeclContext *ctx);
  std::vector<VarDeclPtr> buildParams(G::ParamListContext *ctx);
  VarDeclPtr buildParam(G::ParamContext *ctx);
  TypeSpec buildType(G::TypeContext *ctx);
  ScalarType buildScalarType(G::ScalarTypeContext *ctx);

  // Statements: one method per alternative of `stmt`.
  std::unique_ptr<BlockStmt> buildBlock(G::BlockContext *ctx);
  StmtPtr buildStmt(G::StmtContext *ctx);
  StmtPtr buildLet(G::LetStmtContext *ctx);
  StmtPtr buildVar(G::VarStmtContext *ctx);
  StmtPtr buildAssign(G::AssignStmtContext *ctx);
  StmtPtr buildCombine(G::CombineStmtContext *ctx);
  StmtPtr buildScan(G::ScanStmtContext *ctx);
  // The target and value of an assignment statement `ctx`.
  std::unique_ptr<AssignStmt> buildAssignment(antlr4::ParserRuleContext *ctx,
                                              G::LvalueContext *target, G::ExprContext *value);
  StmtPtr buildFor(G::ForStmtContext *ctx);
  StmtPtr buildParfor(G::ParforStmtContext *ctx);
  StmtPtr buildIf(G::IfStatementContext *ctx);
  StmtPtr buildReturn(G::ReturnStmtContext *ctx);
  StmtPtr buildCallStmt(G::CallStmtContext *ctx);
  Range buildRange(G::RangeContext *ctx);

  // Expressions: one method per alternative of `expr` and `primary`.
  ExprPtr buildExpr(G::ExprContext *ctx);
  ExprPtr buildUnary(G::UnaryExprContext *ctx);
  ExprPtr buildBinary(G::BinaryExprContext *ctx);
  ExprPtr buildConditional(G::ConditionalExprContext *ctx);
  ExprPtr buildRedomap(G::RedomapExprContext *ctx);
  ReduceOp buildReduceOp(G::ReduceOpContext *ctx);
  ExprPtr buildPrimary(G::PrimaryContext *ctx);
  ExprPtr buildIntLiteral(G::IntLiteralContext *ctx);
  ExprPtr buildFloatLiteral(G::FloatLiteralContext *ctx);
  ExprPtr buildBoolLiteral(G::BoolLiteralContext *ctx);
  ExprPtr buildInfLiteral(G::InfLiteralContext *ctx);
  ExprPtr buildIndex(G::IndexExprContext *ctx);
  ExprPtr buildCall(G::CallExprContext *ctx);
  ExprPtr buildCast(G::CastExprContext *ctx);
  ExprPtr buildName(G::NameExprContext *ctx);
  ExprPtr buildParen(G::ParenExprContext *ctx);
  std::vector<ExprPtr> buildArgs(G::ArgListContext *ctx);

  SourceRange rangeOf(antlr4::ParserRuleContext *ctx) const;
  SourceRange rangeOf(antlr4::Token *token) const;
  SourceRange rangeOf(antlr4::tree::TerminalNode *node) const { return rangeOf(node->getSymbol()); }

  uint32_t file_;
  DiagnosticEngine &diagnostics_;
  bool failed_ = false;
};

} // namespace loopc
