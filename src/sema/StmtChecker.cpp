// The checks of bodies and statements: block scopes, local declarations
// (with or without a type), assignments (targets, ranks, mutability,
// compound operators), ranges of for, parfor and redomap, conditions and
// returns, and that a function always returns. Statements give expressions
// their context; how an expression is typed is ExprChecker.cpp's concern,
// and a kernel call, the one statement that looks into another signature,
// is KernelCallChecker.cpp's.
#include "sema/Checker.h"
#include "support/Suggestions.h"

#include "sema/RaceCheck.h"

#include <algorithm>
#include <set>

namespace loopc::sema {
namespace {

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

} // namespace

std::string immutableReason(const VarDecl &var, bool advice) {
  switch (var.kind) {
  case VarDecl::Kind::Param:
    // Every array parameter but an 'in' one is writable.
    if (var.isArray())
      return "it is an 'in' parameter";
    return advice ? "it is a value parameter; declare it 'out' or 'inout' to return a result"
                  : "it is a value parameter";
  case VarDecl::Kind::Size:
    return advice ? "it is a size, bound from the arrays passed" : "it is a size";
  case VarDecl::Kind::Let:
    return advice ? "it is a 'let' variable; declare it with 'var' to change it"
                  : "it is a 'let' variable";
  case VarDecl::Kind::LoopVar:
    return "it is a loop variable";
  case VarDecl::Kind::Var:
    break;
  }
  return "it is immutable";
}

// A kernel's attributes, each at most once: `@fp_contract(on|off)`, and
// `@schedule(NAME=VALUE, ...)` (checkSchedule).
void Checker::checkAttributes(KernelDecl &kernel) {
  const std::vector<std::string> known = {"fp_contract", "schedule"};
  std::set<std::string> seen;
  for (const Attribute &attribute : kernel.attributes) {
    if (std::ranges::find(known, attribute.name) == known.end()) {
      std::string guess = closestName(attribute.name, known);
      diagnostics_.error(attribute.nameRange,
                         "unknown kernel attribute " + quoted("@" + attribute.name) +
                             (guess.empty() ? "" : "; did you mean " + quoted("@" + guess) + "?") +
                             " (the attributes: @fp_contract(on|off), "
                             "@schedule(NAME=VALUE, ...))");
      continue;
    }
    if (!seen.insert(attribute.name).second) {
      diagnostics_.error(attribute.range,
                         attribute.name == "fp_contract"
                             ? "kernel " + quoted(kernel.name) +
                                   " already says how its multiply-adds round"
                             : "kernel " + quoted(kernel.name) +
                                   " already has a schedule: give every choice in one "
                                   "@schedule(...)");
      continue;
    }
    if (attribute.name == "schedule") {
      checkSchedule(kernel, attribute);
      continue;
    }
    if (attribute.args.size() != 1 || attribute.args[0].value ||
        (attribute.args[0].name != "on" && attribute.args[0].name != "off")) {
      diagnostics_.error(attribute.args.empty() ? attribute.range : attribute.args[0].range,
                         "@fp_contract takes on (a * b + c as one fused multiply-add, the "
                         "default) or off (every product rounded before it is added)");
      continue;
    }
    kernel.fpContract = attribute.args[0].name == "off" ? FpContract::Off : FpContract::On;
    kernel.fpContractWritten = true;
  }
}

// `@schedule(NAME=VALUE, ...)`: one or more assignments, a name at most once
// (but `skip`, `stage` and `no_stage`, once per value; an array not both
// staged and not); the arrays named those of the kernel it may stage, and the
// other choices what the passes know (checkScheduleChoice_, where given).
void Checker::checkSchedule(KernelDecl &kernel, const Attribute &attribute) {
  if (attribute.args.empty()) {
    diagnostics_.error(attribute.range, "@schedule names at least one choice: a pass parameter "
                                        "(@schedule(register_tile=8)) or a pass to leave out "
                                        "(@schedule(skip=stage_shared))");
    return;
  }
  std::set<std::string> named;
  for (const AttributeArg &arg : attribute.args) {
    if (!arg.value) {
      diagnostics_.error(arg.range, "@schedule takes NAME=VALUE choices: " + quoted(arg.name) +
                                        " has no value (register_tile=8, skip=stage_shared)");
      continue;
    }
    ScheduleChoice choice{arg.name, *arg.value, arg.range, arg.valueRange};
    std::string key = choice.listsValues() ? choice.name + "=" + choice.value : choice.name;
    if (!named.insert(key).second) {
      diagnostics_.error(arg.range,
                         quoted(key) + " is given twice in the schedule of " + quoted(kernel.name));
      continue;
    }
    if (choice.namesArray() &&
        named.contains(std::string(choice.name == ScheduleChoice::kStage ? ScheduleChoice::kNoStage
                                                                         : ScheduleChoice::kStage) +
                       "=" + choice.value)) {
      diagnostics_.error(arg.range, "the schedule of " + quoted(kernel.name) +
                                        " both stages and does not stage " + quoted(choice.value));
      continue;
    }
    std::optional<ScheduleError> why = choice.namesArray()    ? stagedArrayError(kernel, choice)
                                       : checkScheduleChoice_ ? checkScheduleChoice_(choice)
                                                              : std::nullopt;
    if (why) {
      diagnostics_.error(why->atValue ? choice.valueSource : choice.source, why->message);
      continue;
    }
    kernel.schedule.push_back(std::move(choice));
  }
}

// Why `choice`, a `stage=` or `no_stage=` of `kernel`'s schedule, names no
// array the kernel may stage: only its `in` arrays are read and never
// written, so only they can be copied into shared memory.
std::optional<ScheduleError> Checker::stagedArrayError(const KernelDecl &kernel,
                                                       const ScheduleChoice &choice) {
  std::vector<std::string> inputs;
  const VarDecl *named = nullptr;
  for (const VarDeclPtr &param : kernel.params) {
    if (param->isArray() && param->intent == Intent::In)
      inputs.push_back(param->name);
    if (param->name == choice.value)
      named = param.get();
  }
  if (named && named->isArray() && named->intent == Intent::In)
    return std::nullopt;
  std::string list;
  for (const std::string &input : inputs)
    list += (list.empty() ? "" : ", ") + input;
  std::string what = !named ? quoted(choice.value) + " is no parameter of " + quoted(kernel.name)
                     : !named->isArray()
                         ? quoted(choice.value) + " is a scalar"
                         : quoted(choice.value) + " is written by " + quoted(kernel.name) + " (" +
                               intentName(named->intent) + ")";
  std::string guess = named ? "" : closestName(choice.value, inputs);
  return ScheduleError{
      what + (guess.empty() ? "" : "; did you mean " + quoted(guess) + "?") + ": " + choice.name +
          "= names an input array, read and never written" +
          (list.empty() ? " (kernel " + quoted(kernel.name) + " has none)" : " (" + list + ")"),
      true};
}

void Checker::checkKernel(KernelDecl &kernel) {
  unsigned errorsBefore = diagnostics_.errorCount();
  checkAttributes(kernel);
  currentKernel_ = &kernel;
  currentFn_ = nullptr;
  parforDepth_ = 0;
  scopes_.assign(1, kernelScopes_[&kernel]);
  checkBlock(*kernel.body);
  scopes_.clear();
  currentKernel_ = nullptr;
  // The race check needs every name resolved and every index typed.
  if (diagnostics_.errorCount() == errorsBefore)
    checkParforRaces(kernel, diagnostics_);
}

void Checker::checkFnBody(FnDecl &fn) {
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

void Checker::checkBlock(BlockStmt &block) {
  pushScope();
  for (auto &stmt : block.stmts)
    checkStmt(*stmt);
  popScope();
}

void Checker::checkStmt(Stmt &stmt) {
  switch (stmt.kind) {
  case Stmt::Kind::Block:
    return checkBlock(*stmt.as<BlockStmt>());
  case Stmt::Kind::Decl:
    return checkDecl(*stmt.as<DeclStmt>());
  case Stmt::Kind::Assign:
    return checkAssign(*stmt.as<AssignStmt>());
  case Stmt::Kind::Scan:
    return checkScan(*stmt.as<ScanStmt>());
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

void Checker::checkDecl(DeclStmt &decl) {
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
        diagnostics_.error(decl.init->range, "cannot initialize " + quoted(var.name) + " of type " +
                                                 quoted(scalarTypeName(var.type.element)) +
                                                 " with " + describe(type) +
                                                 conversionHint(var.type.element, type));
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

void Checker::checkExtent(Expr &extent) {
  Ty type = checkExpr(extent);
  if (type.isPoison())
    return;
  if (type.isKnown() && isInteger(type.scalar))
    return;
  if (!coerce(extent, type, ScalarType::I64))
    diagnostics_.error(extent.range, "an array extent must be an integer, got " + describe(type));
}

void Checker::checkAssign(AssignStmt &assign) {
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
  if (assign.op == AssignOp::Combine)
    return checkCombine(assign, *var, value);
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

// `combine(op) target = value`: the target holds values of the operator's
// type, and is an array element or a scalar result, which (unlike a local
// scalar) the iterations of a parfor share.
void Checker::checkCombine(AssignStmt &combine, const VarDecl &target, Ty value) {
  const std::string what =
      quoted("combine(" + std::string(reduceOpSpelling(combine.combineOp)) + ")");
  if (!target.isArray() && !target.isScalarOutput()) {
    diagnostics_.error(combine.targetRange,
                       what +
                           " combines into an array element or a scalar result parameter, "
                           "and " +
                           quoted(target.name) + " is a local scalar; use '+=' or a redomap");
    settle(*combine.value, value);
    return;
  }
  if (!checkOperatorOn(combine.combineOp, target, combine.targetRange, "combine")) {
    settle(*combine.value, value);
    return;
  }
  ScalarType element = target.type.element;
  if (!coerce(*combine.value, value, element)) {
    diagnostics_.error(combine.value->range, "cannot combine " + describe(value) + " into " +
                                                 quoted(target.name) + " of type " +
                                                 quoted(scalarTypeName(element)) +
                                                 conversionHint(element, value));
    diagnostics_.note(target.range, quoted(target.name) + " is declared here");
  }
}

bool Checker::checkOperatorOn(ReduceOp &op, const VarDecl &target, SourceRange targetRange,
                              const std::string &construct) {
  const std::string name = quoted(target.name);
  const ScalarType element = target.type.element;
  const std::string what = quoted(construct + "(" + std::string(reduceOpSpelling(op)) + ")");
  if (op.kind == ReduceOp::Kind::User) {
    FnDecl *fn = resolveUserOperator(op, construct);
    if (!fn)
      return false;
    if (fn->result != element) {
      diagnostics_.error(op.range, what + " combines " + quoted(scalarTypeName(fn->result)) +
                                       " values, but " + name + " holds " +
                                       quoted(scalarTypeName(element)));
      diagnostics_.note(fn->nameRange, quoted(fn->name) + " is declared here");
      return false;
    }
    return true;
  }
  bool logical = op.kind == ReduceOp::Kind::And || op.kind == ReduceOp::Kind::Or;
  if (logical != (element == ScalarType::Bool)) {
    diagnostics_.error(targetRange,
                       what + (logical ? " combines 'bool' values" : " needs numeric values") +
                           ", but " + name + " holds " + quoted(scalarTypeName(element)));
    return false;
  }
  return true;
}

// `scan(op, neutral, i in lo..hi) Y[k] = e`: `Y[k] = e` is checked as an
// assignment in the scope of i; the operator and the neutral element take
// Y's element type. The race check (RaceCheck.cpp) checks k and e.
void Checker::checkScan(ScanStmt &scan) {
  if (currentFn_)
    diagnostics_.error(scan.range, "'scan' is not allowed in a function");
  Ty neutral = checkExpr(*scan.neutral);
  if (scan.ranges.size() > 1) {
    // Parsed so the message can say what to write instead.
    diagnostics_.error(scan.ranges[1].range,
                       "a scan runs over one range: to scan each row, put the scan in a parfor "
                       "over the rows");
    settle(*scan.neutral, neutral);
    return;
  }
  pushScope();
  checkRange(scan.ranges.front());
  AssignStmt &write = *scan.write;
  checkAssign(write);
  popScope();
  const VarDecl *target = write.decl;
  if (!target || poisoned_.contains(target) || !target->isArray()) {
    if (target && !target->isArray())
      diagnostics_.error(write.targetRange, "'scan' writes an array element for each " +
                                                quoted(scan.ranges.front().var->name) + ", and " +
                                                quoted(target->name) + " is not an array");
    settle(*scan.neutral, neutral);
    return;
  }
  if (!checkOperatorOn(scan.op, *target, write.targetRange, "scan")) {
    settle(*scan.neutral, neutral);
    return;
  }
  ScalarType element = target->type.element;
  std::string what = "scan(" + std::string(reduceOpSpelling(scan.op)) + ")";
  if (!coerce(*scan.neutral, neutral, element))
    diagnostics_.error(scan.neutral->range, "the neutral element of " + quoted(what) + " must be " +
                                                quoted(scalarTypeName(element)) + ", got " +
                                                describe(neutral));
  else
    checkConstantNeutral(scan.op, *scan.neutral, "scan");
}

void Checker::reportImmutable(const VarDecl &var, SourceRange range) {
  // A function's parameters cannot be made results: copy one into a var.
  bool fnParameter = currentFn_ && var.kind == VarDecl::Kind::Param;
  diagnostics_.error(range, "cannot assign to " + quoted(var.name) + ": " +
                                (fnParameter ? "it is a parameter of a function; copy it into a "
                                               "'var' to change it"
                                             : immutableReason(var, /*advice=*/true)));
  diagnostics_.note(var.range, quoted(var.name) + " is declared here");
}

void Checker::reportRankMismatch(const VarDecl &var, size_t indexCount, SourceRange range) {
  diagnostics_.error(range, quoted(var.name) + " has rank " + std::to_string(var.type.rank()) +
                                " but is indexed with " + std::to_string(indexCount) +
                                (indexCount == 1 ? " index" : " indices"));
}

// Checks a range and declares its variable in the current scope.
void Checker::checkRange(Range &range) {
  Ty lo = checkExpr(*range.lo);
  Ty hi = checkExpr(*range.hi);
  Ty step = range.step ? checkExpr(*range.step) : Ty::known(ScalarType::I64);
  Ty type = unify(*range.lo, lo, *range.hi, hi, "..");
  if (range.step) {
    type = unify(*range.lo, type, *range.step, step, "by");
    const auto *negated = range.step->as<UnaryExpr>();
    const auto *literal = range.step->as<IntLitExpr>();
    if ((literal && literal->value == 0) ||
        (negated && negated->op == UnaryOp::Neg && negated->operand->as<IntLitExpr>()))
      diagnostics_.error(range.step->range, "the step of a range must be positive");
  }
  ScalarType varType = ScalarType::I64;
  if (type.isPoison()) {
    poisoned_.insert(range.var.get());
  } else if (type.cannotBeInteger()) {
    // At the part that is not an integer, when one is (`by 2.0`).
    if (range.step && step.cannotBeInteger())
      diagnostics_.error(range.step->range,
                         "the step of a range must be an integer, got " + describe(step));
    else if (lo.cannotBeInteger() || hi.cannotBeInteger())
      diagnostics_.error(lo.cannotBeInteger() ? range.lo->range : range.hi->range,
                         "the bounds of a range must be integers, got " +
                             describe(lo.cannotBeInteger() ? lo : hi));
    else
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

void Checker::checkFor(ForStmt &loop) {
  pushScope();
  checkRange(loop.range);
  checkBlock(*loop.body);
  popScope();
}

void Checker::checkParfor(ParforStmt &parfor) {
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

void Checker::checkIf(IfStmt &ifStmt) {
  expectBool(*ifStmt.cond, "the condition of 'if'");
  checkBlock(*ifStmt.thenBody);
  if (ifStmt.elseBody)
    checkStmt(*ifStmt.elseBody);
}

void Checker::expectBool(Expr &expr, const std::string &what) {
  Ty type = checkExpr(expr);
  if (!coerce(expr, type, ScalarType::Bool))
    diagnostics_.error(expr.range, what + " must be 'bool', got " + describe(type));
}

void Checker::checkReturn(ReturnStmt &ret) {
  Ty type = checkExpr(*ret.value);
  if (!currentFn_) {
    diagnostics_.error(ret.range, "'return' is only allowed in a function; kernels return "
                                  "results through 'out' parameters");
    settle(*ret.value, type);
    return;
  }
  if (!coerce(*ret.value, type, currentFn_->result))
    diagnostics_.error(ret.value->range, "function " + quoted(currentFn_->name) + " returns " +
                                             quoted(scalarTypeName(currentFn_->result)) + ", not " +
                                             describe(type) +
                                             conversionHint(currentFn_->result, type));
}

} // namespace loopc::sema
