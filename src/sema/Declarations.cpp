// What is declared and where: the one namespace of kernels and functions,
// the block scopes of a body and the lookup of names in them (with a
// "did you mean" for a misspelt one), the signatures of kernels and
// functions (parameters, intents and the symbolic sizes a kernel's array
// types introduce), and the call graph's cycles. These are the facts the
// statement and expression checks look things up in, kept apart from the
// checks themselves.
#include "sema/Checker.h"
#include "sema/OperatorSymmetry.h"
#include "support/Suggestions.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

namespace loopc::sema {
namespace {

template <typename Map> std::vector<std::string> keysOf(const Map &map) {
  std::vector<std::string> keys;
  for (const auto &[key, value] : map)
    keys.push_back(key);
  return keys;
}

// Reports every call that closes a cycle in `calls`, with the cycle's path.
template <typename Decl>
void reportCycles(DiagnosticEngine &diagnostics, const std::vector<Decl *> &roots,
                  const std::map<Decl *, std::vector<std::pair<Decl *, SourceRange>>> &calls,
                  const char *what) {
  enum class State { Unvisited, OnStack, Done };
  std::map<Decl *, State> state;
  std::vector<Decl *> stack;
  std::function<void(Decl *)> visit = [&](Decl *decl) {
    state[decl] = State::OnStack;
    stack.push_back(decl);
    auto it = calls.find(decl);
    if (it != calls.end()) {
      for (const auto &[callee, range] : it->second) {
        State calleeState = state[callee];
        if (calleeState == State::OnStack) {
          std::string path;
          auto start = std::find(stack.begin(), stack.end(), callee);
          for (auto member = start; member != stack.end(); ++member)
            path += quoted((*member)->name) + " -> ";
          path += quoted(callee->name);
          diagnostics.error(range, "recursion is not allowed: " + path + "; " + what +
                                       " may not call themselves");
        } else if (calleeState == State::Unvisited) {
          visit(callee);
        }
      }
    }
    stack.pop_back();
    state[decl] = State::Done;
  };
  for (Decl *root : roots)
    if (state[root] == State::Unvisited)
      visit(root);
}

} // namespace

std::string suggestion(const std::string &name, std::vector<std::string> candidates) {
  std::string best = closestName(name, std::move(candidates));
  return best.empty() ? "" : "; did you mean " + quoted(best) + "?";
}

// ------------------------------------------------------------------ globals ---

void Checker::collectGlobalNames() {
  auto define = [&](const std::string &name, SourceRange range) {
    if (findBuiltin(name)) {
      diagnostics_.error(range, quoted(name) + " is the name of a builtin function");
      return false;
    }
    auto [it, inserted] = globalRanges_.try_emplace(name, range);
    if (!inserted) {
      // The main file comes first and keeps its definition; a clash with an
      // imported file is reported at the importing file's, which its author
      // can rename.
      std::string message =
          "duplicate definition of " + quoted(name) + ": kernels and functions share one namespace";
      if (it->second.begin.file != range.begin.file) {
        diagnostics_.error(it->second, message);
        diagnostics_.note(range, quoted(name) + " is also defined here, in an imported file");
      } else {
        diagnostics_.error(range, message);
        diagnostics_.note(it->second, quoted(name) + " is first defined here");
      }
      return false;
    }
    return true;
  };
  // In source order, so the first definition is the one kept.
  forEachInSourceOrder(
      [&](FnDecl &fn) {
        if (define(fn.name, fn.nameRange))
          fns_[fn.name] = &fn;
      },
      [&](KernelDecl &kernel) {
        if (define(kernel.name, kernel.nameRange))
          kernels_[kernel.name] = &kernel;
      });
}

KernelDecl *Checker::findKernel(const std::string &name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : it->second;
}

FnDecl *Checker::findFn(const std::string &name) const {
  auto it = fns_.find(name);
  return it == fns_.end() ? nullptr : it->second;
}

std::vector<std::string> Checker::kernelNames() const { return keysOf(kernels_); }

std::vector<std::string> Checker::functionNames() const {
  std::vector<std::string> names = keysOf(fns_);
  for (int builtin = 0; builtin <= static_cast<int>(Builtin::Fma); ++builtin)
    names.push_back(builtinName(static_cast<Builtin>(builtin)));
  return names;
}

// ------------------------------------------------------------------- scopes ---

VarDecl *Checker::lookup(const std::string &name) const {
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto it = scope->find(name);
    if (it != scope->end())
      return it->second;
  }
  return nullptr;
}

// Names may not be shadowed inside a kernel or function: a nested loop
// reusing `i` is almost always a mistake, and it keeps every later stage
// free of shadowing rules.
void Checker::declare(VarDecl &var) {
  if (VarDecl *previous = lookup(var.name)) {
    diagnostics_.error(var.range, quoted(var.name) + " is already declared");
    diagnostics_.note(previous->range, "previous declaration of " + quoted(var.name) + " is here");
  }
  scopes_.back()[var.name] = &var;
}

void Checker::reportUnknownName(const std::string &name, SourceRange range) {
  if (findKernel(name))
    diagnostics_.error(range, quoted(name) + " is a kernel, not a variable");
  else if (findFn(name))
    diagnostics_.error(range, quoted(name) + " is a function, not a variable");
  else if (checkingSignature_)
    diagnostics_.error(range, "unknown size " + quoted(name) +
                                  ": declare it as a whole extent "
                                  "of some parameter, e.g. f32[" +
                                  name + "]");
  else
    diagnostics_.error(range, "unknown name " + quoted(name) + suggestion(name, visibleNames()));
}

std::vector<std::string> Checker::visibleNames() const {
  std::vector<std::string> names;
  for (const Scope &scope : scopes_)
    for (const auto &[name, var] : scope)
      names.push_back(name);
  return names;
}

// --------------------------------------------------------------- signatures ---

// Adds a parameter to its signature's scope; a repeated name is an error.
void Checker::declareParameter(Scope &scope, VarDecl &param) {
  auto [it, inserted] = scope.try_emplace(param.name, &param);
  if (!inserted) {
    diagnostics_.error(param.range, "duplicate parameter " + quoted(param.name));
    diagnostics_.note(it->second->range,
                      "previous declaration of " + quoted(param.name) + " is here");
  }
}

namespace {

// Why `extent`, an extent of a kernel parameter, is not fixed when the
// kernel starts, or is not a form the engines evaluate from the sizes before
// running (engine/Bindings.cpp, evaluateExtent), with the part at fault; an
// empty reason when it is fine. Allowed: integer literals, sizes, integer
// value parameters, - + * / %, min, max, abs and integer casts of these.
std::pair<const Expr *, std::string> unfixedExtentPart(const Expr &extent) {
  if (extent.as<IntLitExpr>())
    return {nullptr, ""};
  if (const auto *name = extent.as<NameExpr>()) {
    const VarDecl *decl = name->decl;
    if (!decl || decl->kind == VarDecl::Kind::Size)
      return {nullptr, ""};
    if (decl->isScalarOutput())
      return {&extent, quoted(name->name) + " is a result of the kernel ('" +
                           intentName(decl->intent) +
                           "'), which the kernel may change: an extent must be fixed when it "
                           "starts"};
    if (!decl->type.isArray() && isInteger(decl->type.element))
      return {nullptr, ""};
    return {&extent, quoted(name->name) + " is not a size or an integer parameter"};
  }
  if (const auto *unary = extent.as<UnaryExpr>(); unary && unary->op == UnaryOp::Neg)
    return unfixedExtentPart(*unary->operand);
  if (const auto *cast = extent.as<CastExpr>(); cast && isInteger(cast->target))
    return unfixedExtentPart(*cast->operand);
  if (const auto *binary = extent.as<BinaryExpr>()) {
    switch (binary->op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Rem:
      if (auto lhs = unfixedExtentPart(*binary->lhs); lhs.first)
        return lhs;
      return unfixedExtentPart(*binary->rhs);
    default:
      break;
    }
  } else if (const auto *call = extent.as<CallExpr>();
             call && call->isBuiltin &&
             (call->builtin == Builtin::Min || call->builtin == Builtin::Max ||
              call->builtin == Builtin::Abs)) {
    for (const ExprPtr &arg : call->args)
      if (auto part = unfixedExtentPart(*arg); part.first)
        return part;
    return {nullptr, ""};
  }
  return {&extent, "a parameter's extent is built from integer literals, sizes and integer "
                   "parameters with + - * / %, min, max, abs and integer casts"};
}

} // namespace

// Declares the sizes of a kernel (bare-name extents of its parameter types
// that are not parameters, in order of first appearance) and checks the
// parameters. The kernel's scope (parameters and sizes) is kept for the
// body.
void Checker::declareKernelSignature(KernelDecl &kernel) {
  Scope scope;
  for (const auto &param : kernel.params) {
    declareParameter(scope, *param);
    if (param->isArray() && param->intent == Intent::None)
      diagnostics_.error(param->range, "array parameter " + quoted(param->name) +
                                           " needs an intent: 'in', 'out' or 'inout'");
  }
  for (const auto &param : kernel.params)
    for (const auto &extent : param->type.dims)
      if (auto *name = extent->as<NameExpr>(); name && !scope.contains(name->name)) {
        auto size = std::make_unique<VarDecl>();
        size->kind = VarDecl::Kind::Size;
        size->name = name->name;
        size->type.element = ScalarType::I64;
        size->range = name->range;
        scope[name->name] = size.get();
        kernel.sizes.push_back(std::move(size));
      }
  kernelScopes_[&kernel] = scope;
  scopes_.assign(1, scope);
  checkingSignature_ = true;
  for (const auto &param : kernel.params)
    for (const auto &extent : param->type.dims) {
      checkExtent(*extent);
      if (!isInteger(extent->type)) // reported by checkExtent
        continue;
      if (auto [part, reason] = unfixedExtentPart(*extent); part)
        diagnostics_.error(part->range, "in the type of " + quoted(param->name) + ": " + reason);
    }
  checkingSignature_ = false;
  scopes_.clear();
}

void Checker::checkFnSignature(FnDecl &fn) {
  Scope scope;
  for (const auto &param : fn.params) {
    declareParameter(scope, *param);
    if (param->isArray())
      diagnostics_.error(param->range, "function parameter " + quoted(param->name) +
                                           " must be a scalar; use a kernel to work on arrays");
    else if (param->intent == Intent::Out || param->intent == Intent::InOut)
      diagnostics_.error(param->range, "function parameter " + quoted(param->name) +
                                           " cannot be '" + intentName(param->intent) +
                                           "': functions return their result");
  }
  if (fn.associative) {
    bool shapeOk = fn.params.size() == 2;
    for (const auto &param : fn.params)
      shapeOk = shapeOk && !param->isArray() && param->type.element == fn.result;
    if (!shapeOk)
      diagnostics_.error(fn.nameRange, "assoc fn " + quoted(fn.name) +
                                           " must take two parameters of its result type " +
                                           quoted(scalarTypeName(fn.result)));
  }
  fnScopes_[&fn] = scope;
}

// ---------------------------------------------------------------- recursion ---

void Checker::reportRecursion() {
  std::vector<FnDecl *> fns;
  std::vector<KernelDecl *> kernels;
  for (const auto &module : program_.modules) {
    for (const auto &fn : module->fns)
      fns.push_back(fn.get());
    for (const auto &kernel : module->kernels)
      kernels.push_back(kernel.get());
  }
  reportCycles(diagnostics_, fns, fnCalls_, "functions");
  reportCycles(diagnostics_, kernels, kernelCalls_, "kernels");
}

namespace {

// The first redomap in `expr`, or null.
const RedomapExpr *findRedomap(const Expr &expr) {
  if (const auto *redomap = expr.as<RedomapExpr>())
    return redomap;
  std::vector<const Expr *> children;
  if (const auto *call = expr.as<CallExpr>())
    for (const ExprPtr &arg : call->args)
      children.push_back(arg.get());
  else if (const auto *cast = expr.as<CastExpr>())
    children = {cast->operand.get()};
  else if (const auto *unary = expr.as<UnaryExpr>())
    children = {unary->operand.get()};
  else if (const auto *binary = expr.as<BinaryExpr>())
    children = {binary->lhs.get(), binary->rhs.get()};
  else if (const auto *conditional = expr.as<ConditionalExpr>())
    children = {conditional->cond.get(), conditional->thenExpr.get(), conditional->elseExpr.get()};
  for (const Expr *child : children)
    if (const RedomapExpr *found = child ? findRedomap(*child) : nullptr)
      return found;
  return nullptr;
}

// What keeps an operator from being one expression: a statement that is not
// a `let` or the final `return`, or a redomap (a loop), in its body or in a
// function it calls.
struct NonExpressionPart {
  const FnDecl *holder;
  SourceRange range;
  bool isRedomap;
};

std::optional<NonExpressionPart> firstNonExpressionPart(
    FnDecl &fn, const std::map<FnDecl *, std::vector<std::pair<FnDecl *, SourceRange>>> &calls,
    std::set<const FnDecl *> &visited) {
  if (!visited.insert(&fn).second)
    return std::nullopt;
  const std::vector<StmtPtr> &stmts = fn.body->stmts;
  for (size_t i = 0; i < stmts.size(); ++i) {
    const auto *decl = stmts[i]->as<DeclStmt>();
    const auto *result = stmts[i]->as<ReturnStmt>();
    bool isLet = decl && decl->var->kind == VarDecl::Kind::Let;
    bool isFinalReturn = i + 1 == stmts.size() && result;
    if (!isLet && !isFinalReturn)
      return NonExpressionPart{&fn, stmts[i]->range, false};
    const Expr *value = isLet ? decl->init.get() : result->value.get();
    if (const RedomapExpr *redomap = value ? findRedomap(*value) : nullptr)
      return NonExpressionPart{&fn, redomap->range, true};
  }
  auto callees = calls.find(&fn);
  if (callees != calls.end())
    for (const auto &[callee, range] : callees->second)
      if (auto found = firstNonExpressionPart(*callee, calls, visited))
        return found;
  return std::nullopt;
}

} // namespace

void Checker::checkOperatorBodies() {
  for (const OperatorUse &use : operatorUses_) {
    std::set<const FnDecl *> visited;
    auto found = firstNonExpressionPart(*use.fn, fnCalls_, visited);
    if (!found) {
      std::optional<bool> commutes = commutesAsWritten(*use.fn);
      use.fn->commutes = commutes.value_or(false);
      // (An operator without two parameters, or recursive, has its error
      // already.)
      if (use.construct == "combine" && commutes == false && use.fn->params.size() == 2) {
        diagnostics_.error(use.range,
                           quoted(use.fn->name) +
                               " cannot be a combine operator: the iterations combine in no fixed "
                               "order, so the operator must commute, and swapping its "
                               "parameters " +
                               quoted(use.fn->params[0]->name) + " and " +
                               quoted(use.fn->params[1]->name) + " changes its expression");
        diagnostics_.note(use.fn->nameRange,
                          quoted(use.fn->name) +
                              " is declared here; write it symmetrically (max(a, b) rather than "
                              "a > b ? a : b), or use a redomap, which combines in order");
      }
      continue;
    }
    diagnostics_.error(use.range,
                       quoted(use.fn->name) + " cannot be a " + use.construct +
                           " operator: an operator combines as one expression, so its body must "
                           "be 'let's and one 'return' with no redomap (write a choice as 'c ? "
                           "a : b')");
    const auto &[holder, range, isRedomap] = *found;
    std::string where = holder == use.fn ? "" : " of " + quoted(holder->name) + ", which it calls,";
    diagnostics_.note(range, isRedomap ? "this redomap" + where + " is a loop"
                                       : "this statement" + where + " is not a 'let'");
  }
}

} // namespace loopc::sema
