// Builds the AST from a syntactically valid parse tree. Dispatch over labelled
// alternatives uses dynamic_cast rather than the generated visitor so every
// builder returns its node type directly (antlrcpp::Any cannot hold the
// move-only AST nodes).
#include "frontend/AstBuilder.h"

#include <cassert>
#include <charconv>
#include <limits>

namespace loopc {

using G = grammar::LoopParser;

namespace {

// The number of characters of a token (ANTLR indexes characters, not bytes).
uint32_t tokenLength(antlr4::Token *token) {
  if (token->getStopIndex() < token->getStartIndex())
    return 0;
  return static_cast<uint32_t>(token->getStopIndex() - token->getStartIndex() + 1);
}

BinaryOp binaryOpFromSpelling(const std::string &spelling) {
  static const std::pair<const char *, BinaryOp> table[] = {
      {"+", BinaryOp::Add}, {"-", BinaryOp::Sub}, {"*", BinaryOp::Mul}, {"/", BinaryOp::Div},
      {"%", BinaryOp::Rem}, {"<", BinaryOp::Lt},  {"<=", BinaryOp::Le}, {">", BinaryOp::Gt},
      {">=", BinaryOp::Ge}, {"==", BinaryOp::Eq}, {"!=", BinaryOp::Ne}, {"&&", BinaryOp::And},
      {"||", BinaryOp::Or}};
  for (const auto &[text, op] : table)
    if (spelling == text)
      return op;
  assert(false && "the grammar admits no other binary operator");
  return BinaryOp::Add;
}

AssignOp assignOpFromSpelling(const std::string &spelling) {
  static const std::pair<const char *, AssignOp> table[] = {
      {"=", AssignOp::Assign}, {"+=", AssignOp::Add}, {"-=", AssignOp::Sub},
      {"*=", AssignOp::Mul},   {"/=", AssignOp::Div}, {"%=", AssignOp::Rem}};
  for (const auto &[text, op] : table)
    if (spelling == text)
      return op;
  assert(false && "the grammar admits no other assignment operator");
  return AssignOp::Assign;
}

Intent intentFromSpelling(const std::string &spelling) {
  if (spelling == "in")
    return Intent::In;
  if (spelling == "out")
    return Intent::Out;
  assert(spelling == "inout" && "the grammar admits no other intent");
  return Intent::InOut;
}

} // namespace

SourceRange AstBuilder::rangeOf(antlr4::Token *token) const {
  SourceRange range;
  range.begin = {file_, static_cast<uint32_t>(token->getLine()),
                 static_cast<uint32_t>(token->getCharPositionInLine() + 1)};
  range.end = range.begin;
  if (uint32_t length = tokenLength(token); length > 1)
    range.end.col += length - 1;
  return range;
}

SourceRange AstBuilder::rangeOf(antlr4::ParserRuleContext *ctx) const {
  SourceRange range = rangeOf(ctx->getStart());
  if (antlr4::Token *stop = ctx->getStop();
      stop && stop->getTokenIndex() >= ctx->getStart()->getTokenIndex())
    range.end = rangeOf(stop).end;
  return range;
}

// ------------------------------------------------------------ top level ---

std::unique_ptr<Module> AstBuilder::build(G::ProgramContext *program) {
  auto module = std::make_unique<Module>();
  module->file = file_;
  for (G::ImportDeclContext *import : program->importDecl())
    module->imports.push_back(buildImport(import));
  for (G::TopDeclContext *decl : program->topDecl()) {
    if (auto *kernel = dynamic_cast<G::KernelDeclContext *>(decl))
      module->kernels.push_back(buildKernel(kernel));
    else if (auto *fn = dynamic_cast<G::FnDeclContext *>(decl))
      module->fns.push_back(buildFn(fn));
  }
  if (failed_)
    return nullptr;
  return module;
}

ImportDecl AstBuilder::buildImport(G::ImportDeclContext *ctx) {
  ImportDecl import;
  import.range = rangeOf(ctx);
  if (antlr4::tree::TerminalNode *path = ctx->STRING()) {
    std::string quoted = path->getText();
    import.target = quoted.substr(1, quoted.size() - 2);
    import.isPath = true;
  } else {
    import.target = ctx->ID()->getText();
  }
  return import;
}

std::unique_ptr<KernelDecl> AstBuilder::buildKernel(G::KernelDeclContext *ctx) {
  auto kernel = std::make_unique<KernelDecl>();
  kernel->name = ctx->ID()->getText();
  kernel->isUnsafe = ctx->UNSAFE() != nullptr;
  for (G::AttributeContext *attribute : ctx->attribute()) {
    Attribute built;
    built.name = attribute->ID()->getText();
    built.nameRange = rangeOf(attribute->ID());
    built.range = rangeOf(attribute);
    for (G::AttributeArgContext *arg : attribute->attributeArg()) {
      AttributeArg builtArg;
      std::vector<antlr4::tree::TerminalNode *> words = arg->ID();
      builtArg.name = words.front()->getText();
      builtArg.range = rangeOf(arg);
      antlr4::tree::TerminalNode *value = words.size() > 1 ? words[1] : arg->INT();
      if (value) {
        builtArg.value = value->getText();
        builtArg.valueRange = rangeOf(value);
      }
      built.args.push_back(std::move(builtArg));
    }
    kernel->attributes.push_back(std::move(built));
  }
  kernel->nameRange = rangeOf(ctx->ID());
  kernel->range = rangeOf(ctx);
  kernel->params = buildParams(ctx->paramList());
  kernel->body = buildBlock(ctx->block());
  return kernel;
}

std::unique_ptr<FnDecl> AstBuilder::buildFn(G::FnDeclContext *ctx) {
  auto fn = std::make_unique<FnDecl>();
  fn->name = ctx->ID()->getText();
  fn->nameRange = rangeOf(ctx->ID());
  fn->range = rangeOf(ctx);
  fn->associative = ctx->ASSOC() != nullptr;
  fn->params = buildParams(ctx->paramList());
  fn->result = buildScalarType(ctx->scalarType());
  fn->body = buildBlock(ctx->block());
  return fn;
}

std::vector<VarDeclPtr> AstBuilder::buildParams(G::ParamListContext *ctx) {
  std::vector<VarDeclPtr> params;
  if (!ctx)
    return params;
  for (G::ParamContext *param : ctx->param())
    params.push_back(buildParam(param));
  return params;
}

VarDeclPtr AstBuilder::buildParam(G::ParamContext *ctx) {
  auto param = std::make_unique<VarDecl>();
  param->kind = VarDecl::Kind::Param;
  param->name = ctx->ID()->getText();
  param->range = rangeOf(ctx->ID());
  if (G::IntentContext *intent = ctx->intent())
    param->intent = intentFromSpelling(intent->getText());
  param->type = buildType(ctx->type());
  return param;
}

TypeSpec AstBuilder::buildType(G::TypeContext *ctx) {
  TypeSpec type;
  type.element = buildScalarType(ctx->scalarType());
  for (G::ExprContext *extent : ctx->expr())
    type.dims.push_back(buildExpr(extent));
  type.range = rangeOf(ctx);
  return type;
}

ScalarType AstBuilder::buildScalarType(G::ScalarTypeContext *ctx) {
  static const std::pair<const char *, ScalarType> table[] = {{"i32", ScalarType::I32},
                                                              {"i64", ScalarType::I64},
                                                              {"f32", ScalarType::F32},
                                                              {"f64", ScalarType::F64},
                                                              {"bool", ScalarType::Bool}};
  std::string spelling = ctx->getText();
  for (const auto &[text, type] : table)
    if (spelling == text)
      return type;
  assert(false && "the grammar admits no other scalar type");
  return ScalarType::F32;
}

// ------------------------------------------------------------ statements ---

std::unique_ptr<BlockStmt> AstBuilder::buildBlock(G::BlockContext *ctx) {
  auto block = std::make_unique<BlockStmt>();
  block->range = rangeOf(ctx);
  for (G::StmtContext *stmt : ctx->stmt())
    block->stmts.push_back(buildStmt(stmt));
  return block;
}

StmtPtr AstBuilder::buildStmt(G::StmtContext *ctx) {
  if (auto *let = dynamic_cast<G::LetStmtContext *>(ctx))
    return buildLet(let);
  if (auto *var = dynamic_cast<G::VarStmtContext *>(ctx))
    return buildVar(var);
  if (auto *assign = dynamic_cast<G::AssignStmtContext *>(ctx))
    return buildAssign(assign);
  if (auto *combine = dynamic_cast<G::CombineStmtContext *>(ctx))
    return buildCombine(combine);
  if (auto *scan = dynamic_cast<G::ScanStmtContext *>(ctx))
    return buildScan(scan);
  if (auto *forStmt = dynamic_cast<G::ForStmtContext *>(ctx))
    return buildFor(forStmt);
  if (auto *parfor = dynamic_cast<G::ParforStmtContext *>(ctx))
    return buildParfor(parfor);
  if (auto *ifStmt = dynamic_cast<G::IfStmtContext *>(ctx))
    return buildIf(ifStmt->ifStatement());
  if (auto *returnStmt = dynamic_cast<G::ReturnStmtContext *>(ctx))
    return buildReturn(returnStmt);
  if (auto *call = dynamic_cast<G::CallStmtContext *>(ctx))
    return buildCallStmt(call);
  auto *block = dynamic_cast<G::BlockStmtContext *>(ctx);
  assert(block && "unhandled statement alternative");
  std::unique_ptr<BlockStmt> built = buildBlock(block->block());
  built->isUnsafe = block->UNSAFE() != nullptr;
  return built;
}

StmtPtr AstBuilder::buildLet(G::LetStmtContext *ctx) {
  auto decl = std::make_unique<DeclStmt>();
  decl->range = rangeOf(ctx);
  decl->var = std::make_unique<VarDecl>();
  decl->var->kind = VarDecl::Kind::Let;
  decl->var->name = ctx->ID()->getText();
  decl->var->range = rangeOf(ctx->ID());
  if (G::TypeContext *type = ctx->type()) {
    decl->var->type = buildType(type);
    decl->hasExplicitType = true;
  }
  decl->init = buildExpr(ctx->expr());
  return decl;
}

StmtPtr AstBuilder::buildVar(G::VarStmtContext *ctx) {
  auto decl = std::make_unique<DeclStmt>();
  decl->range = rangeOf(ctx);
  decl->var = std::make_unique<VarDecl>();
  decl->var->kind = VarDecl::Kind::Var;
  decl->var->name = ctx->ID()->getText();
  decl->var->range = rangeOf(ctx->ID());
  if (G::TypeContext *type = ctx->type()) {
    decl->var->type = buildType(type);
    decl->hasExplicitType = true;
  }
  if (G::ExprContext *init = ctx->expr())
    decl->init = buildExpr(init);
  return decl;
}

std::unique_ptr<AssignStmt> AstBuilder::buildAssignment(antlr4::ParserRuleContext *ctx,
                                                        G::LvalueContext *target,
                                                        G::ExprContext *value) {
  auto assign = std::make_unique<AssignStmt>();
  assign->range = rangeOf(ctx);
  assign->target = target->ID()->getText();
  assign->targetRange = rangeOf(target);
  for (G::ExprContext *index : target->expr())
    assign->indices.push_back(buildExpr(index));
  assign->value = buildExpr(value);
  return assign;
}

StmtPtr AstBuilder::buildAssign(G::AssignStmtContext *ctx) {
  auto assign = buildAssignment(ctx, ctx->lvalue(), ctx->expr());
  assign->op = assignOpFromSpelling(ctx->assignOp()->getText());
  return assign;
}

StmtPtr AstBuilder::buildCombine(G::CombineStmtContext *ctx) {
  auto assign = buildAssignment(ctx, ctx->lvalue(), ctx->expr());
  assign->op = AssignOp::Combine;
  assign->combineOp = buildReduceOp(ctx->reduceOp());
  return assign;
}

StmtPtr AstBuilder::buildScan(G::ScanStmtContext *ctx) {
  auto scan = std::make_unique<ScanStmt>();
  scan->range = rangeOf(ctx);
  scan->op = buildReduceOp(ctx->reduceOp());
  scan->neutral = buildExpr(ctx->expr(0));
  for (G::RangeContext *range : ctx->range())
    scan->ranges.push_back(buildRange(range));
  scan->write = buildAssignment(ctx, ctx->lvalue(), ctx->expr(1));
  return scan;
}

StmtPtr AstBuilder::buildFor(G::ForStmtContext *ctx) {
  auto loop = std::make_unique<ForStmt>();
  // ForStmt's `range` member (the iteration range) hides Stmt::range.
  static_cast<Stmt &>(*loop).range = rangeOf(ctx);
  loop->range = buildRange(ctx->range());
  loop->body = buildBlock(ctx->block());
  return loop;
}

StmtPtr AstBuilder::buildParfor(G::ParforStmtContext *ctx) {
  auto loop = std::make_unique<ParforStmt>();
  loop->range = rangeOf(ctx);
  for (G::RangeContext *range : ctx->range())
    loop->ranges.push_back(buildRange(range));
  loop->body = buildBlock(ctx->block());
  return loop;
}

StmtPtr AstBuilder::buildIf(G::IfStatementContext *ctx) {
  auto ifStmt = std::make_unique<IfStmt>();
  ifStmt->range = rangeOf(ctx);
  ifStmt->cond = buildExpr(ctx->expr());
  ifStmt->thenBody = buildBlock(ctx->block(0));
  if (G::IfStatementContext *elseIf = ctx->ifStatement())
    ifStmt->elseBody = buildIf(elseIf);
  else if (G::BlockContext *elseBlock = ctx->block(1))
    ifStmt->elseBody = buildBlock(elseBlock);
  return ifStmt;
}

StmtPtr AstBuilder::buildReturn(G::ReturnStmtContext *ctx) {
  auto ret = std::make_unique<ReturnStmt>();
  ret->range = rangeOf(ctx);
  ret->value = buildExpr(ctx->expr());
  return ret;
}

StmtPtr AstBuilder::buildCallStmt(G::CallStmtContext *ctx) {
  auto call = std::make_unique<CallStmt>();
  call->range = rangeOf(ctx);
  call->callee = ctx->ID()->getText();
  call->args = buildArgs(ctx->argList());
  return call;
}

Range AstBuilder::buildRange(G::RangeContext *ctx) {
  Range range;
  range.range = rangeOf(ctx);
  range.var = std::make_unique<VarDecl>();
  range.var->kind = VarDecl::Kind::LoopVar;
  range.var->name = ctx->ID()->getText();
  range.var->range = rangeOf(ctx->ID());
  range.lo = buildExpr(ctx->expr(0));
  range.hi = buildExpr(ctx->expr(1));
  if (G::ExprContext *step = ctx->expr(2))
    range.step = buildExpr(step);
  return range;
}

// ----------------------------------------------------------- expressions ---

ExprPtr AstBuilder::buildExpr(G::ExprContext *ctx) {
  if (auto *primary = dynamic_cast<G::PrimaryExprContext *>(ctx))
    return buildPrimary(primary->primary());
  if (auto *unary = dynamic_cast<G::UnaryExprContext *>(ctx))
    return buildUnary(unary);
  if (auto *binary = dynamic_cast<G::BinaryExprContext *>(ctx))
    return buildBinary(binary);
  if (auto *conditional = dynamic_cast<G::ConditionalExprContext *>(ctx))
    return buildConditional(conditional);
  auto *redomap = dynamic_cast<G::RedomapExprContext *>(ctx);
  assert(redomap && "unhandled expression alternative");
  return buildRedomap(redomap);
}

ExprPtr AstBuilder::buildUnary(G::UnaryExprContext *ctx) {
  auto unary = std::make_unique<UnaryExpr>();
  unary->range = rangeOf(ctx);
  unary->op = ctx->op->getText() == "-" ? UnaryOp::Neg : UnaryOp::Not;
  unary->operand = buildExpr(ctx->expr());
  return unary;
}

ExprPtr AstBuilder::buildBinary(G::BinaryExprContext *ctx) {
  auto binary = std::make_unique<BinaryExpr>();
  binary->range = rangeOf(ctx);
  binary->op = binaryOpFromSpelling(ctx->op->getText());
  binary->lhs = buildExpr(ctx->expr(0));
  binary->rhs = buildExpr(ctx->expr(1));
  return binary;
}

ExprPtr AstBuilder::buildConditional(G::ConditionalExprContext *ctx) {
  auto conditional = std::make_unique<ConditionalExpr>();
  conditional->range = rangeOf(ctx);
  conditional->cond = buildExpr(ctx->expr(0));
  conditional->thenExpr = buildExpr(ctx->expr(1));
  conditional->elseExpr = buildExpr(ctx->expr(2));
  return conditional;
}

ExprPtr AstBuilder::buildRedomap(G::RedomapExprContext *ctx) {
  auto redomap = std::make_unique<RedomapExpr>();
  redomap->range = rangeOf(ctx);
  redomap->op = buildReduceOp(ctx->reduceOp());
  redomap->neutral = buildExpr(ctx->expr(0));
  for (G::RangeContext *range : ctx->range())
    redomap->ranges.push_back(buildRange(range));
  redomap->body = buildExpr(ctx->expr(1));
  return redomap;
}

ReduceOp AstBuilder::buildReduceOp(G::ReduceOpContext *ctx) {
  ReduceOp op;
  op.range = rangeOf(ctx);
  std::string spelling = ctx->getText();
  if (spelling == "+")
    op.kind = ReduceOp::Kind::Add;
  else if (spelling == "*")
    op.kind = ReduceOp::Kind::Mul;
  else if (spelling == "&&")
    op.kind = ReduceOp::Kind::And;
  else if (spelling == "||")
    op.kind = ReduceOp::Kind::Or;
  else if (spelling == "min")
    op.kind = ReduceOp::Kind::Min;
  else if (spelling == "max")
    op.kind = ReduceOp::Kind::Max;
  else {
    op.kind = ReduceOp::Kind::User;
    op.userName = spelling;
  }
  return op;
}

ExprPtr AstBuilder::buildPrimary(G::PrimaryContext *ctx) {
  if (auto *literal = dynamic_cast<G::IntLiteralContext *>(ctx))
    return buildIntLiteral(literal);
  if (auto *literal = dynamic_cast<G::FloatLiteralContext *>(ctx))
    return buildFloatLiteral(literal);
  if (auto *literal = dynamic_cast<G::BoolLiteralContext *>(ctx))
    return buildBoolLiteral(literal);
  if (auto *literal = dynamic_cast<G::InfLiteralContext *>(ctx))
    return buildInfLiteral(literal);
  if (auto *index = dynamic_cast<G::IndexExprContext *>(ctx))
    return buildIndex(index);
  if (auto *call = dynamic_cast<G::CallExprContext *>(ctx))
    return buildCall(call);
  if (auto *cast = dynamic_cast<G::CastExprContext *>(ctx))
    return buildCast(cast);
  if (auto *name = dynamic_cast<G::NameExprContext *>(ctx))
    return buildName(name);
  auto *paren = dynamic_cast<G::ParenExprContext *>(ctx);
  assert(paren && "unhandled primary alternative");
  return buildParen(paren);
}

ExprPtr AstBuilder::buildIntLiteral(G::IntLiteralContext *ctx) {
  auto literal = std::make_unique<IntLitExpr>();
  literal->range = rangeOf(ctx);
  std::string text = ctx->INT()->getText();
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), literal->value);
  if (error != std::errc() || end != text.data() + text.size()) {
    diagnostics_.error(literal->range, "integer literal '" + text + "' does not fit in 64 bits");
    failed_ = true;
  }
  return literal;
}

ExprPtr AstBuilder::buildFloatLiteral(G::FloatLiteralContext *ctx) {
  auto literal = std::make_unique<FloatLitExpr>();
  literal->range = rangeOf(ctx);
  std::string text = ctx->FLOAT()->getText();
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), literal->value);
  if (error == std::errc::result_out_of_range) {
    diagnostics_.error(literal->range,
                       "floating-point literal '" + text + "' is out of the range of f64");
    failed_ = true;
  } else if (error != std::errc() || end != text.data() + text.size()) {
    diagnostics_.error(literal->range, "malformed floating-point literal '" + text + "'");
    failed_ = true;
  }
  return literal;
}

ExprPtr AstBuilder::buildBoolLiteral(G::BoolLiteralContext *ctx) {
  auto literal = std::make_unique<BoolLitExpr>();
  literal->range = rangeOf(ctx);
  literal->value = ctx->getText() == "true";
  return literal;
}

ExprPtr AstBuilder::buildInfLiteral(G::InfLiteralContext *ctx) {
  auto literal = std::make_unique<FloatLitExpr>();
  literal->range = rangeOf(ctx);
  literal->value = std::numeric_limits<double>::infinity();
  return literal;
}

ExprPtr AstBuilder::buildIndex(G::IndexExprContext *ctx) {
  auto index = std::make_unique<IndexExpr>();
  index->range = rangeOf(ctx);
  index->array = ctx->ID()->getText();
  for (G::ExprContext *subscript : ctx->expr())
    index->indices.push_back(buildExpr(subscript));
  return index;
}

ExprPtr AstBuilder::buildCall(G::CallExprContext *ctx) {
  auto call = std::make_unique<CallExpr>();
  call->range = rangeOf(ctx);
  call->callee = ctx->ID()->getText();
  call->args = buildArgs(ctx->argList());
  return call;
}

ExprPtr AstBuilder::buildCast(G::CastExprContext *ctx) {
  auto cast = std::make_unique<CastExpr>();
  cast->range = rangeOf(ctx);
  cast->target = buildScalarType(ctx->scalarType());
  cast->operand = buildExpr(ctx->expr());
  return cast;
}

ExprPtr AstBuilder::buildName(G::NameExprContext *ctx) {
  auto name = std::make_unique<NameExpr>();
  name->range = rangeOf(ctx);
  name->name = ctx->ID()->getText();
  return name;
}

// Parentheses leave no node; the inner expression's range grows to include
// them so diagnostics underline what the user wrote.
ExprPtr AstBuilder::buildParen(G::ParenExprContext *ctx) {
  ExprPtr inner = buildExpr(ctx->expr());
  inner->range = rangeOf(ctx);
  return inner;
}

std::vector<ExprPtr> AstBuilder::buildArgs(G::ArgListContext *ctx) {
  std::vector<ExprPtr> args;
  if (!ctx)
    return args;
  for (G::ExprContext *arg : ctx->expr())
    args.push_back(buildExpr(arg));
  return args;
}

} // namespace loopc
