// The parfor race check. Iterations of a parfor may run in any order or at
// once, so the checker rejects a nest unless it can show that
//   - every write is injective in the parfor variables: two different
//     iterations never write the same element, and
//   - no iteration reads (or writes) an element that another iteration writes.
//
// Indices are analysed as affine forms (AffineForm.h), with `let` variables
// substituted by their values. Across one nest, a variable is *invariant* when
// it is declared outside the parfors that matter for the access (sizes,
// parameters, variables of enclosing sequential loops, outer parfor variables
// when the array is private to an outer iteration); everything declared
// inside them (private variables, inner sequential and redomap loop
// variables) varies with the iteration.
//
// A dimension `d` of a write *pins* the parfor variable v when its index is
// `c*v + (invariant terms)` with c != 0. A write is injective when every
// relevant parfor variable is pinned by some dimension (a dimension pins at
// most one variable, so the pins are distinct): two different iterations
// differ in some v, hence in the dimension v pins. A read (or a second write)
// of the same array is free of races with a write W when
//   (a) for every relevant parfor variable, the read's index in the dimension
//       that pins it in W is exactly W's affine index there (each iteration
//       only touches, in those dimensions, the elements it writes itself), or
//   (b) in some dimension the two index sets are provably disjoint: both
//       indices are invariant and differ by a non-zero constant; or W's index
//       is `c*v + r` and the read's `c*v + r + k` with c not dividing k
//       (red-black sweeps); or the read's index, invariant or swept over the
//       ranges of the loops and redomaps inside the nest that it reads (when
//       those ranges are invariant), stays outside the values W's index
//       takes while v sweeps its range (row k read while rows k+1.. are
//       written; a[k] for k in 0..i while a[i..N) is written).
// Variables and arrays declared inside the parfor body are private to an
// iteration and never race. Writes to scalars declared outside the parfor
// (scalar outputs, outer `var`s) are always races: use redomap.
//
// `combine(op) H[k] = v` need not be injective: iterations combining into the
// same element with the same operator commute. Against anything else (a read,
// a plain write, a combine with another operator) a combine that is not
// injective must be provably disjoint in some dimension, as in (b); a plain
// write W is checked against it by (a) and (b) from W's side, and an
// injective combine is checked like a plain write.
//
// Limits (it is sound for what it accepts, and incomplete): indices that are
// not affine (`i / 2`, `i * i`, indirect `A[idx[i]]`) are never proven
// injective, equal or disjoint; relations between two parfor variables
// (`A[i][j] = A[j][i]` over `j < i`) are not used; ranges are only used when
// their bounds are invariant; conditions are ignored, so a guarded write
// (`if i == 0 { B[0] = x; }`) must be injective on its own and a guarded
// read counts as unconditional.
#include "sema/RaceCheck.h"

#include "sema/AffineForm.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace loopc {
namespace {

std::string quoted(std::string_view name) { return "'" + std::string(name) + "'"; }

struct Access {
  const VarDecl *target = nullptr;
  std::vector<AffineForm> indices; // empty for a scalar
  bool isWrite = false;
  const ReduceOp *combine = nullptr;     // the operator of a combine (a write)
  std::vector<const ParforStmt *> chain; // enclosing parfors of the nest, outermost first
  SourceRange range;
};

class RaceChecker {
public:
  explicit RaceChecker(DiagnosticEngine &diagnostics) : diagnostics_(diagnostics) {}

  void checkKernel(const KernelDecl &kernel) { visitBlock(*kernel.body); }

private:
  // --------------------------------------------------- collecting accesses

  void visitBlock(const BlockStmt &block) {
    for (const auto &stmt : block.stmts)
      visitStmt(*stmt);
  }

  void declare(const VarDecl &var) { depth_[&var] = chain_.size(); }

  void visitStmt(const Stmt &stmt) {
    switch (stmt.kind) {
    case Stmt::Kind::Block:
      return visitBlock(*stmt.as<BlockStmt>());
    case Stmt::Kind::Decl: {
      const auto *decl = stmt.as<DeclStmt>();
      for (const auto &extent : decl->var->type.dims)
        visitExpr(*extent);
      if (decl->init) {
        visitExpr(*decl->init);
        if (decl->var->kind == VarDecl::Kind::Let)
          letValues_[decl->var.get()] = decl->init.get();
      }
      return declare(*decl->var);
    }
    case Stmt::Kind::Assign:
      return visitAssign(*stmt.as<AssignStmt>());
    case Stmt::Kind::Scan:
      return visitScan(*stmt.as<ScanStmt>());
    case Stmt::Kind::For: {
      const auto *loop = stmt.as<ForStmt>();
      visitRange(loop->range);
      return visitBlock(*loop->body);
    }
    case Stmt::Kind::Parfor:
      return visitParfor(*stmt.as<ParforStmt>());
    case Stmt::Kind::If: {
      const auto *ifStmt = stmt.as<IfStmt>();
      visitExpr(*ifStmt->cond);
      visitBlock(*ifStmt->thenBody);
      if (ifStmt->elseBody)
        visitStmt(*ifStmt->elseBody);
      return;
    }
    case Stmt::Kind::Return:
      return visitExpr(*stmt.as<ReturnStmt>()->value);
    case Stmt::Kind::Call:
      for (const auto &arg : stmt.as<CallStmt>()->args)
        if (!arg->as<NameExpr>())
          visitExpr(*arg);
      return;
    }
  }

  void visitRange(const Range &range) {
    visitExpr(*range.lo);
    visitExpr(*range.hi);
    if (range.step)
      visitExpr(*range.step);
    declare(*range.var);
    innerRangeOf_[range.var.get()] = &range;
  }

  void visitParfor(const ParforStmt &parfor) {
    bool outermost = chain_.empty();
    if (outermost)
      accesses_.clear();
    chain_.push_back(&parfor);
    // Inner ranges may use outer variables of the same nest; they are all
    // variables of this parfor.
    for (const Range &range : parfor.ranges) {
      visitExpr(*range.lo);
      visitExpr(*range.hi);
      if (range.step)
        visitExpr(*range.step);
      declare(*range.var);
      rangeOf_[range.var.get()] = &range;
    }
    visitBlock(*parfor.body);
    chain_.pop_back();
    if (outermost)
      analyzeNest();
  }

  void visitAssign(const AssignStmt &assign) {
    for (const auto &index : assign.indices)
      visitExpr(*index);
    visitExpr(*assign.value);
    if (chain_.empty())
      return;
    Access write = makeAccess(*assign.decl, assign.indices, assign.targetRange);
    write.isWrite = true;
    if (assign.op == AssignOp::Combine)
      write.combine = &assign.combineOp;
    accesses_.push_back(std::move(write));
  }

  // A scan's write and body belong to the enclosing nest like an
  // assignment's, its variable varying inside it. Its own iterations may run
  // in parallel too: each writes its own element, and none reads the array
  // they write.
  void visitScan(const ScanStmt &scan) {
    visitExpr(*scan.neutral);
    visitRange(scan.ranges.front());
    visitAssign(*scan.write);
    const AssignStmt &write = *scan.write;
    const VarDecl &var = *scan.ranges.front().var;
    const std::string what = quoted("scan(" + std::string(reduceOpSpelling(scan.op)) + ")");
    if (const IndexExpr *read = findRead(*write.value, *write.decl)) {
      diagnostics_.error(read->range, "the body of " + what + " reads " + quoted(write.decl->name) +
                                          ", which the scan writes while other iterations may "
                                          "be reading it; read another array");
      diagnostics_.note(write.targetRange, quoted(write.decl->name) + " is written here");
    }
    for (const auto &index : write.indices) {
      AffineForm form = AffineForm::of(*index, letValue());
      if (!form.opaque && form.coefficient(&var) != 0 && !form.nonAffineVars.contains(&var))
        return;
    }
    diagnostics_.error(write.targetRange,
                       what + " must write a different element of " + quoted(write.decl->name) +
                           " for each " + quoted(var.name) + "; index one dimension by " +
                           quoted(var.name) + " plus terms that do not depend on it");
  }

  // The first element of `array` that `expr` reads, if any.
  static const IndexExpr *findRead(const Expr &expr, const VarDecl &array) {
    switch (expr.kind) {
    case Expr::Kind::Index: {
      const auto *index = expr.as<IndexExpr>();
      if (index->decl == &array)
        return index;
      for (const auto &subscript : index->indices)
        if (const IndexExpr *found = findRead(*subscript, array))
          return found;
      return nullptr;
    }
    case Expr::Kind::Call:
      for (const auto &arg : expr.as<CallExpr>()->args)
        if (const IndexExpr *found = findRead(*arg, array))
          return found;
      return nullptr;
    case Expr::Kind::Cast:
      return findRead(*expr.as<CastExpr>()->operand, array);
    case Expr::Kind::Unary:
      return findRead(*expr.as<UnaryExpr>()->operand, array);
    case Expr::Kind::Binary: {
      const IndexExpr *found = findRead(*expr.as<BinaryExpr>()->lhs, array);
      return found ? found : findRead(*expr.as<BinaryExpr>()->rhs, array);
    }
    case Expr::Kind::Conditional: {
      const auto *conditional = expr.as<ConditionalExpr>();
      for (const Expr *part :
           {conditional->cond.get(), conditional->thenExpr.get(), conditional->elseExpr.get()})
        if (const IndexExpr *found = findRead(*part, array))
          return found;
      return nullptr;
    }
    case Expr::Kind::Redomap: {
      const auto *redomap = expr.as<RedomapExpr>();
      std::vector<const Expr *> parts{redomap->neutral.get(), redomap->body.get()};
      for (const Range &range : redomap->ranges)
        for (const Expr *bound : {range.lo.get(), range.hi.get(), range.step.get()})
          if (bound)
            parts.push_back(bound);
      for (const Expr *part : parts)
        if (const IndexExpr *found = findRead(*part, array))
          return found;
      return nullptr;
    }
    case Expr::Kind::IntLit:
    case Expr::Kind::FloatLit:
    case Expr::Kind::BoolLit:
    case Expr::Kind::Name:
      return nullptr;
    }
    return nullptr;
  }

  Access makeAccess(const VarDecl &target, const std::vector<ExprPtr> &indices, SourceRange range) {
    Access access;
    access.target = &target;
    for (const auto &index : indices)
      access.indices.push_back(AffineForm::of(*index, letValue()));
    access.chain = chain_;
    access.range = range;
    return access;
  }

  // A let's value, substituted for it in index forms; except a let declared
  // outside every parfor whose value is not affine (`let off = q % 2`): it
  // is the same for every iteration, so it stays a variable of its own, and
  // `y[2*i + off]` and `y[2*i + off + 1]` stay provably different.
  AffineForm::LetValue letValue() const {
    return [this](const VarDecl &var) -> const Expr * {
      auto it = letValues_.find(&var);
      if (it == letValues_.end())
        return nullptr;
      auto depth = depth_.find(&var);
      if (depth != depth_.end() && depth->second == 0 &&
          !AffineForm::of(*it->second, letValue()).isExact())
        return nullptr;
      return it->second;
    };
  }

  void visitExpr(const Expr &expr) {
    switch (expr.kind) {
    case Expr::Kind::Index: {
      const auto *index = expr.as<IndexExpr>();
      for (const auto &subscript : index->indices)
        visitExpr(*subscript);
      if (!chain_.empty())
        accesses_.push_back(makeAccess(*index->decl, index->indices, index->range));
      return;
    }
    case Expr::Kind::Call:
      for (const auto &arg : expr.as<CallExpr>()->args)
        visitExpr(*arg);
      return;
    case Expr::Kind::Cast:
      return visitExpr(*expr.as<CastExpr>()->operand);
    case Expr::Kind::Unary:
      return visitExpr(*expr.as<UnaryExpr>()->operand);
    case Expr::Kind::Binary:
      visitExpr(*expr.as<BinaryExpr>()->lhs);
      return visitExpr(*expr.as<BinaryExpr>()->rhs);
    case Expr::Kind::Conditional: {
      const auto *conditional = expr.as<ConditionalExpr>();
      visitExpr(*conditional->cond);
      visitExpr(*conditional->thenExpr);
      return visitExpr(*conditional->elseExpr);
    }
    case Expr::Kind::Redomap: {
      const auto *redomap = expr.as<RedomapExpr>();
      visitExpr(*redomap->neutral);
      for (const Range &range : redomap->ranges)
        visitRange(range);
      return visitExpr(*redomap->body);
    }
    case Expr::Kind::Name: {
      // A scalar the iterations share (a scalar result, an outer `var`):
      // read while another iteration may combine into it.
      const VarDecl *decl = expr.as<NameExpr>()->decl;
      if (!chain_.empty() && decl && !decl->isArray() &&
          (decl->kind == VarDecl::Kind::Var || decl->isScalarOutput()))
        accesses_.push_back(makeAccess(*decl, {}, expr.range));
      return;
    }
    case Expr::Kind::IntLit:
    case Expr::Kind::FloatLit:
    case Expr::Kind::BoolLit:
      return;
    }
  }

  // ------------------------------------------------------------ analysis

  size_t depthOf(const VarDecl *var) const {
    auto it = depth_.find(var);
    return it == depth_.end() ? 0 : it->second;
  }

  // The parfor variables that distinguish iterations for an access to an
  // array declared at depth `targetDepth`, within the first `common` parfors.
  static std::vector<const VarDecl *> relevantVars(const std::vector<const ParforStmt *> &chain,
                                                   size_t targetDepth, size_t common) {
    std::vector<const VarDecl *> vars;
    for (size_t level = targetDepth; level < common; ++level)
      for (const Range &range : chain[level]->ranges)
        vars.push_back(range.var.get());
    return vars;
  }

  bool isInvariant(const AffineForm &form, size_t targetDepth,
                   const VarDecl *except = nullptr) const {
    if (form.opaque)
      return false;
    for (const auto &[var, coefficient] : form.coefficients)
      if (var != except && depthOf(var) > targetDepth)
        return false;
    for (const VarDecl *var : form.nonAffineVars)
      if (depthOf(var) > targetDepth)
        return false;
    return true;
  }

  bool pins(const AffineForm &form, const VarDecl *var, size_t targetDepth) const {
    int64_t coefficient = form.coefficient(var);
    return coefficient != 0 && isInvariant(form, targetDepth, var);
  }

  std::optional<size_t> pinningDimension(const Access &write, const VarDecl *var,
                                         size_t targetDepth) const {
    for (size_t d = 0; d < write.indices.size(); ++d)
      if (pins(write.indices[d], var, targetDepth))
        return d;
    return std::nullopt;
  }

  static bool isConstant(const AffineForm &form) {
    return form.coefficients.empty() && form.isExact();
  }

  // True when index `other` (of a second access) never equals index `write`
  // of a write in dimension d, whatever the iterations (rule (b) above).
  bool provablyDisjoint(const AffineForm &write, const AffineForm &other, size_t targetDepth,
                        const std::vector<const VarDecl *> &vars) const {
    if (!write.isExact() || !other.isExact())
      return false;
    if (isInvariant(write, targetDepth) && isInvariant(other, targetDepth)) {
      AffineForm difference = write.plus(other, -1);
      return isConstant(difference) && difference.constant != 0;
    }
    for (const VarDecl *var : vars) {
      if (!pins(write, var, targetDepth))
        continue;
      int64_t scale = write.coefficient(var);
      // c*v + r against c*v' + r + k: equal only when c divides k.
      AffineForm difference = other.plus(write, -1);
      if (isConstant(difference) && difference.constant % scale != 0)
        return true;
      if (auto swept = sweepBounds(other, targetDepth);
          swept && outsideSweep(write, var, swept->first, swept->second, targetDepth))
        return true;
    }
    return false;
  }

  // The least and greatest values of `form`, invariant at targetDepth, as
  // the variables of the loops and redomaps inside the nest that it reads
  // sweep their ranges (`a[k]` for `k in 0..5`: 0 and 4); nullopt when one
  // of them is a parfor variable or has bounds that vary with one. An
  // invariant form is its own bounds.
  std::optional<std::pair<AffineForm, AffineForm>> sweepBounds(const AffineForm &form,
                                                               size_t targetDepth) const {
    if (!form.isExact())
      return std::nullopt;
    AffineForm low = form, high = form;
    for (const auto &[var, coefficient] : form.coefficients) {
      if (depthOf(var) <= targetDepth)
        continue;
      auto range = innerRangeOf_.find(var);
      if (range == innerRangeOf_.end() || rangeOf_.contains(var))
        return std::nullopt;
      AffineForm first = AffineForm::of(*range->second->lo, letValue());
      AffineForm last = AffineForm::of(*range->second->hi, letValue());
      last.constant -= 1;
      // Bounds that vary with an enclosing loop of the nest sweep too: the
      // least first value and the greatest last one (`k in kb..i` inside
      // `for i in kb..ke`: kb to ke - 2). A range's bounds read only
      // variables declared before it, so this ends.
      auto firstBounds = sweepBounds(first, targetDepth);
      auto lastBounds = sweepBounds(last, targetDepth);
      if (!firstBounds || !lastBounds)
        return std::nullopt;
      low.coefficients.erase(var);
      high.coefficients.erase(var);
      low = low.plus(coefficient > 0 ? firstBounds->first : lastBounds->second, coefficient);
      high = high.plus(coefficient > 0 ? lastBounds->second : firstBounds->first, coefficient);
    }
    if (!isInvariant(low, targetDepth) || !isInvariant(high, targetDepth))
      return std::nullopt;
    return std::pair{low, high};
  }

  // True when every value from `otherLow` to `otherHigh` (invariant) lies
  // outside the values the write's index `c*var + rest` takes while `var`
  // sweeps its range.
  bool outsideSweep(const AffineForm &write, const VarDecl *var, const AffineForm &otherLow,
                    const AffineForm &otherHigh, size_t targetDepth) const {
    const Range *range = rangeOf_.at(var);
    AffineForm lo = AffineForm::of(*range->lo, letValue());
    AffineForm last = AffineForm::of(*range->hi, letValue());
    last.constant -= 1;
    if (!lo.isExact() || !last.isExact() || !isInvariant(lo, targetDepth) ||
        !isInvariant(last, targetDepth))
      return false;
    int64_t scale = write.coefficient(var);
    AffineForm rest = write;
    rest.coefficients.erase(var);
    AffineForm low = rest.plus(scale > 0 ? lo : last, scale);
    AffineForm high = rest.plus(scale > 0 ? last : lo, scale);
    AffineForm belowLow = otherHigh.plus(low, -1);
    AffineForm aboveHigh = otherLow.plus(high, -1);
    return (isConstant(belowLow) && belowLow.constant < 0) ||
           (isConstant(aboveHigh) && aboveHigh.constant > 0);
  }

  void analyzeNest() {
    std::set<const Access *> reported;
    for (const Access &write : accesses_)
      if (write.isWrite && !write.combine && !checkInjective(write))
        reported.insert(&write);
    for (const Access &write : accesses_) {
      if (!write.isWrite || reported.contains(&write))
        continue;
      for (const Access &other : accesses_) {
        if (&other == &write || other.target != write.target || reported.contains(&other))
          continue;
        // A pair of writes is checked once.
        if (other.isWrite && &other < &write)
          continue;
        if (!checkAccessPair(write, other))
          reported.insert(&other);
      }
    }
  }

  // True when no two iterations write the same element (silent).
  bool isInjective(const Access &write) const {
    size_t targetDepth = depthOf(write.target);
    if (targetDepth >= write.chain.size())
      return true;
    if (write.indices.empty())
      return false;
    for (const VarDecl *var : relevantVars(write.chain, targetDepth, write.chain.size()))
      if (!pinningDimension(write, var, targetDepth))
        return false;
    return true;
  }

  // A combine that different iterations may apply to one element.
  bool combinesAcrossIterations(const Access &access) const {
    return access.combine && !isInjective(access);
  }

  static bool sameOperator(const ReduceOp &a, const ReduceOp &b) {
    return a.kind == b.kind && a.userFn == b.userFn;
  }

  // Checks a write against another access of the same array (see the rules
  // for combines at the top).
  bool checkAccessPair(const Access &write, const Access &other) {
    bool writeCombines = combinesAcrossIterations(write);
    bool otherCombines = other.isWrite && combinesAcrossIterations(other);
    if (writeCombines && otherCombines && sameOperator(*write.combine, *other.combine))
      return true;
    if (!writeCombines)
      return checkPair(write, other);
    if (other.isWrite && !otherCombines)
      return checkPair(other, write);
    return checkAgainstCombine(write, other);
  }

  // `other` (a read, or a combine with another operator) against a combine
  // that may touch an element from several iterations: they must be disjoint.
  bool checkAgainstCombine(const Access &combine, const Access &other) {
    size_t common = commonDepth(combine, other);
    size_t targetDepth = depthOf(combine.target);
    if (targetDepth >= common || combine.indices.size() != other.indices.size())
      return true;
    std::vector<const VarDecl *> vars = relevantVars(combine.chain, targetDepth, common);
    for (size_t d = 0; d < combine.indices.size(); ++d)
      if (provablyDisjoint(combine.indices[d], other.indices[d], targetDepth, vars))
        return true;
    const VarDecl *free = vars.front();
    for (const VarDecl *var : vars)
      if (!pinningDimension(combine, var, targetDepth)) {
        free = var;
        break;
      }
    const std::string name = quoted(combine.target->name);
    auto spelling = [](const ReduceOp &op) {
      return quoted("combine(" + std::string(reduceOpSpelling(op)) + ")");
    };
    if (other.isWrite)
      diagnostics_.error(other.range, "race: iterations over " + quoted(free->name) +
                                          " may combine into this element of " + name +
                                          " with both " + spelling(*combine.combine) + " and " +
                                          spelling(*other.combine) +
                                          ", whose order matters; use one operator");
    else
      diagnostics_.error(other.range,
                         "read-write race: another iteration over " + quoted(free->name) +
                             " may combine into " +
                             (combine.indices.empty() ? name : "this element of " + name));
    diagnostics_.note(combine.range, name + " is combined into here");
    return false;
  }

  static size_t commonDepth(const Access &a, const Access &b) {
    size_t common = 0;
    while (common < a.chain.size() && common < b.chain.size() && a.chain[common] == b.chain[common])
      ++common;
    return common;
  }

  bool checkInjective(const Access &write) {
    size_t targetDepth = depthOf(write.target);
    if (targetDepth >= write.chain.size())
      return true; // private to the iteration
    std::vector<const VarDecl *> vars = relevantVars(write.chain, targetDepth, write.chain.size());
    const std::string name = quoted(write.target->name);
    if (write.indices.empty()) {
      diagnostics_.error(write.range,
                         "race: " + name +
                             " is declared outside the parfor, so every "
                             "iteration over " +
                             quoted(vars.front()->name) +
                             " writes it; declare it inside the parfor body or compute it "
                             "with redomap");
      return false;
    }
    for (const VarDecl *var : vars) {
      if (pinningDimension(write, var, targetDepth))
        continue;
      bool mentioned = false;
      for (const AffineForm &index : write.indices)
        mentioned = mentioned || index.mentions(var);
      const VarDecl *mutableIndex = nullptr;
      for (const AffineForm &index : write.indices) {
        for (const auto &[atom, coefficient] : index.coefficients)
          if (atom->kind == VarDecl::Kind::Var)
            mutableIndex = mutableIndex ? mutableIndex : atom;
        for (const VarDecl *atom : index.nonAffineVars)
          if (atom->kind == VarDecl::Kind::Var)
            mutableIndex = mutableIndex ? mutableIndex : atom;
      }
      if (!mentioned && mutableIndex)
        diagnostics_.error(write.range, "race: the write to " + name + " is indexed by " +
                                            quoted(mutableIndex->name) +
                                            ", a 'var', whose values the checker does not "
                                            "follow, so it cannot prove the write injective in "
                                            "parfor variable " +
                                            quoted(var->name) + "; compute the index with 'let'");
      else if (mentioned)
        diagnostics_.error(write.range, "race: cannot prove that the write to " + name +
                                            " is injective in parfor variable " +
                                            quoted(var->name) + "; index one dimension by " +
                                            quoted(var->name) +
                                            " plus terms that do not vary across iterations");
      else
        diagnostics_.error(write.range, "race: the write to " + name +
                                            " does not depend on parfor variable " +
                                            quoted(var->name) +
                                            ", so different iterations may write the same "
                                            "element");
      diagnostics_.note(var->range, "parfor variable " + quoted(var->name) + " is declared here");
      return false;
    }
    return true;
  }

  bool checkPair(const Access &write, const Access &other) {
    size_t common = commonDepth(write, other);
    size_t targetDepth = depthOf(write.target);
    if (targetDepth >= common || write.indices.size() != other.indices.size())
      return true;
    std::vector<const VarDecl *> vars = relevantVars(write.chain, targetDepth, common);
    for (size_t d = 0; d < write.indices.size(); ++d)
      if (provablyDisjoint(write.indices[d], other.indices[d], targetDepth, vars))
        return true;
    for (const VarDecl *var : vars) {
      std::optional<size_t> d = pinningDimension(write, var, targetDepth);
      // Exact forms only: two non-affine parts over the same variables may
      // still differ (`N*N` and `N/2`).
      if (d && write.indices[*d].isExact() && write.indices[*d] == other.indices[*d])
        continue;
      const std::string name = quoted(write.target->name);
      if (other.isWrite)
        diagnostics_.error(other.range, "race: this element of " + name +
                                            " may also be written by another iteration over " +
                                            quoted(var->name));
      else
        diagnostics_.error(other.range, "read-write race: this element of " + name +
                                            " may be written by another iteration over " +
                                            quoted(var->name));
      diagnostics_.note(write.range, name + " is written here");
      return false;
    }
    return true;
  }

  DiagnosticEngine &diagnostics_;
  std::map<const VarDecl *, size_t> depth_; // the number of enclosing parfors
  std::map<const VarDecl *, const Expr *> letValues_;
  std::map<const VarDecl *, const Range *> rangeOf_;      // parfor variables
  std::map<const VarDecl *, const Range *> innerRangeOf_; // for, redomap and scan variables
  std::vector<const ParforStmt *> chain_;
  std::vector<Access> accesses_; // of the current outermost parfor nest
};

} // namespace

void checkParforRaces(const KernelDecl &kernel, DiagnosticEngine &diagnostics) {
  RaceChecker(diagnostics).checkKernel(kernel);
}

} // namespace loopc
