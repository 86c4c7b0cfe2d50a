// The typing of expressions: names and array elements, calls of functions
// and builtins, casts, operators, conditionals and redomap. There are no
// implicit conversions, so every operator asks for one type on both sides.
// Literals are the exception: a tree made only of literals stays flexible
// (Ty) until its context gives it a type, which is then pushed down to every
// literal of the tree (unify, coerce, settle, finalize below), checking that
// each integer literal fits.
#include "sema/Checker.h"

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>

namespace loopc::sema {
namespace {

// Whether the literal `value`, negated when it is the operand of a unary
// minus, is representable in `type` (`-2147483648` is an i32, `2147483648`
// is not).
bool fitsIn(uint64_t value, bool negated, ScalarType type) {
  uint64_t extra = negated ? 1 : 0;
  if (type == ScalarType::I32)
    return value <= uint64_t(INT32_MAX) + extra;
  if (type == ScalarType::I64)
    return value <= uint64_t(INT64_MAX) + extra;
  return true;
}

} // namespace

std::optional<BuiltinSignature> findBuiltin(std::string_view name) {
  std::optional<Builtin> builtin = builtinNamed(name);
  if (!builtin)
    return std::nullopt;
  // abs, min and max take integers too; the rest only floats.
  bool floatOnly = *builtin != Builtin::Abs && *builtin != Builtin::Min && *builtin != Builtin::Max;
  return BuiltinSignature{*builtin, builtinArity(*builtin), floatOnly};
}

Ty Checker::checkExpr(Expr &expr) {
  switch (expr.kind) {
  case Expr::Kind::IntLit:
    return Ty::intLiteral();
  case Expr::Kind::FloatLit:
    return Ty::floatLiteral();
  case Expr::Kind::BoolLit:
    return known(expr, ScalarType::Bool);
  case Expr::Kind::Name:
    return checkName(*expr.as<NameExpr>());
  case Expr::Kind::Index:
    return checkIndexExpr(*expr.as<IndexExpr>());
  case Expr::Kind::Call:
    return checkCall(*expr.as<CallExpr>());
  case Expr::Kind::Cast:
    return checkCast(*expr.as<CastExpr>());
  case Expr::Kind::Unary:
    return checkUnary(*expr.as<UnaryExpr>());
  case Expr::Kind::Binary:
    return checkBinary(*expr.as<BinaryExpr>());
  case Expr::Kind::Conditional:
    return checkConditional(*expr.as<ConditionalExpr>());
  case Expr::Kind::Redomap:
    return checkRedomap(*expr.as<RedomapExpr>());
  }
  return Ty::poison();
}

Ty Checker::checkIndex(Expr &index) {
  Ty type = checkExpr(index);
  if (type.isPoison())
    return type;
  if (type.cannotBeInteger()) {
    diagnostics_.error(index.range, "an array index must be an integer, got " + describe(type));
    return Ty::poison();
  }
  return Ty::known(settle(index, type));
}

Ty Checker::known(Expr &expr, ScalarType type) {
  expr.type = type;
  return Ty::known(type);
}

// A flexible type is recorded later, when the tree is finalized.
Ty Checker::withType(Expr &expr, Ty type) {
  if (type.isKnown())
    expr.type = type.scalar;
  return type;
}

Ty Checker::checkName(NameExpr &name) {
  VarDecl *var = lookup(name.name);
  if (!var) {
    reportUnknownName(name.name, name.range);
    return Ty::poison();
  }
  name.decl = var;
  name.type = var->type.element;
  if (var->isArray()) {
    diagnostics_.error(name.range,
                       "array " + quoted(name.name) + " cannot be used as a value; index it");
    return Ty::poison();
  }
  if (poisoned_.contains(var))
    return Ty::poison();
  return Ty::known(var->type.element);
}

Ty Checker::checkIndexExpr(IndexExpr &index) {
  VarDecl *var = lookup(index.array);
  for (auto &subscript : index.indices)
    checkIndex(*subscript);
  if (!var) {
    reportUnknownName(index.array, index.range);
    return Ty::poison();
  }
  index.decl = var;
  index.type = var->type.element;
  if (!var->isArray()) {
    diagnostics_.error(index.range, quoted(var->name) + " is not an array");
    return Ty::poison();
  }
  if (index.indices.size() != var->type.rank()) {
    reportRankMismatch(*var, index.indices.size(), index.range);
    return Ty::poison();
  }
  if (poisoned_.contains(var))
    return Ty::poison();
  return Ty::known(var->type.element);
}

Ty Checker::checkCall(CallExpr &call) {
  std::optional<BuiltinSignature> builtin = findBuiltin(call.callee);
  FnDecl *fn = builtin ? nullptr : findFn(call.callee);
  if (!builtin && !fn) {
    if (findKernel(call.callee))
      diagnostics_.error(call.range, quoted(call.callee) +
                                         " is a kernel; kernels are called as statements, "
                                         "not in expressions");
    else
      diagnostics_.error(call.range, "unknown function " + quoted(call.callee) +
                                         suggestion(call.callee, functionNames()));
    // Arrays are fine here: the call was probably meant to be a kernel call.
    for (auto &arg : call.args)
      checkUnmatchedArgument(*arg);
    return Ty::poison();
  }
  std::vector<Ty> args;
  for (auto &arg : call.args)
    args.push_back(checkExpr(*arg));
  if (builtin)
    return checkBuiltinCall(call, *builtin, args);
  call.fn = fn;
  recordFnCall(*fn, call.range);
  if (args.size() != fn->params.size()) {
    diagnostics_.error(call.range, "function " + quoted(fn->name) +
                                       argumentCountMismatch(fn->params.size(), args.size()));
    diagnostics_.note(fn->nameRange, quoted(fn->name) + " is declared here");
    for (size_t i = 0; i < args.size(); ++i)
      settle(*call.args[i], args[i]);
    return known(call, fn->result);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    ScalarType wanted = fn->params[i]->type.element;
    if (!coerce(*call.args[i], args[i], wanted))
      diagnostics_.error(call.args[i]->range,
                         "argument " + std::to_string(i + 1) + " of " + quoted(fn->name) +
                             " must be " + quoted(scalarTypeName(wanted)) + ", got " +
                             describe(args[i]) + conversionHint(wanted, args[i]));
  }
  return known(call, fn->result);
}

void Checker::checkUnmatchedArgument(Expr &arg) {
  auto *name = arg.as<NameExpr>();
  VarDecl *var = name ? lookup(name->name) : nullptr;
  if (var && var->isArray()) {
    name->decl = var;
    name->type = var->type.element;
    return;
  }
  settle(arg, checkExpr(arg));
}

void Checker::recordFnCall(FnDecl &callee, SourceRange range) {
  if (currentFn_)
    fnCalls_[currentFn_].push_back({&callee, range});
}

Ty Checker::checkBuiltinCall(CallExpr &call, const BuiltinSignature &signature,
                             const std::vector<Ty> &args) {
  call.isBuiltin = true;
  call.builtin = signature.builtin;
  std::string name = quoted(call.callee);
  if (args.size() != signature.arity) {
    diagnostics_.error(call.range,
                       "builtin " + name + argumentCountMismatch(signature.arity, args.size()));
    for (size_t i = 0; i < args.size(); ++i)
      settle(*call.args[i], args[i]);
    return Ty::poison();
  }
  Ty type = args[0];
  for (size_t i = 1; i < args.size(); ++i)
    type = unify(*call.args[0], type, *call.args[i], args[i], call.callee.c_str());
  if (type.isPoison())
    return type;
  if (type.isKnown())
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].isFlexible())
        finalize(*call.args[i], type.scalar);
  if (type.is(ScalarType::Bool) ||
      (signature.floatOnly && type.isKnown() && !isFloat(type.scalar))) {
    diagnostics_.error(
        call.range, "builtin " + name + " needs " + (signature.floatOnly ? "float" : "numeric") +
                        " arguments, got " + describe(type) +
                        (type.is(ScalarType::Bool) ? "" : "; convert explicitly, e.g. f64(...)"));
    return Ty::poison();
  }
  if (signature.floatOnly && type.kind == Ty::Kind::IntLiteral)
    type = Ty::floatLiteral();
  return withType(call, type);
}

Ty Checker::checkCast(CastExpr &cast) {
  Ty operand = checkExpr(*cast.operand);
  if (operand.isFlexible()) {
    bool fitsTarget = cast.target != ScalarType::Bool &&
                      (operand.kind == Ty::Kind::IntLiteral || isFloat(cast.target));
    if (fitsTarget)
      finalize(*cast.operand, cast.target);
    else
      settle(*cast.operand, operand);
  }
  return known(cast, cast.target);
}

Ty Checker::checkUnary(UnaryExpr &unary) {
  Ty operand = checkExpr(*unary.operand);
  if (unary.op == UnaryOp::Not) {
    if (!coerce(*unary.operand, operand, ScalarType::Bool))
      diagnostics_.error(unary.range, "'!' needs a 'bool' operand, got " + describe(operand));
    return known(unary, ScalarType::Bool);
  }
  if (operand.isPoison())
    return operand;
  if (!operand.isNumeric()) {
    diagnostics_.error(unary.range, "'-' needs a numeric operand, got " + describe(operand));
    return Ty::poison();
  }
  return withType(unary, operand);
}

Ty Checker::checkBinary(BinaryExpr &binary) {
  const char *spelling = binaryOpSpelling(binary.op);
  Ty lhs = checkExpr(*binary.lhs);
  Ty rhs = checkExpr(*binary.rhs);
  switch (binary.op) {
  case BinaryOp::And:
  case BinaryOp::Or: {
    bool lhsOk = coerce(*binary.lhs, lhs, ScalarType::Bool);
    bool rhsOk = coerce(*binary.rhs, rhs, ScalarType::Bool);
    if (!lhsOk || !rhsOk)
      diagnostics_.error(binary.range, quoted(spelling) + " needs 'bool' operands, got " +
                                           describe(lhsOk ? rhs : lhs));
    return known(binary, ScalarType::Bool);
  }
  case BinaryOp::Eq:
  case BinaryOp::Ne:
  case BinaryOp::Lt:
  case BinaryOp::Le:
  case BinaryOp::Gt:
  case BinaryOp::Ge: {
    bool ordering = binary.op != BinaryOp::Eq && binary.op != BinaryOp::Ne;
    if (ordering && (lhs.is(ScalarType::Bool) || rhs.is(ScalarType::Bool))) {
      diagnostics_.error(binary.range, quoted(spelling) + " needs numeric operands, got 'bool'");
      settle(*binary.lhs, lhs);
      settle(*binary.rhs, rhs);
      return known(binary, ScalarType::Bool);
    }
    // Two literals compared have no context to take a type from: they
    // default as a whole, so `1 < 2.5` compares two f64.
    Ty type = unify(*binary.lhs, lhs, *binary.rhs, rhs, spelling);
    if (type.isFlexible()) {
      ScalarType scalar = settle(*binary.lhs, type);
      finalize(*binary.rhs, scalar);
    }
    return known(binary, ScalarType::Bool);
  }
  case BinaryOp::Add:
  case BinaryOp::Sub:
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Rem:
    break;
  }
  if (lhs.is(ScalarType::Bool) || rhs.is(ScalarType::Bool)) {
    diagnostics_.error(binary.range, quoted(spelling) + " needs numeric operands, got 'bool'");
    return Ty::poison();
  }
  Ty type = unify(*binary.lhs, lhs, *binary.rhs, rhs, spelling);
  if (type.isPoison())
    return type;
  // Neither side is 'bool' here, so a type that cannot be an integer is a float.
  if (binary.op == BinaryOp::Rem && type.cannotBeInteger()) {
    diagnostics_.error(binary.range, "'%' needs integer operands, got " + describe(type));
    return Ty::poison();
  }
  return withType(binary, type);
}

Ty Checker::checkConditional(ConditionalExpr &conditional) {
  expectBool(*conditional.cond, "the condition of '?:'");
  Ty thenType = checkExpr(*conditional.thenExpr);
  Ty elseType = checkExpr(*conditional.elseExpr);
  Ty type = unify(*conditional.thenExpr, thenType, *conditional.elseExpr, elseType, "?:");
  return withType(conditional, type);
}

Ty Checker::checkRedomap(RedomapExpr &redomap) {
  Ty neutral = checkExpr(*redomap.neutral);
  pushScope();
  for (Range &range : redomap.ranges)
    checkRange(range);
  Ty body = checkExpr(*redomap.body);
  popScope();
  ReduceOp &op = redomap.op;
  if (op.kind == ReduceOp::Kind::User) {
    FnDecl *fn = resolveUserOperator(op, "redomap");
    if (!fn) {
      settle(*redomap.neutral, neutral);
      settle(*redomap.body, body);
      return Ty::poison();
    }
    ScalarType result = fn->result;
    if (!coerce(*redomap.neutral, neutral, result))
      diagnostics_.error(redomap.neutral->range,
                         "the neutral element of 'redomap(" + fn->name + ")' must be " +
                             quoted(scalarTypeName(result)) + ", got " + describe(neutral));
    if (!coerce(*redomap.body, body, result))
      diagnostics_.error(redomap.body->range, "the body of 'redomap(" + fn->name + ")' must be " +
                                                  quoted(scalarTypeName(result)) + ", got " +
                                                  describe(body) + conversionHint(result, body));
    return known(redomap, result);
  }
  std::string what = std::string("redomap(") + reduceOpSpelling(op) + ")";
  bool logical = op.kind == ReduceOp::Kind::And || op.kind == ReduceOp::Kind::Or;
  const auto *comparison = redomap.body->as<BinaryExpr>();
  if (comparison && comparison->op < BinaryOp::Lt)
    comparison = nullptr;
  if (!logical && comparison && !redomap.neutral->as<BoolLitExpr>() &&
      !(neutral.isKnown() && neutral.scalar == ScalarType::Bool)) {
    // `redomap(+, 0.0, j in 0..C) X[j] > 0.0` reads as a redomap of the
    // comparison; the message would otherwise be about the neutral element.
    diagnostics_.error(redomap.body->range,
                       "the body of '" + what + "' is a comparison ('" +
                           binaryOpSpelling(comparison->op) +
                           "'): a body extends as far right as it can; to compare the "
                           "reduction's result, put the redomap in parentheses; to count, "
                           "convert the comparison, i64(...)");
    return Ty::poison();
  }
  if (neutral.isKnown() && body.isKnown() && neutral.scalar != body.scalar) {
    diagnostics_.error(redomap.range, "the neutral element (" + describe(neutral) +
                                          ") and the body (" + describe(body) + ") of '" + what +
                                          "' must have one type");
    return Ty::poison();
  }
  Ty type = unify(*redomap.neutral, neutral, *redomap.body, body, what.c_str());
  if (type.isPoison())
    return type;
  checkConstantNeutral(op, *redomap.neutral, "redomap");
  if (logical) {
    if (!coerce(*redomap.neutral, type, ScalarType::Bool)) {
      diagnostics_.error(redomap.range,
                         "'" + what + "' combines 'bool' values, got " + describe(type));
      return Ty::poison();
    }
    return known(redomap, ScalarType::Bool);
  }
  if (type.is(ScalarType::Bool)) {
    diagnostics_.error(redomap.range, "'" + what + "' needs numeric values, got 'bool'");
    return Ty::poison();
  }
  return withType(redomap, type);
}

namespace {

std::optional<double> constantValue(const Expr &expr, bool &integral);

// `a * b + c`, `c - a * b`, ... on floats, rounded once as the program
// computes it (language.md: a product written as an operand of a sum is a
// fused multiply-add; the first operand on a tie), when all are constant.
std::optional<double> foldFusedMultiplyAdd(const BinaryExpr &sum) {
  const BinaryExpr *product = fusedProduct(sum.op, *sum.lhs, *sum.rhs);
  if (!product)
    return std::nullopt;
  bool productFirst = product == sum.lhs.get();
  bool integral = false;
  std::optional<double> a = constantValue(*product->lhs, integral);
  std::optional<double> b = constantValue(*product->rhs, integral);
  std::optional<double> addend = constantValue(productFirst ? *sum.rhs : *sum.lhs, integral);
  if (!a || !b || !addend)
    return std::nullopt;
  bool subtract = sum.op == BinaryOp::Sub;
  double left = subtract && !productFirst ? -*a : *a;
  double right = subtract && productFirst ? -*addend : *addend;
  if (sum.type == ScalarType::F32)
    return std::fmaf(static_cast<float>(left), static_cast<float>(*b), static_cast<float>(right));
  return std::fma(left, *b, right);
}

// The value of one operation of `expr` on its operands' constant values.
std::optional<double> foldConstant(const Expr &expr, bool &integral) {
  if (const auto *integer = expr.as<IntLitExpr>()) {
    integral = true;
    return static_cast<double>(integer->value);
  }
  if (const auto *real = expr.as<FloatLitExpr>()) {
    integral = false;
    return real->value;
  }
  if (const auto *negated = expr.as<UnaryExpr>(); negated && negated->op == UnaryOp::Neg) {
    std::optional<double> value = constantValue(*negated->operand, integral);
    return value ? std::optional(-*value) : std::nullopt;
  }
  if (const auto *cast = expr.as<CastExpr>()) {
    std::optional<double> value = constantValue(*cast->operand, integral);
    if (!value || cast->target == ScalarType::Bool)
      return std::nullopt;
    integral = cast->target == ScalarType::I32 || cast->target == ScalarType::I64;
    return integral ? std::trunc(*value) : *value;
  }
  const auto *binary = expr.as<BinaryExpr>();
  if (!binary)
    return std::nullopt;
  if (std::optional<double> fused = foldFusedMultiplyAdd(*binary))
    return fused;
  bool lhsIntegral = false, rhsIntegral = false;
  std::optional<double> lhs = constantValue(*binary->lhs, lhsIntegral);
  std::optional<double> rhs = constantValue(*binary->rhs, rhsIntegral);
  if (!lhs || !rhs)
    return std::nullopt;
  integral = lhsIntegral && rhsIntegral;
  switch (binary->op) {
  case BinaryOp::Add:
    return *lhs + *rhs;
  case BinaryOp::Sub:
    return *lhs - *rhs;
  case BinaryOp::Mul:
    return *lhs * *rhs;
  case BinaryOp::Div:
    if (*rhs == 0)
      return std::nullopt;
    return integral ? std::trunc(*lhs / *rhs) : *lhs / *rhs;
  default:
    return std::nullopt;
  }
}

// The value of an expression built from literals by `- + * /` and
// conversions (`0.0 + 1.0`, `-(2 - 1)`, `f32(1)`), integer division
// truncating, each step rounded to its type as the program computes it
// (16777216.0 + 1.0 - 16777216.0 - 1.0 is -1 in f32, though 0 in f64);
// nothing for anything that names a variable or calls.
std::optional<double> constantValue(const Expr &expr, bool &integral) {
  std::optional<double> value = foldConstant(expr, integral);
  if (value && expr.type == ScalarType::F32)
    return static_cast<double>(static_cast<float>(*value));
  return value;
}

} // namespace

void Checker::checkConstantNeutral(const ReduceOp &op, const Expr &neutral,
                                   const std::string &construct) {
  std::optional<int> expected = requiredNeutral(op);
  if (!expected)
    return;
  bool integral = false;
  std::optional<double> value = constantValue(neutral, integral);
  if (!value)
    return; // a name or a call: checked when the program runs
  if (*value != *expected)
    diagnostics_.error(neutral.range, wrongNeutralMessage(op, construct));
}

FnDecl *Checker::resolveUserOperator(ReduceOp &op, const std::string &construct) {
  FnDecl *fn = findFn(op.userName);
  if (!fn) {
    diagnostics_.error(op.range, "unknown " + construct + " operator " + quoted(op.userName) +
                                     "; use +, *, min, max, &&, || or an 'assoc fn'");
    return nullptr;
  }
  op.userFn = fn;
  recordFnCall(*fn, op.range);
  operatorUses_.push_back({fn, op.range, construct});
  if (!fn->associative) {
    diagnostics_.error(op.range, "function " + quoted(fn->name) +
                                     " is not declared 'assoc', so it cannot be a " + construct +
                                     " operator");
    diagnostics_.note(fn->nameRange, quoted(fn->name) + " is declared here");
  }
  return fn;
}

// ----------------------------------------------------------- literal typing ---

// The common type of two operands. A flexible side takes the other side's
// type; two flexible sides stay flexible (float if either is).
Ty Checker::unify(Expr &lhsExpr, Ty lhs, Expr &rhsExpr, Ty rhs, const char *what) {
  if (lhs.isPoison() || rhs.isPoison())
    return Ty::poison();
  if (lhs.isKnown() && rhs.isKnown()) {
    if (lhs.scalar == rhs.scalar)
      return lhs;
    diagnostics_.error(
        rhsExpr.range.valid() ? SourceRange{lhsExpr.range.begin, rhsExpr.range.end} : lhsExpr.range,
        "type mismatch: " + describe(lhs) + " and " + describe(rhs) + " in " + quoted(what) +
            "; convert explicitly, e.g. " + scalarTypeName(lhs.scalar) + "(...)");
    return Ty::poison();
  }
  if (lhs.isKnown() || rhs.isKnown()) {
    Ty fixed = lhs.isKnown() ? lhs : rhs;
    Ty flexible = lhs.isKnown() ? rhs : lhs;
    Expr &flexibleExpr = lhs.isKnown() ? rhsExpr : lhsExpr;
    if (!coerce(flexibleExpr, flexible, fixed.scalar)) {
      diagnostics_.error(flexibleExpr.range, describe(flexible) + " cannot have type " +
                                                 describe(fixed) + " (in " + quoted(what) + ")");
      return Ty::poison();
    }
    return fixed;
  }
  if (lhs.kind == Ty::Kind::FloatLiteral || rhs.kind == Ty::Kind::FloatLiteral)
    return Ty::floatLiteral();
  return Ty::intLiteral();
}

// Gives `expr` (of type `type`) the type `wanted` if it can have it.
// Returns false on a mismatch, which the caller reports; poison never
// mismatches, so errors do not cascade.
bool Checker::coerce(Expr &expr, Ty type, ScalarType wanted) {
  switch (type.kind) {
  case Ty::Kind::Poison:
    return true;
  case Ty::Kind::Known:
    return type.scalar == wanted;
  case Ty::Kind::IntLiteral:
    if (wanted == ScalarType::Bool)
      return false;
    finalize(expr, wanted);
    return true;
  case Ty::Kind::FloatLiteral:
    if (!isFloat(wanted))
      return false;
    finalize(expr, wanted);
    return true;
  }
  return false;
}

// Types an expression that has no context: flexible literals default to
// i64 or f64. Returns the resulting type.
ScalarType Checker::settle(Expr &expr, Ty type) {
  if (type.kind == Ty::Kind::IntLiteral) {
    finalize(expr, ScalarType::I64);
    return ScalarType::I64;
  }
  if (type.kind == Ty::Kind::FloatLiteral) {
    finalize(expr, ScalarType::F64);
    return ScalarType::F64;
  }
  return type.isKnown() ? type.scalar : ScalarType::I64;
}

// Pushes a type into a flexible expression: every node of a flexible tree
// takes the same type (comparisons and casts settled their operands
// already, so they are never part of one).
void Checker::finalize(Expr &expr, ScalarType type, bool negated) {
  expr.type = type;
  switch (expr.kind) {
  case Expr::Kind::IntLit: {
    uint64_t value = expr.as<IntLitExpr>()->value;
    if (!fitsIn(value, negated, type))
      diagnostics_.error(expr.range, "integer literal " + std::string(negated ? "-" : "") +
                                         std::to_string(value) + " does not fit in " +
                                         quoted(scalarTypeName(type)));
    return;
  }
  case Expr::Kind::Unary: {
    auto *unary = expr.as<UnaryExpr>();
    return finalize(*unary->operand, type, unary->op == UnaryOp::Neg && !negated);
  }
  case Expr::Kind::Binary: {
    auto *binary = expr.as<BinaryExpr>();
    finalize(*binary->lhs, type);
    finalize(*binary->rhs, type);
    return;
  }
  case Expr::Kind::Conditional: {
    auto *conditional = expr.as<ConditionalExpr>();
    finalize(*conditional->thenExpr, type);
    finalize(*conditional->elseExpr, type);
    return;
  }
  case Expr::Kind::Call:
    // Only a builtin call can be flexible: its arguments have its type.
    if (expr.as<CallExpr>()->isBuiltin)
      for (auto &arg : expr.as<CallExpr>()->args)
        finalize(*arg, type);
    return;
  case Expr::Kind::Redomap: {
    auto *redomap = expr.as<RedomapExpr>();
    finalize(*redomap->neutral, type);
    finalize(*redomap->body, type);
    return;
  }
  case Expr::Kind::FloatLit: {
    // As an integer literal must fit its type: 1e39 is no f32 (it would be
    // inf); 3.4028235e38, FLT_MAX as printed, rounds to FLT_MAX and fits.
    double value = expr.as<FloatLitExpr>()->value;
    if (type == ScalarType::F32 && std::isfinite(value) && std::isinf(static_cast<float>(value))) {
      std::ostringstream text;
      text.precision(9);
      text << value;
      diagnostics_.error(expr.range, "float literal " + text.str() +
                                         " does not fit in 'f32' (its largest is about 3.4e38)");
    }
    return;
  }
  case Expr::Kind::BoolLit:
  case Expr::Kind::Name:
  case Expr::Kind::Index:
  case Expr::Kind::Cast:
    return;
  }
}

} // namespace loopc::sema
