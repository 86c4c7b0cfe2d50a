// simplify: constant folding, algebraic identities (x + 0, x * 1, ...),
// branches on constant conditions, and lets that are trivial (bound to a
// constant or another variable: substituted) or dead (removed, unless they
// may report a run-time error, as the interpreter would). The lowering
// and the GPU mapping write index arithmetic naively (`0 + i.block * 256 +
// i.thread`, `(N - 0 + 255) / 256`); this keeps what `explain` prints and
// what code generation sees close to what a person would write.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "support/IntegerArithmetic.h"

#include <algorithm>
#include <climits>
#include <optional>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

const IntImm *asInt(const Expr &expr) { return expr->as<IntImm>(); }

bool isIntValue(const Expr &expr, int64_t value) {
  const IntImm *imm = asInt(expr);
  return imm && imm->value == value;
}

bool isFloatValue(const Expr &expr, double value) {
  const auto *imm = expr->as<FloatImm>();
  return imm && imm->value == value;
}

// Wraps an integer result to the width of its type, as the machine would.
Expr makeWrapped(ScalarType type, int64_t value) {
  if (type == ScalarType::I32)
    value = static_cast<int32_t>(static_cast<uint32_t>(value));
  return makeInt(type, value);
}

std::optional<Expr> foldInts(BinaryOpKind op, ScalarType type, int64_t a, int64_t b) {
  auto wrapped = [&](int64_t value) { return makeWrapped(type, value); };
  auto truth = [](bool value) -> Expr { return std::make_shared<BoolImm>(value); };
  // The language's wrapping arithmetic, in i64, then wrapped to the type.
  switch (op) {
  case BinaryOpKind::Add:
    return wrapped(wrappingAdd(a, b));
  case BinaryOpKind::Sub:
    return wrapped(wrappingSubtract(a, b));
  case BinaryOpKind::Mul:
    return wrapped(wrappingMultiply(a, b));
  case BinaryOpKind::Div: // a zero divisor left for run time, which reports it
    if (std::optional<int64_t> quotient = exactDivide(a, b))
      return wrapped(*quotient);
    return std::nullopt;
  case BinaryOpKind::Rem:
    if (std::optional<int64_t> remainder = exactRemainder(a, b))
      return wrapped(*remainder);
    return std::nullopt;
  case BinaryOpKind::Min:
    return wrapped(std::min(a, b));
  case BinaryOpKind::Max:
    return wrapped(std::max(a, b));
  case BinaryOpKind::Lt:
    return truth(a < b);
  case BinaryOpKind::Le:
    return truth(a <= b);
  case BinaryOpKind::Gt:
    return truth(a > b);
  case BinaryOpKind::Ge:
    return truth(a >= b);
  case BinaryOpKind::Eq:
    return truth(a == b);
  case BinaryOpKind::Ne:
    return truth(a != b);
  default:
    return std::nullopt;
  }
}

// Whether evaluating `expr` may report a run-time error: an integer division
// or remainder by a divisor that is not a nonzero constant, or, with bounds
// checks, a load. Such an expression is kept even when its value is not
// needed (`let z = a / b` unused, `(a / b) * 0`), as the program's error is
// reported wherever the interpreter reports it.
class FaultFinder : public IRVisitor {
public:
  explicit FaultFinder(bool loadsChecked) : loadsChecked_(loadsChecked) {}
  bool mayFault(const Expr &expr) {
    found_ = false;
    visit(expr);
    return found_;
  }

protected:
  void visitBinary(const Binary &node) override {
    const auto *divisor = asInt(node.rhs);
    if (isInteger(node.type) && (node.op == BinaryOpKind::Div || node.op == BinaryOpKind::Rem) &&
        !(divisor && divisor->value != 0))
      found_ = true;
    IRVisitor::visitBinary(node);
  }
  void visitLoad(const Load &node) override {
    found_ |= loadsChecked_;
    IRVisitor::visitLoad(node);
  }

private:
  bool loadsChecked_;
  bool found_ = false;
};

class Simplifier : public IRMutator {
public:
  explicit Simplifier(bool loadsChecked) : faults_(loadsChecked) {}

protected:
  static bool isFloatProduct(const Expr &expr) {
    const auto *binary = expr->as<Binary>();
    return binary && binary->op == BinaryOpKind::Mul && isFloat(binary->type);
  }

  Expr visitBinary(const Binary &node, const Expr &self) override {
    Expr folded = IRMutator::visitBinary(node, self);
    const auto *binary = folded->as<Binary>();
    if (!binary)
      return folded;
    const Expr &lhs = binary->lhs, &rhs = binary->rhs;
    ScalarType type = lhs->type;
    if (asInt(lhs) && asInt(rhs))
      if (auto value = foldInts(binary->op, type, asInt(lhs)->value, asInt(rhs)->value))
        return *value;
    bool isInt = isInteger(type);
    auto isZero = [&](const Expr &e) { return isInt ? isIntValue(e, 0) : isFloatValue(e, 0.0); };
    auto isOne = [&](const Expr &e) { return isInt ? isIntValue(e, 1) : isFloatValue(e, 1.0); };
    switch (binary->op) {
    case BinaryOpKind::Add:
      // x + 0.0 is not x for x = -0.0; only integers drop a zero on the right.
      if (isInt && isZero(rhs))
        return lhs;
      if (isZero(lhs) && isInt)
        return rhs;
      break;
    case BinaryOpKind::Sub:
      if (isInt && isZero(rhs))
        return lhs;
      break;
    case BinaryOpKind::Mul:
      // A float product left bare would fuse with an add around it (one
      // rounding, language.md), where `(a * a) * 1.0 + c` rounds a * a first.
      if (isOne(rhs) && (isInt || !isFloatProduct(lhs)))
        return lhs;
      if (isOne(lhs) && (isInt || !isFloatProduct(rhs)))
        return rhs;
      if (isInt &&
          ((isZero(lhs) && !faults_.mayFault(rhs)) || (isZero(rhs) && !faults_.mayFault(lhs))))
        return makeInt(type, 0);
      break;
    case BinaryOpKind::Div:
      if (isOne(rhs) && (isInt || !isFloatProduct(lhs)))
        return lhs;
      break;
    case BinaryOpKind::And:
    case BinaryOpKind::Or: {
      bool isAnd = binary->op == BinaryOpKind::And;
      for (const Expr *side : {&lhs, &rhs})
        if (const auto *imm = (*side)->as<BoolImm>()) {
          const Expr &other = side == &lhs ? rhs : lhs;
          // true && x = x, false && x = false (and dually for ||); both sides
          // of an IR And are evaluated, so dropping one is safe unless it
          // may fail.
          if (imm->value == isAnd)
            return other;
          if (!faults_.mayFault(other))
            return *side;
        }
      break;
    }
    default:
      break;
    }
    return folded;
  }

  Expr visitUnary(const Unary &node, const Expr &self) override {
    Expr result = IRMutator::visitUnary(node, self);
    const auto *unary = result->as<Unary>();
    if (!unary)
      return result;
    if (const auto *imm = unary->operand->as<BoolImm>(); imm && unary->op == UnaryOpKind::Not)
      return std::make_shared<BoolImm>(!imm->value);
    if (const auto *imm = asInt(unary->operand); imm && unary->op == UnaryOpKind::Neg)
      return makeWrapped(imm->type, static_cast<int64_t>(0 - static_cast<uint64_t>(imm->value)));
    return result;
  }

  Expr visitCast(const Cast &node, const Expr &self) override {
    Expr result = IRMutator::visitCast(node, self);
    const auto *cast = result->as<Cast>();
    if (!cast)
      return result;
    // A float product cast to its own type is rounded there (the lowering's
    // mark against fusing it with a sum around it): kept.
    const auto *product = cast->operand->as<Binary>();
    bool roundsProduct = isFloat(cast->type) && product && product->op == BinaryOpKind::Mul;
    if (cast->operand->type == cast->type && !roundsProduct)
      return cast->operand;
    if (const auto *imm = asInt(cast->operand); imm && isInteger(cast->type))
      return makeWrapped(cast->type, imm->value);
    return result;
  }

  Expr visitSelect(const Select &node, const Expr &self) override {
    Expr result = IRMutator::visitSelect(node, self);
    const auto *select = result->as<Select>();
    if (!select)
      return result;
    if (const auto *imm = select->cond->as<BoolImm>())
      return imm->value ? select->thenValue : select->elseValue;
    return result;
  }

  Stmt visitIfThenElse(const IfThenElse &node, const Stmt &self) override {
    Stmt result = IRMutator::visitIfThenElse(node, self);
    const auto *branch = result->as<IfThenElse>();
    if (!branch)
      return result;
    if (const auto *imm = branch->cond->as<BoolImm>()) {
      if (imm->value)
        return branch->thenCase;
      return branch->elseCase ? branch->elseCase : makeBlock({});
    }
    return result;
  }

  // A check that holds whatever the values (a constant neutral element) is
  // no check.
  Stmt visitCheck(const Check &node, const Stmt &self) override {
    Stmt result = IRMutator::visitCheck(node, self);
    const auto *check = result->as<Check>();
    if (const auto *imm = check ? check->condition->as<BoolImm>() : nullptr; imm && imm->value)
      return makeBlock({});
    return result;
  }

  // A Reduce reads its value after valueSetup, outside the lets there: their
  // uses are not all in their bodies, so they are left in place.
  Stmt visitReduce(const Reduce &node, const Stmt &self) override {
    ++insideValueSetup_;
    Stmt result = IRMutator::visitReduce(node, self);
    --insideValueSetup_;
    return result;
  }

  Stmt visitLetStmt(const LetStmt &node, const Stmt &self) override {
    if (insideValueSetup_ > 0)
      return IRMutator::visitLetStmt(node, self);
    Expr value = mutate(node.value);
    if (value->as<IntImm>() || value->as<FloatImm>() || value->as<BoolImm>() || value->as<Var>()) {
      Stmt body = mutate(substitute(node.body, {{node.var, value}}));
      // The shape of a buffer allocated inside still names the variable:
      // buffers are shared by identity, not rewritten.
      if (!mentionsVar(body, node.var))
        return body;
      return std::make_shared<LetStmt>(node.var, value, body);
    }
    Stmt body = mutate(node.body);
    // A search stopping at the first use: in a chain of lets each one's
    // body is the rest of the chain, so collecting its free names would
    // make the chain quadratic.
    if (!mentionsVar(body, node.var) && !faults_.mayFault(value))
      return body; // dead: its value has no effect
    if (value == node.value && body == node.body)
      return self;
    return std::make_shared<LetStmt>(node.var, value, body);
  }

private:
  int insideValueSetup_ = 0;
  FaultFinder faults_;
};

} // namespace

Expr simplifyExpr(const Expr &expr) { return Simplifier(false).mutate(expr); }

Function simplify(Function function) {
  Simplifier simplifier(function.boundsChecked);
  function.body = simplifier.mutate(function.body);
  for (KernelFunc &kernel : function.kernels)
    kernel.body = simplifier.mutate(kernel.body);
  return function;
}

} // namespace loopc::passes
