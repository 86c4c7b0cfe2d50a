// The checks of a kernel call, the one statement that looks into another
// signature: arrays are passed by name, scalars by value, scalar results by
// naming a mutable scalar. The callee's symbolic sizes are bound to the
// caller's extents, so that two arguments that must agree in shape are
// compared as affine forms at compile time; what cannot be decided here is
// left to the run-time check. A call may not alias the arrays a kernel
// writes, which the race check and every engine assume.
#include "sema/AffineForm.h"
#include "sema/Checker.h"

#include <algorithm>

namespace loopc::sema {

// What a kernel call learns about shapes: for each size of the callee, the
// caller's extent it was bound to first, and the callee extents that are
// expressions (`H - K + 1`), compared once every size is bound.
struct SizeBindings {
  std::map<const VarDecl *, const Expr *> sizes;
  struct Composite {
    const Expr *calleeExtent;
    const Expr *callerExtent;
    const NameExpr *arg;
    size_t dimension;
  };
  std::vector<Composite> composites;
};

namespace {

std::string typeSpelling(const TypeSpec &type) {
  std::string text = scalarTypeName(type.element);
  for (const ExprPtr &extent : type.dims) {
    AffineForm form = AffineForm::of(*extent);
    text += "[" + (form.isLinear() ? form.str() : std::string("...")) + "]";
  }
  return quoted(text);
}

// Whether two extents that differ as forms are different programs: when
// each is made of sizes and constants only. A `let` or a scalar parameter
// (`let N1 = N`, `f32[n]`) may hold any value, so such extents are left to
// the run-time check of the call.
bool decidable(const AffineForm &form) {
  return form.isLinear() && std::ranges::all_of(form.coefficients, [](const auto &term) {
           return term.first->kind == VarDecl::Kind::Size;
         });
}

// Unifies a callee extent that is a bare size with the caller's extent:
// two caller extents bound to one callee size must be equal as affine
// forms. Extents that are not affine (or callee extents that are
// expressions) are left to the run-time check.
void bindSize(DiagnosticEngine &diagnostics, const Expr &calleeExtent, const Expr &callerExtent,
              SizeBindings &bindings, const Expr &arg, size_t dimension) {
  const auto *name = calleeExtent.as<NameExpr>();
  if (!name || !name->decl || name->decl->kind != VarDecl::Kind::Size) {
    bindings.composites.push_back({&calleeExtent, &callerExtent, arg.as<NameExpr>(), dimension});
    return;
  }
  auto [it, inserted] = bindings.sizes.try_emplace(name->decl, &callerExtent);
  if (inserted)
    return;
  AffineForm first = AffineForm::of(*it->second);
  AffineForm second = AffineForm::of(callerExtent);
  if (decidable(first) && decidable(second) && !(first == second))
    diagnostics.error(arg.range, "shape mismatch: dimension " + std::to_string(dimension) + " of " +
                                     quoted(arg.as<NameExpr>()->name) + " is " +
                                     quoted(second.str()) + ", but the callee's size " +
                                     quoted(name->name) + " is already bound to " +
                                     quoted(first.str()) + " by an earlier argument");
}

// Compares a callee extent that is an expression of its sizes with the
// caller's extent, once the sizes are replaced by what they are bound to.
// Undecidable cases (unbound sizes, scalar parameters, non-affine
// extents) are left to the run-time check.
void checkCompositeExtent(DiagnosticEngine &diagnostics, const KernelDecl &callee,
                          const SizeBindings::Composite &composite, const SizeBindings &bindings) {
  AffineForm calleeForm = AffineForm::of(*composite.calleeExtent);
  AffineForm callerForm = AffineForm::of(*composite.callerExtent);
  if (!calleeForm.isLinear() || !decidable(callerForm))
    return;
  AffineForm expected;
  expected.constant = calleeForm.constant;
  for (const auto &[var, coefficient] : calleeForm.coefficients) {
    auto bound = bindings.sizes.find(var);
    if (bound == bindings.sizes.end())
      return;
    AffineForm boundForm = AffineForm::of(*bound->second);
    if (!decidable(boundForm))
      return;
    expected = expected.plus(boundForm, coefficient);
  }
  if (expected == callerForm)
    return;
  // "which is ... here" only when the caller's sizes rename the callee's.
  std::string inCaller =
      expected.str() == calleeForm.str() ? "" : ", which is " + quoted(expected.str()) + " here";
  diagnostics.error(composite.arg->range,
                    "shape mismatch: dimension " + std::to_string(composite.dimension) + " of " +
                        quoted(composite.arg->name) + " is " + quoted(callerForm.str()) + ", but " +
                        quoted(callee.name) + " needs " + quoted(calleeForm.str()) + inCaller);
}

void reportAliasedArguments(DiagnosticEngine &diagnostics, const CallStmt &call,
                            const KernelDecl &callee) {
  std::map<const VarDecl *, size_t> firstUse;
  for (size_t i = 0; i < call.args.size() && i < callee.params.size(); ++i) {
    const auto *name = call.args[i]->as<NameExpr>();
    const VarDecl &param = *callee.params[i];
    if (!name || !name->decl || !(param.isArray() || param.isScalarOutput()))
      continue;
    auto [it, inserted] = firstUse.try_emplace(name->decl, i);
    if (inserted)
      continue;
    const VarDecl &other = *callee.params[it->second];
    if (param.intent == Intent::In && other.intent == Intent::In)
      continue;
    diagnostics.error(name->range, quoted(name->name) + " is passed to both " + quoted(other.name) +
                                       " and " + quoted(param.name) + " of " + quoted(callee.name) +
                                       ", but a kernel's written arguments may not alias");
  }
}

} // namespace

void Checker::checkCallStmt(CallStmt &call) {
  KernelDecl *callee = findKernel(call.callee);
  auto skipArguments = [&] {
    for (auto &arg : call.args)
      if (!arg->as<NameExpr>())
        settle(*arg, checkExpr(*arg));
  };
  if (currentFn_ && callee) {
    // Matching the arguments would only add errors about a call that
    // cannot stay.
    diagnostics_.error(call.range, "kernel calls are not allowed in a function");
    return skipArguments();
  }
  if (parforDepth_ > 0 && callee)
    diagnostics_.error(call.range, "a kernel cannot be called inside a 'parfor'");
  if (!callee) {
    if (findFn(call.callee))
      diagnostics_.error(call.range,
                         quoted(call.callee) + " is a function; use its result in an expression");
    else
      diagnostics_.error(call.range, "unknown kernel " + quoted(call.callee) +
                                         suggestion(call.callee, kernelNames()));
    return skipArguments();
  }
  call.kernel = callee;
  if (currentKernel_)
    kernelCalls_[currentKernel_].push_back({callee, call.range});
  if (call.args.size() != callee->params.size()) {
    diagnostics_.error(call.range,
                       "kernel " + quoted(callee->name) +
                           argumentCountMismatch(callee->params.size(), call.args.size()));
    diagnostics_.note(callee->nameRange, quoted(callee->name) + " is declared here");
  }
  SizeBindings bindings;
  for (size_t i = 0; i < call.args.size(); ++i) {
    if (i < callee->params.size())
      checkKernelArgument(*callee, *callee->params[i], *call.args[i], bindings);
    else
      checkUnmatchedArgument(*call.args[i]);
  }
  for (const SizeBindings::Composite &composite : bindings.composites)
    checkCompositeExtent(diagnostics_, *callee, composite, bindings);
  reportAliasedArguments(diagnostics_, call, *callee);
}

void Checker::checkKernelArgument(const KernelDecl &callee, const VarDecl &param, Expr &arg,
                                  SizeBindings &bindings) {
  std::string paramName = "parameter " + quoted(param.name) + " of " + quoted(callee.name);
  if (!param.isArray() && !param.isScalarOutput()) {
    Ty type = checkExpr(arg);
    if (!coerce(arg, type, param.type.element))
      diagnostics_.error(arg.range, paramName + " has type " +
                                        quoted(scalarTypeName(param.type.element)) + ", got " +
                                        describe(type) + conversionHint(param.type.element, type));
    return;
  }
  auto *name = arg.as<NameExpr>();
  if (!name) {
    diagnostics_.error(arg.range, paramName + " needs " +
                                      (param.isArray() ? "an array" : "a variable") +
                                      " passed by name");
    settle(arg, checkExpr(arg));
    return;
  }
  VarDecl *var = lookup(name->name);
  if (!var) {
    reportUnknownName(name->name, name->range);
    return;
  }
  name->decl = var;
  name->type = var->type.element;
  if (poisoned_.contains(var))
    return;
  if (param.isArray() != var->isArray() || param.type.rank() != var->type.rank() ||
      param.type.element != var->type.element) {
    diagnostics_.error(arg.range, paramName + " has type " + typeSpelling(param.type) + ", but " +
                                      quoted(var->name) + " has type " + typeSpelling(var->type));
    return;
  }
  if (param.intent != Intent::In && !var->isMutable())
    diagnostics_.error(arg.range, "cannot pass " + quoted(var->name) + " to '" +
                                      intentName(param.intent) + "' " + paramName + ": " +
                                      immutableReason(*var, /*advice=*/false));
  for (size_t d = 0; d < param.type.rank(); ++d)
    bindSize(diagnostics_, *param.type.dims[d], *var->type.dims[d], bindings, arg, d);
}

} // namespace loopc::sema
