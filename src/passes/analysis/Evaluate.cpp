// Integer evaluation of Loop IR expressions (see Evaluate.h).
#include "passes/analysis/Evaluate.h"
#include "support/IntegerArithmetic.h"

#include <algorithm>
#include <limits>

namespace loopc::passes {

using namespace loopc::ir;

std::optional<int64_t> evaluateInteger(const ExprNode &expr, const VariableLookup &lookup) {
  switch (expr.kind) {
  case ExprNode::Kind::IntImm:
    return expr.as<IntImm>()->value;
  case ExprNode::Kind::BoolImm:
    return expr.as<BoolImm>()->value;
  case ExprNode::Kind::Var:
    return lookup(expr.as<Var>()->name);
  case ExprNode::Kind::Cast:
    return isFloat(expr.type) ? std::nullopt : evaluateInteger(*expr.as<Cast>()->operand, lookup);
  case ExprNode::Kind::Select: {
    auto &select = *expr.as<ir::Select>();
    auto cond = evaluateInteger(*select.cond, lookup);
    if (!cond)
      return std::nullopt;
    return evaluateInteger(*cond ? *select.thenValue : *select.elseValue, lookup);
  }
  case ExprNode::Kind::Unary: {
    auto operand = evaluateInteger(*expr.as<Unary>()->operand, lookup);
    if (!operand)
      return std::nullopt;
    return expr.as<Unary>()->op == UnaryOpKind::Not ? !*operand : -*operand;
  }
  case ExprNode::Kind::Binary: {
    auto &binary = *expr.as<Binary>();
    if (isFloat(binary.lhs->type))
      return std::nullopt;
    auto lhs = evaluateInteger(*binary.lhs, lookup);
    if (!lhs)
      return std::nullopt;
    auto rhs = evaluateInteger(*binary.rhs, lookup);
    if (!rhs)
      return std::nullopt;
    int64_t a = *lhs, b = *rhs;
    switch (binary.op) {
    case BinaryOpKind::Add:
      return exactAdd(a, b);
    case BinaryOpKind::Sub:
      return exactSubtract(a, b);
    case BinaryOpKind::Mul:
      return exactMultiply(a, b);
    case BinaryOpKind::Div:
      return exactDivide(a, b);
    case BinaryOpKind::Rem:
      return exactRemainder(a, b);
    case BinaryOpKind::Min:
      return std::min(a, b);
    case BinaryOpKind::Max:
      return std::max(a, b);
    case BinaryOpKind::Lt:
      return a < b;
    case BinaryOpKind::Le:
      return a <= b;
    case BinaryOpKind::Gt:
      return a > b;
    case BinaryOpKind::Ge:
      return a >= b;
    case BinaryOpKind::Eq:
      return a == b;
    case BinaryOpKind::Ne:
      return a != b;
    case BinaryOpKind::And:
      return a && b;
    case BinaryOpKind::Or:
      return a || b;
    }
    return std::nullopt;
  }
  default:
    return std::nullopt;
  }
}

std::optional<int64_t> evaluateInteger(const ir::ExprNode &expr,
                                       const std::map<std::string, int64_t> &values) {
  return evaluateInteger(expr, [&](const std::string &name) {
    auto value = values.find(name);
    return value == values.end() ? std::nullopt : std::optional<int64_t>(value->second);
  });
}

std::optional<int64_t> constantCeiling(const ir::Expr &expr) {
  if (const auto *imm = expr->as<ir::IntImm>())
    return imm->value;
  const auto *binary = expr->as<ir::Binary>();
  if (!binary || (binary->op != ir::BinaryOpKind::Min && binary->op != ir::BinaryOpKind::Max))
    return std::nullopt;
  std::optional<int64_t> lhs = constantCeiling(binary->lhs), rhs = constantCeiling(binary->rhs);
  if (binary->op == ir::BinaryOpKind::Max)
    return lhs && rhs ? std::optional(std::max(*lhs, *rhs)) : std::nullopt;
  if (lhs && rhs)
    return std::min(*lhs, *rhs);
  return lhs ? lhs : rhs;
}

} // namespace loopc::passes
