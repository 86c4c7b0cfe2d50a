// Integer index expressions as affine forms `sum(c_v * v) + constant` over
// scalar declarations, with what is not affine summarised by the variables it
// mentions. Sema compares extents with it (shape unification across kernel
// calls) and the race check uses it to decide which parfor iterations may
// touch the same array element. Internal to src/sema.
#pragma once

#include "frontend/Ast.h"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace loopc {

struct AffineForm {
  std::map<const VarDecl *, int64_t> coefficients; // only non-zero entries
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
  int64_t coefficient(const VarDecl *var) const;
  // True when `var` occurs anywhere in the form.
  bool mentions(const VarDecl *var) const;
  bool operator==(const AffineForm &other) const = default;

  AffineForm plus(const AffineForm &other, int64_t scale = 1) const;
  std::string str() const; // `N - 2`, `2*i + j`; only meaningful when exact
};

} // namespace loopc
