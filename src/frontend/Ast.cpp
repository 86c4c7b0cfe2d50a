#include "frontend/Ast.h"

namespace loopc {

const BinaryExpr *floatProduct(const Expr &operand) {
  const auto *product = operand.as<BinaryExpr>();
  return product && product->op == BinaryOp::Mul && isFloat(product->type) ? product : nullptr;
}

const BinaryExpr *fusedProduct(BinaryOp op, const Expr &lhs, const Expr &rhs) {
  if (op != BinaryOp::Add && op != BinaryOp::Sub)
    return nullptr;
  const BinaryExpr *product = floatProduct(lhs);
  return product ? product : floatProduct(rhs);
}

std::optional<int> requiredNeutral(const ReduceOp &op) {
  if (op.kind == ReduceOp::Kind::Add)
    return 0;
  if (op.kind == ReduceOp::Kind::Mul)
    return 1;
  return std::nullopt;
}

std::string wrongNeutralMessage(const ReduceOp &op, const std::string &construct) {
  bool add = op.kind == ReduceOp::Kind::Add;
  return "the neutral element of '" + construct + "(" + reduceOpSpelling(op) + ")' must be " +
         (add ? "0" : "1") + ": it may be combined in once per partial result; " +
         (add ? "add the starting value to the result instead"
              : "multiply the result by the starting value instead");
}

const char *reduceOpSpelling(const ReduceOp &op) {
  switch (op.kind) {
  case ReduceOp::Kind::Add:
    return "+";
  case ReduceOp::Kind::Mul:
    return "*";
  case ReduceOp::Kind::Min:
    return "min";
  case ReduceOp::Kind::Max:
    return "max";
  case ReduceOp::Kind::And:
    return "&&";
  case ReduceOp::Kind::Or:
    return "||";
  case ReduceOp::Kind::User:
    break;
  }
  return op.userName.c_str();
}

const char *intentName(Intent intent) {
  switch (intent) {
  case Intent::In:
    return "in";
  case Intent::Out:
    return "out";
  case Intent::InOut:
    return "inout";
  case Intent::None:
    break;
  }
  return "";
}

const char *binaryOpSpelling(BinaryOp op) {
  static const char *const spellings[] = {
      "+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
  return spellings[static_cast<int>(op)];
}

KernelDecl *Program::findKernel(const std::string &name) const {
  for (const auto &module : modules)
    for (const auto &kernel : module->kernels)
      if (kernel->name == name)
        return kernel.get();
  return nullptr;
}

FnDecl *Program::findFn(const std::string &name) const {
  for (const auto &module : modules)
    for (const auto &fn : module->fns)
      if (fn->name == name)
        return fn.get();
  return nullptr;
}

} // namespace loopc
