// Integer index expressions as affine forms `sum(c_v * v) + constant` over
// scalar declarations, with what is not affine summarised by the variables it
// mentions. Products of variables are kept exactly as terms of their own
// (`g*K`, `c*K*K`), so strides that are sizes (`(c*K + u)*K + v`) compare and
// cancel like constant ones. Sema compares extents with it (shape unification across kernel
// calls) and the race check uses it to decide which parfor iterations may
// touch the same array element. Internal to src/sema.
#pragma once

#include "frontend/Ast.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace loopc {

struct AffineForm {
  std::map<const VarDecl *, int64_t> coefficients; // only non-zero entries
  // Products of two or more variables, each named by its factors in order
  // (`K*K*c`); only non-zero entries. Exact, like the linear terms.
  using Monomial = std::vector<const VarDecl *>;
  std::map<Monomial, int64_t> products;
  int64_t constant = 0;
  // Variables that occur in a part that is not affine (`i / 2`, `i * j`);
  // such a part may take any value as they vary.
  std::set<const VarDecl *> nonAffineVars;
  // Arrays the expression reads an element of (`off[r]`): its value is
  // unknown even when every variable is fixed, but it stays the same while
  // the variables of the indices (in nonAffineVars) stay the same and no one
  // writes these arrays. The race check decides when that holds.
  std::set<const VarDecl *> loads;
  // A part the form does not follow at all (a redomap, an unresolved name):
  // nothing is known of its value.
  bool opaque = false;

  // The value of a `let` variable, for substitution; null keeps the variable
  // as an atom.
  using LetValue = std::function<const Expr *(const VarDecl &)>;
  static AffineForm of(const Expr &expr, const LetValue &letValue = nullptr);

  bool isExact() const { return nonAffineVars.empty() && loads.empty() && !opaque; }
  // Exact and without products: `sum(c_v * v) + constant`.
  bool isLinear() const { return isExact() && products.empty(); }
  bool isConstant() const { return coefficients.empty() && isLinear(); }
  int64_t coefficient(const VarDecl *var) const;
  // The form C with `*this == C*var + rest`, neither C nor rest mentioning
  // var; nullopt when the form is not exact or has a power of var.
  std::optional<AffineForm> factorOf(const VarDecl *var) const;
  // True when `var` occurs anywhere in the form.
  bool mentions(const VarDecl *var) const;
  bool operator==(const AffineForm &other) const = default;

  AffineForm plus(const AffineForm &other, int64_t scale = 1) const;
  AffineForm times(const AffineForm &other) const; // of exact forms
  std::string str() const;                         // `N - 2`, `2*i + j`; only meaningful when exact
};

} // namespace loopc
