// Names of IR enumerations and the small constructors shared by the lowering
// and the passes (IR.h).
#include "ir/IR.h"

#include <cassert>

namespace loopc::ir {

const char *memorySpaceName(MemorySpace memory) {
  switch (memory) {
  case MemorySpace::Global:
    return "global";
  case MemorySpace::Shared:
    return "shared";
  case MemorySpace::Register:
    return "register";
  }
  return "?";
}

const char *binaryOpName(BinaryOpKind op) {
  switch (op) {
  case BinaryOpKind::Add:
    return "+";
  case BinaryOpKind::Sub:
    return "-";
  case BinaryOpKind::Mul:
    return "*";
  case BinaryOpKind::Div:
    return "/";
  case BinaryOpKind::Rem:
    return "%";
  case BinaryOpKind::Min:
    return "min";
  case BinaryOpKind::Max:
    return "max";
  case BinaryOpKind::Lt:
    return "<";
  case BinaryOpKind::Le:
    return "<=";
  case BinaryOpKind::Gt:
    return ">";
  case BinaryOpKind::Ge:
    return ">=";
  case BinaryOpKind::Eq:
    return "==";
  case BinaryOpKind::Ne:
    return "!=";
  case BinaryOpKind::And:
    return "&&";
  case BinaryOpKind::Or:
    return "||";
  }
  return "?";
}

bool isComparison(BinaryOpKind op) {
  switch (op) {
  case BinaryOpKind::Lt:
  case BinaryOpKind::Le:
  case BinaryOpKind::Gt:
  case BinaryOpKind::Ge:
  case BinaryOpKind::Eq:
  case BinaryOpKind::Ne:
    return true;
  default:
    return false;
  }
}

bool Call::isMathRoutine() const { return ir::isMathRoutine(builtin); }

bool isMathRoutine(loopc::Builtin builtin) {
  switch (builtin) {
  case loopc::Builtin::Exp:
  case loopc::Builtin::Log:
  case loopc::Builtin::Sin:
  case loopc::Builtin::Cos:
  case loopc::Builtin::Tanh:
  case loopc::Builtin::Pow:
    return true;
  default:
    return false;
  }
}

static ScalarType binaryResultType(BinaryOpKind op, const Expr &lhs) {
  if (isComparison(op) || op == BinaryOpKind::And || op == BinaryOpKind::Or)
    return ScalarType::Bool;
  return lhs->type;
}

Binary::Binary(BinaryOpKind op, Expr lhs, Expr rhs, SourceRange source)
    : ExprNode(kKind, binaryResultType(op, lhs)), op(op), lhs(std::move(lhs)), rhs(std::move(rhs)),
      source(source) {}

const char *forKindName(ForKind kind) {
  switch (kind) {
  case ForKind::Serial:
    return "serial";
  case ForKind::Parallel:
    return "parallel";
  case ForKind::Unrolled:
    return "unrolled";
  case ForKind::Vectorized:
    return "vectorized";
  case ForKind::GpuBlock:
    return "gpu_block";
  case ForKind::GpuThread:
    return "gpu_thread";
  }
  return "?";
}

bool typesItself(const Expr &expr) {
  switch (expr->kind) {
  case ExprNode::Kind::IntImm:
  case ExprNode::Kind::FloatImm:
    return false;
  case ExprNode::Kind::BoolImm:
  case ExprNode::Kind::Var:
  case ExprNode::Kind::Load:
  case ExprNode::Kind::Cast:
    return true;
  case ExprNode::Kind::Unary:
    return expr->as<Unary>()->op == UnaryOpKind::Not || typesItself(expr->as<Unary>()->operand);
  case ExprNode::Kind::Binary: {
    const auto &binary = *expr->as<Binary>();
    return isComparison(binary.op) || binary.op == BinaryOpKind::And ||
           binary.op == BinaryOpKind::Or || typesItself(binary.lhs) || typesItself(binary.rhs);
  }
  case ExprNode::Kind::Select: {
    const auto &select = *expr->as<Select>();
    return typesItself(select.thenValue) || typesItself(select.elseValue);
  }
  case ExprNode::Kind::Call:
    for (const Expr &arg : expr->as<Call>()->args)
      if (typesItself(arg))
        return true;
    return false;
  }
  return true;
}

ScalarType defaultLiteralType(const ExprNode &literal) {
  if (literal.kind == ExprNode::Kind::FloatImm)
    return ScalarType::F32;
  if (literal.kind == ExprNode::Kind::BoolImm)
    return ScalarType::Bool;
  return ScalarType::I64;
}

Expr makeInt(ScalarType type, int64_t value) {
  if (isFloat(type))
    return std::make_shared<FloatImm>(type, static_cast<double>(value));
  assert(isInteger(type) && "makeInt needs a numeric type");
  return std::make_shared<IntImm>(type, value);
}

Expr makeI64(int64_t value) { return std::make_shared<IntImm>(ScalarType::I64, value); }

Expr makeVar(ScalarType type, const std::string &name) { return std::make_shared<Var>(type, name); }

std::optional<FusedProduct> fusedProductOf(const Binary &sum) {
  if (!isFloat(sum.type) || (sum.op != BinaryOpKind::Add && sum.op != BinaryOpKind::Sub))
    return std::nullopt;
  for (bool productFirst : {true, false}) {
    const auto *product = (productFirst ? sum.lhs : sum.rhs)->as<Binary>();
    if (product && product->op == BinaryOpKind::Mul)
      return FusedProduct{product, productFirst};
  }
  return std::nullopt;
}

Expr makeBinary(BinaryOpKind op, Expr lhs, Expr rhs, SourceRange source) {
  assert(lhs->type == rhs->type && "binary operands must have one type");
  return std::make_shared<Binary>(op, std::move(lhs), std::move(rhs), source);
}

Expr zeroOf(ScalarType type) {
  if (type == ScalarType::Bool)
    return std::make_shared<BoolImm>(false);
  return makeInt(type, 0);
}

Expr toI64(Expr expr) {
  if (expr->type == ScalarType::I64)
    return expr;
  if (const auto *imm = expr->as<IntImm>())
    return makeI64(imm->value);
  return std::make_shared<Cast>(ScalarType::I64, std::move(expr));
}

Stmt makeBlock(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt &stmt : stmts) {
    if (!stmt)
      continue;
    if (const auto *block = stmt->as<Block>())
      flat.insert(flat.end(), block->stmts.begin(), block->stmts.end());
    else
      flat.push_back(std::move(stmt));
  }
  if (flat.size() == 1)
    return flat.front();
  return std::make_shared<Block>(std::move(flat));
}

Expr castTo(ScalarType type, Expr value) {
  return value->type == type ? value : std::make_shared<Cast>(type, std::move(value));
}

Expr add(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Add, std::move(lhs), std::move(rhs));
}
Expr sub(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Sub, std::move(lhs), std::move(rhs));
}
Expr mul(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Mul, std::move(lhs), std::move(rhs));
}
Expr div(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Div, std::move(lhs), std::move(rhs));
}
Expr rem(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Rem, std::move(lhs), std::move(rhs));
}
Expr minOf(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Min, std::move(lhs), std::move(rhs));
}
Expr maxOf(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Max, std::move(lhs), std::move(rhs));
}
Expr lessThan(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Lt, std::move(lhs), std::move(rhs));
}
Expr lessOrEqual(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Le, std::move(lhs), std::move(rhs));
}
Expr greaterThan(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Gt, std::move(lhs), std::move(rhs));
}
Expr greaterOrEqual(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Ge, std::move(lhs), std::move(rhs));
}
Expr equal(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Eq, std::move(lhs), std::move(rhs));
}
Expr notEqual(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Ne, std::move(lhs), std::move(rhs));
}
Expr logicalAnd(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::And, std::move(lhs), std::move(rhs));
}
Expr logicalOr(Expr lhs, Expr rhs) {
  return makeBinary(BinaryOpKind::Or, std::move(lhs), std::move(rhs));
}
Expr ceilDiv(Expr a, Expr b) { return div(add(std::move(a), sub(b, makeInt(b->type, 1))), b); }
Expr select(Expr cond, Expr thenValue, Expr elseValue) {
  return std::make_shared<Select>(std::move(cond), std::move(thenValue), std::move(elseValue));
}

std::vector<Expr> conjunctsOf(const Expr &expr) {
  const auto *both = expr->as<Binary>();
  if (!both || both->op != BinaryOpKind::And)
    return {expr};
  std::vector<Expr> conjuncts = conjunctsOf(both->lhs);
  for (Expr &conjunct : conjunctsOf(both->rhs))
    conjuncts.push_back(std::move(conjunct));
  return conjuncts;
}

std::string BufferInfo::tooLargeMessage() const {
  return "local array '" + nameInMessages() + "' is too large to allocate" +
         (slicePerThread ? " (on the GPU, a private array whose extents only the run knows takes a "
                           "slice for every thread of its kernel's grid)"
                         : "");
}

} // namespace loopc::ir
