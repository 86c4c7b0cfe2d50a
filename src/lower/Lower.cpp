// Lowering of a checked kernel to one Loop IR Function (Lower.h).
//
// The AST is walked once, in program order. Declarations are bound to what
// they denote in the IR: an immutable value (a Var or a constant) or a buffer
// (array parameters, local arrays, and rank-0 cells for mutable scalars).
// Expressions may need statements before them (an inlined `fn` body, a
// redomap's Reduce, a conditional whose branches need such statements); those
// go into a StmtEmitter, which wraps LetStmt and Allocate around whatever is
// emitted after them, so a value is always read inside the scope of the
// bindings it uses.
#include "lower/Lower.h"

#include "ir/IRVisitor.h"

#include <algorithm>
#include <cassert>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

namespace loopc::ir {

namespace {

// A list of statements under construction, where a LetStmt or an Allocate
// scopes over everything emitted after it.
class StmtEmitter {
public:
  void stmt(Stmt stmt) {
    if (stmt)
      entries_.push_back({std::move(stmt), {}, nullptr, nullptr});
  }
  void let(std::string var, Expr value) {
    entries_.push_back({nullptr, std::move(var), std::move(value), nullptr});
  }
  void allocate(Buffer buffer) { entries_.push_back({nullptr, {}, nullptr, std::move(buffer)}); }
  bool empty() const { return entries_.empty(); }

  // Every Let entry, when the emitter holds nothing else.
  bool onlyLets() const {
    for (const Entry &entry : entries_)
      if (entry.stmt || entry.buffer)
        return false;
    return true;
  }
  // Substitutes the let bindings into `value` (for emitters holding only lets).
  Expr inlineLets(Expr value) const {
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it)
      value = substitute(value, {{it->var, it->value}});
    return value;
  }

  // The statements, with `tail` (may be null) innermost at the end.
  Stmt finish(Stmt tail = nullptr) const {
    std::vector<Stmt> pending;
    if (tail)
      pending.push_back(std::move(tail));
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      if (it->stmt) {
        pending.insert(pending.begin(), it->stmt);
        continue;
      }
      Stmt body = makeBlock(std::move(pending));
      pending.clear();
      if (it->buffer)
        pending.push_back(std::make_shared<Allocate>(it->buffer, std::move(body)));
      else
        pending.push_back(std::make_shared<LetStmt>(it->var, it->value, std::move(body)));
    }
    return makeBlock(std::move(pending));
  }

private:
  struct Entry {
    Stmt stmt;
    std::string var;
    Expr value;
    Buffer buffer;
  };
  std::vector<Entry> entries_;
};

// What a declaration denotes in the IR: exactly one of the two is set.
struct Binding {
  Expr value;
  Buffer buffer;
};

// The state of the innermost `fn` being inlined that returns from somewhere
// other than its end: the result cell and the flag set by `return`.
struct ReturnTarget {
  Buffer result;
  Buffer done;
};

bool containsReturn(const loopc::Stmt &stmt) {
  switch (stmt.kind) {
  case loopc::Stmt::Kind::Return:
    return true;
  case loopc::Stmt::Kind::Block:
    for (const StmtPtr &child : stmt.as<BlockStmt>()->stmts)
      if (containsReturn(*child))
        return true;
    return false;
  case loopc::Stmt::Kind::If: {
    const auto &branch = *stmt.as<IfStmt>();
    return containsReturn(*branch.thenBody) ||
           (branch.elseBody && containsReturn(*branch.elseBody));
  }
  case loopc::Stmt::Kind::For:
    return containsReturn(*stmt.as<ForStmt>()->body);
  case loopc::Stmt::Kind::Parfor:
    return containsReturn(*stmt.as<ParforStmt>()->body);
  default:
    return false;
  }
}

// The source of the `unsafe` kernels and `unsafe { }` blocks `stmt` holds
// or runs (through the kernels it calls), into `regions`.
void collectUncheckedRegions(const loopc::Stmt &stmt, std::vector<SourceRange> &regions,
                             std::set<const KernelDecl *> &visited) {
  switch (stmt.kind) {
  case loopc::Stmt::Kind::Block: {
    const auto &block = *stmt.as<BlockStmt>();
    if (block.isUnsafe)
      regions.push_back(block.range);
    for (const StmtPtr &child : block.stmts)
      collectUncheckedRegions(*child, regions, visited);
    return;
  }
  case loopc::Stmt::Kind::If: {
    const auto &branch = *stmt.as<IfStmt>();
    collectUncheckedRegions(*branch.thenBody, regions, visited);
    if (branch.elseBody)
      collectUncheckedRegions(*branch.elseBody, regions, visited);
    return;
  }
  case loopc::Stmt::Kind::For:
    return collectUncheckedRegions(*stmt.as<ForStmt>()->body, regions, visited);
  case loopc::Stmt::Kind::Parfor:
    return collectUncheckedRegions(*stmt.as<ParforStmt>()->body, regions, visited);
  case loopc::Stmt::Kind::Call: {
    const KernelDecl *callee = stmt.as<CallStmt>()->kernel;
    if (!callee || !visited.insert(callee).second)
      return;
    if (callee->isUnsafe)
      regions.push_back(callee->body->range);
    collectUncheckedRegions(*callee->body, regions, visited);
    return;
  }
  default:
    return;
  }
}

// True when evaluating `expr` cannot fault, so both sides of `&&`/`||` may be
// evaluated (no loads, no integer division, no calls).
bool cannotFault(const Expr &expr) {
  class Finder : public IRVisitor {
  public:
    bool risky = false;

  protected:
    void visitLoad(const Load &) override { risky = true; }
    void visitCall(const Call &) override { risky = true; }
    void visitBinary(const Binary &node) override {
      if ((node.op == BinaryOpKind::Div || node.op == BinaryOpKind::Rem) &&
          isInteger(node.lhs->type))
        risky = true;
      IRVisitor::visitBinary(node);
    }
  } finder;
  finder.visit(expr);
  return !finder.risky;
}

// Whether `expr` reads memory (a var, a result scalar, an array element),
// which later statements may change.
bool readsMemory(const Expr &expr) { return !loadsIn(expr).empty(); }

// Whether a local array of constant extents is known to be within
// kMaxLocalArrayBytes (then no run-time check is needed).
bool fitsLocalArrayLimit(const BufferInfo &buffer) {
  uint64_t bytes = scalarSize(buffer.element);
  for (const Expr &extent : buffer.shape) {
    const auto *constant = extent->as<IntImm>();
    if (!constant || constant->value < 0 ||
        __builtin_mul_overflow(bytes, static_cast<uint64_t>(constant->value), &bytes))
      return false;
  }
  return bytes <= kMaxLocalArrayBytes;
}

bool isTrivial(const Expr &expr) {
  return expr->as<Var>() || expr->as<IntImm>() || expr->as<FloatImm>() || expr->as<BoolImm>();
}

BinaryOpKind binaryOpKind(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add:
    return BinaryOpKind::Add;
  case BinaryOp::Sub:
    return BinaryOpKind::Sub;
  case BinaryOp::Mul:
    return BinaryOpKind::Mul;
  case BinaryOp::Div:
    return BinaryOpKind::Div;
  case BinaryOp::Rem:
    return BinaryOpKind::Rem;
  case BinaryOp::Lt:
    return BinaryOpKind::Lt;
  case BinaryOp::Le:
    return BinaryOpKind::Le;
  case BinaryOp::Gt:
    return BinaryOpKind::Gt;
  case BinaryOp::Ge:
    return BinaryOpKind::Ge;
  case BinaryOp::Eq:
    return BinaryOpKind::Eq;
  case BinaryOp::Ne:
    return BinaryOpKind::Ne;
  case BinaryOp::And:
    return BinaryOpKind::And;
  case BinaryOp::Or:
    return BinaryOpKind::Or;
  }
  return BinaryOpKind::Add;
}

std::optional<BinaryOpKind> compoundOpKind(AssignOp op) {
  switch (op) {
  case AssignOp::Assign:
  case AssignOp::Combine:
    return std::nullopt;
  case AssignOp::Add:
    return BinaryOpKind::Add;
  case AssignOp::Sub:
    return BinaryOpKind::Sub;
  case AssignOp::Mul:
    return BinaryOpKind::Mul;
  case AssignOp::Div:
    return BinaryOpKind::Div;
  case AssignOp::Rem:
    return BinaryOpKind::Rem;
  }
  return std::nullopt;
}

class Lowerer {
public:
  Function lower(const KernelDecl &kernel) {
    Function function;
    function.name = kernel.name;
    fpContract_ = kernel.fpContract;
    function.source = kernel.range;
    function.schedule = kernel.schedule;
    std::set<const KernelDecl *> visited{&kernel};
    if (kernel.isUnsafe)
      function.uncheckedRegions.push_back(kernel.body->range);
    collectUncheckedRegions(*kernel.body, function.uncheckedRegions, visited);
    // Sizes and scalar parameters first: array shapes are expressions of them.
    for (const VarDeclPtr &param : kernel.params) {
      if (param->isArray() || param->isScalarOutput())
        continue;
      std::string name = claimName(param->name);
      function.scalars.push_back({name, param->type.element});
      bindings_[param.get()] = {makeVar(param->type.element, name), nullptr};
    }
    for (const VarDeclPtr &size : kernel.sizes) {
      std::string name = claimName(size->name);
      function.scalars.push_back({name, ScalarType::I64});
      bindings_[size.get()] = {makeVar(ScalarType::I64, name), nullptr};
    }
    StmtEmitter shapeSetup;
    for (const VarDeclPtr &param : kernel.params) {
      if (!param->isArray() && !param->isScalarOutput())
        continue;
      auto buffer = std::make_shared<BufferInfo>();
      buffer->name = claimName(param->name);
      buffer->element = param->type.element;
      for (const ExprPtr &extent : param->type.dims)
        buffer->shape.push_back(toI64(lowerExpr(*extent, shapeSetup)));
      buffer->isParameter = true;
      buffer->isWritten = param->intent == Intent::Out || param->intent == Intent::InOut;
      buffer->declared = param->range;
      function.buffers.push_back(buffer);
      bindings_[param.get()] = {nullptr, buffer};
    }
    assert(shapeSetup.empty() && "parameter extents are plain expressions of sizes");
    StmtEmitter body;
    lowerStmts(kernel.body->stmts, body);
    function.body = body.finish();
    function.arrayNamesAt = std::move(arrayNamesAt_);
    function.programNames = std::move(programNames_);
    return function;
  }

private:
  // ---------------------------------------------------------------- names ---

  std::string claimName(const std::string &base) {
    std::string name = base;
    for (int suffix = 2; usedNames_.contains(name); ++suffix)
      name = base + "_" + std::to_string(suffix);
    usedNames_.insert(name);
    if (name != base)
      programNames_[name] = base;
    return name;
  }

  // The buffer `decl` denotes, accessed at `access`; the program's name for
  // it there is noted when messages would otherwise say another (a called
  // kernel's parameter bound to the caller's array).
  Buffer accessedBuffer(const VarDecl &decl, SourceRange access) {
    const Buffer &buffer = bindings_.at(&decl).buffer;
    assert(buffer && "accesses are of buffers");
    if (decl.name != buffer->nameInMessages())
      arrayNamesAt_[access.begin] = decl.name;
    return buffer;
  }

  Buffer makeCell(const std::string &base, ScalarType type, MemorySpace memory,
                  SourceRange declared = {}) {
    auto cell = std::make_shared<BufferInfo>();
    cell->name = claimName(base);
    cell->element = type;
    cell->memory = memory;
    cell->declared = declared;
    return cell;
  }

  // Register inside anything run per iteration of a parallel construct;
  // Global at kernel level, where several kernels may share it.
  MemorySpace localMemory() const {
    return perIterationDepth_ > 0 ? MemorySpace::Register : MemorySpace::Global;
  }

  Stmt makeStore(const Buffer &buffer, std::vector<Expr> indices, Expr value,
                 SourceRange source = {}) {
    buffer->isWritten = true;
    return std::make_shared<Store>(buffer, std::move(indices), std::move(value), source);
  }

  // Evaluates `value` once: trivial values are used as they are, others bound
  // by a LetStmt.
  Expr bindOnce(const std::string &base, Expr value, StmtEmitter &out) {
    if (isTrivial(value))
      return value;
    std::string name = claimName(base);
    ScalarType type = value->type;
    out.let(name, std::move(value));
    return makeVar(type, name);
  }

  // ----------------------------------------------------------- statements ---

  void lowerStmts(const std::vector<StmtPtr> &stmts, StmtEmitter &out, size_t first = 0) {
    for (size_t i = first; i < stmts.size(); ++i) {
      lowerStmt(*stmts[i], out);
      // After a statement that may return, the rest runs only if it did not.
      if (returnTarget_ && i + 1 < stmts.size() && containsReturn(*stmts[i])) {
        StmtEmitter rest;
        lowerStmts(stmts, rest, i + 1);
        out.stmt(std::make_shared<IfThenElse>(notDone(), rest.finish()));
        return;
      }
    }
  }

  Expr notDone() {
    return std::make_shared<Unary>(
        UnaryOpKind::Not, std::make_shared<Load>(returnTarget_->done, std::vector<Expr>{}));
  }

  Stmt lowerBody(const BlockStmt &block) {
    StmtEmitter out;
    lowerStmts(block.stmts, out);
    Stmt body = out.finish();
    // A loop body that may return must not run again once it has.
    if (returnTarget_ && containsReturn(block))
      body = std::make_shared<IfThenElse>(notDone(), body);
    return body;
  }

  void lowerStmt(const loopc::Stmt &stmt, StmtEmitter &out) {
    switch (stmt.kind) {
    case loopc::Stmt::Kind::Decl:
      return lowerDecl(*stmt.as<DeclStmt>(), out);
    case loopc::Stmt::Kind::Assign:
      return lowerAssign(*stmt.as<AssignStmt>(), out);
    case loopc::Stmt::Kind::Scan:
      return lowerScan(*stmt.as<ScanStmt>(), out);
    case loopc::Stmt::Kind::For:
      return lowerFor(*stmt.as<ForStmt>(), out);
    case loopc::Stmt::Kind::Parfor:
      return lowerParfor(*stmt.as<ParforStmt>(), out);
    case loopc::Stmt::Kind::If:
      return lowerIf(*stmt.as<IfStmt>(), out);
    case loopc::Stmt::Kind::Return:
      return lowerReturn(*stmt.as<ReturnStmt>(), out);
    case loopc::Stmt::Kind::Call:
      return lowerKernelCall(*stmt.as<CallStmt>(), out);
    case loopc::Stmt::Kind::Block: {
      StmtEmitter inner;
      lowerStmts(stmt.as<BlockStmt>()->stmts, inner);
      out.stmt(inner.finish());
      return;
    }
    }
  }

  // A local array's memory space and extents, with the run-time checks on
  // them: each extent not negative, the whole within kMaxLocalArrayBytes.
  void lowerLocalArrayShape(const VarDecl &var, BufferInfo &buffer, StmtEmitter &out) {
    buffer.memory = localMemory();
    for (const ExprPtr &extent : var.type.dims) {
      // The extent is the value at the declaration: one read from a `var`
      // assigned later is kept in a let (the shape is read again by every
      // index and by the storage's size).
      Expr value = toI64(lowerExpr(*extent, out));
      if (readsMemory(value)) {
        std::string name = claimName(var.name + ".extent" + std::to_string(buffer.shape.size()));
        out.let(name, std::move(value));
        value = makeVar(ScalarType::I64, name);
      }
      buffer.shape.push_back(std::move(value));
      if (!isNonNegative(*extent))
        out.stmt(std::make_shared<Check>(
            greaterOrEqual(buffer.shape.back(), makeInt(ScalarType::I64, 0)),
            "extent {0} of local array '" + var.name + "' is negative",
            std::vector<Expr>{buffer.shape.back()}, extent->range));
    }
    if (fitsLocalArrayLimit(buffer))
      return;
    // The interpreter's limit on one local array (per iteration when it is
    // private), the same on every engine; in f64, exact at this threshold and
    // free of the i64 product's wrapping (2^62 x 4 elements is 0).
    Expr bytes = makeInt(ScalarType::F64, static_cast<int64_t>(scalarSize(var.type.element)));
    for (const Expr &extent : buffer.shape)
      bytes = mul(bytes, castTo(ScalarType::F64, extent));
    out.stmt(std::make_shared<Check>(
        lessOrEqual(bytes, makeInt(ScalarType::F64, static_cast<int64_t>(kMaxLocalArrayBytes))),
        "local array '" + var.name + "' is too large to allocate", std::vector<Expr>{}, var.range));
  }

  void lowerDecl(const DeclStmt &decl, StmtEmitter &out) {
    const VarDecl &var = *decl.var;
    if (var.kind == VarDecl::Kind::Let) {
      Expr value = lowerExpr(*decl.init, out);
      if (isTrivial(value) && !value->as<Var>()) {
        bindings_[&var] = {value, nullptr};
        return;
      }
      std::string name = claimName(var.name);
      ScalarType type = value->type;
      out.let(name, std::move(value));
      bindings_[&var] = {makeVar(type, name), nullptr};
      return;
    }
    auto buffer = makeCell(var.name, var.type.element, MemorySpace::Register, var.range);
    // Renamed when a called kernel's local takes a name in use; messages
    // keep the program's.
    if (buffer->name != var.name)
      buffer->programName = var.name;
    if (var.isArray())
      lowerLocalArrayShape(var, *buffer, out);
    Expr init = decl.init ? lowerExpr(*decl.init, out) : nullptr;
    out.allocate(buffer);
    if (init)
      out.stmt(makeStore(buffer, {}, std::move(init), decl.range));
    bindings_[&var] = {nullptr, buffer};
  }

  void lowerAssign(const AssignStmt &assign, StmtEmitter &out) {
    Buffer buffer = accessedBuffer(*assign.decl, assign.targetRange);
    std::vector<Expr> indices;
    for (const ExprPtr &index : assign.indices)
      indices.push_back(lowerExpr(*index, out));
    Expr value = lowerExpr(*assign.value, out);
    if (assign.op == AssignOp::Combine) {
      ReduceOperator op = lowerReduceOp(assign.combineOp, buffer->element);
      // Inside a parfor, other iterations may combine into the same element
      // at once, unless the buffer is private to this one.
      if (perIterationDepth_ > 0 && buffer->memory != MemorySpace::Register) {
        buffer->isWritten = true;
        // Located at its target, as the interpreter reports a bad index.
        out.stmt(std::make_shared<AtomicUpdate>(buffer, std::move(indices), std::move(op),
                                                std::move(value), assign.targetRange));
        return;
      }
      for (Expr &index : indices)
        index = bindOnce("index", index, out);
      value = applyOperator(op, std::make_shared<Load>(buffer, indices, assign.targetRange), value);
    } else if (auto op = compoundOpKind(assign.op)) {
      for (Expr &index : indices)
        index = bindOnce("index", index, out);
      value = makeBinary(*op, std::make_shared<Load>(buffer, indices, assign.targetRange), value,
                         assign.range);
    }
    out.stmt(makeStore(buffer, std::move(indices), std::move(value), assign.targetRange));
  }

  // Whether an extent is non-negative whatever the run binds: built from
  // literals and sizes (which are extents of arrays) by + * / max.
  static bool isNonNegative(const loopc::Expr &extent) {
    if (extent.as<IntLitExpr>())
      return true;
    if (const auto *name = extent.as<NameExpr>())
      return name->decl && name->decl->kind == VarDecl::Kind::Size;
    if (const auto *binary = extent.as<BinaryExpr>())
      return (binary->op == BinaryOp::Add || binary->op == BinaryOp::Mul ||
              binary->op == BinaryOp::Div) &&
             isNonNegative(*binary->lhs) && isNonNegative(*binary->rhs);
    if (const auto *call = extent.as<CallExpr>())
      return call->isBuiltin && call->builtin == Builtin::Max &&
             std::any_of(call->args.begin(), call->args.end(),
                         [](const ExprPtr &arg) { return isNonNegative(*arg); });
    return false;
  }

  // A range `v in lo..hi by s` as a normalized loop [min, min + extent): with
  // no step the loop variable is v itself; with a step the loop counts
  // iterations t and `v = lo + s * t` is bound inside (returned as `stepLet`).
  struct NormalizedRange {
    std::string loopVar;
    Expr min, extent;
    std::optional<std::pair<std::string, Expr>> stepLet;
  };

  // `bindBounds` evaluates the bounds once into lets before the loop; parfor
  // and redomap ranges keep them as expressions so their loops stay
  // perfectly nested.
  NormalizedRange normalizeRange(const Range &range, StmtEmitter &out, bool bindBounds) {
    ScalarType type = range.var->type.element;
    Expr lo = lowerExpr(*range.lo, out);
    Expr hi = lowerExpr(*range.hi, out);
    std::string name = claimName(range.var->name);
    bindings_[range.var.get()] = {makeVar(type, name), nullptr};
    NormalizedRange result;
    auto once = [&](const std::string &base, Expr value) {
      return bindBounds ? bindOnce(base, std::move(value), out) : value;
    };
    loopVarValues_[range.var.get()] = valuesOfLoopVar(range);
    if (!range.step) {
      lo = once(name + ".min", lo);
      result.loopVar = name;
      result.min = lo;
      const auto *zero = lo->as<IntImm>();
      if (zero && zero->value == 0) {
        result.extent = hi;
      } else if (spanFits(range)) {
        result.extent = sub(hi, lo);
      } else {
        // `hi - lo` may leave the type: wrapped, an empty range far below
        // its start (`100..-2147483600`) would have a positive count. Its
        // count is `max(hi, lo) - lo`, exact where the count fits the type;
        // an i32 range whose count does not is an error, as in the
        // interpreter (an i64 one would not end).
        if (type == ScalarType::I32) {
          auto wide = [](Expr value) { return std::make_shared<Cast>(ScalarType::I64, value); };
          out.stmt(std::make_shared<Check>(
              lessOrEqual(sub(wide(hi), wide(lo)),
                          makeInt(ScalarType::I64, std::numeric_limits<int32_t>::max())),
              "the range {0}..{1} has more iterations than an i32 range may have (2^31 - 1): use "
              "i64 bounds",
              std::vector<Expr>{lo, hi}, range.range));
        }
        result.extent = sub(maxOf(hi, lo), lo);
      }
      return result;
    }
    Expr step = once(name + ".step", lowerExpr(*range.step, out));
    // A step that is not positive at run time (sema refuses constant ones)
    // fails the run at the step; the loop then runs as with a step of 1.
    if (!step->as<IntImm>()) {
      out.stmt(std::make_shared<Check>(greaterThan(step, makeInt(type, 0)),
                                       "the step of a range must be positive, but it is {0}",
                                       std::vector<Expr>{step}, range.step->range));
      step = maxOf(step, makeInt(type, 1));
    }
    lo = once(name + ".min", lo);
    // The trip count and the iteration's value are computed in i64: in i32,
    // the span overflows for ranges spanning more than half the type
    // (`-2147483647..2147483647 by 1073741824` has four iterations). The
    // count is span / step, plus one for a partial step (the remainder, at
    // most 1; not positive for an empty range): `(span + step - 1) / step`
    // would overflow for a step near INT64_MAX.
    ScalarType wide = ScalarType::I64;
    auto widen = [&](Expr value) {
      return type == wide ? value : std::make_shared<Cast>(wide, std::move(value));
    };
    Expr wideStep = widen(step), wideLo = widen(lo);
    result.loopVar = claimName(name + ".t");
    result.min = makeInt(wide, 0);
    if (type == wide) {
      result.extent = steppedTripCount(lo, once(name + ".max", hi), step);
    } else {
      Expr span = sub(widen(hi), wideLo);
      result.extent = add(div(span, wideStep), minOf(rem(span, wideStep), makeInt(wide, 1)));
    }
    // The product wraps past i64 only where the sum is back in range
    // (integer arithmetic wraps on every engine).
    Expr value = add(wideLo, mul(wideStep, makeVar(wide, result.loopVar)));
    result.stepLet = {name, type == wide ? value : std::make_shared<Cast>(type, value)};
    return result;
  }

  // The values an integer expression may take, as far as the lowering
  // knows before running: literals, sizes (extents, never negative),
  // variables of the ranges around, and + - * / % min max abs and casts of
  // these; any other value, and one whose arithmetic may leave its type (and
  // wrap), may be any value of its type. 128 bits hold every product of two
  // 64-bit bounds.
  struct Values {
    __int128 min, max;
  };

  static Values valuesOfType(ScalarType type) {
    if (type == ScalarType::I32)
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }

  Values valuesOf(const loopc::Expr &expr) const {
    Values whole = valuesOfType(expr.type);
    if (!isInteger(expr.type))
      return whole;
    Values values = operationValues(expr);
    return values.min < whole.min || values.max > whole.max ? whole : values;
  }

  Values operationValues(const loopc::Expr &expr) const {
    Values whole = valuesOfType(expr.type);
    if (const auto *literal = expr.as<IntLitExpr>())
      return {literal->value, literal->value};
    if (const auto *name = expr.as<NameExpr>()) {
      if (name->decl && name->decl->kind == VarDecl::Kind::Size)
        return {0, std::numeric_limits<int64_t>::max()};
      auto loopVar = loopVarValues_.find(name->decl);
      return loopVar != loopVarValues_.end() ? loopVar->second : whole;
    }
    if (const auto *unary = expr.as<UnaryExpr>()) {
      if (unary->op != UnaryOp::Neg)
        return whole;
      Values operand = valuesOf(*unary->operand);
      return {-operand.max, -operand.min};
    }
    if (const auto *cast = expr.as<CastExpr>())
      return isInteger(cast->operand->type) ? valuesOf(*cast->operand) : whole;
    if (const auto *conditional = expr.as<ConditionalExpr>()) {
      Values a = valuesOf(*conditional->thenExpr), b = valuesOf(*conditional->elseExpr);
      return {std::min(a.min, b.min), std::max(a.max, b.max)};
    }
    if (const auto *call = expr.as<CallExpr>()) {
      if (!call->isBuiltin)
        return whole;
      if ((call->builtin == Builtin::Min || call->builtin == Builtin::Max) &&
          call->args.size() == 2) {
        Values a = valuesOf(*call->args[0]), b = valuesOf(*call->args[1]);
        if (call->builtin == Builtin::Min)
          return {std::min(a.min, b.min), std::min(a.max, b.max)};
        return {std::max(a.min, b.min), std::max(a.max, b.max)};
      }
      if (call->builtin == Builtin::Abs && call->args.size() == 1) {
        Values a = valuesOf(*call->args[0]);
        __int128 largest = std::max(a.max < 0 ? -a.max : a.max, a.min < 0 ? -a.min : a.min);
        return {a.min >= 0 ? a.min : a.max <= 0 ? -a.max : 0, largest};
      }
      return whole;
    }
    const auto *binary = expr.as<BinaryExpr>();
    if (!binary)
      return whole;
    Values a = valuesOf(*binary->lhs), b = valuesOf(*binary->rhs);
    switch (binary->op) {
    case BinaryOp::Add:
      return {a.min + b.min, a.max + b.max};
    case BinaryOp::Sub:
      return {a.min - b.max, a.max - b.min};
    case BinaryOp::Mul: {
      __int128 products[] = {a.min * b.min, a.min * b.max, a.max * b.min, a.max * b.max};
      return {*std::min_element(std::begin(products), std::end(products)),
              *std::max_element(std::begin(products), std::end(products))};
    }
    case BinaryOp::Div:
      // By a constant: truncation keeps the order (reversed for a negative
      // divisor).
      if (b.min != b.max || b.min == 0)
        return whole;
      return b.min > 0 ? Values{a.min / b.min, a.max / b.min}
                       : Values{a.max / b.min, a.min / b.min};
    case BinaryOp::Rem: {
      // Smaller in magnitude than the divisor, with the dividend's sign.
      __int128 divisor = std::max(b.max < 0 ? -b.max : b.max, b.min < 0 ? -b.min : b.min);
      if (divisor == 0)
        return whole;
      return {a.min >= 0 ? 0 : -(divisor - 1), a.max <= 0 ? 0 : divisor - 1};
    }
    default:
      return whole;
    }
  }

  // Whether `hi - lo` of an unstepped range is in its type for every value
  // the bounds may take.
  bool spanFits(const Range &range) const {
    Values lo = valuesOf(*range.lo), hi = valuesOf(*range.hi);
    Values whole = valuesOfType(range.var->type.element);
    return hi.min - lo.max >= whole.min && hi.max - lo.min <= whole.max;
  }

  // A range's variable takes values from lo up to below hi.
  Values valuesOfLoopVar(const Range &range) const {
    Values lo = valuesOf(*range.lo), hi = valuesOf(*range.hi);
    return {lo.min, std::max(lo.min, hi.max - 1)};
  }

  // The iterations of `lo..hi by step` in i64, step > 0, where the span
  // `hi - lo` may not fit (`-6e18..6e18 by 5e18` runs 3 times): with
  // lo = a * step + ra and hi = b * step + rb (floor division, remainders in
  // [0, step)), the count is b - a, plus one when rb > ra; it overflows only
  // where the count itself does not fit (step 1 over more than 2^63).
  static Expr steppedTripCount(const Expr &lo, const Expr &hi, const Expr &step) {
    ScalarType type = ScalarType::I64;
    auto one = [&] { return makeInt(type, 1); };
    auto zero = [&] { return makeInt(type, 0); };
    auto isNegative = [&](const Expr &remainder) { return lessThan(remainder, zero()); };
    auto floorQuotient = [&](const Expr &x) {
      Expr remainder = rem(x, step);
      return sub(div(x, step), select(isNegative(remainder), one(), zero()));
    };
    auto floorRemainder = [&](const Expr &x) {
      Expr remainder = rem(x, step);
      return add(remainder, select(isNegative(remainder), step, zero()));
    };
    Expr partial = select(greaterThan(floorRemainder(hi), floorRemainder(lo)), one(), zero());
    return add(sub(floorQuotient(hi), floorQuotient(lo)), partial);
  }

  static Stmt wrapStepLet(const NormalizedRange &range, Stmt body) {
    if (!range.stepLet)
      return body;
    return std::make_shared<LetStmt>(range.stepLet->first, range.stepLet->second, body);
  }

  void lowerFor(const ForStmt &loop, StmtEmitter &out) {
    NormalizedRange range = normalizeRange(loop.range, out, true);
    Stmt body = wrapStepLet(range, lowerBody(*loop.body));
    out.stmt(std::make_shared<For>(range.loopVar, range.min, range.extent, ForKind::Serial, 0, body,
                                   loop.range.range));
  }

  // A Scan node, its element and value computed per point (lower_scans
  // decides where the points run, so their temporaries are per iteration).
  void lowerScan(const ScanStmt &scan, StmtEmitter &out) {
    const AssignStmt &write = *scan.write;
    Buffer target = accessedBuffer(*write.decl, write.targetRange);
    target->isWritten = true;
    Expr neutral = checkedNeutral(scan.op, *scan.neutral, "scan", out);
    ReduceOperator op = lowerReduceOp(scan.op, target->element);
    NormalizedRange range = normalizeRange(scan.ranges.front(), out, true);
    StmtEmitter valueOut;
    if (range.stepLet)
      valueOut.let(range.stepLet->first, range.stepLet->second);
    ++perIterationDepth_;
    std::vector<Expr> indices;
    for (const ExprPtr &index : write.indices)
      indices.push_back(lowerExpr(*index, valueOut));
    Expr value = lowerExpr(*write.value, valueOut);
    --perIterationDepth_;
    Stmt valueSetup = valueOut.empty() ? nullptr : valueOut.finish();
    out.stmt(std::make_shared<Scan>(target, std::move(indices), std::move(op), neutral,
                                    Reduce::Loop{range.loopVar, range.min, range.extent},
                                    valueSetup, value, scan.range, write.targetRange));
  }

  void lowerParfor(const ParforStmt &parfor, StmtEmitter &out) {
    // Inner bounds may use outer variables, so each range is normalized in
    // the scope of the loops around it.
    std::vector<StmtEmitter> boundSetups(parfor.ranges.size());
    std::vector<NormalizedRange> ranges;
    for (size_t i = 0; i < parfor.ranges.size(); ++i)
      ranges.push_back(normalizeRange(parfor.ranges[i], i == 0 ? out : boundSetups[i], false));
    ++perIterationDepth_;
    Stmt body = lowerBody(*parfor.body);
    --perIterationDepth_;
    for (size_t i = parfor.ranges.size(); i-- > 0;) {
      body = std::make_shared<For>(ranges[i].loopVar, ranges[i].min, ranges[i].extent,
                                   ForKind::Parallel, 0, wrapStepLet(ranges[i], body),
                                   parfor.ranges[i].range);
      if (i > 0)
        body = boundSetups[i].finish(body);
    }
    out.stmt(body);
  }

  void lowerIf(const IfStmt &branch, StmtEmitter &out) {
    Expr cond = lowerExpr(*branch.cond, out);
    StmtEmitter thenOut;
    lowerStmts(branch.thenBody->stmts, thenOut);
    Stmt elseCase;
    if (branch.elseBody) {
      StmtEmitter elseOut;
      lowerStmt(*branch.elseBody, elseOut);
      elseCase = elseOut.finish();
    }
    out.stmt(std::make_shared<IfThenElse>(cond, thenOut.finish(), elseCase));
  }

  void lowerReturn(const ReturnStmt &ret, StmtEmitter &out) {
    assert(returnTarget_ && "a return outside a function with a result cell");
    Expr value = lowerExpr(*ret.value, out);
    out.stmt(makeStore(returnTarget_->result, {}, value, ret.range));
    out.stmt(makeStore(returnTarget_->done, {}, std::make_shared<BoolImm>(true), ret.range));
  }

  // A kernel call expands in place: the callee's array (and scalar output)
  // parameters denote the caller's buffers, its sizes the extents of those
  // buffers, its value parameters the arguments, evaluated once.
  void lowerKernelCall(const CallStmt &call, StmtEmitter &out) {
    const KernelDecl &callee = *call.kernel;
    std::set<const VarDecl *> boundSizes;
    std::vector<Buffer> zeroed;
    for (size_t i = 0; i < callee.params.size(); ++i) {
      const VarDecl &param = *callee.params[i];
      const loopc::Expr &arg = *call.args[i];
      if (param.isArray() || param.isScalarOutput()) {
        const auto *name = arg.as<NameExpr>();
        assert(name && name->decl && "array arguments are passed by name");
        Buffer buffer = bindings_.at(name->decl).buffer;
        bindings_[&param] = {nullptr, buffer};
        for (size_t d = 0; d < param.type.dims.size(); ++d) {
          const auto *size = param.type.dims[d]->as<NameExpr>();
          if (size && size->decl && size->decl->kind == VarDecl::Kind::Size &&
              boundSizes.insert(size->decl).second)
            bindings_[size->decl] = {buffer->shape[d], nullptr};
        }
        if (param.intent == Intent::Out)
          zeroed.push_back(buffer);
        continue;
      }
      Expr value = lowerExpr(arg, out);
      bindings_[&param] = {bindOnce(param.name, value, out), nullptr};
    }
    // Extents the call does not bind (`f32[(H + 1) / 2]`, `f32[n]`, a size
    // met again) must equal the argument's, which the checker could not
    // prove: checked here, and the callee runs only when they do (not over
    // the wrong extents, out of its arrays).
    Expr extentsMatch;
    for (size_t i = 0; i < callee.params.size(); ++i) {
      const VarDecl &param = *callee.params[i];
      for (size_t d = 0; d < param.type.dims.size(); ++d) {
        Expr given = bindings_.at(&param).buffer->shape[d];
        Expr needed = toI64(lowerExpr(*param.type.dims[d], out));
        if (sameExpr(given, needed))
          continue;
        Expr match = equal(given, needed);
        const auto &argument = *call.args[i]->as<NameExpr>();
        out.stmt(std::make_shared<Check>(match,
                                         "'" + argument.name + "' has extent {0} in dimension " +
                                             std::to_string(d) + ", but parameter '" + param.name +
                                             "' of '" + callee.name + "' needs {1}",
                                         std::vector<Expr>{given, needed}, call.args[i]->range));
        extentsMatch = extentsMatch ? logicalAnd(extentsMatch, match) : match;
      }
    }
    // `out` parameters start zeroed, in the callee as in an entry kernel.
    StmtEmitter body;
    for (const Buffer &buffer : zeroed)
      body.stmt(zeroFill(buffer, call.range));
    // The callee's multiply-adds round as it says.
    FpContract callerContract = std::exchange(fpContract_, callee.fpContract);
    lowerStmts(callee.body->stmts, body);
    fpContract_ = callerContract;
    out.stmt(extentsMatch ? std::make_shared<IfThenElse>(extentsMatch, body.finish())
                          : body.finish());
  }

  Stmt zeroFill(const Buffer &buffer, SourceRange source) {
    std::vector<std::string> vars;
    std::vector<Expr> indices;
    for (size_t d = 0; d < buffer->shape.size(); ++d) {
      vars.push_back(claimName(buffer->name + ".zero" + std::to_string(d)));
      indices.push_back(makeVar(ScalarType::I64, vars.back()));
    }
    Stmt body = makeStore(buffer, indices, zeroOf(buffer->element), source);
    for (size_t d = buffer->shape.size(); d-- > 0;)
      body = std::make_shared<For>(vars[d], makeI64(0), buffer->shape[d], ForKind::Parallel, 0,
                                   body, source);
    return body;
  }

  // ---------------------------------------------------------- expressions ---

  Expr lowerExpr(const loopc::Expr &expr, StmtEmitter &out) {
    switch (expr.kind) {
    case loopc::Expr::Kind::IntLit: {
      uint64_t written = expr.as<IntLitExpr>()->value;
      // An integer literal of a float type is rounded once, from the value as
      // written (2^63 is not INT64_MIN, and f32 does not round through f64).
      if (expr.type == ScalarType::F32)
        return std::make_shared<FloatImm>(expr.type, static_cast<float>(written));
      if (expr.type == ScalarType::F64)
        return std::make_shared<FloatImm>(expr.type, static_cast<double>(written));
      return makeInt(expr.type, static_cast<int64_t>(written));
    }
    case loopc::Expr::Kind::FloatLit:
      return std::make_shared<FloatImm>(expr.type, expr.as<FloatLitExpr>()->value);
    case loopc::Expr::Kind::BoolLit:
      return std::make_shared<BoolImm>(expr.as<BoolLitExpr>()->value);
    case loopc::Expr::Kind::Name: {
      const Binding &binding = bindings_.at(expr.as<NameExpr>()->decl);
      if (binding.value)
        return binding.value;
      return std::make_shared<Load>(binding.buffer, std::vector<Expr>{}, expr.range);
    }
    case loopc::Expr::Kind::Index: {
      const auto &index = *expr.as<IndexExpr>();
      std::vector<Expr> indices;
      for (const ExprPtr &i : index.indices)
        indices.push_back(lowerExpr(*i, out));
      return std::make_shared<Load>(accessedBuffer(*index.decl, expr.range), std::move(indices),
                                    expr.range);
    }
    case loopc::Expr::Kind::Call:
      return lowerCall(*expr.as<CallExpr>(), out);
    case loopc::Expr::Kind::Cast: {
      const auto &cast = *expr.as<CastExpr>();
      Expr operand = lowerExpr(*cast.operand, out);
      if (operand->type == cast.target)
        return roundedProduct(operand);
      if (cast.target == ScalarType::Bool)
        return notEqual(operand, zeroOf(operand->type));
      return std::make_shared<Cast>(cast.target, operand);
    }
    case loopc::Expr::Kind::Unary: {
      const auto &unary = *expr.as<UnaryExpr>();
      return std::make_shared<Unary>(unary.op == UnaryOp::Neg ? UnaryOpKind::Neg : UnaryOpKind::Not,
                                     lowerExpr(*unary.operand, out));
    }
    case loopc::Expr::Kind::Binary:
      return lowerBinary(*expr.as<BinaryExpr>(), out);
    case loopc::Expr::Kind::Conditional: {
      const auto &conditional = *expr.as<ConditionalExpr>();
      Expr cond = lowerExpr(*conditional.cond, out);
      return lowerChoice(cond, *conditional.thenExpr, *conditional.elseExpr, out);
    }
    case loopc::Expr::Kind::Redomap:
      return lowerRedomap(*expr.as<RedomapExpr>(), out);
    }
    return nullptr;
  }

  // `cond ? a : b` evaluating only the chosen side: a Select when neither side
  // needs statements, else an If storing into a cell.
  Expr lowerChoice(const Expr &cond, const loopc::Expr &thenExpr, const loopc::Expr &elseExpr,
                   StmtEmitter &out) {
    StmtEmitter thenOut, elseOut;
    Expr thenValue = lowerExpr(thenExpr, thenOut);
    Expr elseValue = lowerExpr(elseExpr, elseOut);
    return choose(cond, thenValue, thenOut, elseValue, elseOut, out);
  }

  Expr choose(const Expr &cond, const Expr &thenValue, const StmtEmitter &thenOut,
              const Expr &elseValue, const StmtEmitter &elseOut, StmtEmitter &out) {
    if (thenOut.empty() && elseOut.empty())
      return select(cond, thenValue, elseValue);
    Buffer cell = makeCell("choice", thenValue->type, MemorySpace::Register);
    out.allocate(cell);
    out.stmt(std::make_shared<IfThenElse>(cond, thenOut.finish(makeStore(cell, {}, thenValue)),
                                          elseOut.finish(makeStore(cell, {}, elseValue))));
    return std::make_shared<Load>(cell, std::vector<Expr>{});
  }

  Expr lowerBinary(const BinaryExpr &binary, StmtEmitter &out) {
    Expr lhs = lowerExpr(*binary.lhs, out);
    if (binary.op == BinaryOp::And || binary.op == BinaryOp::Or) {
      // Short-circuit: the right side runs only when the left does not decide.
      StmtEmitter rhsOut;
      Expr rhs = lowerExpr(*binary.rhs, rhsOut);
      bool isAnd = binary.op == BinaryOp::And;
      if (rhsOut.empty() && cannotFault(rhs))
        return makeBinary(binaryOpKind(binary.op), lhs, rhs);
      StmtEmitter none;
      Expr decided = std::make_shared<BoolImm>(!isAnd);
      return isAnd ? choose(lhs, rhs, rhsOut, decided, none, out)
                   : choose(lhs, decided, none, rhs, rhsOut, out);
    }
    Expr rhs = lowerExpr(*binary.rhs, out);
    Expr result = makeBinary(binaryOpKind(binary.op), lhs, rhs, binary.range);
    // Under @fp_contract(off) every float product is rounded on its own.
    return fpContract_ == FpContract::Off ? roundedProduct(result) : result;
  }

  Expr lowerCall(const CallExpr &call, StmtEmitter &out) {
    std::vector<Expr> args;
    for (const ExprPtr &arg : call.args)
      args.push_back(lowerExpr(*arg, out));
    if (!call.isBuiltin)
      return inlineFn(*call.fn, std::move(args), out);
    if (call.builtin == Builtin::Min)
      return minOf(args[0], args[1]);
    if (call.builtin == Builtin::Max)
      return maxOf(args[0], args[1]);
    return std::make_shared<Call>(call.type, call.builtin, std::move(args));
  }

  // A float product returned by a function or cast to its own type is
  // rounded there: a sum around the call or the cast does not fuse with it
  // (docs/language.md; the interpreter evaluates the call or cast on its
  // own). A cast to the same type marks that in the IR, and code generation
  // fuses only a product that is an operand of the sum itself.
  static Expr roundedProduct(Expr value) {
    const auto *product = value->as<Binary>();
    if (product && product->op == BinaryOpKind::Mul && isFloat(value->type))
      return std::make_shared<Cast>(value->type, std::move(value));
    return value;
  }

  // Inlines a `fn` body. A body whose only `return` ends it becomes its
  // statements followed by the returned expression; any other shape writes
  // the result into a cell and guards what follows a `return` with a flag.
  Expr inlineFn(const FnDecl &fn, std::vector<Expr> args, StmtEmitter &out) {
    for (size_t i = 0; i < fn.params.size(); ++i)
      bindings_[fn.params[i].get()] = {bindOnce(fn.params[i]->name, args[i], out), nullptr};
    const std::vector<StmtPtr> &stmts = fn.body->stmts;
    bool returnsOnlyAtEnd = !stmts.empty() && stmts.back()->kind == loopc::Stmt::Kind::Return;
    for (size_t i = 0; returnsOnlyAtEnd && i + 1 < stmts.size(); ++i)
      returnsOnlyAtEnd = !containsReturn(*stmts[i]);
    std::optional<ReturnTarget> outer = returnTarget_;
    Expr result;
    if (returnsOnlyAtEnd) {
      returnTarget_.reset();
      for (size_t i = 0; i + 1 < stmts.size(); ++i)
        lowerStmt(*stmts[i], out);
      result = roundedProduct(lowerExpr(*stmts.back()->as<ReturnStmt>()->value, out));
    } else {
      ReturnTarget target{makeCell(fn.name + ".result", fn.result, MemorySpace::Register),
                          makeCell(fn.name + ".done", ScalarType::Bool, MemorySpace::Register)};
      out.allocate(target.result);
      out.allocate(target.done);
      returnTarget_ = target;
      lowerStmts(stmts, out);
      result = std::make_shared<Load>(target.result, std::vector<Expr>{});
    }
    returnTarget_ = outer;
    return result;
  }

  ReduceOperator lowerReduceOp(const ReduceOp &op, ScalarType type) {
    ReduceOperator result;
    switch (op.kind) {
    case ReduceOp::Kind::Add:
      result.kind = ReduceOperator::Kind::Add;
      return result;
    case ReduceOp::Kind::Mul:
      result.kind = ReduceOperator::Kind::Mul;
      return result;
    case ReduceOp::Kind::Min:
      result.kind = ReduceOperator::Kind::Min;
      return result;
    case ReduceOp::Kind::Max:
      result.kind = ReduceOperator::Kind::Max;
      return result;
    case ReduceOp::Kind::And:
      result.kind = ReduceOperator::Kind::And;
      return result;
    case ReduceOp::Kind::Or:
      result.kind = ReduceOperator::Kind::Or;
      return result;
    case ReduceOp::Kind::User:
      break;
    }
    result.kind = ReduceOperator::Kind::User;
    result.userName = op.userName;
    result.userCommutes = op.userFn->commutes;
    result.lhsVar = claimName(op.userName + ".lhs");
    result.rhsVar = claimName(op.userName + ".rhs");
    StmtEmitter body;
    Expr combined =
        inlineFn(*op.userFn, {makeVar(type, result.lhsVar), makeVar(type, result.rhsVar)}, body);
    // The combining step is one expression: the operator's lets fold into it.
    assert(body.onlyLets() && "an assoc fn used as an operator must be a sequence of lets and a "
                              "return");
    result.combine = body.inlineLets(combined);
    return result;
  }

  // The neutral element of a reduction in `construct` ("redomap"), lowered
  // and, for `+` and `*`, checked at run time to be 0 or 1 as the
  // interpreter does (the checker refuses constants that are not).
  Expr checkedNeutral(const ReduceOp &op, const loopc::Expr &source, const std::string &construct,
                      StmtEmitter &out) {
    Expr neutral = lowerExpr(source, out);
    std::optional<int> expected = requiredNeutral(op);
    // (A literal is the checker's: it refused any other value.)
    if (!expected || neutral->as<IntImm>() || neutral->as<FloatImm>())
      return neutral;
    neutral = bindOnce("neutral", neutral, out);
    out.stmt(std::make_shared<Check>(equal(neutral, makeInt(neutral->type, *expected)),
                                     wrongNeutralMessage(op, construct), std::vector<Expr>{},
                                     source.range));
    return neutral;
  }

  // A redomap becomes a rank-0 accumulator holding the neutral element and a
  // Reduce folding the body into it; the value is the accumulator afterwards.
  Expr lowerRedomap(const RedomapExpr &redomap, StmtEmitter &out) {
    Expr neutral = checkedNeutral(redomap.op, *redomap.neutral, "redomap", out);
    Buffer accumulator = makeCell("acc", redomap.type, localMemory(), redomap.range);
    out.allocate(accumulator);
    out.stmt(makeStore(accumulator, {}, neutral, redomap.range));
    ReduceOperator op = lowerReduceOp(redomap.op, redomap.type);

    std::vector<Reduce::Loop> loops;
    StmtEmitter valueOut;
    // The value setup runs inside all the loops, so a stepped variable's let
    // there is out of scope in the bounds of the ranges after it (`i in 0..N
    // by 3, j in i..N`): those bounds use its defining expression instead.
    std::vector<std::pair<const VarDecl *, Expr>> steppedVars; // with the let's variable
    for (const Range &range : redomap.ranges) {
      NormalizedRange normalized = normalizeRange(range, loops.empty() ? out : valueOut, false);
      loops.push_back({normalized.loopVar, normalized.min, normalized.extent});
      if (normalized.stepLet) {
        valueOut.let(normalized.stepLet->first, normalized.stepLet->second);
        Expr &binding = bindings_[range.var.get()].value;
        steppedVars.emplace_back(range.var.get(), binding);
        binding = normalized.stepLet->second;
      }
    }
    for (const auto &[var, letVariable] : steppedVars)
      bindings_[var].value = letVariable;
    ++perIterationDepth_;
    Expr value = lowerExpr(*redomap.body, valueOut);
    --perIterationDepth_;
    Stmt valueSetup = valueOut.empty() ? nullptr : valueOut.finish();
    out.stmt(std::make_shared<Reduce>(accumulator, std::vector<Expr>{}, std::move(op), neutral,
                                      std::move(loops), valueSetup, value, redomap.range));
    return std::make_shared<Load>(accumulator, std::vector<Expr>{});
  }

  std::unordered_map<const VarDecl *, Binding> bindings_;
  std::unordered_map<const VarDecl *, Values> loopVarValues_; // see valuesOf
  std::set<std::string> usedNames_;
  std::map<SourceLoc, std::string> arrayNamesAt_;   // Function::arrayNamesAt
  std::map<std::string, std::string> programNames_; // Function::programNames
  std::optional<ReturnTarget> returnTarget_;
  FpContract fpContract_ = FpContract::On; // the kernel whose body is lowered
  int perIterationDepth_ = 0;
};

} // namespace

Function lowerKernel(const Program &program, const KernelDecl &kernel) {
  return Lowerer().lower(kernel);
}

} // namespace loopc::ir
