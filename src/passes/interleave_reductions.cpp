// interleave_reductions (CPU): a thread's serial loop folding values into a
// register cell runs one dependent combine per element, at the operator's
// latency, unless LLVM vectorizes the chain, which it does for sums,
// products and integer operators but not for a float min or max (LLVM 19
// wants to be told NaN and signed zeros cannot occur, and the language's min
// and max see both: IEEE maximumNumber, NaN skipped, -0 < +0) nor for a
// user's `assoc fn` (an expression, not an operator it knows). When the
// operator commutes (any builtin, or a user's the checker found symmetric:
// the reduction step is marked), the loop instead walks blocks of L
// elements, element l of a block into lane l of kLaneBytes of lanes: a
// `vectorized` loop over the lanes, an elementwise map LLVM vectorizes with
// the lanes in registers (a lane index computed as (c - first) % L would
// defeat it). The lanes start at the neutral element (the language lets a
// reduction combine it in once per partial result) and halve into the cell
// at the end:
//
//   for c in [lo, lo + n) {        if (n >= 2 * L) {
//     cell = op(cell, v(c))          register f32 cell.lanes[L]
//   }                                for l in [0, L): cell.lanes[l] = neutral
//                                    for c.block in [0, n / L) {
//                                      vectorized for c.lane in [0, L) {
//                                        let c = lo + c.block * L + c.lane
//                                        cell.lanes[c.lane] = op(cell.lanes[c.lane], v(c))
//                                    }}
//                                    for l in [0, L/2): cell.lanes[l] = op(.., cell.lanes[l + L/2])
//                                    ... down to one lane; cell = op(cell, cell.lanes[0])
//                                    for c in [lo + n / L * L, lo + n): the original body
//                                  } else { the original loop }
//
// Steps fused into one walk (fuse_sibling_reductions) get lanes each. Only
// loops that walk memory contiguously and stay in their thread (a CPU
// thread nest runs a loop that reads neighbouring elements across threads
// outside the thread loop, vectorized across threads instead; a loop around
// a vectorized one stays) qualify, and only when their trip count may reach
// 2 * L. So do the serial loops of the host code that walk memory
// contiguously: a whole-array reduction of few points, which
// lower_reductions keeps there (a float maximum of 16000 points in a time
// loop, as one chain, waited at every point for the point before).
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/lowering/ReductionTrees.h"

#include <algorithm>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// The lanes of one cell: four AVX-512 vectors, enough to cover a vector
// combine's latency at one load per cycle.
constexpr int64_t kLaneBytes = 256;

// The lanes of a cell of `element`s.
int64_t laneCount(ScalarType element) { return kLaneBytes / scalarSize(element); }

// A reduction step into a register cell (its operator commutes).
const Store *cellStep(const StmtNode *node) {
  const auto *store = node ? node->as<Store>() : nullptr;
  bool cell =
      store && store->buffer->memory == MemorySpace::Register && store->buffer->shape.empty();
  return cell && store->reduction ? store : nullptr;
}

// Whether LLVM leaves a step's chain of combines one at a time: a float
// min or max (see the top), or a user's operator, an expression LLVM does
// not know as a reduction at all. It vectorizes sums, products and integer
// operators itself.
bool needsLanes(const Store &step) {
  using Kind = ReduceOperator::Kind;
  Kind kind = step.reduction->op.kind;
  return kind == Kind::User ||
         ((kind == Kind::Min || kind == Kind::Max) && isFloat(step.buffer->element));
}

// The steps of a loop body made of lets and then reduction steps into
// distinct cells of one type (each step may have lets of its own: a fused
// group's members keep their value setups), some of which need lanes, when
// nothing else in the body reads a cell; else nothing.
std::optional<std::vector<const Store *>> laneSteps(const Stmt &body) {
  std::vector<Expr> lets;
  auto afterLets = [&](const Stmt &stmt) {
    const StmtNode *node = skipSingletonBlocks(stmt);
    while (node && node->kind == StmtNode::Kind::LetStmt) {
      lets.push_back(node->as<LetStmt>()->value);
      node = skipSingletonBlocks(node->as<LetStmt>()->body);
    }
    return node;
  };
  const StmtNode *node = afterLets(body);
  std::vector<const StmtNode *> stmts;
  if (const auto *block = node ? node->as<Block>() : nullptr)
    for (const Stmt &stmt : block->stmts)
      stmts.push_back(afterLets(stmt));
  else
    stmts.push_back(node);
  std::vector<const Store *> steps;
  std::set<const BufferInfo *> cells;
  for (const StmtNode *stmt : stmts) {
    const Store *step = cellStep(stmt);
    if (!step || !cells.insert(step->buffer.get()).second ||
        (!steps.empty() && step->buffer->element != steps.front()->buffer->element))
      return std::nullopt;
    steps.push_back(step);
  }
  if (std::ranges::none_of(steps, [](const Store *step) { return needsLanes(*step); }))
    return std::nullopt;
  for (const Expr &value : lets)
    for (const BufferInfo *read : buffersRead(value))
      if (cells.contains(read))
        return std::nullopt;
  // A step reads its own cell (the combine's left operand) and no other.
  for (const Store *step : steps)
    for (const BufferInfo *read : buffersRead(step->value))
      if (read != step->buffer.get() && cells.contains(read))
        return std::nullopt;
  return steps;
}

// `loop` folding into lanes, as the comment at the top shows.
Stmt interleaved(const For &loop, const std::vector<const Store *> &steps, const Stmt &original) {
  ScalarType element = steps.front()->buffer->element;
  int64_t lanes = laneCount(element);
  std::string count = loop.var + ".count";
  Expr trips = makeVar(ScalarType::I64, count);
  Expr vectorTrips = mul(div(trips, makeI64(lanes)), makeI64(lanes));
  std::string firstName = loop.var + ".first";
  Expr first = makeVar(ScalarType::I64, firstName);
  std::string blockVar = loop.var + ".block", laneVar = loop.var + ".lane";
  Expr lane = makeVar(ScalarType::I64, laneVar);
  auto each = [&](const std::string &var, int64_t extent, auto makeBody) {
    return std::make_shared<For>(var, makeI64(0), makeI64(extent), ForKind::Unrolled, 0,
                                 makeBody(makeVar(ScalarType::I64, var)));
  };
  // Each step's cell gets its lanes, starting at the neutral element; the
  // body's steps fold into them, and they halve into the cell.
  Stmt laneBody = loop.body;
  std::vector<Buffer> laneBuffers;
  std::vector<Stmt> start, fold;
  for (const Store *step : steps) {
    const Buffer &cell = step->buffer;
    const ReduceOperator &op = step->reduction->op;
    Buffer buffer =
        makeBuffer(cell->name + ".lanes", element, {makeI64(lanes)}, MemorySpace::Register);
    laneBuffers.push_back(buffer);
    laneBody = retargetAccesses(laneBody, cell, buffer,
                                [&](const std::vector<Expr> &) { return std::vector<Expr>{lane}; });
    start.push_back(each(cell->name + ".lane", lanes,
                         [&](Expr l) { return store(buffer, {l}, step->reduction->neutral); }));
    for (int64_t half = lanes / 2; half >= 1; half /= 2)
      fold.push_back(each(cell->name + ".lane", half, [&](Expr l) {
        return store(buffer, {l},
                     applyOperator(op, load(buffer, {l}), load(buffer, {add(l, makeI64(half))})));
      }));
    fold.push_back(store(cell, {}, applyOperator(op, load(cell), load(buffer, {makeI64(0)}))));
  }
  Expr position = add(first, add(mul(makeVar(ScalarType::I64, blockVar), makeI64(lanes)), lane));
  Stmt laneLoop = std::make_shared<For>(
      laneVar, makeI64(0), makeI64(lanes), ForKind::Vectorized, 0,
      std::make_shared<LetStmt>(loop.var, castTo(loop.min->type, position), laneBody));
  Stmt vectorLoop = std::make_shared<For>(blockVar, makeI64(0), div(trips, makeI64(lanes)),
                                          ForKind::Serial, 0, laneLoop, loop.source);
  std::vector<Stmt> laned = start;
  laned.push_back(vectorLoop);
  laned.insert(laned.end(), fold.begin(), fold.end());
  Stmt body = makeBlock(laned);
  for (const Buffer &buffer : laneBuffers)
    body = std::make_shared<Allocate>(buffer, body);
  Stmt rest = std::make_shared<For>(loop.var, castTo(loop.min->type, add(first, vectorTrips)),
                                    castTo(loop.min->type, sub(trips, vectorTrips)),
                                    ForKind::Serial, 0, loop.body, loop.source);
  Expr enough = greaterOrEqual(trips, makeI64(2 * lanes));
  return std::make_shared<LetStmt>(
      count, toI64(loop.extent),
      std::make_shared<LetStmt>(
          firstName, toI64(loop.min),
          std::make_shared<IfThenElse>(enough, makeBlock({body, rest}), original)));
}

// The operators of steps that need lanes, for remarks: "max", "'logaddexp'".
std::string operatorsNeedingLanes(const std::vector<const Store *> &steps) {
  std::set<std::string> names;
  for (const Store *step : steps) {
    if (!needsLanes(*step))
      continue;
    const ReduceOperator &op = step->reduction->op;
    names.insert(op.kind == ReduceOperator::Kind::User  ? "'" + op.userName + "'"
                 : op.kind == ReduceOperator::Kind::Min ? "min"
                                                        : "max");
  }
  std::string list;
  for (const std::string &name : names)
    list += (list.empty() ? "" : ", ") + name;
  return list;
}

// Whether some access of `loop`'s body, not to a register, walks memory
// contiguously along it.
bool walksContiguously(const Stmt &loop, const std::string &var) {
  return std::ranges::any_of(collectAccesses(loop), [&](const BufferAccess &access) {
    return access.buffer->memory != MemorySpace::Register &&
           std::ranges::find(access.enclosingLoops, var) != access.enclosingLoops.end() &&
           strideAlong(access, var).kind == Stride::Kind::Contiguous;
  });
}

// Finds the loops to interleave: serial loops inside a CPU thread nest that
// stay in their thread (gathersAcrossThreads, the thread nest's own rule),
// and serial loops of the host code that walk memory contiguously (a
// whole-array reduction of few points, which lower_reductions leaves there).
class Interleaver : public RemarkingMutator {
public:
  explicit Interleaver(const RemarkReporter &remarks) : RemarkingMutator(remarks) {}

protected:
  Stmt visitFor(const For &loop, const Stmt &self) override {
    if (loop.forKind == ForKind::Serial && hostCode()) {
      std::optional<std::vector<const Store *>> steps = laneSteps(loop.body);
      if (steps && mayReachTwoBlocks(loop, *steps) && walksContiguously(self, loop.var)) {
        reporter().applied(loop.source,
                           fold(*steps) + " runs in " + lanesOf(*steps) +
                               " in the host code when the run finds few points (else the tree), "
                               "halved into the result at the end");
        return interleaved(loop, *steps, self);
      }
      return RemarkingMutator::visitFor(loop, self);
    }
    if (loop.forKind == ForKind::GpuBlock || loop.forKind == ForKind::Parallel) {
      ++kernelLoops_;
      Stmt result = RemarkingMutator::visitFor(loop, self);
      --kernelLoops_;
      return result;
    }
    if (loop.forKind == ForKind::GpuThread) {
      bool outermost = thread_.empty();
      std::string enclosing = thread_;
      if (outermost)
        accesses_ = collectAccesses(self);
      thread_ = loop.var;
      Stmt result = RemarkingMutator::visitFor(loop, self);
      thread_ = enclosing;
      return result;
    }
    if (loop.forKind == ForKind::Serial && !thread_.empty()) {
      if (std::optional<std::vector<const Store *>> steps = laneSteps(loop.body)) {
        int64_t lanes = laneCount(steps->front()->buffer->element);
        // Named by its operators: the loop may be a pass's (split_reductions'
        // combine of partials), and the remark's place is the redomap's.
        const RemarkReporter &remarks = reporter();
        const auto *constantTrips = loop.extent->as<IntImm>();
        if (!mayReachTwoBlocks(loop, *steps)) {
          remarks.declined(loop.source, fold(*steps) + " keeps one combine at a time: its " +
                                            std::to_string(constantTrips->value) +
                                            " iterations are fewer than 2 x " +
                                            std::to_string(lanes) + " lanes");
        } else if (!gathersAcrossThreads(accesses_, loop.var, thread_)) {
          remarks.declined(loop.source, fold(*steps) + " is not interleaved: the threads' "
                                                       "vector lanes run it side by side already");
        } else {
          remarks.applied(loop.source, fold(*steps) + " runs in " + lanesOf(*steps) +
                                           ", halved into the result at the end (LLVM would "
                                           "combine one element at a time)");
          return interleaved(loop, *steps, self);
        }
      }
    }
    return RemarkingMutator::visitFor(loop, self);
  }

private:
  bool hostCode() const { return thread_.empty() && kernelLoops_ == 0; }

  // Whether the loop may run 2 * L times.
  static bool mayReachTwoBlocks(const For &loop, const std::vector<const Store *> &steps) {
    const auto *constantTrips = loop.extent->as<IntImm>();
    return !constantTrips || constantTrips->value >= 2 * laneCount(steps.front()->buffer->element);
  }

  // "the fold (max)", and "64 f32 lanes", for remarks.
  static std::string fold(const std::vector<const Store *> &steps) {
    return "the fold (" + operatorsNeedingLanes(steps) + ")";
  }
  static std::string lanesOf(const std::vector<const Store *> &steps) {
    ScalarType element = steps.front()->buffer->element;
    return std::to_string(laneCount(element)) + " " + scalarTypeName(element) + " lanes";
  }

  std::string thread_;                 // the innermost thread loop's variable around the walk
  std::vector<BufferAccess> accesses_; // those of its thread nest
  int kernelLoops_ = 0;                // GPU block and parallel loops around the node
};

} // namespace

Function interleaveReductions(Function function, const RemarkReporter &remarks) {
  function.body = Interleaver(remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
