// Printing the Loop IR as an indented loop nest (IRPrinter.h).
#include "ir/IRPrinter.h"

#include <charconv>
#include <sstream>

namespace loopc::ir {

namespace {

// Binding strength of an expression, for parenthesising only where needed.
int precedence(const Expr &expr) {
  if (const auto *binary = expr->as<Binary>())
    return binaryPrecedence(binary->op);
  return expr->as<Unary>() ? 7 : 8;
}

std::string floatText(double value) {
  char digits[64];
  auto result = std::to_chars(digits, digits + sizeof digits, value);
  std::string text(digits, result.ptr);
  if (text.find_first_of(".ein") == std::string::npos)
    text += ".0";
  return text;
}

std::string exprText(const Expr &expr, bool typedByContext);

// A message in double quotes, `"` and `\` escaped by a `\`.
std::string quoted(const std::string &text) {
  std::string result = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      result += '\\';
    result += c;
  }
  return result + "\"";
}

// A literal's text, with its type after it (`2_i32`, `0.5_f64`) where
// nothing around it gives the type and it is not the default (i64, f32):
// parseFunction reads it back the same way (literalTypedByContext).
std::string literalText(const Expr &literal, std::string digits, bool typedByContext) {
  if (typedByContext || literal->type == defaultLiteralType(*literal))
    return digits;
  return digits + "_" + scalarTypeName(literal->type);
}
std::string indexText(const std::vector<Expr> &indices) {
  std::string text;
  for (const Expr &index : indices)
    text += "[" + toString(index) + "]";
  return text;
}

std::string listText(const std::vector<Expr> &exprs) {
  std::string text;
  for (size_t i = 0; i < exprs.size(); ++i)
    text += (i ? ", " : "") + toString(exprs[i]);
  return text;
}

// An operand of a node whose type it takes (a value stored, a sum's terms):
// its literals need no type of their own.
std::string typedText(const Expr &expr) { return exprText(expr, true); }

std::string operand(const Expr &expr, int parentPrecedence, bool rightSide,
                    bool typedByContext = false) {
  std::string text = exprText(expr, typedByContext);
  int own = precedence(expr);
  if (own < parentPrecedence || (rightSide && own == parentPrecedence && own < 7))
    return "(" + text + ")";
  return text;
}

// `[min, min + extent)`, or `[0, extent)`; each bound typed by the other
// when that one has a type of its own.
std::string rangeText(const Expr &min, const Expr &extent) {
  std::string minText = exprText(min, typesItself(extent));
  const auto *zero = min->as<IntImm>();
  std::string end = zero && zero->value == 0
                        ? exprText(extent, typesItself(min))
                        : minText + " + " + operand(extent, 5, true, typesItself(min));
  return "[" + minText + ", " + end + ")";
}

std::string forHeader(const For &loop) {
  std::string kind;
  switch (loop.forKind) {
  case ForKind::Serial:
    kind = "for";
    break;
  case ForKind::GpuBlock:
  case ForKind::GpuThread:
    kind = std::string(forKindName(loop.forKind)) + "." + "xyz"[loop.gpuDim % 3] + " for";
    break;
  default:
    kind = std::string(forKindName(loop.forKind)) + " for";
  }
  return kind + " " + loop.var + " in " + rangeText(loop.min, loop.extent);
}

// `+=`; a user's operator with its combining expression over its two
// operands: `larger(a, b => select(a > b, a, b), commutes)=`.
std::string reduceOpText(const ReduceOperator &op) {
  switch (op.kind) {
  case ReduceOperator::Kind::Add:
    return "+=";
  case ReduceOperator::Kind::Mul:
    return "*=";
  case ReduceOperator::Kind::Min:
    return "min=";
  case ReduceOperator::Kind::Max:
    return "max=";
  case ReduceOperator::Kind::And:
    return "&&=";
  case ReduceOperator::Kind::Or:
    return "||=";
  case ReduceOperator::Kind::User:
    return op.userName + "(" + op.lhsVar + ", " + op.rhsVar + " => " + typedText(op.combine) +
           (op.userCommutes ? ", commutes" : "") + ")=";
  }
  return "?=";
}

std::string reduceHeader(const Reduce &reduce) {
  std::string text = "reduce " + reduce.accumulator->name + indexText(reduce.indices) + " " +
                     reduceOpText(reduce.op) + " from " + typedText(reduce.neutral) + " over ";
  for (size_t i = 0; i < reduce.loops.size(); ++i) {
    const Reduce::Loop &loop = reduce.loops[i];
    text += (i ? ", " : "") + loop.var + " in " + rangeText(loop.min, loop.extent);
  }
  return text;
}

std::string scanHeader(const Scan &scan) {
  return "scan " + scan.target->name + indexText(scan.indices) + " " + reduceOpText(scan.op) +
         " from " + typedText(scan.neutral) + " over " + scan.loop.var + " in " +
         rangeText(scan.loop.min, scan.loop.extent);
}

std::string launchText(const Launch &launch) {
  std::string buffers;
  for (size_t i = 0; i < launch.buffers.size(); ++i)
    buffers += (i ? ", " : "") + launch.buffers[i]->name;
  return "launch " + launch.kernel + "<<<grid(" + listText(launch.grid) + "), block(" +
         listText(launch.block) + ")>>>(" + buffers + "; " + listText(launch.scalars) + ")";
}

class StmtPrinter {
public:
  std::ostringstream out;

  void print(const Stmt &stmt, int indent) {
    if (!stmt)
      return;
    std::string pad(2 * indent, ' ');
    switch (stmt->kind) {
    case StmtNode::Kind::For: {
      const auto &loop = *stmt->as<For>();
      out << pad << forHeader(loop) << " {\n";
      print(loop.body, indent + 1);
      out << pad << "}\n";
      return;
    }
    case StmtNode::Kind::IfThenElse: {
      const auto &branch = *stmt->as<IfThenElse>();
      out << pad << "if (" << toString(branch.cond) << ") {\n";
      print(branch.thenCase, indent + 1);
      if (branch.elseCase) {
        out << pad << "} else {\n";
        print(branch.elseCase, indent + 1);
      }
      out << pad << "}\n";
      return;
    }
    case StmtNode::Kind::LetStmt: {
      const auto &let = *stmt->as<LetStmt>();
      out << pad << "let " << let.var << " = " << toString(let.value) << "\n";
      print(let.body, indent);
      return;
    }
    case StmtNode::Kind::Allocate: {
      const auto &allocate = *stmt->as<Allocate>();
      out << pad << describe(*allocate.buffer) << "\n";
      print(allocate.body, indent);
      return;
    }
    case StmtNode::Kind::Block:
      for (const Stmt &child : stmt->as<Block>()->stmts)
        print(child, indent);
      return;
    case StmtNode::Kind::Scan: {
      const auto &scan = *stmt->as<Scan>();
      return printPerPoint(scanHeader(scan), scan.valueSetup, scan.value, indent);
    }
    case StmtNode::Kind::Reduce: {
      const auto &reduce = *stmt->as<Reduce>();
      return printPerPoint(reduceHeader(reduce), reduce.valueSetup, reduce.value, indent);
    }
    default:
      out << pad << describe(stmt) << "\n";
      return;
    }
  }

private:
  // A Reduce's or Scan's header, then what each point computes: its setup
  // and the value it yields.
  void printPerPoint(const std::string &header, const Stmt &valueSetup, const Expr &value,
                     int indent) {
    std::string pad(2 * indent, ' ');
    if (!valueSetup) {
      out << pad << header << ": " << typedText(value) << "\n";
      return;
    }
    out << pad << header << " {\n";
    print(valueSetup, indent + 1);
    out << pad << "  yield " << typedText(value) << "\n";
    out << pad << "}\n";
  }
};

std::string exprText(const Expr &expr, bool typedByContext) {
  if (!expr)
    return "<null>";
  switch (expr->kind) {
  case ExprNode::Kind::IntImm:
    return literalText(expr, std::to_string(expr->as<IntImm>()->value), typedByContext);
  case ExprNode::Kind::FloatImm:
    return literalText(expr, floatText(expr->as<FloatImm>()->value), typedByContext);
  case ExprNode::Kind::BoolImm:
    return expr->as<BoolImm>()->value ? "true" : "false";
  case ExprNode::Kind::Var:
    return expr->as<Var>()->name;
  case ExprNode::Kind::Load: {
    const auto &load = *expr->as<Load>();
    return (load.speculative ? "speculative " : "") + load.buffer->name + indexText(load.indices);
  }
  case ExprNode::Kind::Unary: {
    const auto &unary = *expr->as<Unary>();
    return (unary.op == UnaryOpKind::Neg ? "-" : "!") +
           operand(unary.operand, 7, false, typedByContext);
  }
  case ExprNode::Kind::Binary: {
    const auto &binary = *expr->as<Binary>();
    // Both operands have one type: each gives it to the other, and the
    // node's context gives it to both unless the result is a comparison's.
    bool sameAsResult = !isComparison(binary.op);
    bool lhsTyped = (sameAsResult && typedByContext) || typesItself(binary.rhs);
    bool rhsTyped = (sameAsResult && typedByContext) || typesItself(binary.lhs);
    if (binary.op == BinaryOpKind::Min || binary.op == BinaryOpKind::Max)
      return std::string(binaryOpName(binary.op)) + "(" + exprText(binary.lhs, lhsTyped) + ", " +
             exprText(binary.rhs, rhsTyped) + ")";
    int own = precedence(expr);
    return operand(binary.lhs, own, false, lhsTyped) + " " + binaryOpName(binary.op) + " " +
           operand(binary.rhs, own, true, rhsTyped);
  }
  case ExprNode::Kind::Select: {
    const auto &select = *expr->as<Select>();
    bool thenTyped = typedByContext || typesItself(select.elseValue);
    bool elseTyped = typedByContext || typesItself(select.thenValue);
    return "select(" + toString(select.cond) + ", " + exprText(select.thenValue, thenTyped) + ", " +
           exprText(select.elseValue, elseTyped) + ")";
  }
  case ExprNode::Kind::Cast: {
    const auto &cast = *expr->as<Cast>();
    return std::string(scalarTypeName(cast.type)) + "(" + toString(cast.operand) + ")";
  }
  case ExprNode::Kind::Call: {
    const auto &call = *expr->as<Call>();
    // A builtin's operands have its type (callTakesItsArgumentsType).
    std::string text = std::string(builtinName(call.builtin)) + "(";
    for (size_t i = 0; i < call.args.size(); ++i) {
      bool typed = typedByContext;
      for (size_t j = 0; j < call.args.size(); ++j)
        typed = typed || (j != i && typesItself(call.args[j]));
      text += (i ? ", " : "") + exprText(call.args[i], typed);
    }
    return text + ")";
  }
  }
  return "?";
}

std::string paramsText(const std::vector<Buffer> &buffers,
                       const std::vector<ScalarParam> &scalars) {
  std::string text;
  for (size_t i = 0; i < buffers.size(); ++i)
    text += (i ? ", " : "") + describe(*buffers[i]) + (buffers[i]->isWritten ? " (written)" : "");
  text += "; ";
  for (size_t i = 0; i < scalars.size(); ++i)
    text += (i ? ", " : "") + scalars[i].name + ": " + scalarTypeName(scalars[i].type);
  return text;
}

} // namespace

std::string toString(const Expr &expr) { return exprText(expr, false); }

int binaryPrecedence(BinaryOpKind op) {
  switch (op) {
  case BinaryOpKind::Or:
    return 1;
  case BinaryOpKind::And:
    return 2;
  case BinaryOpKind::Eq:
  case BinaryOpKind::Ne:
    return 3;
  case BinaryOpKind::Lt:
  case BinaryOpKind::Le:
  case BinaryOpKind::Gt:
  case BinaryOpKind::Ge:
    return 4;
  case BinaryOpKind::Add:
  case BinaryOpKind::Sub:
    return 5;
  case BinaryOpKind::Mul:
  case BinaryOpKind::Div:
  case BinaryOpKind::Rem:
    return 6;
  case BinaryOpKind::Min:
  case BinaryOpKind::Max:
    return 8;
  }
  return 8;
}

std::string describe(const BufferInfo &buffer) {
  std::string shape;
  for (const Expr &extent : buffer.shape)
    shape += "[" + toString(extent) + "]";
  return std::string(memorySpaceName(buffer.memory)) + " " + scalarTypeName(buffer.element) + " " +
         buffer.name + shape;
}

std::string describe(const Stmt &stmt) {
  if (!stmt)
    return "<null>";
  switch (stmt->kind) {
  case StmtNode::Kind::For:
    return forHeader(*stmt->as<For>());
  case StmtNode::Kind::IfThenElse:
    return "if (" + toString(stmt->as<IfThenElse>()->cond) + ")";
  case StmtNode::Kind::LetStmt: {
    const auto &let = *stmt->as<LetStmt>();
    return "let " + let.var + " = " + toString(let.value);
  }
  case StmtNode::Kind::Store: {
    const auto &store = *stmt->as<Store>();
    std::string text =
        store.buffer->name + indexText(store.indices) + " = " + typedText(store.value);
    if (store.reduction)
      text += "  (reduction step " + reduceOpText(store.reduction->op) + " from " +
              typedText(store.reduction->neutral) + ")";
    return text;
  }
  case StmtNode::Kind::Allocate:
    return describe(*stmt->as<Allocate>()->buffer);
  case StmtNode::Kind::Barrier:
    return "barrier";
  case StmtNode::Kind::WarpShuffle: {
    const auto &shuffle = *stmt->as<WarpShuffle>();
    return shuffle.target->name + " = shuffle_xor(" + typedText(shuffle.value) + ", " +
           std::to_string(shuffle.laneMask) + ")";
  }
  case StmtNode::Kind::AsyncCopy: {
    const auto &copy = *stmt->as<AsyncCopy>();
    return "async_copy " + copy.target->name + indexText(copy.targetIndices) + " <- " +
           copy.source->name + indexText(copy.sourceIndices) + " x" +
           std::to_string(copy.elements) + " (" + std::to_string(copy.bytes()) + " bytes, valid " +
           toString(copy.valid) + ")";
  }
  case StmtNode::Kind::AsyncCommit:
    return "async_commit";
  case StmtNode::Kind::AsyncWait:
    return "async_wait " + std::to_string(stmt->as<AsyncWait>()->pending);
  case StmtNode::Kind::Check: {
    const auto &check = *stmt->as<Check>();
    std::string text =
        "check (" + toString(check.condition) + ") else error " + quoted(check.message);
    for (size_t i = 0; i < check.values.size(); ++i)
      text += (i ? ", {" : " with {") + std::to_string(i) + "} = " + toString(check.values[i]);
    return text;
  }
  case StmtNode::Kind::Block:
    return "block of " + std::to_string(stmt->as<Block>()->stmts.size()) + " statements";
  case StmtNode::Kind::Reduce: {
    const auto &reduce = *stmt->as<Reduce>();
    return reduceHeader(reduce) + ": " + typedText(reduce.value);
  }
  case StmtNode::Kind::Scan: {
    const auto &scan = *stmt->as<Scan>();
    return scanHeader(scan) + ": " + typedText(scan.value);
  }
  case StmtNode::Kind::AtomicUpdate: {
    const auto &update = *stmt->as<AtomicUpdate>();
    return "atomic " + update.buffer->name + indexText(update.indices) + " " +
           reduceOpText(update.op) + " " + typedText(update.value);
  }
  case StmtNode::Kind::Launch:
    return launchText(*stmt->as<Launch>());
  }
  return "?";
}

std::string toString(const Stmt &stmt, int indent) {
  StmtPrinter printer;
  printer.print(stmt, indent);
  return printer.out.str();
}

std::string toString(const KernelFunc &kernel) {
  std::string hints;
  if (kernel.maxThreadsPerBlock)
    hints += " maxntid(" + std::to_string(kernel.maxThreadsPerBlock) + ")";
  if (kernel.minBlocksPerSM)
    hints += " minctasm(" + std::to_string(kernel.minBlocksPerSM) + ")";
  return "kernel " + kernel.name + "(" + paramsText(kernel.buffers, kernel.scalars) + ")" + hints +
         " {\n" + toString(kernel.body, 1) + "}\n";
}

std::string toString(const Function &function) {
  std::string text;
  for (const Function::SizeChoice &choice : function.sizeChoices)
    text += "// compiled for sizes where " + toString(choice.condition) + " is " +
            (choice.holds ? "true" : "false") + "\n";
  text += "func " + function.name + "(" + paramsText(function.buffers, function.scalars) + ")" +
          (function.boundsChecked ? " bounds_checked" : "") + " {\n" + toString(function.body, 1) +
          "}\n";
  for (const KernelFunc &kernel : function.kernels)
    text += "\n" + toString(kernel);
  return text;
}

} // namespace loopc::ir
