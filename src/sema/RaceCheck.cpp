// The parfor race check. Iterations of a parfor may run in any order or at
// once, so the checker rejects a nest unless it can show that
//   - every write is injective in the parfor variables: two different
//     iterations never write the same element, and
//   - no iteration reads (or writes) an element that another iteration writes.
//
// Indices are analysed as affine forms (AffineForm.h), with `let` variables
// substituted by their values. A term is *invariant along* a loop whose
// iterations may run at once (a parfor, a scan) when it has one value for all
// the iterations of one run of the loop: it reads no variable declared inside
// the loop (the loop's own variables, private variables, inner sequential and
// redomap loop variables), no `var` and no array the loop assigns, and no
// redomap. A load (`off[r]`, or a `let` bound to one) is a term like any
// other: invariant along a loop that does not write its array, when its
// indices are; a loop that writes the array may change the element between
// its iterations. Invariant across a nest means invariant along the outermost
// parfor that matters for the access (sizes, parameters, variables of
// enclosing sequential loops, outer parfor variables when the array is
// private to an outer iteration).
//
// A dimension `d` of a write *pins* the parfor variable v when its index is
// `c*v + (terms invariant along v's parfor)` with c != 0, or (c) v is a digit
// of a mixed-radix number there: with every parfor variable x of the index
// taken as its offset from its range's start, in [0, span_x), the index is
// `sum(C_x * x) + R`, the C_x, spans and R invariant along the outermost of
// those parfors, and each |C_x| (a constant or an expression of sizes) is
// provably above sum(|C_y| * (span_y - 1)) over smaller digits y
// (`(c*K + u)*K + v` for u, v in 0..K; `c` for `c in g*K..(g + 1)*K`, which
// is g*K + an offset in [0, K)). In the first case the other terms may
// read outer parfor variables and values an outer iteration computed
// (`A[r][off[r] + c]` pins c). A write is injective when every relevant
// parfor variable is pinned by some dimension: two iterations that run at
// once and differ take the same values of the variables outside the
// outermost variable v they differ in, and run in the same run of v's parfor,
// so they differ in the dimension that pins v. A read (or a second write)
// of the same array is free of races with a write W when
//   (a) for every relevant parfor variable, the read's index in the dimension
//       that pins it in W is exactly W's affine index there (each iteration
//       only touches, in those dimensions, the elements it writes itself), or
//   (b) in some dimension the two index sets are provably disjoint: both
//       indices are invariant across the nest and differ by a non-zero
//       constant; or W's index is `c*v + r` with r invariant across the nest
//       and the read's `c*v + r + k` with c not dividing k (red-black
//       sweeps); or the read's index, invariant or swept over the ranges of
//       the loops and redomaps inside the nest that it reads (when those
//       ranges are invariant), stays outside the values W's index takes while
//       v sweeps its range (row k read while rows k+1.. are written; a[k] for
//       k in 0..i while a[i..N) is written). The differences compared may
//       read variables of loops around the nest: each has one value for the
//       whole run of the nest, within its range, so the difference counts as
//       every value those ranges allow (A[i][k] for k in kb..i inside
//       `for i in kb..ke` is below ke, the first column `parfor j in ke..N`
//       writes), or
//   (c) the two accesses lie on opposite sides of a diagonal: for two
//       dimensions, the difference of their indices is at least 1 for every
//       element one touches and at most 0 for every element the other
//       touches, whatever the iterations (a strict triangle `c[i][j]` for
//       j in i + 1..M and its mirror `c[j][i]`; the strict upper triangle
//       read while the lower one is written).
// Variables and arrays declared inside the parfor body are private to an
// iteration and never race. Writes to scalars declared outside the parfor
// (scalar outputs, outer `var`s) are always races: use redomap.
//
// `combine(op) H[k] = v` need not be injective: iterations combining into the
// same element with the same operator commute. Against anything else (a read,
// a plain write, a combine with another operator) a combine that is not
// injective in the parfor variables the two accesses share must be provably
// disjoint in some dimension, as in (b); a plain write W is checked against
// it by (a) and (b) from W's side. A combine injective in the shared
// variables is checked like a plain write: the iterations of an inner parfor
// that combine into one element all belong to one iteration of the shared
// ones (`H[r][X[r][c]]` in `parfor c` against a read of `H[r][b]` after it).
//
// Limits (it is sound for what it accepts, and incomplete): indices that are
// not affine (`i / 2`, `i * i`, indirect `A[idx[i]]`) are never proven
// injective, equal or disjoint, and a load is only ever an invariant term;
// relations between two parfor variables are used only by (c) (a mirror
// that includes the diagonal, `j in i..M`, is refused); ranges are only used when their bounds are
// invariant (for a loop around the nest: when what they read has not changed since the loop began);
// conditions are ignored, so a guarded write (`if i == 0 { B[0] = x; }`) must
// be injective on its own and a guarded read counts as unconditional.
#include "sema/RaceCheck.h"

#include "sema/AffineForm.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <ranges>
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

  void declare(const VarDecl &var) {
    depth_[&var] = chain_.size();
    declarationNumber_[&var] = declarations_++;
  }

  // Parfors and scans record what they declare and assign, for
  // isInvariantAlong.
  void openLoop(const Stmt &loop) {
    loops_[&loop].firstDeclaration = declarations_;
    openLoops_.push_back(&loop);
    enterLoop(loop);
  }

  void closeLoop() {
    loops_[openLoops_.back()].endDeclaration = declarations_;
    openLoops_.pop_back();
    enclosingLoops_.pop_back();
  }

  // Every loop (for, parfor, scan) records where it starts, for
  // mayChangeSince: a later iteration runs after the whole body.
  void enterLoop(const Stmt &loop) { enclosingLoops_.push_back({&loop, ++position_}); }

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
        if (decl->var->kind == VarDecl::Kind::Let) {
          letValues_[decl->var.get()] = decl->init.get();
          letPosition_[decl->var.get()] = ++position_;
        }
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
      enterLoop(*loop);
      visitBlock(*loop->body);
      enclosingLoops_.pop_back();
      return;
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
        if (const auto *name = arg->as<NameExpr>())
          lastAssignment_[name->decl] = ++position_; // an out or inout argument, perhaps
        else
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
    recordRange(range);
  }

  // The range's first and last values, as forms of its bounds taken where
  // the range is: a let in them denotes its value there (see letValue).
  void recordRange(const Range &range) {
    AffineForm first = AffineForm::of(*range.lo, letValue());
    AffineForm last = AffineForm::of(*range.hi, letValue());
    last.constant -= 1;
    rangeForms_.insert_or_assign(range.var.get(), RangeForms{first, last, position_});
  }

  void visitParfor(const ParforStmt &parfor) {
    bool outermost = chain_.empty();
    if (outermost)
      accesses_.clear();
    chain_.push_back(&parfor);
    openLoop(parfor);
    // Inner ranges may use outer variables of the same nest; they are all
    // variables of this parfor.
    for (const Range &range : parfor.ranges) {
      visitExpr(*range.lo);
      visitExpr(*range.hi);
      if (range.step)
        visitExpr(*range.step);
      declare(*range.var);
      recordRange(range);
      parforOf_[range.var.get()] = &parfor;
    }
    visitBlock(*parfor.body);
    closeLoop();
    chain_.pop_back();
    if (outermost)
      analyzeNest();
  }

  void visitAssign(const AssignStmt &assign) {
    for (const auto &index : assign.indices)
      visitExpr(*index);
    visitExpr(*assign.value);
    for (const Stmt *loop : openLoops_)
      loops_[loop].assigned.insert(assign.decl);
    lastAssignment_[assign.decl] = ++position_;
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
    openLoop(scan);
    visitRange(scan.ranges.front());
    visitAssign(*scan.write);
    closeLoop();
    const AssignStmt &write = *scan.write;
    const VarDecl &var = *scan.ranges.front().var;
    const std::string what = quoted("scan(" + std::string(reduceOpSpelling(scan.op)) + ")");
    if (const IndexExpr *read = findRead(*write.value, *write.decl)) {
      diagnostics_.error(read->range, "the body of " + what + " reads " + quoted(write.decl->name) +
                                          ", which the scan writes while other iterations may "
                                          "be reading it; read another array");
      diagnostics_.note(write.targetRange, quoted(write.decl->name) + " is written here");
    }
    for (const auto &index : write.indices)
      if (pins(AffineForm::of(*index, letValue()), &var, scan))
        return;
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

  // A let's value, substituted for it in index forms where the let is
  // still equal to it. The let stays a variable of its own (one value for
  // every iteration of a loop outside it)
  //   - when its value is not affine and it is declared outside every parfor
  //     (`let off = q % 2`), so `y[2*i + off]` and `y[2*i + off + 1]` stay
  //     provably different, and
  //   - when its value reads a variable or array that may have changed since
  //     the let (`let q = v; v += 1;`): there `q` is v's old value, and
  //     `A[q + 1]` may be the row `A[v]`.
  AffineForm::LetValue letValue() const {
    return [this](const VarDecl &var) -> const Expr * {
      auto it = letValues_.find(&var);
      if (it == letValues_.end())
        return nullptr;
      AffineForm value = AffineForm::of(*it->second, letValue());
      auto depth = depth_.find(&var);
      if (depth != depth_.end() && depth->second == 0 && !value.isExact())
        return nullptr;
      size_t since = letPosition_.at(&var);
      auto changed = [&](const VarDecl *read) { return mayChangeSince(read, since); };
      if (std::ranges::any_of(value.coefficients | std::views::keys, changed) ||
          std::ranges::any_of(value.nonAffineVars, changed) ||
          std::ranges::any_of(value.loads, changed))
        return nullptr;
      return it->second;
    };
  }

  // Whether `var` (a variable or an array) may have been assigned between
  // position `since` and the point being visited: by an assignment visited
  // since, or anywhere in a loop entered since that encloses the point (its
  // earlier iterations ran the whole body, the part after the point too).
  bool mayChangeSince(const VarDecl *var, size_t since) const {
    auto last = lastAssignment_.find(var);
    if (last != lastAssignment_.end() && last->second > since)
      return true;
    return std::ranges::any_of(enclosingLoops_, [&](const auto &loop) {
      return loop.second > since && assignedWithin(*loop.first).contains(var);
    });
  }

  // The variables and arrays `stmt` may assign (memoised).
  const std::set<const VarDecl *> &assignedWithin(const Stmt &stmt) const {
    auto [it, inserted] = assignedWithin_.try_emplace(&stmt);
    if (inserted)
      collectAssigned(stmt, it->second);
    return it->second;
  }

  static void collectAssigned(const Stmt &stmt, std::set<const VarDecl *> &assigned) {
    switch (stmt.kind) {
    case Stmt::Kind::Block:
      for (const auto &inner : stmt.as<BlockStmt>()->stmts)
        collectAssigned(*inner, assigned);
      return;
    case Stmt::Kind::Assign:
      assigned.insert(stmt.as<AssignStmt>()->decl);
      return;
    case Stmt::Kind::Scan:
      assigned.insert(stmt.as<ScanStmt>()->write->decl);
      return;
    case Stmt::Kind::For:
      return collectAssigned(*stmt.as<ForStmt>()->body, assigned);
    case Stmt::Kind::Parfor:
      return collectAssigned(*stmt.as<ParforStmt>()->body, assigned);
    case Stmt::Kind::If: {
      const auto *ifStmt = stmt.as<IfStmt>();
      collectAssigned(*ifStmt->thenBody, assigned);
      if (ifStmt->elseBody)
        collectAssigned(*ifStmt->elseBody, assigned);
      return;
    }
    case Stmt::Kind::Call:
      for (const auto &arg : stmt.as<CallStmt>()->args)
        if (const auto *name = arg->as<NameExpr>())
          assigned.insert(name->decl);
      return;
    case Stmt::Kind::Decl:
    case Stmt::Kind::Return:
      return;
    }
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

  bool isDeclaredInside(const VarDecl *var, const Stmt &loop) const {
    auto number = declarationNumber_.find(var);
    if (number == declarationNumber_.end())
      return false; // a parameter or a size
    const LoopContents &contents = loops_.at(&loop);
    return number->second >= contents.firstDeclaration && number->second < contents.endDeclaration;
  }

  // Whether a variable, or the elements of an array, may take another value
  // between two iterations of one run of `loop`.
  bool variesAlong(const VarDecl *var, const Stmt &loop) const {
    return isDeclaredInside(var, loop) || loops_.at(&loop).assigned.contains(var);
  }

  // The one rule for what keeps its value across the iterations of one run of
  // `loop` (a parfor or a scan), the term in `except` left out: see the top
  // of the file. What the loop assigns varies: an array it writes may change
  // under a load between two iterations. (A `var` declared outside a parfor
  // and assigned inside it is also reported as a race of its own; the rule
  // does not lean on that report.)
  bool isInvariantAlong(const AffineForm &form, const Stmt &loop,
                        const VarDecl *except = nullptr) const {
    if (form.opaque)
      return false;
    auto varies = [&](const VarDecl *var) { return variesAlong(var, loop); };
    for (const auto &[var, coefficient] : form.coefficients)
      if (var != except && varies(var))
        return false;
    // A product with `except` in it is no term c*except: it varies.
    for (const auto &[monomial, value] : form.products)
      if (std::ranges::any_of(monomial, varies))
        return false;
    return std::ranges::none_of(form.nonAffineVars, varies) &&
           std::ranges::none_of(form.loads, varies);
  }

  // `c*var + (terms invariant along loop)` with c != 0.
  bool pins(const AffineForm &form, const VarDecl *var, const Stmt &loop) const {
    return form.coefficient(var) != 0 && isInvariantAlong(form, loop, var);
  }

  // The dimension of `write` that pins parfor variable `var` along its own
  // parfor (see the top of the file), if any.
  std::optional<size_t> pinningDimension(const Access &write, const VarDecl *var) const {
    for (size_t d = 0; d < write.indices.size(); ++d)
      if (pins(write.indices[d], var, *parforOf_.at(var)) || pinsAsDigit(write.indices[d], var))
        return d;
    return std::nullopt;
  }

  // Whether `form` pins `var` as a digit of a mixed-radix number (rule (c)
  // at the top): every parfor variable x it reads taken as its offset from
  // its range's start, in [0, span_x), the form is `sum(C_x * x) + R` with
  // the C_x, the spans and R invariant along the outermost of those parfors,
  // and the x can be ordered so that |C_x| > sum(|C_y| * (span_y - 1)) over
  // the y before x. Then two iterations that differ in some x give values
  // that differ by at least the highest differing digit's |C_x| less what
  // the lower digits make up.
  bool pinsAsDigit(const AffineForm &form, const VarDecl *var) const {
    std::vector<const VarDecl *> digits;
    std::optional<AffineForm> offsets = asDigitOffsets(form, digits);
    if (!offsets || std::ranges::find(digits, var) == digits.end())
      return false;
    const Stmt &outermost = *parforOf_.at(digits.back());
    std::set<const VarDecl *> positive; // atoms at least 1 when an iteration runs
    std::vector<std::pair<AffineForm, AffineForm>> digitTerms; // |C_x|, span_x - 1
    AffineForm rest = *offsets;
    for (const VarDecl *digit : digits) {
      std::optional<AffineForm> coefficient = offsets->factorOf(digit);
      const AffineForm &first = rangeForms_.at(digit).first;
      const AffineForm &last = rangeForms_.at(digit).last;
      AffineForm spanLess1 = last.plus(first, -1);
      if (!coefficient || !isInvariantAlong(*coefficient, outermost) ||
          !isInvariantAlong(spanLess1, outermost) ||
          std::ranges::any_of(digits, [&](const VarDecl *x) { return coefficient->mentions(x); }))
        return false;
      AffineForm digitAlone;
      digitAlone.coefficients[digit] = 1;
      rest = rest.plus(coefficient->times(digitAlone), -1);
      // An empty range runs nothing: a span that is one atom K has K >= 1.
      AffineForm span = spanLess1;
      span.constant += 1;
      if (span.coefficients.size() == 1 && span.isLinear() && span.constant == 0 &&
          span.coefficients.begin()->second == 1)
        positive.insert(span.coefficients.begin()->first);
      digitTerms.push_back({*coefficient, spanLess1});
    }
    if (!isInvariantAlong(rest, outermost))
      return false;
    for (auto &[coefficient, spanLess1] : digitTerms) {
      if (!atLeast(coefficient, 1, positive))
        coefficient = AffineForm{}.plus(coefficient, -1);
      if (!atLeast(coefficient, 1, positive))
        return false;
    }
    return inRadixOrder(digitTerms, positive);
  }

  // Whether the digits can be ordered so that each |C_x| exceeds what the
  // digits before it make up (greedy: a digit that fits now still fits
  // later, so the order found first will do).
  static bool inRadixOrder(std::vector<std::pair<AffineForm, AffineForm>> digits,
                           const std::set<const VarDecl *> &positive) {
    AffineForm lower; // sum(|C_y| * (span_y - 1)) over the digits placed
    while (!digits.empty()) {
      auto next = std::ranges::find_if(digits, [&](const auto &digit) {
        return atLeast(digit.first.plus(lower, -1), 1, positive);
      });
      if (next == digits.end())
        return false;
      lower = lower.plus(next->first.times(next->second));
      digits.erase(next);
    }
    return true;
  }

  // Whether exact `form` is at least `bound` whenever every atom in
  // `positive` is at least 1: its terms other than the constant have
  // non-negative coefficients over such atoms, so it is at least the sum of
  // its coefficients.
  static bool atLeast(const AffineForm &form, int64_t bound,
                      const std::set<const VarDecl *> &positive) {
    if (!form.isExact())
      return false;
    int64_t least = form.constant;
    for (const auto &[var, coefficient] : form.coefficients) {
      if (coefficient < 0 || !positive.contains(var))
        return false;
      least += coefficient;
    }
    for (const auto &[monomial, value] : form.products) {
      if (value < 0 ||
          !std::ranges::all_of(monomial, [&](auto *x) { return positive.contains(x); }))
        return false;
      least += value;
    }
    return least >= bound;
  }

  // `form` with every parfor variable x it reads taken as its offset from
  // its range's start (x replaced by first_x + x, innermost first, as a
  // range's start reads only variables declared before it); the variables,
  // innermost first, in `digits`. Nullopt when the form is not exact.
  std::optional<AffineForm> asDigitOffsets(const AffineForm &form,
                                           std::vector<const VarDecl *> &digits) const {
    if (!form.isExact())
      return std::nullopt;
    AffineForm offsets = form;
    while (true) {
      const VarDecl *latest = nullptr;
      for (const auto &[var, number] : declarationNumber_)
        if (parforOf_.contains(var) && offsets.mentions(var) &&
            std::ranges::find(digits, var) == digits.end() &&
            (!latest || number > declarationNumber_.at(latest)))
          latest = var;
      if (!latest)
        return offsets;
      std::optional<AffineForm> coefficient = offsets.factorOf(latest);
      const AffineForm &first = rangeForms_.at(latest).first;
      if (!coefficient || !first.isExact())
        return std::nullopt;
      offsets = offsets.plus(coefficient->times(first));
      digits.push_back(latest);
    }
  }

  // True when index `other` (of a second access) never equals index `write`
  // of a write in dimension d, whatever the iterations of `nest`, the
  // outermost parfor that matters for the array (rule (b) above).
  bool provablyDisjoint(const AffineForm &write, const AffineForm &other, const Stmt &nest,
                        const std::vector<const VarDecl *> &vars) const {
    if (!write.isExact() || !other.isExact())
      return false;
    if (isInvariantAlong(write, nest) && isInvariantAlong(other, nest)) {
      AffineForm difference = write.plus(other, -1);
      return alwaysNegative(difference, nest) ||
             alwaysNegative(AffineForm{}.plus(difference, -1), nest);
    }
    for (const VarDecl *var : vars) {
      // Pinned along the whole nest: the other iteration may differ in an
      // outer variable too.
      if (!pins(write, var, nest))
        continue;
      int64_t scale = write.coefficient(var);
      // c*v + r against c*v' + r + k: equal only when c divides k.
      AffineForm difference = other.plus(write, -1);
      if (difference.isConstant() && difference.constant % scale != 0)
        return true;
      if (auto swept = sweepBounds(other, nest);
          swept && outsideSweep(write, var, swept->first, swept->second, nest))
        return true;
    }
    return false;
  }

  // The least and greatest values of `form`, invariant along `nest`, as
  // the variables of the loops and redomaps inside the nest that it reads
  // sweep their ranges (`a[k]` for `k in 0..5`: 0 and 4); nullopt when one
  // of them is a parfor variable or has bounds that vary with one. An
  // invariant form is its own bounds.
  std::optional<std::pair<AffineForm, AffineForm>> sweepBounds(const AffineForm &form,
                                                               const Stmt &nest) const {
    if (!form.isExact())
      return std::nullopt;
    AffineForm low = form, high = form;
    for (const auto &[var, coefficient] : form.coefficients) {
      if (!isDeclaredInside(var, nest))
        continue;
      auto range = rangeForms_.find(var);
      if (range == rangeForms_.end() || parforOf_.contains(var))
        return std::nullopt;
      const AffineForm &first = range->second.first;
      const AffineForm &last = range->second.last;
      // Bounds that vary with an enclosing loop of the nest sweep too: the
      // least first value and the greatest last one (`k in kb..i` inside
      // `for i in kb..ke`: kb to ke - 2). A range's bounds read only
      // variables declared before it, so this ends.
      auto firstBounds = sweepBounds(first, nest);
      auto lastBounds = sweepBounds(last, nest);
      if (!firstBounds || !lastBounds)
        return std::nullopt;
      low.coefficients.erase(var);
      high.coefficients.erase(var);
      low = low.plus(coefficient > 0 ? firstBounds->first : lastBounds->second, coefficient);
      high = high.plus(coefficient > 0 ? lastBounds->second : firstBounds->first, coefficient);
    }
    if (!isInvariantAlong(low, nest) || !isInvariantAlong(high, nest))
      return std::nullopt;
    return std::pair{low, high};
  }

  // True when every value from `otherLow` to `otherHigh` (invariant) lies
  // outside the values the write's index `c*var + rest` takes while `var`
  // sweeps its range.
  bool outsideSweep(const AffineForm &write, const VarDecl *var, const AffineForm &otherLow,
                    const AffineForm &otherHigh, const Stmt &nest) const {
    const AffineForm &lo = rangeForms_.at(var).first;
    const AffineForm &last = rangeForms_.at(var).last;
    if (!lo.isExact() || !last.isExact() || !isInvariantAlong(lo, nest) ||
        !isInvariantAlong(last, nest))
      return false;
    int64_t scale = write.coefficient(var);
    AffineForm rest = write;
    rest.coefficients.erase(var);
    AffineForm low = rest.plus(scale > 0 ? lo : last, scale);
    AffineForm high = rest.plus(scale > 0 ? last : lo, scale);
    return alwaysNegative(otherHigh.plus(low, -1), nest) ||
           alwaysNegative(high.plus(otherLow, -1), nest);
  }

  // True when `form`, invariant along `nest`, is negative for every
  // value the variables of the loops around `nest` may take: each such
  // variable has one value for the whole run of the nest, somewhere in its
  // range (`i - 1 - ke` for `i` of `for i in kb..ke` around the parfor is at
  // most -2). Variables declared later are replaced first, as their bounds
  // may read earlier ones (`for i0 in 0..N { for i in i0..N { ... } }`), so
  // `i - i0` is at most `N - 1 - i0`, then `N - 1`; a variable that occurs
  // twice is bounded at each occurrence on its own, which only widens the
  // bound. A range counts only while the values its bounds read are still
  // those the loop began with: `e = ke;` in the body of `for i in kb..e`
  // leaves `i` below the old `e`.
  bool alwaysNegative(const AffineForm &form, const Stmt &nest) const {
    if (!form.isLinear())
      return false;
    AffineForm greatest = extremeOver(form, /*largest=*/true, [&](const VarDecl *var, bool last) {
      return enclosingRangeBound(var, nest, last);
    });
    return greatest.isConstant() && greatest.constant < 0;
  }

  // The value of linear `form` at its greatest (or least) as each variable
  // `rangeEnd` bounds takes any value of its range: the latest declared is
  // replaced first by the end of its range (`rangeEnd(var, last)`) that
  // makes the form largest (smallest), as a range's bounds read only
  // variables declared before it. A variable it does not bound stays.
  using RangeEnd = std::function<std::optional<AffineForm>(const VarDecl *, bool last)>;
  AffineForm extremeOver(const AffineForm &form, bool largest, const RangeEnd &rangeEnd) const {
    AffineForm value = form;
    std::set<const VarDecl *> unbounded;
    while (true) {
      const VarDecl *latest = nullptr;
      for (const auto &[var, coefficient] : value.coefficients)
        if (!unbounded.contains(var) && declarationNumber_.contains(var) &&
            (!latest || declarationNumber_.at(var) > declarationNumber_.at(latest)))
          latest = var;
      if (!latest)
        return value;
      int64_t coefficient = value.coefficient(latest);
      std::optional<AffineForm> end = rangeEnd(latest, (coefficient > 0) == largest);
      if (!end) {
        unbounded.insert(latest);
        continue;
      }
      value.coefficients.erase(latest);
      value = value.plus(*end, coefficient);
    }
  }

  // The last value (or the first) of the range of `var`, a variable of a
  // loop around `nest`, when that range still holds where the nest runs.
  std::optional<AffineForm> enclosingRangeBound(const VarDecl *var, const Stmt &nest,
                                                bool last) const {
    auto range = rangeForms_.find(var);
    if (range == rangeForms_.end() || isDeclaredInside(var, nest))
      return std::nullopt;
    const AffineForm &bound = last ? range->second.last : range->second.first;
    if (!range->second.first.isLinear() || !range->second.last.isLinear())
      return std::nullopt;
    for (const AffineForm *form : {&range->second.first, &range->second.last})
      for (const auto &[read, coefficient] : form->coefficients)
        if (mayChangeSince(read, range->second.position))
          return std::nullopt;
    return bound;
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

  // True when iterations that differ in the variables of the first `common`
  // parfors of the write's nest never write the same element (silent).
  bool isInjective(const Access &write, size_t common) const {
    size_t targetDepth = depthOf(write.target);
    if (targetDepth >= common)
      return true;
    if (write.indices.empty())
      return false;
    for (const VarDecl *var : relevantVars(write.chain, targetDepth, common))
      if (!pinningDimension(write, var))
        return false;
    return true;
  }

  // A combine that iterations differing in the variables of the first
  // `common` parfors may apply to one element. Iterations of deeper parfors
  // combining into one element belong to one iteration of those: they race
  // with nothing outside their own parfor.
  bool combinesAcrossIterations(const Access &access, size_t common) const {
    return access.combine && !isInjective(access, common);
  }

  static bool sameOperator(const ReduceOp &a, const ReduceOp &b) {
    return a.kind == b.kind && a.userFn == b.userFn;
  }

  // Checks a write against another access of the same array (see the rules
  // for combines at the top).
  bool checkAccessPair(const Access &write, const Access &other) {
    // Combines that several iterations of their nests may make to one
    // element commute when they share the operator, wherever they meet.
    if (other.isWrite && combinesAcrossIterations(write, write.chain.size()) &&
        combinesAcrossIterations(other, other.chain.size()) &&
        sameOperator(*write.combine, *other.combine))
      return true;
    size_t common = commonDepth(write, other);
    bool writeCombines = combinesAcrossIterations(write, common);
    bool otherCombines = other.isWrite && combinesAcrossIterations(other, common);
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
      if (provablyDisjoint(combine.indices[d], other.indices[d], *combine.chain[targetDepth], vars))
        return true;
    const VarDecl *free = vars.front();
    for (const VarDecl *var : vars)
      if (!pinningDimension(combine, var)) {
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
      if (pinningDimension(write, var))
        continue;
      bool mentioned = false;
      for (const AffineForm &index : write.indices)
        mentioned = mentioned || index.mentions(var);
      // A var set before the parfor is an invariant like any other; one
      // that varies along it is what the message blames.
      const VarDecl *mutableIndex = nullptr;
      auto blame = [&](const VarDecl *atom) {
        if (!mutableIndex && atom->kind == VarDecl::Kind::Var &&
            variesAlong(atom, *parforOf_.at(var)))
          mutableIndex = atom;
      };
      for (const AffineForm &index : write.indices) {
        for (const auto &[atom, coefficient] : index.coefficients)
          blame(atom);
        for (const auto &[monomial, value] : index.products)
          std::ranges::for_each(monomial, blame);
        std::ranges::for_each(index.nonAffineVars, blame);
      }
      // An index may depend on var only through the range of a variable
      // it reads (group g's channels `c in g * K..(g + 2) * K`).
      const VarDecl *rangedByVar = nullptr;
      for (const AffineForm &index : write.indices)
        for (const auto &[atom, coefficient] : index.coefficients)
          if (auto range = rangeForms_.find(atom);
              !rangedByVar && range != rangeForms_.end() &&
              (range->second.first.mentions(var) || range->second.last.mentions(var)))
            rangedByVar = atom;
      if (!mentioned && rangedByVar)
        diagnostics_.error(write.range,
                           "race: the write to " + name + " depends on parfor variable " +
                               quoted(var->name) + " only through the range of " +
                               quoted(rangedByVar->name) + ", and the ranges of different " +
                               "iterations over " + quoted(var->name) +
                               " may overlap, so they may write the same element");
      else if (!mentioned && mutableIndex)
        diagnostics_.error(write.range, "race: the write to " + name + " is indexed by " +
                                            quoted(mutableIndex->name) +
                                            ", a 'var', whose values the checker does not "
                                            "follow, so it cannot prove the write injective in "
                                            "parfor variable " +
                                            quoted(var->name) + "; compute the index with 'let'");
      else if (const VarDecl *loaded = readArrayOf(write.indices); !mentioned && loaded)
        diagnostics_.error(write.range, "race: the write to " + name +
                                            " is indexed by an element of " + quoted(loaded->name) +
                                            ", a value the checker cannot follow, so it cannot "
                                            "prove that different iterations over " +
                                            quoted(var->name) +
                                            " write different elements (a 'combine' may update "
                                            "an element from several iterations)");
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

  // The first array an index reads an element of (`col` in `level[col[e]]`).
  static const VarDecl *readArrayOf(const std::vector<AffineForm> &indices) {
    for (const AffineForm &index : indices)
      if (!index.loads.empty())
        return std::ranges::min(index.loads, {},
                                [](const VarDecl *array) { return array->range.begin; });
    return nullptr;
  }

  bool checkPair(const Access &write, const Access &other) {
    size_t common = commonDepth(write, other);
    size_t targetDepth = depthOf(write.target);
    if (targetDepth >= common || write.indices.size() != other.indices.size())
      return true;
    std::vector<const VarDecl *> vars = relevantVars(write.chain, targetDepth, common);
    for (size_t d = 0; d < write.indices.size(); ++d)
      if (provablyDisjoint(write.indices[d], other.indices[d], *write.chain[targetDepth], vars))
        return true;
    if (onOppositeSidesOfADiagonal(write, other))
      return true;
    for (const VarDecl *var : vars) {
      std::optional<size_t> d = pinningDimension(write, var);
      // Exact forms only: two non-affine parts over the same variables may
      // still differ (`N*N` and `N/2`).
      if (d && write.indices[*d].isExact() && write.indices[*d] == other.indices[*d])
        continue;
      const std::string name = quoted(write.target->name);
      // A combine checked as a plain write is named as what it is.
      const std::string written = write.combine ? "combined into" : "written";
      if (other.isWrite)
        diagnostics_.error(other.range, "race: this element of " + name + " may also be " +
                                            written + " by another iteration over " +
                                            quoted(var->name));
      else
        diagnostics_.error(other.range, "read-write race: this element of " + name + " may be " +
                                            written + " by another iteration over " +
                                            quoted(var->name));
      diagnostics_.note(write.range, name + " is " + written + " here");
      return false;
    }
    return true;
  }

  // True when, for two dimensions d1 and d2, every element one access
  // touches has index d2 - index d1 at least 1 and every element the other
  // touches has it at most 0, whatever the iterations (rule (c)): a
  // triangle and its mirror (`c[i][j]` and `c[j][i]` for j in i+1..M), or a
  // strict triangle read while the other is written. The difference's least
  // and greatest values are found by replacing the loop variables it reads
  // by the ends of their ranges (smallestOrLargest).
  bool onOppositeSidesOfADiagonal(const Access &write, const Access &other) const {
    size_t rank = write.indices.size();
    for (size_t d1 = 0; d1 < rank; ++d1)
      for (size_t d2 = 0; d2 < rank; ++d2) {
        if (d1 == d2)
          continue;
        AffineForm written = write.indices[d2].plus(write.indices[d1], -1);
        AffineForm touched = other.indices[d2].plus(other.indices[d1], -1);
        auto writtenLeast = smallestOrLargest(written, /*largest=*/false);
        auto touchedMost = smallestOrLargest(touched, /*largest=*/true);
        if (writtenLeast && touchedMost && writtenLeast->isConstant() &&
            touchedMost->isConstant() && writtenLeast->constant >= 1 && touchedMost->constant <= 0)
          return true;
        auto writtenMost = smallestOrLargest(written, /*largest=*/true);
        auto touchedLeast = smallestOrLargest(touched, /*largest=*/false);
        if (writtenMost && touchedLeast && writtenMost->isConstant() &&
            touchedLeast->isConstant() && writtenMost->constant <= 0 && touchedLeast->constant >= 1)
          return true;
      }
    return false;
  }

  // The least (or greatest) value of linear `form` as each loop, parfor,
  // redomap or scan variable it reads takes any value of its range, inside
  // the nest or around it (extremeOver: `j - i` for j in i + 1..M is at
  // least i + 1 - i = 1). A range whose bounds are not linear, or may have
  // changed since the loop began, bounds nothing.
  std::optional<AffineForm> smallestOrLargest(const AffineForm &form, bool largest) const {
    if (!form.isLinear())
      return std::nullopt;
    return extremeOver(form, largest,
                       [&](const VarDecl *var, bool last) -> std::optional<AffineForm> {
                         auto range = rangeForms_.find(var);
                         if (range == rangeForms_.end() || !range->second.first.isLinear() ||
                             !range->second.last.isLinear())
                           return std::nullopt;
                         for (const AffineForm *end : {&range->second.first, &range->second.last})
                           for (const auto &[read, coefficient] : end->coefficients)
                             if (mayChangeSince(read, range->second.position))
                               return std::nullopt;
                         return last ? range->second.last : range->second.first;
                       });
  }

  // What a parfor or scan declares, as a range of declaration numbers, and
  // the variables and arrays it assigns.
  struct LoopContents {
    size_t firstDeclaration = 0;
    size_t endDeclaration = 0;
    std::set<const VarDecl *> assigned;
  };

  DiagnosticEngine &diagnostics_;
  std::map<const VarDecl *, size_t> depth_;             // the number of enclosing parfors
  std::map<const VarDecl *, size_t> declarationNumber_; // in the order of declaration
  size_t declarations_ = 0;
  std::map<const Stmt *, LoopContents> loops_;
  std::vector<const Stmt *> openLoops_;
  std::map<const VarDecl *, const ParforStmt *> parforOf_; // parfor variables
  std::map<const VarDecl *, const Expr *> letValues_;
  // Where lets, assignments and loops are met, in the order of the visit.
  size_t position_ = 0;
  std::map<const VarDecl *, size_t> letPosition_;
  std::map<const VarDecl *, size_t> lastAssignment_; // of a variable or array
  std::vector<std::pair<const Stmt *, size_t>> enclosingLoops_;
  mutable std::map<const Stmt *, std::set<const VarDecl *>> assignedWithin_;
  // The first and last values of every loop, redomap and scan variable.
  struct RangeForms {
    AffineForm first;
    AffineForm last;
    size_t position; // where the bounds were evaluated, for mayChangeSince
  };
  std::map<const VarDecl *, RangeForms> rangeForms_;
  std::vector<const ParforStmt *> chain_;
  std::vector<Access> accesses_; // of the current outermost parfor nest
};

} // namespace

void checkParforRaces(const KernelDecl &kernel, DiagnosticEngine &diagnostics) {
  RaceChecker(diagnostics).checkKernel(kernel);
}

} // namespace loopc
