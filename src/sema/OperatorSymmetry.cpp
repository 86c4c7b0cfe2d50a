// The symmetry test of user operators (see OperatorSymmetry.h), on the
// checked AST: a `combine` with an operator that does not commute is an
// error at its use, and the lowering carries the answer to the passes
// (ir::ReduceOperator::userCommutes), which choose a reduction's walk by it.
#include "sema/OperatorSymmetry.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace loopc::sema {

namespace {

// The canonical text of an expression, the text of each name it reads
// looked up in `names` (parameters and lets, already canonical).
class CanonicalText {
public:
  bool recursive = false; // a call reached a function being expanded

  // The canonical text of `fn`'s result with its parameters' texts given.
  std::optional<std::string> ofCall(const FnDecl &fn, const std::vector<std::string> &arguments) {
    if (!expanding_.insert(&fn).second) {
      recursive = true; // no finite text
      return std::nullopt;
    }
    if (fn.body->stmts.empty() || fn.params.size() != arguments.size())
      return std::nullopt;
    std::map<const VarDecl *, std::string> names;
    for (size_t i = 0; i < arguments.size(); ++i)
      names[fn.params[i].get()] = arguments[i];
    std::swap(names, names_);
    std::optional<std::string> result = ofBody(*fn.body);
    std::swap(names, names_);
    expanding_.erase(&fn);
    return result;
  }

private:
  // Expressions past this length are not compared (each inlined call may
  // double the text).
  static constexpr size_t kMaxLength = 1 << 16;

  std::optional<std::string> ofBody(const BlockStmt &body) {
    for (size_t i = 0; i + 1 < body.stmts.size(); ++i) {
      const auto *let = body.stmts[i]->as<DeclStmt>();
      if (!let || !let->init)
        return std::nullopt;
      std::optional<std::string> value = of(*let->init);
      if (!value)
        return std::nullopt;
      names_[let->var.get()] = *value;
    }
    const auto *result = body.stmts.back()->as<ReturnStmt>();
    if (!result || !result->value)
      return std::nullopt;
    return of(*result->value);
  }

  // `name(operands)`, the operands sorted when the operator commutes.
  static std::optional<std::string> apply(const std::string &name,
                                          std::vector<std::string> operands, bool commutative) {
    if (commutative)
      std::ranges::sort(operands);
    std::string text = name + "(";
    for (size_t i = 0; i < operands.size(); ++i)
      text += (i ? "," : "") + operands[i];
    text += ")";
    if (text.size() > kMaxLength)
      return std::nullopt;
    return text;
  }

  // The operands of an associative and commutative operation (`+ * && ||
  // min max`). On integers and bools, whose
  // `+ * min max && ||` are exactly associative, nested operations of the
  // same operator and type are one operation of all their operands, so
  // `a * b + a + b` is symmetric; on floats, `(x + y) + z` rounds otherwise
  // than `(x + z) + y`, and grouping counts.
  static std::vector<const Expr *> chain(const Expr &expr) {
    auto operandsOf = [](const Expr &node) -> std::optional<std::vector<const Expr *>> {
      if (const auto *binary = node.as<BinaryExpr>())
        return std::vector<const Expr *>{binary->lhs.get(), binary->rhs.get()};
      if (const auto *call = node.as<CallExpr>(); call && call->isBuiltin) {
        std::vector<const Expr *> args;
        for (const ExprPtr &arg : call->args)
          args.push_back(arg.get());
        return args;
      }
      return std::nullopt;
    };
    auto sameOperation = [&expr](const Expr &node) {
      if (node.type != expr.type || node.kind != expr.kind || isFloat(expr.type))
        return false;
      if (const auto *binary = node.as<BinaryExpr>())
        return binary->op == expr.as<BinaryExpr>()->op;
      const auto *call = node.as<CallExpr>();
      return call->isBuiltin && expr.as<CallExpr>()->isBuiltin &&
             call->builtin == expr.as<CallExpr>()->builtin;
    };
    std::vector<const Expr *> operands, direct = *operandsOf(expr);
    for (const Expr *operand : direct) {
      if (sameOperation(*operand)) {
        std::vector<const Expr *> nested = chain(*operand);
        operands.insert(operands.end(), nested.begin(), nested.end());
      } else {
        operands.push_back(operand);
      }
    }
    return operands;
  }

  // A float product written as an operand of a sum is one fused multiply-add
  // with it (language.md; the first product on a tie): `a * a + b * b` is
  // fma(a, a, b * b), which swapping a and b changes. None for anything else.
  std::optional<std::string> fusedMultiplyAdd(const BinaryExpr &sum) {
    const BinaryExpr *product = fusedProduct(sum.op, *sum.lhs, *sum.rhs);
    if (!product)
      return std::nullopt;
    bool productFirst = product == sum.lhs.get();
    auto factors = ofEach({product->lhs.get(), product->rhs.get()});
    auto addend = of(productFirst ? *sum.rhs : *sum.lhs);
    auto productText = factors ? apply("*", std::move(*factors), true) : std::nullopt;
    if (!productText || !addend)
      return std::nullopt;
    // a * b + c and c + a * b are one; a * b - c and c - a * b are not.
    std::string name = sum.op == BinaryOp::Add ? "fma" : productFirst ? "fms" : "fnma";
    return apply(name, {*productText, *addend}, false);
  }

  // `x > y ? x : y` on integers is max(x, y), and `x < y ? x : y` min(x,
  // y), exactly (on floats NaN and signed zeros tell them apart). `texts`
  // are the condition's, then's and else's.
  std::optional<std::string> minOrMaxChoice(const ConditionalExpr &conditional,
                                            const std::vector<std::string> &texts) {
    const auto *compare = conditional.cond->as<BinaryExpr>();
    if (!isInteger(conditional.type) || !compare || !isInteger(compare->lhs->type))
      return std::nullopt;
    bool greater = compare->op == BinaryOp::Gt || compare->op == BinaryOp::Ge;
    if (!greater && compare->op != BinaryOp::Lt && compare->op != BinaryOp::Le)
      return std::nullopt;
    std::optional<std::string> lhs = of(*compare->lhs), rhs = of(*compare->rhs);
    const std::string &then = texts[1], &otherwise = texts[2];
    bool picksLarger;
    if (lhs == then && rhs == otherwise)
      picksLarger = greater; // x > y ? x : y
    else if (lhs == otherwise && rhs == then)
      picksLarger = !greater; // y < x ? x : y
    else
      return std::nullopt;
    return apply(picksLarger ? "max" : "min", {then, otherwise}, true);
  }

  std::optional<std::vector<std::string>> ofEach(const std::vector<const Expr *> &exprs) {
    std::vector<std::string> texts;
    for (const Expr *expr : exprs) {
      std::optional<std::string> text = of(*expr);
      if (!text)
        return std::nullopt;
      texts.push_back(std::move(*text));
    }
    return texts;
  }

  std::optional<std::string> of(const Expr &expr) {
    std::string type = scalarTypeName(expr.type);
    switch (expr.kind) {
    case Expr::Kind::IntLit:
      return std::to_string(expr.as<IntLitExpr>()->value) + ":" + type;
    case Expr::Kind::FloatLit: {
      char text[40];
      std::snprintf(text, sizeof text, "%a", expr.as<FloatLitExpr>()->value);
      return text + (":" + type);
    }
    case Expr::Kind::BoolLit:
      return expr.as<BoolLitExpr>()->value ? "true" : "false";
    case Expr::Kind::Name: {
      auto found = names_.find(expr.as<NameExpr>()->decl);
      if (found == names_.end())
        return std::nullopt;
      return found->second;
    }
    case Expr::Kind::Call: {
      const auto &call = *expr.as<CallExpr>();
      std::vector<const Expr *> args;
      bool minOrMax =
          call.isBuiltin && (call.builtin == Builtin::Min || call.builtin == Builtin::Max);
      if (minOrMax)
        args = chain(expr);
      else
        for (const ExprPtr &arg : call.args)
          args.push_back(arg.get());
      auto texts = ofEach(args);
      if (!texts)
        return std::nullopt;
      if (call.isBuiltin)
        return apply(builtinName(call.builtin), std::move(*texts), minOrMax);
      if (!call.fn)
        return std::nullopt;
      return ofCall(*call.fn, *texts);
    }
    case Expr::Kind::Cast: {
      const auto &cast = *expr.as<CastExpr>();
      auto texts = ofEach({cast.operand.get()});
      return texts ? apply(type, std::move(*texts), false) : std::nullopt;
    }
    case Expr::Kind::Unary: {
      const auto &unary = *expr.as<UnaryExpr>();
      auto texts = ofEach({unary.operand.get()});
      return texts ? apply(unary.op == UnaryOp::Neg ? "neg" : "not", std::move(*texts), false)
                   : std::nullopt;
    }
    case Expr::Kind::Binary: {
      const auto &binary = *expr.as<BinaryExpr>();
      if (std::optional<std::string> fused = fusedMultiplyAdd(binary))
        return fused;
      static const BinaryOp commutative[] = {BinaryOp::Add, BinaryOp::Mul, BinaryOp::Eq,
                                             BinaryOp::Ne,  BinaryOp::And, BinaryOp::Or};
      bool commutes = std::ranges::find(commutative, binary.op) != std::end(commutative);
      bool associates = binary.op != BinaryOp::Eq && binary.op != BinaryOp::Ne;
      auto texts = ofEach(commutes && associates
                              ? chain(expr)
                              : std::vector<const Expr *>{binary.lhs.get(), binary.rhs.get()});
      return texts ? apply(binaryOpSpelling(binary.op), std::move(*texts), commutes) : std::nullopt;
    }
    case Expr::Kind::Conditional: {
      const auto &conditional = *expr.as<ConditionalExpr>();
      auto texts =
          ofEach({conditional.cond.get(), conditional.thenExpr.get(), conditional.elseExpr.get()});
      if (!texts)
        return std::nullopt;
      if (std::optional<std::string> extreme = minOrMaxChoice(conditional, *texts))
        return extreme;
      return apply("select", std::move(*texts), false);
    }
    case Expr::Kind::Index:
    case Expr::Kind::Redomap:
      return std::nullopt; // no array or reduction reaches an operator's body
    }
    return std::nullopt;
  }

  std::map<const VarDecl *, std::string> names_;
  std::set<const FnDecl *> expanding_; // the calls being expanded
};

} // namespace

std::optional<bool> commutesAsWritten(const FnDecl &op) {
  if (op.params.size() != 2)
    return false;
  CanonicalText text;
  std::optional<std::string> forward = text.ofCall(op, {"#0", "#1"});
  std::optional<std::string> swapped = text.ofCall(op, {"#1", "#0"});
  if (text.recursive)
    return std::nullopt;
  return forward && swapped && *forward == *swapped;
}

} // namespace loopc::sema
