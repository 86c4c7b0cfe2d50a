// partition_borders: a parfor whose points test, inside a loop, whether the
// element they read lies inside an array, as a padded convolution does,
//
//   parallel for y in [0, H), x in [0, W) {
//     reduce acc += over c, u in [0, K), v in [0, K):
//       select(y + u - P >= 0 && y + u - P < H && x + v - P >= 0 && ..., I[c][y + u - P][x + v - P]
//       * F[..], 0.0)
//
// evaluates the test at every step of the loop, for every point, and in a GPU
// kernel branches around every load. For most points the test holds at every
// step: those whose window lies inside the array. The nest is split along
// each dimension such a test bounds into the range where it holds for every
// step (the interior, where the test is dropped) and the ranges before and
// after it (the borders, which keep it): with two dimensions, the interior
// and four borders,
//
//   parallel for y in [0, P)           -- the top rows, tests kept
//   parallel for y in [P, H - P) {
//     parallel for x in [0, P)         -- the left columns, tests kept
//     parallel for x in [P, W - P)     -- the interior: I[c][y + u - P][x + v - P] * F[..]
//     parallel for x in [W - P, W)     -- the right columns, tests kept
//   }
//   parallel for y in [H - P, H)       -- the bottom rows, tests kept
//
// each a nest of its own (a kernel on the GPU, a parallel loop on the CPU),
// so the interior gets everything the later passes do for a nest without
// tests (register tiles, staged windows, vector loops). A padded
// convolution's interior then runs as its unpadded form does.
//
// Why it is legal: the points of a parfor are independent, so its range may
// be run in pieces, one after another. A conjunct `c * y + sum(b_i * u_i) +
// rest >= 0` (every comparison of integers is one: `a < b` is `b - a - 1 >=
// 0`) with c = +1 or -1 on one point variable y, the other terms on loops
// inside the point whose ranges are the same for every point, holds at every
// step for the points where it holds at the step that makes `sum(b_i * u_i)`
// least (each u_i at the end of its range the sign of b_i says); that bounds
// y from below (c = +1) or above (c = -1). In the interior the conjunct is
// true, so it is dropped, and a select or branch left without a test is its
// taken side. Only conjuncts of the conditions of selects and branches are
// dropped, never anything that computes a value.
//
// Not split: a test evaluated once per point (the saving is one test a point,
// less than the borders' launches), a bound on a point variable scaled by more
// than 1 (`2 * y + u`), a conjunct on two point variables or on a loop whose
// range moves with the point, a bound that reads memory, and a nest where no
// dimension has an interior bound. On the GPU the host takes the split only
// for a nest large enough and mostly interior (border_min_points, below), and
// a nest whose ranges move with its own variables, which the host cannot
// count, stays whole.
#include "passes/Passes.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/IndexRange.h"

#include <algorithm>
#include <map>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// The bounds the conjuncts of a nest's tests put on its point variables
// where they hold at every step, and the conjuncts each bound comes from.
struct InteriorBounds {
  std::vector<LinearForm> lower; // the point variable >= each
  std::vector<LinearForm> upper; // the point variable < each
  std::set<const ExprNode *> conjuncts;
};

// `form >= 0` for a comparison of integers, else null.
Expr nonNegativeForm(const Binary &comparison) {
  if (!isInteger(comparison.lhs->type) || !isInteger(comparison.rhs->type))
    return nullptr;
  Expr lhs = toI64(comparison.lhs), rhs = toI64(comparison.rhs);
  switch (comparison.op) {
  case BinaryOpKind::Ge:
    return sub(lhs, rhs);
  case BinaryOpKind::Gt:
    return sub(sub(lhs, rhs), makeI64(1));
  case BinaryOpKind::Le:
    return sub(rhs, lhs);
  case BinaryOpKind::Lt:
    return sub(sub(rhs, lhs), makeI64(1));
  default:
    return nullptr;
  }
}

// `form` written as a reader would: its terms with a positive coefficient
// added, then those with a negative one subtracted, then the constant.
Expr writtenOut(const LinearForm &form) {
  Expr sum;
  auto term = [](const Expr &atom, int64_t coefficient) {
    Expr value = toI64(atom);
    return coefficient == 1 ? value : mul(value, makeI64(coefficient));
  };
  for (bool positive : {true, false})
    for (const auto &[key, entry] : form.terms) {
      auto [atom, coefficient] = entry;
      if ((coefficient > 0) != positive)
        continue;
      if (!sum)
        sum = term(atom, coefficient);
      else if (positive)
        sum = add(sum, term(atom, coefficient));
      else
        sum = sub(sum, term(atom, -coefficient));
    }
  if (!sum)
    return makeI64(form.constant);
  if (form.constant > 0)
    return add(sum, makeI64(form.constant));
  if (form.constant < 0)
    return sub(sum, makeI64(-form.constant));
  return sum;
}

// Walks a nest's point body for the tests inside its loops and derives, per
// point variable, the range where each conjunct holds at every step.
class TestFinder : public IRVisitor {
public:
  explicit TestFinder(const std::vector<const For *> &chain) {
    for (const For *loop : chain) {
      pointVars_.insert(loop->var);
      moving_.insert(loop->var);
      scope_.bindLoop(loop->var);
    }
  }

  std::map<std::string, InteriorBounds> bounds;
  // Conjuncts met more than once (a node shared by two places): left alone.
  std::set<const ExprNode *> sharedConjuncts;
  // Whether a test inside a loop had a conjunct on a point variable at all
  // (for the remark when none bounds one).
  bool sawPointTest = false;

protected:
  void visitFor(const For &node) override {
    enterLoop(node.var, node.min, node.extent);
    ++loopDepth_;
    visit(node.body);
    --loopDepth_;
    leaveLoop(node.var);
  }

  void visitReduce(const Reduce &node) override {
    for (const Expr &index : node.indices)
      visit(index);
    for (const Reduce::Loop &loop : node.loops)
      enterLoop(loop.var, loop.min, loop.extent);
    ++loopDepth_;
    if (node.valueSetup)
      visit(node.valueSetup);
    visit(node.value);
    --loopDepth_;
    for (auto loop = node.loops.rbegin(); loop != node.loops.rend(); ++loop)
      leaveLoop(loop->var);
  }

  void visitLetStmt(const LetStmt &node) override {
    visit(node.value);
    scope_.bindLet(node.var, node.value);
    moving_.insert(node.var);
    visit(node.body);
    scope_.unbind(node.var);
  }

  void visitSelect(const Select &node) override {
    if (loopDepth_ > 0)
      study(node.cond);
    IRVisitor::visitSelect(node);
  }

  void visitIfThenElse(const IfThenElse &node) override {
    if (loopDepth_ > 0)
      study(node.cond);
    IRVisitor::visitIfThenElse(node);
  }

private:
  struct StepRange {
    Expr min, extent;
  };

  void enterLoop(const std::string &var, const Expr &min, const Expr &extent) {
    scope_.bindLoop(var);
    // A range that reads no point variable nor anything bound in the point
    // is the same for every point.
    bool fixed = !usesAnyVar(min, moving_) && !usesAnyVar(extent, moving_);
    if (fixed)
      stepRanges_[var] = {min, extent};
    moving_.insert(var);
  }

  void leaveLoop(const std::string &var) {
    scope_.unbind(var);
    stepRanges_.erase(var);
  }

  void study(const Expr &condition) {
    for (const Expr &conjunct : conjunctsOf(condition)) {
      const auto *comparison = conjunct->as<Binary>();
      Expr form = comparison ? nonNegativeForm(*comparison) : nullptr;
      if (!form)
        continue;
      AffineIndex affine = scope_.analyze(form);
      std::vector<std::string> onPoints;
      for (const auto &[var, coefficient] : affine.coefficients)
        if (pointVars_.contains(var))
          onPoints.push_back(var);
      for (const std::string &var : affine.nonAffineVars)
        if (pointVars_.contains(var))
          onPoints.push_back(var);
      if (onPoints.empty())
        continue;
      sawPointTest = true;
      if (!affine.isAffine() || onPoints.size() != 1)
        continue;
      const std::string &point = onPoints.front();
      int64_t scale = affine.coefficient(point);
      if (scale != 1 && scale != -1)
        continue;
      // The least the steps' terms make: each step variable at the end of
      // its range that its coefficient's sign says.
      // (A bound the host computes reads no memory and nothing bound in
      // the point.)
      Expr least = affine.rest ? affine.rest : makeI64(0);
      if (usesAnyVar(least, moving_) || !loadsIn(least).empty())
        continue;
      bool fixedSteps = true;
      for (const auto &[var, coefficient] : affine.coefficients) {
        if (var == point)
          continue;
        auto range = stepRanges_.find(var);
        if (range == stepRanges_.end()) {
          fixedSteps = false;
          break;
        }
        Expr at = coefficient > 0
                      ? toI64(range->second.min)
                      : sub(add(toI64(range->second.min), toI64(range->second.extent)), makeI64(1));
        least = add(least, mul(makeI64(coefficient), at));
      }
      if (!fixedSteps)
        continue;
      if (!seen_.insert(conjunct.get()).second) {
        sharedConjuncts.insert(conjunct.get());
        continue;
      }
      InteriorBounds &pointBounds = bounds[point];
      // y + least >= 0: y >= -least; -y + least >= 0: y < least + 1.
      LinearForm leastForm = linearFormOf(least);
      if (scale == 1)
        pointBounds.lower.push_back(leastForm.scaled(-1));
      else
        pointBounds.upper.push_back(leastForm.plus(LinearForm{{}, 1}, 1));
      pointBounds.conjuncts.insert(conjunct.get());
    }
  }

  std::set<std::string> pointVars_;
  // The point variables and the names bound in the point: what a range or
  // bound the same for every point may not read.
  std::set<std::string> moving_;
  std::map<std::string, StepRange> stepRanges_;
  std::set<const ExprNode *> seen_;
  AffineScope scope_;
  int loopDepth_ = 0;
};

// `expr` without the conjuncts `dropped` names: true when none is left.
Expr withoutConjuncts(const Expr &expr, const std::set<const ExprNode *> &dropped) {
  Expr kept;
  for (const Expr &conjunct : conjunctsOf(expr)) {
    if (dropped.contains(conjunct.get()))
      continue;
    kept = kept ? logicalAnd(kept, conjunct) : conjunct;
  }
  return kept ? kept : std::make_shared<BoolImm>(true);
}

// The point body of the interior: the tests' proven conjuncts dropped, and a
// select or branch left without a test replaced by its taken side.
class ProvenTestDropper : public IRMutator {
public:
  explicit ProvenTestDropper(const std::set<const ExprNode *> &proven) : proven_(proven) {}

protected:
  Expr visitSelect(const Select &node, const Expr &self) override {
    Expr cond = withoutConjuncts(node.cond, proven_);
    Expr thenValue = mutate(node.thenValue);
    if (const auto *always = cond->as<BoolImm>(); always && always->value)
      return thenValue;
    Expr elseValue = mutate(node.elseValue);
    cond = mutate(cond);
    if (cond == node.cond && thenValue == node.thenValue && elseValue == node.elseValue)
      return self;
    return select(cond, thenValue, elseValue);
  }

  Stmt visitIfThenElse(const IfThenElse &node, const Stmt &self) override {
    Expr cond = withoutConjuncts(node.cond, proven_);
    Stmt thenCase = mutate(node.thenCase);
    if (const auto *always = cond->as<BoolImm>(); always && always->value)
      return thenCase;
    Stmt elseCase = node.elseCase ? mutate(node.elseCase) : nullptr;
    cond = mutate(cond);
    if (cond == node.cond && thenCase == node.thenCase && elseCase == node.elseCase)
      return self;
    return std::make_shared<IfThenElse>(cond, thenCase, elseCase);
  }

private:
  const std::set<const ExprNode *> &proven_;
};

// The nest `chain` heads with its loop `level` over [min, min + extent) and
// `body` at its point.
Stmt rebuildChain(const std::vector<const For *> &chain, size_t level, const Expr &min,
                  const Expr &extent, const Stmt &body) {
  Stmt nest = body;
  for (size_t k = chain.size(); k-- > 0;) {
    const For &loop = *chain[k];
    bool split = k == level;
    nest = std::make_shared<For>(loop.var, split ? min : loop.min, split ? extent : loop.extent,
                                 loop.forKind, loop.gpuDim, nest, loop.source);
  }
  return nest;
}

// The max (or min) of `values`, without the terms another term of the same
// variables and a constant beyond it makes redundant (`min(H, H - 1)` is
// `H - 1`).
Expr extremeOf(std::vector<LinearForm> values, bool greatest) {
  std::vector<LinearForm> kept;
  for (const LinearForm &value : values) {
    auto same = std::ranges::find_if(kept, [&](const LinearForm &k) { return k.sameTerms(value); });
    if (same == kept.end())
      kept.push_back(value);
    else if (greatest ? value.constant > same->constant : value.constant < same->constant)
      *same = value;
  }
  Expr result = writtenOut(kept.front());
  for (size_t k = 1; k < kept.size(); ++k)
    result =
        makeBinary(greatest ? BinaryOpKind::Max : BinaryOpKind::Min, result, writtenOut(kept[k]));
  return result;
}

// On the GPU, the least interior points per border point for the split to
// pay, beside the least points of the nest, border_min_points
// (BorderPartitioner::visitFor).
constexpr int64_t kGpuInteriorPerBorderPoint = 16;

// An i64 range bound in the type of the loop it bounds.
Expr inLoopType(const Expr &value, const For &loop) { return castTo(loop.min->type, value); }

class BorderPartitioner : public IRMutator {
public:
  BorderPartitioner(PipelineTarget target, int64_t gpuMinPoints, const RemarkReporter &remarks)
      : target_(target), gpuMinPoints_(gpuMinPoints), remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::Parallel)
      return IRMutator::visitFor(node, self);
    std::vector<const For *> chain = parallelChain(node);
    TestFinder finder(chain);
    finder.visit(chain.back()->body);
    std::vector<std::string> splitVars;
    for (const For *loop : chain)
      if (finder.bounds.contains(loop->var))
        splitVars.push_back(loop->var);
    if (splitVars.empty()) {
      if (finder.sawPointTest)
        remarks_.declined(node.source,
                          "not split into its interior and borders: no test inside its loops "
                          "bounds one of its variables alone, with a coefficient of 1, over "
                          "steps whose ranges are the same for every point");
      return self;
    }
    for (auto &[var, pointBounds] : finder.bounds)
      for (const ExprNode *shared : finder.sharedConjuncts)
        pointBounds.conjuncts.erase(shared);
    int borders = 0;
    std::vector<std::string> ranges;
    std::map<std::string, Expr> interiorWidths;
    Stmt split =
        partition(chain, 0, chain.back()->body, finder.bounds, borders, ranges, interiorWidths);
    std::string list;
    for (size_t k = 0; k < ranges.size(); ++k)
      list += (k == 0 ? "" : k + 1 == ranges.size() ? " and " : ", ") + ranges[k];
    std::string what = "split into its interior, where the tests of " + list +
                       " hold at every step and are dropped, and " +
                       (borders == 1 ? std::string("a border that keeps them")
                                     : std::to_string(borders) + " borders that keep them");
    if (target_ != PipelineTarget::Gpu || gpuMinPoints_ == 0) {
      remarks_.applied(node.source, what);
      return split;
    }
    // On the GPU a border's grid is small (its threads each running the
    // whole window) and a column border's threads run down a column, each
    // reading rows of its own: its time hardly shrinks with the nest, so the
    // split pays only on nests large enough and mostly interior, which the
    // host tests. The thresholds are where the performance model's
    // predictions cross for padded convolutions (h100; channels, size,
    // window; the ratio of interior to border points): one nest faster for
    // 64, 128^2, 3 x 3 (ratio 31, 1.05M points) and 64, 128^2, 5 x 5 (ratio
    // 15), the split for 64, 144^2, 3 x 3, 64, 160^2, 5 x 5 (ratio 19) and
    // 3 -> 64, 224^2, 7 x 7 (ratio 18). Missed: many channels on small
    // images (256, 56^2, 3 x 3, faster split).
    Expr points, interiorPoints;
    for (const For *loop : chain) {
      Expr extent = maxOf(toI64(loop->extent), makeI64(0));
      auto width = interiorWidths.find(loop->var);
      Expr inside = width == interiorWidths.end() ? extent : width->second;
      points = points ? mul(points, extent) : extent;
      interiorPoints = interiorPoints ? mul(interiorPoints, inside) : inside;
    }
    std::set<std::string> chainVars;
    for (const For *loop : chain)
      chainVars.insert(loop->var);
    if (usesAnyVar(interiorPoints, chainVars) || usesAnyVar(points, chainVars)) {
      remarks_.declined(node.source, "not split into its interior and borders: its ranges move "
                                     "with its own variables, so the host cannot count its "
                                     "points to weigh the borders' launches on the GPU");
      return self;
    }
    Expr pays = logicalAnd(greaterOrEqual(points, makeI64(gpuMinPoints_)),
                           greaterOrEqual(interiorPoints, mul(makeI64(kGpuInteriorPerBorderPoint),
                                                              sub(points, interiorPoints))));
    remarks_.applied(node.source, what + ", where the nest has " + std::to_string(gpuMinPoints_) +
                                      " points or more (border_min_points) and its interior " +
                                      std::to_string(kGpuInteriorPerBorderPoint) +
                                      " times its borders' (tested on the host)");
    return std::make_shared<IfThenElse>(pays, split, renameBindings(self, ".whole"));
  }

private:
  // The nest from `level` on: the first loop at or after it that a bound
  // splits is cut into its first border, its interior (whose body drops the
  // loop's proven conjuncts, and is split further along the next loops) and
  // its last border.
  Stmt partition(const std::vector<const For *> &chain, size_t level, const Stmt &body,
                 const std::map<std::string, InteriorBounds> &bounds, int &borders,
                 std::vector<std::string> &ranges, std::map<std::string, Expr> &interiorWidths) {
    size_t at = level;
    while (at < chain.size() && !bounds.contains(chain[at]->var))
      ++at;
    if (at == chain.size())
      return rebuildChain(chain, chain.size(), nullptr, nullptr, body);
    const For &loop = *chain[at];
    const InteriorBounds &pointBounds = bounds.at(loop.var);
    // [first, end) cut at low = max(first, lower...) and high = min(end,
    // upper...): the first border [first, min(end, low)), the interior
    // [low, high) and the last border [max(min(end, low), high), end), each
    // empty where it should be and together exactly [first, end). The
    // borders' extents are written from the differences of the bounds,
    // `max(0, P - 0)` rather than `min(H, P) - 0`, so a border a constant
    // number of points wide has a width whose form says so (map_to_gpu runs
    // such a loop in each thread); the interior's reads its bounds, so its
    // indices are proven in range by them.
    LinearForm first = linearFormOf(toI64(loop.min));
    LinearForm end = first.plus(linearFormOf(toI64(loop.extent)), 1);
    std::vector<LinearForm> lows = {first}, highs = {end};
    std::vector<LinearForm> lowsPastFirst = {LinearForm{}}, endPastLows = {end.plus(first, -1)},
                            endPastHighs = {LinearForm{}};
    for (const LinearForm &lower : pointBounds.lower) {
      lows.push_back(lower);
      lowsPastFirst.push_back(lower.plus(first, -1));
      endPastLows.push_back(end.plus(lower, -1));
    }
    for (const LinearForm &upper : pointBounds.upper) {
      highs.push_back(upper);
      endPastHighs.push_back(end.plus(upper, -1));
    }
    Expr low = extremeOf(lows, true), high = extremeOf(highs, false);
    ranges.push_back(remarks_.programName(loop.var) + " in [" + toString(low) + ", " +
                     toString(high) + ")");

    Stmt interiorBody = ProvenTestDropper(pointBounds.conjuncts).mutate(body);
    // The chain with this loop narrowed to the interior, split further.
    std::vector<const For *> narrowed = chain;
    auto interiorLoop = std::make_shared<For>(loop.var, inLoopType(low, loop),
                                              inLoopType(simplifyExpr(sub(high, low)), loop),
                                              loop.forKind, loop.gpuDim, loop.body, loop.source);
    narrowed[at] = interiorLoop.get();
    std::vector<Stmt> pieces;
    auto border = [&](Expr min, Expr extent) {
      pieces.push_back(renameBindings(rebuildChain(chain, at, inLoopType(min, loop),
                                                   inLoopType(simplifyExpr(extent), loop), body),
                                      ".border" + std::to_string(borders++)));
    };
    auto atLeastZero = [](Expr value) { return maxOf(makeI64(0), std::move(value)); };
    if (!pointBounds.lower.empty())
      border(writtenOut(first),
             minOf(writtenOut(end.plus(first, -1)), extremeOf(lowsPastFirst, true)));
    pieces.push_back(nullptr); // the interior's place
    size_t interiorAt = pieces.size() - 1;
    if (!pointBounds.upper.empty())
      border(maxOf(minOf(writtenOut(end), low), high),
             minOf(atLeastZero(extremeOf(endPastLows, false)), extremeOf(endPastHighs, true)));
    interiorWidths[loop.var] = simplifyExpr(atLeastZero(sub(high, low)));
    pieces[interiorAt] =
        partition(narrowed, at + 1, interiorBody, bounds, borders, ranges, interiorWidths);
    return makeBlock(std::move(pieces));
  }

  PipelineTarget target_;
  int64_t gpuMinPoints_;
  const RemarkReporter &remarks_;
};

} // namespace

Function partitionBorders(Function function, PipelineTarget target, int64_t gpuMinPoints,
                          const RemarkReporter &remarks) {
  BorderPartitioner partitioner(target, gpuMinPoints, remarks);
  function.body = partitioner.mutate(function.body);
  return function;
}

} // namespace loopc::passes
