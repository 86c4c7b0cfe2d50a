// map_rows_to_blocks: one block per iteration of a 1-D parfor whose body
// walks rows (GPU pipeline). map_to_gpu gives each iteration a thread; when
// the body reduces or maps along an inner loop whose accesses are contiguous
// along it but not along the parfor (mv's A[i][j] over j, softmax's rows),
// the 32 threads of a warp then read from 32 rows at once, a memory
// transaction each, and a parfor of a few thousand rows fills a few dozen
// blocks (softmax's 8192 rows: 32 blocks for 132 SMs). Here the 256 threads
// of a block share one iteration instead, so each of their loads reads
// consecutive addresses:
// - a redomap strides its outermost loop over the threads, each thread
//   folding its share into a register, and a tree in shared memory combines
//   the 256 partial results (the block tree of lower_reductions); every
//   thread then holds the result;
// - an inner parfor strides over the threads;
// - the rest of the body is the same for every thread of the block (it
//   depends on the row and on results every thread holds), so every thread
//   runs it, and thread 0 alone makes its global stores.
// Only bodies made of those pieces qualify, and only when they read no
// global buffer they also write (thread 0's store would race with the other
// threads' reads); map_to_gpu maps the rest. Row lengths are symbolic, so the
// host picks at run time: rows of at least kMinBlockRowLength elements take
// the block per row, shorter ones the thread per row. blockPerRowCondition
// is that whole decision; split_reductions asks it too, to size its parts
// for blocks or for threads.
#include "passes/Passes.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/lowering/ReductionGroups.h"
#include "passes/lowering/ReductionTrees.h"
#include "passes/lowering/SiblingGroups.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

static_assert(kMinBlockRowLength == kReductionThreads / 4,
              "the shortest row given a block leaves a quarter of its threads work");

// Whether a row body is made of the pieces the block can share: lets, ifs,
// register buffers and stores, redomaps into a register cell, inner parfors
// and serial loops that store only to registers. Besides, since the block's
// threads split the row's inner parfors among them:
// - an array private to the row (a register buffer) may not be written by
//   an inner parfor: each thread would hold only its share of it;
// - a global array an inner parfor writes may not be written by another
//   statement of the row (thread 0's store, another parfor): nothing orders
//   the two threads' stores to one element;
// - a redomap may not sit under an `if` whose condition reads a result of
//   the row's redomaps: every thread holds the same value, but the block
//   tree's barriers need control flow that is visibly uniform.
class RowBodyCheck : public IRVisitor {
public:
  // Why the block cannot share the row (the first reason met); empty when
  // it can.
  std::string unshareable;
  std::set<const BufferInfo *> loaded, stored; // global buffers

protected:
  void visitFor(const For &node) override {
    if (node.forKind == ForKind::Parallel) {
      if (parallelDepth_ == 0)
        writer_ = ++parfors_;
      ++parallelDepth_;
      IRVisitor::visitFor(node);
      --parallelDepth_;
      if (parallelDepth_ == 0)
        writer_ = 0;
      return;
    }
    if (node.forKind != ForKind::Serial)
      refuse("it has a loop of kind '" + std::string(forKindName(node.forKind)) + "'");
    ++serialDepth_;
    IRVisitor::visitFor(node);
    --serialDepth_;
  }
  void visitReduce(const Reduce &node) override {
    // Only a redomap of the row itself becomes a block tree; one inside an
    // inner loop is that loop's thread's work.
    bool rowLevel = parallelDepth_ + serialDepth_ + reduceDepth_ == 0;
    if (rowLevel &&
        (node.accumulator->memory != MemorySpace::Register || !node.accumulator->shape.empty()))
      refuse("a redomap of the row reduces into an element of '" +
             node.accumulator->nameInMessages() + "', not into a scalar");
    if (rowLevel && resultConditions_ > 0)
      refuse("a redomap sits under an 'if' on a redomap's result (the block tree's barriers "
             "need control flow that is visibly the same in every thread)");
    ++reduceDepth_;
    IRVisitor::visitReduce(node);
    --reduceDepth_;
  }
  void visitStore(const Store &node) override {
    storesTo(*node.buffer);
    if (parallelDepth_ > 0 && rowArrays_.contains(node.buffer.get()))
      refuse("an inner parfor writes '" + node.buffer->nameInMessages() +
             "', an array private to the row (each thread would hold only its share)");
    IRVisitor::visitStore(node);
  }
  void visitIfThenElse(const IfThenElse &node) override {
    bool onResults = readsResults(node.cond);
    resultConditions_ += onResults;
    IRVisitor::visitIfThenElse(node);
    resultConditions_ -= onResults;
  }
  void visitLetStmt(const LetStmt &node) override {
    if (readsResults(node.value))
      resultNames_.insert(node.var);
    IRVisitor::visitLetStmt(node);
  }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    storesTo(*node.buffer);
    IRVisitor::visitAtomicUpdate(node);
  }
  void visitLoad(const Load &node) override {
    if (node.buffer->memory == MemorySpace::Global)
      loaded.insert(node.buffer.get());
    IRVisitor::visitLoad(node);
  }
  void visitAllocate(const Allocate &node) override {
    if (node.buffer->memory != MemorySpace::Register)
      refuse("it allocates '" + node.buffer->nameInMessages() + "' in " +
             memorySpaceName(node.buffer->memory) + " memory");
    if (parallelDepth_ == 0 && !node.buffer->shape.empty())
      rowArrays_.insert(node.buffer.get());
    IRVisitor::visitAllocate(node);
  }
  void visitBarrier(const Barrier &) override { refuse("it has a barrier"); }
  void visitLaunch(const Launch &) override { refuse("it launches a kernel"); }

private:
  void refuse(std::string why) {
    if (unshareable.empty())
      unshareable = std::move(why);
  }

  void storesTo(const BufferInfo &buffer) {
    if (buffer.memory != MemorySpace::Global)
      return;
    stored.insert(&buffer);
    // A serial loop runs in every thread: its global stores would repeat.
    if (serialDepth_ > 0 && parallelDepth_ == 0)
      refuse("a serial loop of the row stores to '" + buffer.nameInMessages() +
             "' (every thread would repeat the stores)");
    // Thread 0 (writer 0) or the threads of one inner parfor.
    std::set<int> &writers = writers_[&buffer];
    writers.insert(writer_);
    if (writers.size() > 1 && *writers.rbegin() > 0)
      refuse("'" + buffer.nameInMessages() +
             "' is written by an inner parfor and by another statement of the row (nothing "
             "orders two threads' stores to one element)");
  }

  // Whether `expr` reads a register (a redomap's result, a row-private
  // value) or a let derived from one.
  bool readsResults(const Expr &expr) const {
    class Finder : public IRVisitor {
    public:
      explicit Finder(const std::set<std::string> &names) : names_(names) {}
      bool found = false;

    protected:
      void visitLoad(const Load &node) override {
        found |= node.buffer->memory == MemorySpace::Register;
        IRVisitor::visitLoad(node);
      }
      void visitVar(const Var &node) override { found |= names_.contains(node.name); }

    private:
      const std::set<std::string> &names_;
    } finder(resultNames_);
    finder.visit(expr);
    return finder.found;
  }

  int parallelDepth_ = 0, serialDepth_ = 0, reduceDepth_ = 0, resultConditions_ = 0;
  int parfors_ = 0, writer_ = 0; // the inner parfor storing now (0: thread 0)
  std::map<const BufferInfo *, std::set<int>> writers_;
  std::set<const BufferInfo *> rowArrays_;
  std::set<std::string> resultNames_;
};

// The loops the threads would stride over, as (variable, extent): the
// outermost loop of each of the row's own redomaps and each inner parfor
// (not those nested deeper), in order.
void collectSharedLoops(const Stmt &stmt, std::vector<std::pair<std::string, Expr>> &loops) {
  if (!stmt)
    return;
  switch (stmt->kind) {
  case StmtNode::Kind::Block:
    for (const Stmt &inner : stmt->as<Block>()->stmts)
      collectSharedLoops(inner, loops);
    return;
  case StmtNode::Kind::LetStmt:
    return collectSharedLoops(stmt->as<LetStmt>()->body, loops);
  case StmtNode::Kind::Allocate:
    return collectSharedLoops(stmt->as<Allocate>()->body, loops);
  case StmtNode::Kind::IfThenElse:
    collectSharedLoops(stmt->as<IfThenElse>()->thenCase, loops);
    return collectSharedLoops(stmt->as<IfThenElse>()->elseCase, loops);
  case StmtNode::Kind::Reduce: {
    const Reduce::Loop &outer = stmt->as<Reduce>()->loops.front();
    loops.emplace_back(outer.var, outer.extent);
    return;
  }
  case StmtNode::Kind::For:
    if (stmt->as<For>()->forKind == ForKind::Parallel)
      loops.emplace_back(stmt->as<For>()->var, stmt->as<For>()->extent);
    return;
  default:
    return;
  }
}

// Whether some global load inside a redomap or an inner parfor of the row
// (the loops `sharedLoops` the threads would share) is contiguous along
// that loop and not along the row: per-thread rows would read it
// uncoalesced.
bool walksRows(const For &row, const Stmt &nest, const std::set<std::string> &sharedLoops) {
  for (const BufferAccess &access : collectAccesses(nest)) {
    if (access.isStore || access.buffer->memory != MemorySpace::Global)
      continue;
    Stride::Kind alongRow = strideAlong(access, row.var).kind;
    if (alongRow == Stride::Kind::Zero || alongRow == Stride::Kind::Contiguous)
      continue;
    for (const std::string &loop : access.enclosingLoops)
      if (sharedLoops.contains(loop) && strideAlong(access, loop).kind == Stride::Kind::Contiguous)
        return true;
  }
  return false;
}

// Why the block cannot share the row body (RowBodyCheck, and a global
// array both read and written: thread 0's store would race with the other
// threads' reads); empty when it can.
std::string whyUnshareable(const For &row) {
  RowBodyCheck check;
  check.visit(row.body);
  if (!check.unshareable.empty())
    return check.unshareable;
  // In the order of the buffers' names, for a deterministic remark.
  std::set<std::string> readAndWritten;
  for (const BufferInfo *buffer : check.loaded)
    if (check.stored.contains(buffer))
      readAndWritten.insert(buffer->nameInMessages());
  if (!readAndWritten.empty())
    return "it reads '" + *readAndWritten.begin() +
           "', which it writes (thread 0's store would race with the other threads' reads)";
  return "";
}

// The length of a row, known before the parfor runs: the first shared
// loop's extent that names nothing bound in the row.
std::optional<Expr> rowLength(const For &row, const Stmt &nest) {
  std::vector<std::pair<std::string, Expr>> loops;
  collectSharedLoops(row.body, loops);
  std::set<std::string> outside = freeVars(nest);
  auto knownOutside = [&](const Expr &extent) {
    return std::ranges::includes(outside, freeVars(extent));
  };
  for (const auto &[var, extent] : loops) {
    if (knownOutside(extent))
      return extent;
    // A row of `min(L, ...)` points (the last of equal chunks) has at
    // most L.
    if (const auto *bounded = extent->as<Binary>(); bounded && bounded->op == BinaryOpKind::Min)
      for (const Expr &side : {bounded->lhs, bounded->rhs})
        if (knownOutside(side))
          return side;
  }
  return std::nullopt;
}

class RowMapper : public IRMutator {
public:
  RowMapper(bool fuseSiblings, const RemarkReporter &remarks)
      : fuseSiblings_(fuseSiblings), remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::Parallel)
      return IRMutator::visitFor(node, self);
    // When the rows are short, the thread per row stays (map_to_gpu maps the
    // parfor in the other branch).
    RowMapping mapping = rowMapping(self);
    // split_reductions' versions (rows of `i.flat`, or of partials
    // `i.parts` long) are its remark's business.
    bool ofProgram =
        !isPassMadeName(node.var) &&
        (!mapping.condition || std::ranges::none_of(freeVars(*mapping.condition), isPassMadeName));
    std::string row = "row of " + remarks_.programName(node.var);
    if (!mapping.condition) {
      if (ofProgram && !mapping.declined.empty())
        remarks_.declined(node.source, "each " + row + " keeps a thread: " + mapping.declined);
      return self;
    }
    if (ofProgram)
      remarks_.applied(node.source, "a block of " + std::to_string(kReductionThreads) +
                                        " threads per " + row + " when " +
                                        toString(*mapping.condition) +
                                        " (tested at run time; shorter rows keep a thread each)");
    return std::make_shared<IfThenElse>(*mapping.condition, mapRow(node), self);
  }

private:
  Stmt mapRow(const For &row) {
    std::string blockVar = row.var + ".block";
    thread_ = makeVar(ScalarType::I64, row.var + ".thread");
    tiles_.clear();
    Expr rowIndex = makeVar(ScalarType::I64, blockVar);
    if (row.min->type != ScalarType::I64)
      rowIndex = std::make_shared<Cast>(row.min->type, rowIndex);
    Stmt body = std::make_shared<LetStmt>(row.var, add(row.min, rowIndex), shareRow(row.body));
    body = std::make_shared<For>(thread_->as<Var>()->name, makeI64(0), makeI64(kReductionThreads),
                                 ForKind::GpuThread, 0, body, row.source);
    for (auto tile = tiles_.rbegin(); tile != tiles_.rend(); ++tile)
      body = std::make_shared<Allocate>(*tile, body);
    Expr rows = row.extent->type == ScalarType::I64
                    ? row.extent
                    : std::make_shared<Cast>(ScalarType::I64, row.extent);
    return std::make_shared<For>(blockVar, makeI64(0), maxOf(rows, makeI64(0)), ForKind::GpuBlock,
                                 0, body, row.source);
  }

  // A global store (or atomic update) of the row, made once, by thread 0.
  Stmt byFirstThread(const Stmt &stmt, const BufferInfo &buffer) {
    if (buffer.memory != MemorySpace::Global)
      return stmt;
    return std::make_shared<IfThenElse>(equal(thread_, makeI64(0)), stmt);
  }

  // The row body as every thread of the block runs it.
  Stmt shareRow(const Stmt &stmt) {
    if (!stmt)
      return stmt;
    switch (stmt->kind) {
    case StmtNode::Kind::Block: {
      // Sibling reductions of the row share one strided walk of it.
      const std::vector<Stmt> &inner = stmt->as<Block>()->stmts;
      std::vector<Stmt> stmts;
      for (size_t i = 0; i < inner.size(); ++i) {
        std::optional<SiblingGroup> group = fuseSiblings_ ? gatherSiblings(inner, i) : std::nullopt;
        if (group) {
          stmts.push_back(group->assemble(blockTree(group->members),
                                          [this](const Stmt &part) { return shareRow(part); }));
          break;
        }
        stmts.push_back(shareRow(inner[i]));
      }
      return makeBlock(std::move(stmts));
    }
    case StmtNode::Kind::LetStmt: {
      const auto &let = *stmt->as<LetStmt>();
      return std::make_shared<LetStmt>(let.var, let.value, shareRow(let.body));
    }
    case StmtNode::Kind::Allocate: {
      const auto &allocate = *stmt->as<Allocate>();
      return std::make_shared<Allocate>(allocate.buffer, shareRow(allocate.body));
    }
    case StmtNode::Kind::IfThenElse: {
      const auto &branch = *stmt->as<IfThenElse>();
      return std::make_shared<IfThenElse>(branch.cond, shareRow(branch.thenCase),
                                          shareRow(branch.elseCase));
    }
    case StmtNode::Kind::Store:
      return byFirstThread(stmt, *stmt->as<Store>()->buffer);
    case StmtNode::Kind::AtomicUpdate:
      return byFirstThread(stmt, *stmt->as<AtomicUpdate>()->buffer);
    case StmtNode::Kind::Reduce:
      return blockTree({stmt->as<Reduce>()});
    case StmtNode::Kind::For: {
      const auto &loop = *stmt->as<For>();
      if (loop.forKind != ForKind::Parallel)
        return stmt;
      return strided(loop.var, loop.min, loop.extent, serializeParallelLoops(loop.body),
                     loop.source, /*inOrder=*/false);
    }
    default:
      return stmt;
    }
  }

  // `var` over [min, min + extent) shared by the threads: thread t takes
  // t, t + 256, ..., or with `inOrder` a contiguous chunk (threadWalk).
  Stmt strided(const std::string &var, const Expr &min, const Expr &extent, Stmt body,
               SourceRange source, bool inOrder) {
    std::string stepVar = var + ".step";
    Expr extent64 =
        extent->type == ScalarType::I64 ? extent : std::make_shared<Cast>(ScalarType::I64, extent);
    ThreadWalk walk = threadWalk(thread_, makeI64(kReductionThreads), extent64, inOrder);
    Expr position = add(walk.first, mul(makeVar(ScalarType::I64, stepVar), walk.stride));
    if (min->type != ScalarType::I64)
      position = std::make_shared<Cast>(min->type, position);
    return std::make_shared<For>(stepVar, makeI64(0), walk.trips, ForKind::Serial, 0,
                                 std::make_shared<LetStmt>(var, add(min, position), body), source);
  }

  // The redomaps' outermost loop (the first's: they share their loops)
  // strided over the threads, a partial result per thread and redomap,
  // combined by trees in shared memory (one barrier per step for all) into
  // each accumulator in every thread.
  Stmt blockTree(const std::vector<const Reduce *> &group) {
    const Reduce &first = *group.front();
    std::vector<Buffer> parts;
    std::vector<std::pair<ReduceOperator, Buffer>> tiles;
    std::vector<Stmt> starts, steps, shares, results;
    for (const Reduce *reduce : group) {
      GroupMember member = renamedLoops({reduce, reduce->valueSetup, reduce->value}, first);
      const Buffer &accumulator = reduce->accumulator;
      ScalarType element = accumulator->element;
      Buffer part = makeBuffer(accumulator->name + ".part", element, {}, MemorySpace::Register);
      Buffer tile = makeBuffer(accumulator->name + ".tile", element, {makeI64(kReductionThreads)},
                               MemorySpace::Shared);
      tiles_.push_back(tile);
      parts.push_back(part);
      tiles.push_back({reduce->op, tile});
      starts.push_back(store(part, {}, reduce->neutral));
      steps.push_back(appendAtTail(member.valueSetup,
                                   reductionStep(reduce->op, reduce->neutral, part, member.value)));
      // The partial is stored into the tile before its scope ends, so no
      // register value lives across a barrier.
      shares.push_back(store(tile, {thread_}, load(part)));
      results.push_back(store(
          accumulator, {}, applyOperator(reduce->op, load(accumulator), load(tile, {makeI64(0)}))));
    }
    Stmt point = makeBlock(steps);
    for (size_t i = first.loops.size(); i-- > 1;) {
      const Reduce::Loop &loop = first.loops[i];
      point = std::make_shared<For>(loop.var, loop.min, loop.extent, ForKind::Serial, 0, point,
                                    first.source);
    }
    const Reduce::Loop &outer = first.loops.front();
    std::vector<Stmt> walk = starts;
    // A user's operator keeps the row's order (threadWalk, treeHalving).
    bool inOrder =
        !std::ranges::all_of(group, [](const Reduce *reduce) { return commutes(reduce->op); });
    for (const Reduce *reduce : group)
      if (!commutes(reduce->op))
        warnOrderedWalk(remarks_, *reduce);
    walk.push_back(strided(outer.var, outer.min, outer.extent, point, first.source, inOrder));
    walk.insert(walk.end(), shares.begin(), shares.end());
    Stmt share = makeBlock(walk);
    for (size_t i = parts.size(); i-- > 0;)
      share = std::make_shared<Allocate>(parts[i], share);
    std::vector<Stmt> tree = {share, std::make_shared<Barrier>(),
                              treeHalving(tiles, thread_, inOrder)};
    tree.insert(tree.end(), results.begin(), results.end());
    return makeBlock(tree);
  }

  bool fuseSiblings_;
  const RemarkReporter &remarks_;
  Expr thread_;
  std::vector<Buffer> tiles_;
};

} // namespace

RowMapping rowMapping(const Stmt &parfor) {
  const auto *row = parfor->as<For>();
  if (!row || row->forKind != ForKind::Parallel)
    return {};
  // A nest of one loop: a nest of several has map_to_gpu's 2-D and 3-D
  // mappings for its inner dimensions.
  const auto *inner = row->body->as<For>();
  if (inner && inner->forKind == ForKind::Parallel)
    return {};
  std::vector<std::pair<std::string, Expr>> loops;
  collectSharedLoops(row->body, loops);
  if (loops.empty())
    return {}; // no redomap or inner parfor: no row to walk
  std::set<std::string> sharedLoops;
  for (const auto &loop : loops)
    sharedLoops.insert(loop.first);
  if (!walksRows(*row, parfor, sharedLoops))
    return {std::nullopt, "no load of its redomaps or inner parfors is contiguous along their "
                          "loop and not along the rows (a thread per row reads as well)"};
  if (std::string why = whyUnshareable(*row); !why.empty())
    return {std::nullopt, "the block cannot share the row: " + why};
  // Short rows would leave most of a block idle.
  std::optional<Expr> length = rowLength(*row, parfor);
  if (!length)
    return {std::nullopt, "a row's length is known only inside the row, too late to choose"};
  return {greaterOrEqual(*length, makeInt((*length)->type, kMinBlockRowLength)), ""};
}

std::optional<Expr> blockPerRowCondition(const Stmt &parfor) {
  return rowMapping(parfor).condition;
}

Function mapRowsToBlocks(Function function, bool fuseSiblings, const RemarkReporter &remarks) {
  function.body = RowMapper(fuseSiblings, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
