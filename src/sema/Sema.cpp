// The semantic checker: resolves names and scopes, infers and checks types
// (literals take their type from context; there are no implicit
// conversions), declares the symbolic sizes of kernels, checks intents, calls,
// redomap operators, missing returns and recursion, then runs the parfor race
// check (RaceCheck.cpp) on every kernel that is otherwise well formed. It
// keeps going after an error: an erroneous expression gets a poison type that
// silences the errors that would only follow from the first one.
#include "sema/Sema.h"

#include "sema/AffineForm.h"
#include "sema/RaceCheck.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace loopc {
namespace {

// The type of an expression while it is being checked. A tree made only of
// literals (`2`, `-1`, `2 * 0.5`) has no type of its own yet: it is flexible,
// and takes the type its context asks for when it is finalized. Poison marks
// an expression that already produced an error.
struct Ty {
  enum class Kind : uint8_t { Known, IntLiteral, FloatLiteral, Poison };
  Kind kind = Kind::Poison;
  ScalarType scalar = ScalarType::I64;

  static Ty known(ScalarType scalar) { return {Kind::Known, scalar}; }
  static Ty intLiteral() { return {Kind::IntLiteral, ScalarType::I64}; }
  static Ty floatLiteral() { return {Kind::FloatLiteral, ScalarType::F64}; }
  static Ty poison() { return {Kind::Poison, ScalarType::I64}; }

  bool isPoison() const { return kind == Kind::Poison; }
  bool isKnown() const { return kind == Kind::Known; }
  bool isFlexible() const { return kind == Kind::IntLiteral || kind == Kind::FloatLiteral; }
  bool is(ScalarType type) const { return isKnown() && scalar == type; }
  bool isNumeric() const { return isFlexible() || (isKnown() && scalar != ScalarType::Bool); }
};

std::string quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

std::string describe(Ty type) {
  switch (type.kind) {
  case Ty::Kind::Known:
    return quoted(scalarTypeName(type.scalar));
  case Ty::Kind::IntLiteral:
    return "an integer literal";
  case Ty::Kind::FloatLiteral:
    return "a float literal";
  case Ty::Kind::Poison:
    break;
  }
  return "an erroneous expression";
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

// What a builtin accepts: its number of arguments, and whether they must be
// floats (the others take any integer or float type).
struct BuiltinSignature {
  Builtin builtin;
  size_t arity;
  bool floatOnly;
};

std::optional<BuiltinSignature> findBuiltin(std::string_view name) {
  static const BuiltinSignature signatures[] = {
      {Builtin::Sqrt, 1, true}, {Builtin::Exp, 1, true},   {Builtin::Log, 1, true},
      {Builtin::Sin, 1, true},  {Builtin::Cos, 1, true},   {Builtin::Tanh, 1, true},
      {Builtin::Abs, 1, false}, {Builtin::Min, 2, false},  {Builtin::Max, 2, false},
      {Builtin::Pow, 2, true},  {Builtin::Floor, 1, true}, {Builtin::Ceil, 1, true},
      {Builtin::Fma, 3, true}};
  for (const BuiltinSignature &signature : signatures)
    if (name == builtinName(signature.builtin))
      return signature;
  return std::nullopt;
}

// Whether the literal `value`, negated when it is the operand of a unary
// minus, is representable in `type` (`-2147483648` is an i32, `2147483648`
// is not).
bool fitsIn(uint64_t value, bool negated, ScalarType type) {
  uint64_t extra = negated ? 1 : 0;
  if (type == ScalarType::I32)
    return value <= uint64_t(INT32_MAX) + extra;
  if (type == ScalarType::I64)
    return value <= uint64_t(INT64_MAX) + extra;
  return true;
}

// True when executing `stmt` always ends in a `return`.
bool alwaysReturns(const Stmt &stmt) {
  if (stmt.as<ReturnStmt>())
    return true;
  if (const auto *block = stmt.as<BlockStmt>())
    return !block->stmts.empty() && alwaysReturns(*block->stmts.back());
  if (const auto *ifStmt = stmt.as<IfStmt>())
    return ifStmt->elseBody && alwaysReturns(*ifStmt->thenBody) && alwaysReturns(*ifStmt->elseBody);
  return false;
}

class Checker {
public:
  Checker(Program &program, DiagnosticEngine &diagnostics)
      : program_(program), diagnostics_(diagnostics) {}

  bool run() {
    collectGlobalNames();
    for (const auto &module : program_.modules) {
      for (const auto &kernel : module->kernels)
        declareKernelSignature(*kernel);
      for (const auto &fn : module->fns)
        checkFnSignature(*fn);
    }
    // Bodies in source order, so that errors come out in reading order.
    forEachInSourceOrder([&](FnDecl &fn) { checkFnBody(fn); },
                         [&](KernelDecl &kernel) { checkKernel(kernel); });
    reportRecursion();
    return !diagnostics_.hasErrors();
  }

private:
  // Visits the functions and kernels of every module, module by module, in
  // the order they appear in the file.
  template <typename OnFn, typename OnKernel>
  void forEachInSourceOrder(OnFn onFn, OnKernel onKernel) {
    auto before = [](SourceRange a, SourceRange b) {
      return std::tie(a.begin.line, a.begin.col) < std::tie(b.begin.line, b.begin.col);
    };
    for (const auto &module : program_.modules) {
      auto fn = module->fns.begin();
      auto kernel = module->kernels.begin();
      while (fn != module->fns.end() || kernel != module->kernels.end()) {
        if (kernel == module->kernels.end() ||
            (fn != module->fns.end() && before((*fn)->range, (*kernel)->range)))
          onFn(**fn++);
        else
          onKernel(**kernel++);
      }
    }
  }

  void checkKernel(KernelDecl &kernel) {
    unsigned errorsBefore = diagnostics_.errorCount();
    checkKernelBody(kernel);
    // The race check needs every name resolved and every index typed.
    if (diagnostics_.errorCount() == errorsBefore)
      checkParforRaces(kernel, diagnostics_);
  }

  // ------------------------------------------------------------ globals ---

  void collectGlobalNames() {
    auto define = [&](const std::string &name, SourceRange range) {
      if (findBuiltin(name)) {
        diagnostics_.error(range, quoted(name) + " is the name of a builtin function");
        return false;
      }
      auto [it, inserted] = globalRanges_.try_emplace(name, range);
      if (!inserted) {
        diagnostics_.error(range, "duplicate definition of " + quoted(name) +
                                      ": kernels and functions share one namespace");
        diagnostics_.note(it->second, quoted(name) + " is first defined here");
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

  KernelDecl *findKernel(const std::string &name) const {
    auto it = kernels_.find(name);
    return it == kernels_.end() ? nullptr : it->second;
  }
  FnDecl *findFn(const std::string &name) const {
    auto it = fns_.find(name);
    return it == fns_.end() ? nullptr : it->second;
  }

  // ------------------------------------------------------------- scopes ---

  void pushScope() { scopes_.emplace_back(); }
  void popScope() { scopes_.pop_back(); }

  VarDecl *lookup(const std::string &name) const {
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
  void declare(VarDecl &var) {
    if (VarDecl *previous = lookup(var.name)) {
      diagnostics_.error(var.range, quoted(var.name) + " is already declared");
      diagnostics_.note(previous->range,
                        "previous declaration of " + quoted(var.name) + " is here");
    }
    scopes_.back()[var.name] = &var;
  }

  void reportUnknownName(const std::string &name, SourceRange range) {
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

  std::vector<std::string> visibleNames() const {
    std::vector<std::string> names;
    for (const auto &scope : scopes_)
      for (const auto &[name, var] : scope)
        names.push_back(name);
    return names;
  }

  std::vector<std::string> kernelNames() const {
    std::vector<std::string> names;
    for (const auto &[name, kernel] : kernels_)
      names.push_back(name);
    return names;
  }

  std::vector<std::string> functionNames() const {
    std::vector<std::string> names;
    for (const auto &[name, fn] : fns_)
      names.push_back(name);
    for (int builtin = 0; builtin <= static_cast<int>(Builtin::Fma); ++builtin)
      names.push_back(builtinName(static_cast<Builtin>(builtin)));
    return names;
  }

  // "; did you mean 'x'?" for the closest candidate within a small edit
  // distance of a misspelt name, or nothing.
  static std::string suggestion(const std::string &name, std::vector<std::string> candidates) {
    std::sort(candidates.begin(), candidates.end());
    // Short names are too close to everything to guess from.
    size_t limit = name.size() / 3;
    if (limit == 0)
      return "";
    const std::string *best = nullptr;
    size_t bestDistance = limit + 1;
    for (const std::string &candidate : candidates) {
      size_t distance = editDistance(name, candidate);
      if (distance < bestDistance) {
        best = &candidate;
        bestDistance = distance;
      }
    }
    return best ? "; did you mean " + quoted(*best) + "?" : "";
  }

  // Edits (insertions, deletions, substitutions and swaps of neighbours)
  // that turn a into b.
  static size_t editDistance(const std::string &a, const std::string &b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i)
      d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j)
      d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] =
            std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  }

  // --------------------------------------------------------- signatures ---

  // Declares the sizes of a kernel (bare-name extents of its parameter types
  // that are not parameters, in order of first appearance) and checks the
  // parameters. The kernel's scope (parameters and sizes) is kept for the
  // body.
  void declareKernelSignature(KernelDecl &kernel) {
    std::unordered_map<std::string, VarDecl *> scope;
    for (const auto &param : kernel.params) {
      auto [it, inserted] = scope.try_emplace(param->name, param.get());
      if (!inserted) {
        diagnostics_.error(param->range, "duplicate parameter " + quoted(param->name));
        diagnostics_.note(it->second->range,
                          "previous declaration of " + quoted(param->name) + " is here");
      }
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
      for (const auto &extent : param->type.dims)
        checkExtent(*extent);
    checkingSignature_ = false;
    scopes_.clear();
  }

  void checkExtent(Expr &extent) {
    Ty type = checkExpr(extent);
    if (type.isPoison())
      return;
    if (type.isKnown() && isInteger(type.scalar))
      return;
    if (!coerce(extent, type, ScalarType::I64))
      diagnostics_.error(extent.range, "an array extent must be an integer, got " + describe(type));
  }

  void checkFnSignature(FnDecl &fn) {
    std::unordered_map<std::string, VarDecl *> scope;
    for (const auto &param : fn.params) {
      auto [it, inserted] = scope.try_emplace(param->name, param.get());
      if (!inserted) {
        diagnostics_.error(param->range, "duplicate parameter " + quoted(param->name));
        diagnostics_.note(it->second->range,
                          "previous declaration of " + quoted(param->name) + " is here");
      }
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

  // ------------------------------------------------------------- bodies ---

  void checkKernelBody(KernelDecl &kernel) {
    currentKernel_ = &kernel;
    currentFn_ = nullptr;
    parforDepth_ = 0;
    scopes_.assign(1, kernelScopes_[&kernel]);
    checkBlock(*kernel.body);
    scopes_.clear();
    currentKernel_ = nullptr;
  }

  void checkFnBody(FnDecl &fn) {
    currentKernel_ = nullptr;
    currentFn_ = &fn;
    parforDepth_ = 0;
    scopes_.assign(1, fnScopes_[&fn]);
    checkBlock(*fn.body);
    scopes_.clear();
    if (!alwaysReturns(*fn.body))
      diagnostics_.error(fn.nameRange,
                         "function " + quoted(fn.name) + " may end without returning a value");
    currentFn_ = nullptr;
  }

  void checkBlock(BlockStmt &block) {
    pushScope();
    for (auto &stmt : block.stmts)
      checkStmt(*stmt);
    popScope();
  }

  void checkStmt(Stmt &stmt) {
    switch (stmt.kind) {
    case Stmt::Kind::Block:
      return checkBlock(*stmt.as<BlockStmt>());
    case Stmt::Kind::Decl:
      return checkDecl(*stmt.as<DeclStmt>());
    case Stmt::Kind::Assign:
      return checkAssign(*stmt.as<AssignStmt>());
    case Stmt::Kind::For:
      return checkFor(*stmt.as<ForStmt>());
    case Stmt::Kind::Parfor:
      return checkParfor(*stmt.as<ParforStmt>());
    case Stmt::Kind::If:
      return checkIf(*stmt.as<IfStmt>());
    case Stmt::Kind::Return:
      return checkReturn(*stmt.as<ReturnStmt>());
    case Stmt::Kind::Call:
      return checkCallStmt(*stmt.as<CallStmt>());
    }
  }

  void checkDecl(DeclStmt &decl) {
    VarDecl &var = *decl.var;
    const char *keyword = var.kind == VarDecl::Kind::Let ? "let" : "var";
    if (var.isArray()) {
      if (var.kind == VarDecl::Kind::Let)
        diagnostics_.error(var.range, "a local array must be declared with 'var', not 'let'");
      else if (currentFn_)
        diagnostics_.error(var.range,
                           "local arrays are not allowed in a function; use them in a kernel");
      for (const auto &extent : var.type.dims)
        checkExtent(*extent);
      if (decl.init) {
        diagnostics_.error(decl.init->range, "a local array cannot have an initializer; it "
                                             "starts zeroed");
        checkExpr(*decl.init);
      }
    } else if (decl.hasExplicitType) {
      if (decl.init) {
        Ty type = checkExpr(*decl.init);
        if (!coerce(*decl.init, type, var.type.element))
          diagnostics_.error(decl.init->range,
                             "cannot initialize " + quoted(var.name) + " of type " +
                                 quoted(scalarTypeName(var.type.element)) + " with " +
                                 describe(type) + conversionHint(var.type.element, type));
      }
    } else if (decl.init) {
      Ty type = checkExpr(*decl.init);
      if (type.isPoison())
        poisoned_.insert(&var);
      var.type.element = settle(*decl.init, type);
    } else {
      diagnostics_.error(var.range, "'" + std::string(keyword) + " " + var.name +
                                        "' needs a type or an initial value");
      poisoned_.insert(&var);
    }
    declare(var);
  }

  static std::string conversionHint(ScalarType wanted, Ty got) {
    if (!got.isKnown())
      return "";
    return std::string("; convert explicitly, e.g. ") + scalarTypeName(wanted) + "(...)";
  }

  void checkAssign(AssignStmt &assign) {
    VarDecl *var = lookup(assign.target);
    for (auto &index : assign.indices)
      checkIndex(*index);
    Ty value = checkExpr(*assign.value);
    if (!var) {
      reportUnknownName(assign.target, assign.targetRange);
      settle(*assign.value, value);
      return;
    }
    assign.decl = var;
    if (var->isArray() && assign.indices.empty()) {
      diagnostics_.error(assign.targetRange,
                         "cannot assign to the whole array " + quoted(var->name) + "; index it");
      settle(*assign.value, value);
      return;
    }
    if (!var->isArray() && !assign.indices.empty()) {
      diagnostics_.error(assign.targetRange, quoted(var->name) + " is not an array");
      settle(*assign.value, value);
      return;
    }
    if (var->isArray() && assign.indices.size() != var->type.rank())
      reportRankMismatch(*var, assign.indices.size(), assign.targetRange);
    if (!var->isMutable())
      reportImmutable(*var, assign.targetRange);
    if (poisoned_.contains(var)) {
      settle(*assign.value, value);
      return;
    }
    ScalarType target = var->type.element;
    if (assign.op != AssignOp::Assign) {
      if (target == ScalarType::Bool)
        diagnostics_.error(assign.targetRange, "compound assignment needs a numeric target, but " +
                                                   quoted(var->name) + " is 'bool'");
      else if (assign.op == AssignOp::Rem && !isInteger(target))
        diagnostics_.error(assign.targetRange, "'%=' needs an integer target, but " +
                                                   quoted(var->name) + " is " +
                                                   quoted(scalarTypeName(target)));
    }
    if (!coerce(*assign.value, value, target)) {
      diagnostics_.error(assign.value->range, "cannot assign " + describe(value) + " to " +
                                                  quoted(var->name) + " of type " +
                                                  quoted(scalarTypeName(target)) +
                                                  conversionHint(target, value));
      diagnostics_.note(var->range, quoted(var->name) + " is declared here");
    }
  }

  void reportImmutable(const VarDecl &var, SourceRange range) {
    std::string message = "cannot assign to " + quoted(var.name) + ": ";
    switch (var.kind) {
    case VarDecl::Kind::Param:
      if (var.intent == Intent::In && var.isArray())
        message += "it is an 'in' parameter";
      else
        message += "it is a value parameter; declare it 'out' or 'inout' to return a result";
      break;
    case VarDecl::Kind::Size:
      message += "it is a size, bound from the arrays passed";
      break;
    case VarDecl::Kind::Let:
      message += "it is a 'let' variable; declare it with 'var' to change it";
      break;
    case VarDecl::Kind::LoopVar:
      message += "it is a loop variable";
      break;
    case VarDecl::Kind::Var:
      break;
    }
    diagnostics_.error(range, message);
    diagnostics_.note(var.range, quoted(var.name) + " is declared here");
  }

  void reportRankMismatch(const VarDecl &var, size_t indexCount, SourceRange range) {
    diagnostics_.error(range, quoted(var.name) + " has rank " + std::to_string(var.type.rank()) +
                                  " but is indexed with " + std::to_string(indexCount) +
                                  (indexCount == 1 ? " index" : " indices"));
  }

  // Checks a range and declares its variable in the current scope.
  void checkRange(Range &range) {
    Ty lo = checkExpr(*range.lo);
    Ty hi = checkExpr(*range.hi);
    Ty step = range.step ? checkExpr(*range.step) : Ty::known(ScalarType::I64);
    Ty type = unify(*range.lo, lo, *range.hi, hi, "..");
    if (range.step) {
      type = unify(*range.lo, type, *range.step, step, "by");
      if (const auto *literal = range.step->as<IntLitExpr>(); literal && literal->value == 0)
        diagnostics_.error(range.step->range, "the step of a range must be positive");
      else if (const auto *negated = range.step->as<UnaryExpr>();
               negated && negated->op == UnaryOp::Neg && negated->operand->as<IntLitExpr>())
        diagnostics_.error(range.step->range, "the step of a range must be positive");
    }
    ScalarType varType = ScalarType::I64;
    if (type.isPoison()) {
      poisoned_.insert(range.var.get());
    } else if (type.kind == Ty::Kind::FloatLiteral || (type.isKnown() && !isInteger(type.scalar))) {
      diagnostics_.error(range.range,
                         "the bounds of a range must be integers, got " + describe(type));
      poisoned_.insert(range.var.get());
    } else {
      varType = type.isKnown() ? type.scalar : ScalarType::I64;
      if (lo.isFlexible())
        finalize(*range.lo, varType);
      if (hi.isFlexible())
        finalize(*range.hi, varType);
      if (range.step && step.isFlexible())
        finalize(*range.step, varType);
    }
    range.var->type.element = varType;
    declare(*range.var);
  }

  void checkFor(ForStmt &loop) {
    pushScope();
    checkRange(loop.range);
    checkBlock(*loop.body);
    popScope();
  }

  void checkParfor(ParforStmt &parfor) {
    if (currentFn_)
      diagnostics_.error(parfor.range, "'parfor' is not allowed in a function");
    pushScope();
    for (Range &range : parfor.ranges)
      checkRange(range);
    ++parforDepth_;
    checkBlock(*parfor.body);
    --parforDepth_;
    popScope();
  }

  void checkIf(IfStmt &ifStmt) {
    expectBool(*ifStmt.cond, "the condition of 'if'");
    checkBlock(*ifStmt.thenBody);
    if (ifStmt.elseBody)
      checkStmt(*ifStmt.elseBody);
  }

  void expectBool(Expr &expr, const std::string &what) {
    Ty type = checkExpr(expr);
    if (!coerce(expr, type, ScalarType::Bool))
      diagnostics_.error(expr.range, what + " must be 'bool', got " + describe(type));
  }

  void checkReturn(ReturnStmt &ret) {
    Ty type = checkExpr(*ret.value);
    if (!currentFn_) {
      diagnostics_.error(ret.range, "'return' is only allowed in a function; kernels return "
                                    "results through 'out' parameters");
      settle(*ret.value, type);
      return;
    }
    if (!coerce(*ret.value, type, currentFn_->result))
      diagnostics_.error(ret.value->range, "function " + quoted(currentFn_->name) + " returns " +
                                               quoted(scalarTypeName(currentFn_->result)) +
                                               ", not " + describe(type) +
                                               conversionHint(currentFn_->result, type));
  }

  // A kernel call: arrays are passed by name, scalars by value, scalar
  // results by naming a mutable scalar.
  void checkCallStmt(CallStmt &call) {
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
    if (parforDepth_ > 0)
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
      diagnostics_.error(call.range, "kernel " + quoted(callee->name) + " takes " +
                                         std::to_string(callee->params.size()) + " argument" +
                                         (callee->params.size() == 1 ? "" : "s") + ", got " +
                                         std::to_string(call.args.size()));
      diagnostics_.note(callee->nameRange, quoted(callee->name) + " is declared here");
    }
    SizeBindings bindings;
    for (size_t i = 0; i < call.args.size(); ++i) {
      Expr &arg = *call.args[i];
      if (i >= callee->params.size()) {
        if (!arg.as<NameExpr>() || !lookupResolvesArray(arg))
          settle(arg, checkExpr(arg));
        else
          resolveArrayArgument(arg);
        continue;
      }
      checkKernelArgument(*callee, *callee->params[i], arg, bindings);
    }
    for (const SizeBindings::Composite &composite : bindings.composites)
      checkCompositeExtent(*callee, composite, bindings);
    reportAliasedArguments(call, *callee);
  }

  // The race check and every engine assume that the arrays a kernel writes
  // are distinct from its other arrays, so a call may not alias them.
  void reportAliasedArguments(const CallStmt &call, const KernelDecl &callee) {
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
      diagnostics_.error(name->range, quoted(name->name) + " is passed to both " +
                                          quoted(other.name) + " and " + quoted(param.name) +
                                          " of " + quoted(callee.name) +
                                          ", but a kernel's written arguments may not alias");
    }
  }

  bool lookupResolvesArray(Expr &arg) {
    auto *name = arg.as<NameExpr>();
    VarDecl *var = name ? lookup(name->name) : nullptr;
    return var && var->isArray();
  }

  void resolveArrayArgument(Expr &arg) {
    auto *name = arg.as<NameExpr>();
    name->decl = lookup(name->name);
    name->type = name->decl->type.element;
  }

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

  void checkKernelArgument(const KernelDecl &callee, const VarDecl &param, Expr &arg,
                           SizeBindings &bindings) {
    std::string paramName = "parameter " + quoted(param.name) + " of " + quoted(callee.name);
    if (param.isArray() || param.isScalarOutput()) {
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
        diagnostics_.error(arg.range, paramName + " has type " + typeSpelling(param.type) +
                                          ", but " + quoted(var->name) + " has type " +
                                          typeSpelling(var->type));
        return;
      }
      if (param.intent != Intent::In && !var->isMutable())
        diagnostics_.error(arg.range, "cannot pass " + quoted(var->name) + " to '" +
                                          intentName(param.intent) + "' " + paramName + ": " +
                                          immutableReason(*var));
      for (size_t d = 0; d < param.type.rank(); ++d)
        bindSize(*param.type.dims[d], *var->type.dims[d], bindings, arg, d);
      return;
    }
    Ty type = checkExpr(arg);
    if (!coerce(arg, type, param.type.element))
      diagnostics_.error(arg.range, paramName + " has type " +
                                        quoted(scalarTypeName(param.type.element)) + ", got " +
                                        describe(type) + conversionHint(param.type.element, type));
  }

  // Unifies a callee extent that is a bare size with the caller's extent:
  // two caller extents bound to one callee size must be equal as affine
  // forms. Extents that are not affine (or callee extents that are
  // expressions) are left to the run-time check.
  void bindSize(const Expr &calleeExtent, const Expr &callerExtent, SizeBindings &bindings,
                const Expr &arg, size_t dimension) {
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
    if (first.isExact() && second.isExact() && !(first == second))
      diagnostics_.error(arg.range, "shape mismatch: dimension " + std::to_string(dimension + 1) +
                                        " of " + quoted(arg.as<NameExpr>()->name) + " is " +
                                        quoted(second.str()) + ", but the callee's size " +
                                        quoted(name->name) + " is already bound to " +
                                        quoted(first.str()) + " by an earlier argument");
  }

  // Compares a callee extent that is an expression of its sizes with the
  // caller's extent, once the sizes are replaced by what they are bound to.
  // Undecidable cases (unbound sizes, scalar parameters, non-affine
  // extents) are left to the run-time check.
  void checkCompositeExtent(const KernelDecl &callee, const SizeBindings::Composite &composite,
                            const SizeBindings &bindings) {
    AffineForm calleeForm = AffineForm::of(*composite.calleeExtent);
    AffineForm callerForm = AffineForm::of(*composite.callerExtent);
    if (!calleeForm.isExact() || !callerForm.isExact())
      return;
    AffineForm expected;
    expected.constant = calleeForm.constant;
    for (const auto &[var, coefficient] : calleeForm.coefficients) {
      auto bound = bindings.sizes.find(var);
      if (bound == bindings.sizes.end())
        return;
      AffineForm boundForm = AffineForm::of(*bound->second);
      if (!boundForm.isExact())
        return;
      expected = expected.plus(boundForm, coefficient);
    }
    if (expected == callerForm)
      return;
    diagnostics_.error(composite.arg->range,
                       "shape mismatch: dimension " + std::to_string(composite.dimension + 1) +
                           " of " + quoted(composite.arg->name) + " is " +
                           quoted(callerForm.str()) + ", but " + quoted(callee.name) + " needs " +
                           quoted(calleeForm.str()) + ", which is " + quoted(expected.str()) +
                           " here");
  }

  static std::string typeSpelling(const TypeSpec &type) {
    std::string text = scalarTypeName(type.element);
    for (size_t d = 0; d < type.rank(); ++d)
      text += "[]";
    return quoted(text);
  }

  static std::string immutableReason(const VarDecl &var) {
    switch (var.kind) {
    case VarDecl::Kind::Param:
      return var.isArray() ? "it is an 'in' parameter" : "it is a value parameter";
    case VarDecl::Kind::Let:
      return "it is a 'let' variable";
    case VarDecl::Kind::LoopVar:
      return "it is a loop variable";
    case VarDecl::Kind::Size:
      return "it is a size";
    case VarDecl::Kind::Var:
      break;
    }
    return "it is immutable";
  }

  // -------------------------------------------------------- expressions ---

  Ty checkIndex(Expr &index) {
    Ty type = checkExpr(index);
    if (type.isPoison())
      return type;
    if (type.kind == Ty::Kind::FloatLiteral || (type.isKnown() && !isInteger(type.scalar))) {
      diagnostics_.error(index.range, "an array index must be an integer, got " + describe(type));
      return Ty::poison();
    }
    return Ty::known(settle(index, type));
  }

  Ty checkExpr(Expr &expr) {
    switch (expr.kind) {
    case Expr::Kind::IntLit:
      return Ty::intLiteral();
    case Expr::Kind::FloatLit:
      return Ty::floatLiteral();
    case Expr::Kind::BoolLit:
      expr.type = ScalarType::Bool;
      return Ty::known(ScalarType::Bool);
    case Expr::Kind::Name:
      return checkName(*expr.as<NameExpr>());
    case Expr::Kind::Index:
      return checkIndexExpr(*expr.as<IndexExpr>());
    case Expr::Kind::Call:
      return checkCall(*expr.as<CallExpr>());
    case Expr::Kind::Cast:
      return checkCast(*expr.as<CastExpr>());
    case Expr::Kind::Unary:
      return checkUnary(*expr.as<UnaryExpr>());
    case Expr::Kind::Binary:
      return checkBinary(*expr.as<BinaryExpr>());
    case Expr::Kind::Conditional:
      return checkConditional(*expr.as<ConditionalExpr>());
    case Expr::Kind::Redomap:
      return checkRedomap(*expr.as<RedomapExpr>());
    }
    return Ty::poison();
  }

  Ty known(Expr &expr, ScalarType type) {
    expr.type = type;
    return Ty::known(type);
  }

  Ty checkName(NameExpr &name) {
    VarDecl *var = lookup(name.name);
    if (!var) {
      reportUnknownName(name.name, name.range);
      return Ty::poison();
    }
    name.decl = var;
    name.type = var->type.element;
    if (var->isArray()) {
      diagnostics_.error(name.range,
                         "array " + quoted(name.name) + " cannot be used as a value; index it");
      return Ty::poison();
    }
    if (poisoned_.contains(var))
      return Ty::poison();
    return Ty::known(var->type.element);
  }

  Ty checkIndexExpr(IndexExpr &index) {
    VarDecl *var = lookup(index.array);
    for (auto &subscript : index.indices)
      checkIndex(*subscript);
    if (!var) {
      reportUnknownName(index.array, index.range);
      return Ty::poison();
    }
    index.decl = var;
    index.type = var->type.element;
    if (!var->isArray()) {
      diagnostics_.error(index.range, quoted(var->name) + " is not an array");
      return Ty::poison();
    }
    if (index.indices.size() != var->type.rank()) {
      reportRankMismatch(*var, index.indices.size(), index.range);
      return Ty::poison();
    }
    if (poisoned_.contains(var))
      return Ty::poison();
    return Ty::known(var->type.element);
  }

  Ty checkCall(CallExpr &call) {
    std::optional<BuiltinSignature> builtin = findBuiltin(call.callee);
    FnDecl *fn = builtin ? nullptr : findFn(call.callee);
    if (!builtin && !fn) {
      if (findKernel(call.callee))
        diagnostics_.error(call.range, quoted(call.callee) +
                                           " is a kernel; kernels are called as statements, "
                                           "not in expressions");
      else
        diagnostics_.error(call.range, "unknown function " + quoted(call.callee) +
                                           suggestion(call.callee, functionNames()));
      // Arrays are fine here: the call was probably meant to be a kernel call.
      for (auto &arg : call.args) {
        if (lookupResolvesArray(*arg))
          resolveArrayArgument(*arg);
        else
          settle(*arg, checkExpr(*arg));
      }
      return Ty::poison();
    }
    std::vector<Ty> args;
    for (auto &arg : call.args)
      args.push_back(checkExpr(*arg));
    if (builtin)
      return checkBuiltinCall(call, *builtin, args);
    call.fn = fn;
    recordFnCall(*fn, call.range);
    if (args.size() != fn->params.size()) {
      diagnostics_.error(call.range, "function " + quoted(fn->name) + " takes " +
                                         std::to_string(fn->params.size()) + " argument" +
                                         (fn->params.size() == 1 ? "" : "s") + ", got " +
                                         std::to_string(args.size()));
      diagnostics_.note(fn->nameRange, quoted(fn->name) + " is declared here");
      for (size_t i = 0; i < args.size(); ++i)
        settle(*call.args[i], args[i]);
      return known(call, fn->result);
    }
    for (size_t i = 0; i < args.size(); ++i) {
      ScalarType wanted = fn->params[i]->type.element;
      if (!coerce(*call.args[i], args[i], wanted))
        diagnostics_.error(call.args[i]->range,
                           "argument " + std::to_string(i + 1) + " of " + quoted(fn->name) +
                               " must be " + quoted(scalarTypeName(wanted)) + ", got " +
                               describe(args[i]) + conversionHint(wanted, args[i]));
    }
    return known(call, fn->result);
  }

  void recordFnCall(FnDecl &callee, SourceRange range) {
    if (currentFn_)
      fnCalls_[currentFn_].push_back({&callee, range});
  }

  Ty checkBuiltinCall(CallExpr &call, const BuiltinSignature &signature,
                      const std::vector<Ty> &args) {
    call.isBuiltin = true;
    call.builtin = signature.builtin;
    std::string name = quoted(call.callee);
    if (args.size() != signature.arity) {
      diagnostics_.error(call.range, "builtin " + name + " takes " +
                                         std::to_string(signature.arity) + " argument" +
                                         (signature.arity == 1 ? "" : "s") + ", got " +
                                         std::to_string(args.size()));
      for (size_t i = 0; i < args.size(); ++i)
        settle(*call.args[i], args[i]);
      return Ty::poison();
    }
    Ty type = args[0];
    for (size_t i = 1; i < args.size(); ++i)
      type = unify(*call.args[0], type, *call.args[i], args[i], call.callee.c_str());
    if (type.isPoison())
      return type;
    if (type.isKnown())
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i].isFlexible())
          finalize(*call.args[i], type.scalar);
    if (type.is(ScalarType::Bool) ||
        (signature.floatOnly && type.isKnown() && !isFloat(type.scalar))) {
      diagnostics_.error(
          call.range, "builtin " + name + " needs " + (signature.floatOnly ? "float" : "numeric") +
                          " arguments, got " + describe(type) +
                          (type.is(ScalarType::Bool) ? "" : "; convert explicitly, e.g. f64(...)"));
      return Ty::poison();
    }
    if (signature.floatOnly && type.kind == Ty::Kind::IntLiteral)
      type = Ty::floatLiteral();
    if (type.isKnown())
      call.type = type.scalar;
    return type;
  }

  Ty checkCast(CastExpr &cast) {
    Ty operand = checkExpr(*cast.operand);
    if (operand.isFlexible()) {
      bool fitsTarget = cast.target != ScalarType::Bool &&
                        (operand.kind == Ty::Kind::IntLiteral || isFloat(cast.target));
      if (fitsTarget)
        finalize(*cast.operand, cast.target);
      else
        settle(*cast.operand, operand);
    }
    return known(cast, cast.target);
  }

  Ty checkUnary(UnaryExpr &unary) {
    Ty operand = checkExpr(*unary.operand);
    if (unary.op == UnaryOp::Not) {
      if (!coerce(*unary.operand, operand, ScalarType::Bool)) {
        diagnostics_.error(unary.range, "'!' needs a 'bool' operand, got " + describe(operand));
        return known(unary, ScalarType::Bool);
      }
      return known(unary, ScalarType::Bool);
    }
    if (operand.isPoison())
      return operand;
    if (!operand.isNumeric()) {
      diagnostics_.error(unary.range, "'-' needs a numeric operand, got " + describe(operand));
      return Ty::poison();
    }
    if (operand.isKnown())
      unary.type = operand.scalar;
    return operand;
  }

  Ty checkBinary(BinaryExpr &binary) {
    const char *spelling = binaryOpSpelling(binary.op);
    Ty lhs = checkExpr(*binary.lhs);
    Ty rhs = checkExpr(*binary.rhs);
    switch (binary.op) {
    case BinaryOp::And:
    case BinaryOp::Or: {
      bool lhsOk = coerce(*binary.lhs, lhs, ScalarType::Bool);
      bool rhsOk = coerce(*binary.rhs, rhs, ScalarType::Bool);
      if (!lhsOk || !rhsOk)
        diagnostics_.error(binary.range, quoted(spelling) + " needs 'bool' operands, got " +
                                             describe(lhsOk ? rhs : lhs));
      return known(binary, ScalarType::Bool);
    }
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge: {
      bool ordering = binary.op != BinaryOp::Eq && binary.op != BinaryOp::Ne;
      if (ordering && (lhs.is(ScalarType::Bool) || rhs.is(ScalarType::Bool))) {
        diagnostics_.error(binary.range, quoted(spelling) + " needs numeric operands, got 'bool'");
        settle(*binary.lhs, lhs);
        settle(*binary.rhs, rhs);
        return known(binary, ScalarType::Bool);
      }
      Ty type = unify(*binary.lhs, lhs, *binary.rhs, rhs, spelling);
      if (type.isFlexible())
        settleBoth(binary, type);
      return known(binary, ScalarType::Bool);
    }
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Rem:
      break;
    }
    if (lhs.is(ScalarType::Bool) || rhs.is(ScalarType::Bool)) {
      diagnostics_.error(binary.range, quoted(spelling) + " needs numeric operands, got 'bool'");
      return Ty::poison();
    }
    Ty type = unify(*binary.lhs, lhs, *binary.rhs, rhs, spelling);
    if (type.isPoison())
      return type;
    if (binary.op == BinaryOp::Rem &&
        (type.kind == Ty::Kind::FloatLiteral || (type.isKnown() && isFloat(type.scalar)))) {
      diagnostics_.error(binary.range, "'%' needs integer operands, got " + describe(type));
      return Ty::poison();
    }
    if (type.isKnown())
      binary.type = type.scalar;
    return type;
  }

  void settleBoth(BinaryExpr &binary, Ty type) {
    ScalarType scalar = type.kind == Ty::Kind::FloatLiteral ? ScalarType::F64 : ScalarType::I64;
    finalize(*binary.lhs, scalar);
    finalize(*binary.rhs, scalar);
  }

  Ty checkConditional(ConditionalExpr &conditional) {
    expectBool(*conditional.cond, "the condition of '?:'");
    Ty thenType = checkExpr(*conditional.thenExpr);
    Ty elseType = checkExpr(*conditional.elseExpr);
    Ty type = unify(*conditional.thenExpr, thenType, *conditional.elseExpr, elseType, "?:");
    if (type.isKnown())
      conditional.type = type.scalar;
    return type;
  }

  Ty checkRedomap(RedomapExpr &redomap) {
    Ty neutral = checkExpr(*redomap.neutral);
    pushScope();
    for (Range &range : redomap.ranges)
      checkRange(range);
    Ty body = checkExpr(*redomap.body);
    popScope();
    ReduceOp &op = redomap.op;
    if (op.kind == ReduceOp::Kind::User) {
      FnDecl *fn = findFn(op.userName);
      if (!fn) {
        diagnostics_.error(op.range, "unknown redomap operator " + quoted(op.userName) +
                                         "; use +, *, min, max, &&, || or an 'assoc fn'");
        settle(*redomap.neutral, neutral);
        settle(*redomap.body, body);
        return Ty::poison();
      }
      op.userFn = fn;
      recordFnCall(*fn, op.range);
      if (!fn->associative) {
        diagnostics_.error(op.range, "function " + quoted(fn->name) +
                                         " is not declared 'assoc', so it cannot be a "
                                         "redomap operator");
        diagnostics_.note(fn->nameRange, quoted(fn->name) + " is declared here");
      }
      ScalarType result = fn->result;
      if (!coerce(*redomap.neutral, neutral, result))
        diagnostics_.error(redomap.neutral->range,
                           "the neutral element of 'redomap(" + fn->name + ")' must be " +
                               quoted(scalarTypeName(result)) + ", got " + describe(neutral));
      if (!coerce(*redomap.body, body, result))
        diagnostics_.error(redomap.body->range, "the body of 'redomap(" + fn->name + ")' must be " +
                                                    quoted(scalarTypeName(result)) + ", got " +
                                                    describe(body) + conversionHint(result, body));
      return known(redomap, result);
    }
    std::string what = std::string("redomap(") + reduceOpSpelling(op) + ")";
    if (neutral.isKnown() && body.isKnown() && neutral.scalar != body.scalar) {
      diagnostics_.error(redomap.range, "the neutral element (" + describe(neutral) +
                                            ") and the body (" + describe(body) + ") of '" + what +
                                            "' must have one type");
      return Ty::poison();
    }
    Ty type = unify(*redomap.neutral, neutral, *redomap.body, body, what.c_str());
    if (type.isPoison())
      return type;
    bool logical = op.kind == ReduceOp::Kind::And || op.kind == ReduceOp::Kind::Or;
    if (logical) {
      if (!coerce(*redomap.neutral, type, ScalarType::Bool)) {
        diagnostics_.error(redomap.range,
                           "'" + what + "' combines 'bool' values, got " + describe(type));
        return Ty::poison();
      }
      return known(redomap, ScalarType::Bool);
    }
    if (type.is(ScalarType::Bool)) {
      diagnostics_.error(redomap.range, "'" + what + "' needs numeric values, got 'bool'");
      return Ty::poison();
    }
    if (type.isKnown())
      redomap.type = type.scalar;
    return type;
  }

  // ------------------------------------------------------ literal typing ---

  // The common type of two operands. A flexible side takes the other side's
  // type; two flexible sides stay flexible (float if either is).
  Ty unify(Expr &lhsExpr, Ty lhs, Expr &rhsExpr, Ty rhs, const char *what) {
    if (lhs.isPoison() || rhs.isPoison())
      return Ty::poison();
    if (lhs.isKnown() && rhs.isKnown()) {
      if (lhs.scalar == rhs.scalar)
        return lhs;
      diagnostics_.error(rhsExpr.range.valid() ? SourceRange{lhsExpr.range.begin, rhsExpr.range.end}
                                               : lhsExpr.range,
                         "type mismatch: " + describe(lhs) + " and " + describe(rhs) + " in " +
                             quoted(what) + "; convert explicitly, e.g. " +
                             scalarTypeName(lhs.scalar) + "(...)");
      return Ty::poison();
    }
    if (lhs.isKnown() || rhs.isKnown()) {
      Ty fixed = lhs.isKnown() ? lhs : rhs;
      Ty flexible = lhs.isKnown() ? rhs : lhs;
      Expr &flexibleExpr = lhs.isKnown() ? rhsExpr : lhsExpr;
      if (!coerce(flexibleExpr, flexible, fixed.scalar)) {
        diagnostics_.error(flexibleExpr.range, describe(flexible) + " cannot have type " +
                                                   describe(fixed) + " (in " + quoted(what) + ")");
        return Ty::poison();
      }
      return fixed;
    }
    if (lhs.kind == Ty::Kind::FloatLiteral || rhs.kind == Ty::Kind::FloatLiteral)
      return Ty::floatLiteral();
    return Ty::intLiteral();
  }

  // Gives `expr` (of type `type`) the type `wanted` if it can have it.
  // Returns false on a mismatch, which the caller reports; poison never
  // mismatches, so errors do not cascade.
  bool coerce(Expr &expr, Ty type, ScalarType wanted) {
    switch (type.kind) {
    case Ty::Kind::Poison:
      return true;
    case Ty::Kind::Known:
      return type.scalar == wanted;
    case Ty::Kind::IntLiteral:
      if (wanted == ScalarType::Bool)
        return false;
      finalize(expr, wanted);
      return true;
    case Ty::Kind::FloatLiteral:
      if (!isFloat(wanted))
        return false;
      finalize(expr, wanted);
      return true;
    }
    return false;
  }

  // Types an expression that has no context: flexible literals default to
  // i64 or f64. Returns the resulting type.
  ScalarType settle(Expr &expr, Ty type) {
    if (type.kind == Ty::Kind::IntLiteral) {
      finalize(expr, ScalarType::I64);
      return ScalarType::I64;
    }
    if (type.kind == Ty::Kind::FloatLiteral) {
      finalize(expr, ScalarType::F64);
      return ScalarType::F64;
    }
    return type.isKnown() ? type.scalar : ScalarType::I64;
  }

  // Pushes a type into a flexible expression: every node of a flexible tree
  // takes the same type (comparisons and casts settled their operands
  // already, so they are never part of one).
  void finalize(Expr &expr, ScalarType type, bool negated = false) {
    expr.type = type;
    switch (expr.kind) {
    case Expr::Kind::IntLit: {
      uint64_t value = expr.as<IntLitExpr>()->value;
      if (!fitsIn(value, negated, type))
        diagnostics_.error(expr.range, "integer literal " + std::string(negated ? "-" : "") +
                                           std::to_string(value) + " does not fit in " +
                                           quoted(scalarTypeName(type)));
      return;
    }
    case Expr::Kind::Unary: {
      auto *unary = expr.as<UnaryExpr>();
      return finalize(*unary->operand, type, unary->op == UnaryOp::Neg && !negated);
    }
    case Expr::Kind::Binary: {
      auto *binary = expr.as<BinaryExpr>();
      finalize(*binary->lhs, type);
      finalize(*binary->rhs, type);
      return;
    }
    case Expr::Kind::Conditional: {
      auto *conditional = expr.as<ConditionalExpr>();
      finalize(*conditional->thenExpr, type);
      finalize(*conditional->elseExpr, type);
      return;
    }
    case Expr::Kind::Call:
      // Only a builtin call can be flexible: its arguments have its type.
      if (expr.as<CallExpr>()->isBuiltin)
        for (auto &arg : expr.as<CallExpr>()->args)
          finalize(*arg, type);
      return;
    case Expr::Kind::Redomap: {
      auto *redomap = expr.as<RedomapExpr>();
      finalize(*redomap->neutral, type);
      finalize(*redomap->body, type);
      return;
    }
    case Expr::Kind::FloatLit:
    case Expr::Kind::BoolLit:
    case Expr::Kind::Name:
    case Expr::Kind::Index:
    case Expr::Kind::Cast:
      return;
    }
  }

  // ---------------------------------------------------------- recursion ---

  template <typename Decl>
  void reportCycles(const std::vector<Decl *> &roots,
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
            diagnostics_.error(range, "recursion is not allowed: " + path + "; " + what +
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

  void reportRecursion() {
    std::vector<FnDecl *> fns;
    std::vector<KernelDecl *> kernels;
    for (const auto &module : program_.modules) {
      for (const auto &fn : module->fns)
        fns.push_back(fn.get());
      for (const auto &kernel : module->kernels)
        kernels.push_back(kernel.get());
    }
    reportCycles(fns, fnCalls_, "functions");
    reportCycles(kernels, kernelCalls_, "kernels");
  }

  Program &program_;
  DiagnosticEngine &diagnostics_;
  std::unordered_map<std::string, SourceRange> globalRanges_;
  std::unordered_map<std::string, KernelDecl *> kernels_;
  std::unordered_map<std::string, FnDecl *> fns_;
  std::map<const KernelDecl *, std::unordered_map<std::string, VarDecl *>> kernelScopes_;
  std::map<const FnDecl *, std::unordered_map<std::string, VarDecl *>> fnScopes_;
  std::vector<std::unordered_map<std::string, VarDecl *>> scopes_;
  std::unordered_set<const VarDecl *> poisoned_;
  KernelDecl *currentKernel_ = nullptr;
  FnDecl *currentFn_ = nullptr;
  int parforDepth_ = 0;
  bool checkingSignature_ = false; // checking the extents of kernel parameters
  std::map<FnDecl *, std::vector<std::pair<FnDecl *, SourceRange>>> fnCalls_;
  std::map<KernelDecl *, std::vector<std::pair<KernelDecl *, SourceRange>>> kernelCalls_;
};

} // namespace

bool checkProgram(Program &program, DiagnosticEngine &diagnostics) {
  return Checker(program, diagnostics).run();
}

} // namespace loopc
