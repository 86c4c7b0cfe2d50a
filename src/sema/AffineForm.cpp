// Builds affine forms of integer expressions (see AffineForm.h).
#include "sema/AffineForm.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace loopc {
namespace {

class AffineBuilder {
public:
  explicit AffineBuilder(const AffineForm::LetValue &letValue) : letValue_(letValue) {}

  AffineForm build(const Expr &expr) {
    if (const auto *literal = expr.as<IntLitExpr>()) {
      AffineForm form;
      form.constant = static_cast<int64_t>(literal->value);
      return form;
    }
    if (const auto *name = expr.as<NameExpr>())
      return buildName(*name);
    if (const auto *unary = expr.as<UnaryExpr>(); unary && unary->op == UnaryOp::Neg)
      return AffineForm{}.plus(build(*unary->operand), -1);
    if (const auto *cast = expr.as<CastExpr>();
        cast && isInteger(cast->target) && isInteger(cast->operand->type))
      return build(*cast->operand);
    if (const auto *binary = expr.as<BinaryExpr>())
      if (std::optional<AffineForm> form = buildBinary(*binary))
        return *form;
    return summarize(expr);
  }

private:
  AffineForm buildName(const NameExpr &name) {
    AffineForm form;
    const VarDecl *var = name.decl;
    if (!var) {
      form.opaque = true;
      return form;
    }
    if (var->kind == VarDecl::Kind::Let && letValue_)
      if (const Expr *value = letValue_(*var))
        return build(*value);
    form.coefficients[var] = 1;
    return form;
  }

  std::optional<AffineForm> buildBinary(const BinaryExpr &binary) {
    switch (binary.op) {
    case BinaryOp::Add:
      return build(*binary.lhs).plus(build(*binary.rhs));
    case BinaryOp::Sub:
      return build(*binary.lhs).plus(build(*binary.rhs), -1);
    case BinaryOp::Mul: {
      AffineForm lhs = build(*binary.lhs);
      AffineForm rhs = build(*binary.rhs);
      if (lhs.isConstant())
        return AffineForm{}.plus(rhs, lhs.constant);
      if (rhs.isConstant())
        return AffineForm{}.plus(lhs, rhs.constant);
      if (lhs.isExact() && rhs.isExact())
        return lhs.times(rhs);
      return std::nullopt;
    }
    default:
      return std::nullopt;
    }
  }

  // A part that is not affine: remember what it depends on.
  AffineForm summarize(const Expr &expr) {
    AffineForm form;
    collect(expr, form);
    return form;
  }

  void collect(const Expr &expr, AffineForm &form) {
    switch (expr.kind) {
    case Expr::Kind::Name: {
      AffineForm inner = buildName(*expr.as<NameExpr>());
      for (const auto &[var, coefficient] : inner.coefficients)
        form.nonAffineVars.insert(var);
      form.nonAffineVars.insert(inner.nonAffineVars.begin(), inner.nonAffineVars.end());
      form.loads.insert(inner.loads.begin(), inner.loads.end());
      form.opaque = form.opaque || inner.opaque;
      return;
    }
    case Expr::Kind::Index: {
      const auto *load = expr.as<IndexExpr>();
      if (load->decl)
        form.loads.insert(load->decl);
      else
        form.opaque = true;
      for (const auto &index : load->indices)
        collect(*index, form);
      return;
    }
    case Expr::Kind::Redomap:
      form.opaque = true;
      return;
    case Expr::Kind::Call:
      for (const auto &arg : expr.as<CallExpr>()->args)
        collect(*arg, form);
      return;
    case Expr::Kind::Cast:
      return collect(*expr.as<CastExpr>()->operand, form);
    case Expr::Kind::Unary:
      return collect(*expr.as<UnaryExpr>()->operand, form);
    case Expr::Kind::Binary:
      collect(*expr.as<BinaryExpr>()->lhs, form);
      collect(*expr.as<BinaryExpr>()->rhs, form);
      return;
    case Expr::Kind::Conditional: {
      const auto *conditional = expr.as<ConditionalExpr>();
      collect(*conditional->cond, form);
      collect(*conditional->thenExpr, form);
      collect(*conditional->elseExpr, form);
      return;
    }
    case Expr::Kind::IntLit:
    case Expr::Kind::FloatLit:
    case Expr::Kind::BoolLit:
      return;
    }
  }

  const AffineForm::LetValue &letValue_;
};

} // namespace

AffineForm AffineForm::of(const Expr &expr, const LetValue &letValue) {
  return AffineBuilder(letValue).build(expr);
}

int64_t AffineForm::coefficient(const VarDecl *var) const {
  auto it = coefficients.find(var);
  return it == coefficients.end() ? 0 : it->second;
}

bool AffineForm::mentions(const VarDecl *var) const {
  return coefficients.contains(var) || nonAffineVars.contains(var) ||
         std::ranges::any_of(products, [&](const auto &term) {
           return std::ranges::find(term.first, var) != term.first.end();
         });
}

namespace {

// Every exact term of a form, the constant under the empty monomial.
std::vector<std::pair<AffineForm::Monomial, int64_t>> termsOf(const AffineForm &form) {
  std::vector<std::pair<AffineForm::Monomial, int64_t>> terms{{{}, form.constant}};
  for (const auto &[var, coefficient] : form.coefficients)
    terms.push_back({{var}, coefficient});
  terms.insert(terms.end(), form.products.begin(), form.products.end());
  return terms;
}

void addTerm(AffineForm &form, AffineForm::Monomial monomial, int64_t value) {
  if (monomial.empty()) {
    form.constant += value;
    return;
  }
  std::ranges::sort(monomial);
  int64_t &entry =
      monomial.size() == 1 ? form.coefficients[monomial.front()] : form.products[monomial];
  entry += value;
  if (entry != 0)
    return;
  if (monomial.size() == 1)
    form.coefficients.erase(monomial.front());
  else
    form.products.erase(monomial);
}

} // namespace

std::optional<AffineForm> AffineForm::factorOf(const VarDecl *var) const {
  if (!isExact())
    return std::nullopt;
  AffineForm factor;
  for (auto [monomial, value] : termsOf(*this)) {
    auto first = std::ranges::find(monomial, var);
    if (first == monomial.end())
      continue;
    monomial.erase(first);
    if (std::ranges::find(monomial, var) != monomial.end())
      return std::nullopt;
    addTerm(factor, std::move(monomial), value);
  }
  return factor;
}

AffineForm AffineForm::times(const AffineForm &other) const {
  AffineForm product;
  for (const auto &[left, leftValue] : termsOf(*this))
    for (const auto &[right, rightValue] : termsOf(other)) {
      Monomial monomial = left;
      monomial.insert(monomial.end(), right.begin(), right.end());
      addTerm(product, std::move(monomial), leftValue * rightValue);
    }
  return product;
}

AffineForm AffineForm::plus(const AffineForm &other, int64_t scale) const {
  AffineForm sum = *this;
  for (const auto &[var, coefficient] : other.coefficients) {
    int64_t &entry = sum.coefficients[var];
    entry += scale * coefficient;
    if (entry == 0)
      sum.coefficients.erase(var);
  }
  for (const auto &[monomial, value] : other.products)
    addTerm(sum, monomial, scale * value);
  sum.constant += scale * other.constant;
  if (scale != 0) {
    sum.nonAffineVars.insert(other.nonAffineVars.begin(), other.nonAffineVars.end());
    sum.loads.insert(other.loads.begin(), other.loads.end());
    sum.opaque = sum.opaque || other.opaque;
  }
  return sum;
}

std::string AffineForm::str() const {
  std::string text;
  auto appendTerm = [&](int64_t value, const std::string &atom) {
    if (text.empty())
      text += value < 0 ? "-" : "";
    else
      text += value < 0 ? " - " : " + ";
    uint64_t magnitude = value < 0 ? -static_cast<uint64_t>(value) : value;
    if (atom.empty())
      text += std::to_string(magnitude);
    else
      text += (magnitude == 1 ? "" : std::to_string(magnitude) + "*") + atom;
  };
  // Positive terms first, each group by name, so the text is stable.
  std::vector<std::pair<const VarDecl *, int64_t>> terms(coefficients.begin(), coefficients.end());
  std::stable_sort(terms.begin(), terms.end(), [](const auto &a, const auto &b) {
    return std::pair(a.second < 0, a.first->name) < std::pair(b.second < 0, b.first->name);
  });
  for (const auto &[var, coefficient] : terms)
    appendTerm(coefficient, var->name);
  for (const auto &[monomial, value] : products) {
    std::string atom;
    for (const VarDecl *factor : monomial)
      atom += (atom.empty() ? "" : "*") + factor->name;
    appendTerm(value, atom);
  }
  if (constant != 0 || text.empty())
    appendTerm(constant, "");
  return text;
}

} // namespace loopc
