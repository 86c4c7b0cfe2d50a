// Index ranges over a block (IndexRange.h): linear forms over uniform terms,
// spans from thread indices and constant loops, and one clamp.
#include "passes/analysis/IndexRange.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"

#include <algorithm>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr;

namespace {

// A cast that keeps every integer value: i32 to i64, or to its own type.
bool isWidening(const Cast &cast) {
  return isInteger(cast.type) && isInteger(cast.operand->type) &&
         (cast.type == ScalarType::I64 || cast.operand->type == ScalarType::I32);
}

// Whether `expr` can be evaluated where the program might not evaluate it
// (an origin computed by every thread, ahead of the guards): no loads, calls
// or divisions by anything but a non-zero constant.
class Hoistable : public IRVisitor {
public:
  bool hoistable = true;

protected:
  void visitLoad(const Load &) override { hoistable = false; }
  void visitCall(const Call &) override { hoistable = false; }
  void visitBinary(const Binary &node) override {
    if (node.op == BinaryOpKind::Div || node.op == BinaryOpKind::Rem) {
      const auto *divisor = node.rhs->as<IntImm>();
      hoistable &= divisor && divisor->value != 0;
    }
    IRVisitor::visitBinary(node);
  }
};

} // namespace

// ---------------------------------------------------------------- LinearForm

bool LinearForm::sameTerms(const LinearForm &other) const {
  return std::ranges::equal(terms, other.terms, [](const auto &a, const auto &b) {
    return a.first == b.first && a.second.second == b.second.second;
  });
}

LinearForm LinearForm::scaled(int64_t factor) const {
  if (factor == 0)
    return {};
  LinearForm result = *this;
  result.constant *= factor;
  for (auto &[key, term] : result.terms)
    term.second *= factor;
  return result;
}

LinearForm LinearForm::plus(const LinearForm &other, int64_t sign) const {
  LinearForm result = *this;
  result.constant += sign * other.constant;
  for (const auto &[key, term] : other.terms) {
    auto [at, inserted] = result.terms.try_emplace(key, term.first, 0);
    at->second.second += sign * term.second;
    if (at->second.second == 0)
      result.terms.erase(at);
  }
  return result;
}

Expr LinearForm::toExpr() const {
  Expr sum;
  for (const auto &[key, term] : terms) {
    Expr scaledTerm = toI64(term.first);
    if (term.second != 1)
      scaledTerm = mul(scaledTerm, makeI64(term.second));
    sum = sum ? add(sum, scaledTerm) : scaledTerm;
  }
  if (!sum)
    return makeI64(constant);
  if (constant != 0)
    sum = add(sum, makeI64(constant));
  return sum;
}

// ---------------------------------------------------------------- IndexRange

Expr IndexRange::origin() const {
  if (!clamp)
    return offset.toExpr();
  Expr clamped = minOf(clamp->value.toExpr(), clamp->bound.toExpr());
  if (offset.terms.empty() && offset.constant == 0)
    return clamped;
  return add(clamped, offset.toExpr());
}

bool IndexRange::sharesOrigin(const IndexRange &other) const {
  if (!offset.sameTerms(other.offset) || clamp.has_value() != other.clamp.has_value())
    return false;
  return !clamp ||
         (clamp->value.sameTerms(other.clamp->value) && clamp->bound == other.clamp->bound);
}

void IndexRange::unite(const IndexRange &other) {
  auto widen = [](LinearForm &low, int64_t &span, const LinearForm &otherLow, int64_t otherSpan) {
    int64_t high = std::max(low.constant + span, otherLow.constant + otherSpan);
    low.constant = std::min(low.constant, otherLow.constant);
    span = high - low.constant;
  };
  widen(offset, span, other.offset, other.span);
  if (clamp)
    widen(clamp->value, clamp->span, other.clamp->value, other.clamp->span);
}

namespace {

IndexRange uniformRange(LinearForm form) { return IndexRange{std::move(form), 0, std::nullopt}; }

// a + sign * b. A clamp on b would turn into a max under subtraction, and
// two clamps do not combine into one.
std::optional<IndexRange> add(const IndexRange &a, const IndexRange &b, int64_t sign) {
  if ((a.clamp && b.clamp) || (sign < 0 && b.clamp))
    return std::nullopt;
  IndexRange sum;
  sum.offset = a.offset.plus(b.offset, sign);
  if (sign < 0)
    sum.offset.constant -= b.span;
  sum.span = a.span + b.span;
  sum.clamp = a.clamp ? a.clamp : b.clamp;
  return sum;
}

// factor * a: min(x, B) * c is min(x * c, B * c) for c > 0.
std::optional<IndexRange> scale(const IndexRange &a, int64_t factor) {
  if (factor == 0)
    return IndexRange{};
  if (factor < 0 && a.clamp)
    return std::nullopt;
  IndexRange scaled;
  scaled.offset = a.offset.scaled(factor);
  scaled.span = a.span * std::abs(factor);
  if (factor < 0)
    scaled.offset.constant -= scaled.span; // the low end was the high one
  if (a.clamp)
    scaled.clamp = IndexRange::Clamp{a.clamp->value.scaled(factor), a.clamp->span * factor,
                                     a.clamp->bound.scaled(factor)};
  return scaled;
}

bool isConstant(const IndexRange &range) {
  return range.offset.terms.empty() && range.span == 0 && !range.clamp;
}

} // namespace

// ---------------------------------------------------------------- RangeScope

void RangeScope::bindRange(const std::string &var, IndexRange range) {
  bindings_[var] = Binding{Binding::Kind::Range, std::move(range), nullptr};
}

void RangeScope::bindUnknown(const std::string &var) {
  bindings_[var] = Binding{Binding::Kind::Unknown, {}, nullptr};
}

void RangeScope::bindLet(const std::string &var, Expr value) {
  bindings_[var] = Binding{Binding::Kind::Let, {}, std::move(value)};
}

void RangeScope::unbind(const std::string &var) { bindings_.erase(var); }

bool RangeScope::isUniform(const Expr &expr) const {
  Hoistable check;
  check.visit(expr);
  return check.hoistable && std::ranges::all_of(freeVars(expr), [&](const std::string &var) {
           auto binding = bindings_.find(var);
           if (binding == bindings_.end())
             return true;
           return binding->second.kind == Binding::Kind::Let && isUniform(binding->second.value);
         });
}

Expr RangeScope::inlined(const Expr &expr) const {
  std::map<std::string, Expr> values;
  for (const std::string &var : freeVars(expr)) {
    auto binding = bindings_.find(var);
    if (binding != bindings_.end() && binding->second.kind == Binding::Kind::Let)
      values[var] = inlined(binding->second.value);
  }
  return values.empty() ? expr : substitute(expr, values);
}

LinearForm linearFormOf(const Expr &expr) {
  if (const auto *imm = expr->as<IntImm>())
    return LinearForm{{}, imm->value};
  if (const auto *binary = expr->as<Binary>()) {
    switch (binary->op) {
    case BinaryOpKind::Add:
    case BinaryOpKind::Sub:
      return linearFormOf(binary->lhs)
          .plus(linearFormOf(binary->rhs), binary->op == BinaryOpKind::Add ? 1 : -1);
    case BinaryOpKind::Mul:
      if (const auto *factor = binary->rhs->as<IntImm>())
        return linearFormOf(binary->lhs).scaled(factor->value);
      if (const auto *factor = binary->lhs->as<IntImm>())
        return linearFormOf(binary->rhs).scaled(factor->value);
      break;
    default:
      break;
    }
  }
  if (const auto *negated = expr->as<Unary>(); negated && negated->op == UnaryOpKind::Neg)
    return linearFormOf(negated->operand).scaled(-1);
  if (const auto *cast = expr->as<Cast>(); cast && isWidening(*cast))
    return linearFormOf(cast->operand);
  LinearForm term;
  term.terms.emplace(toString(expr), std::make_pair(expr, int64_t{1}));
  return term;
}

std::optional<IndexRange> RangeScope::rangeOf(const Expr &index) const {
  if (!isInteger(index->type))
    return std::nullopt;
  if (isUniform(index))
    return uniformRange(linearFormOf(inlined(index)));
  switch (index->kind) {
  case ExprNode::Kind::Var: {
    const Binding &binding = bindings_.at(index->as<Var>()->name);
    if (binding.kind == Binding::Kind::Range)
      return binding.range;
    if (binding.kind == Binding::Kind::Let)
      return rangeOf(binding.value);
    return std::nullopt;
  }
  case ExprNode::Kind::Cast:
    if (isWidening(*index->as<Cast>()))
      return rangeOf(index->as<Cast>()->operand);
    return std::nullopt;
  case ExprNode::Kind::Binary:
    break;
  default:
    return std::nullopt;
  }
  const auto &binary = *index->as<Binary>();
  std::optional<IndexRange> lhs = rangeOf(binary.lhs), rhs = rangeOf(binary.rhs);
  if (!lhs || !rhs)
    return std::nullopt;
  switch (binary.op) {
  case BinaryOpKind::Add:
    return add(*lhs, *rhs, 1);
  case BinaryOpKind::Sub:
    return add(*lhs, *rhs, -1);
  case BinaryOpKind::Mul:
    if (isConstant(*lhs))
      return scale(*rhs, lhs->offset.constant);
    if (isConstant(*rhs))
      return scale(*lhs, rhs->offset.constant);
    return std::nullopt;
  case BinaryOpKind::Min: {
    // One side varies, the other is a uniform bound.
    if (!isUniform(binary.lhs) && !isUniform(binary.rhs))
      return std::nullopt;
    const Expr &bound = isUniform(binary.rhs) ? binary.rhs : binary.lhs;
    const IndexRange &value = isUniform(binary.rhs) ? *lhs : *rhs;
    IndexRange clamped;
    if (!value.clamp) {
      clamped.clamp = IndexRange::Clamp{value.offset, value.span, linearFormOf(inlined(bound))};
      return clamped;
    }
    // min(min(v, b) + c, bound) with c uniform is min(v + c, min(b + c,
    // bound)): a clamped copy of tile_registers clamped again by the program.
    if (value.span != 0)
      return std::nullopt;
    Expr bounds = minOf(value.clamp->bound.plus(value.offset, 1).toExpr(), toI64(inlined(bound)));
    clamped.clamp = IndexRange::Clamp{value.clamp->value.plus(value.offset, 1), value.clamp->span,
                                      linearFormOf(bounds)};
    return clamped;
  }
  default:
    return std::nullopt;
  }
}

} // namespace loopc::passes
