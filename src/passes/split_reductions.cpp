// split_reductions: a parfor over few rows, each reducing a long range, is
// split along the range (both pipelines). On the GPU map_rows_to_blocks
// gives each row a block, so 4 rows of 2^24 elements keep 4 of an H100's 132
// SMs busy; on the CPU each row is a thread of one block, so one core does
// all. When the rows are fewer than a full GPU's worth of blocks, each row's
// range is cut into parts: a first parfor reduces every (row, part) into a
// partial result (a block each on the GPU, spread over the cores on the CPU),
// and the rows' own parfor then reduces its partials where it reduced the
// range, the rest of its body unchanged:
//
//   parallel for r in [0, R) {              let r.parts = ...
//     acc = 0.0                             if (r.parts >= 2) {
//     reduce acc += over c in [0, C): v       parallel for r.flat in [0, R * r.parts) {
//     y[r] = acc                                acc.part = 0.0
//   }                                           reduce acc.part += over c in <part of [0, C)>: v
//                                               acc.partials[r][r.part] = acc.part
//                                             }
//                                             parallel for r in [0, R) {
//                                               acc = 0.0
//                                               reduce acc += over r.part in [0, r.parts):
//                                               acc.partials[r][r.part] y[r] = acc
//                                             }
//                                           } else { the original }
//
// The parts are as many as fill kTargetBlocks with the rows, and no shorter
// than kMinPart elements; the host picks at run time, as the sizes are
// symbolic.
//
// That sizing assumes a block per row. A reduction down columns (colsum's
// X[r][c] over r, mv_transposed's A[i][j] over i) reads contiguously along
// the parfor, so map_rows_to_blocks leaves each row a thread
// (blockPerRowCondition is its decision), and 1024 columns of 4096 would be
// 1024 threads, 4 blocks for 132 SMs, each walking 4096 elements in turn:
// more than kTargetBlocks / 2 rows never split by blocks. So on the GPU rows
// that stay threads are sized by threads: the (row, part) pairs fill
// kTargetThreads, parts no shorter than kMinThreadPart, and the part is the
// slow index of the flat loop (r = r.flat % r.rows, r.part = r.flat /
// r.rows), so neighbouring threads take neighbouring rows of one part and
// read neighbouring addresses, as the rows did. The partials stay [row][part]:
// the rows' parfor reads a row's partials contiguously, a block per row once
// they are kMinBlockRowLength or more, and a part's one scattered store
// follows its kMinThreadPart or more loads, into partials few enough (at
// most kTargetThreads) to stay in L2 until the combine. The CPU keeps the
// block sizing whatever the rows' accesses: a block there is a core's work,
// and a parfor over many columns already spreads over its few cores.
//
// Only a row body that starts (after lets) with a reduction over
// one range into a register cell qualifies, with a builtin operator (its
// partials may combine in any order, as any reduction's) and a range that is
// the same for every row.
#include "passes/Passes.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionTrees.h"

#include <expected>
#include <optional>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// Enough blocks of 256 threads to fill a large GPU a few times over (an
// H100 keeps 8 per SM on 132 SMs).
const int64_t kTargetBlocks = 1024;
// The shortest part: 32 elements per thread of its block.
const int64_t kMinPart = 32 * kReductionThreads;

// Enough (row, part) threads to fill an H100 about once (132 SMs x 2048
// resident threads = 270K). A thread's part is a chain of loads, about one
// in flight at a time, so the loads in flight, and the bandwidth with them,
// grow with the threads until the SMs are full; a second wave would add
// partials and no loads in flight.
const int64_t kTargetThreads = int64_t{1} << 18;
// The shortest part of a thread, the same 32 elements per thread as a
// block's part: each part adds a partial's store and the combine's load
// (both in L2) and a few dozen instructions of indexing, small beside 32
// loads from memory. 64 would cap colsum at 4096 x 1024 (4M elements) at 64K
// threads, a quarter of the machine's.
const int64_t kMinThreadPart = 32;
// The block sizing stands for rows that turn out too short for a block (a
// thread each after all): such rows are too short to split into thread
// parts too.
static_assert(kMinBlockRowLength <= 2 * kMinThreadPart);

// How a parfor's rows are cut into parts: the (row, part) pairs that fill
// the machine, the shortest part, and whether the part index varies slowest
// along the flat loop (neighbouring threads on neighbouring rows).
struct PartSizing {
  int64_t targetPairs, minPart;
  bool partSlowest;
};
const PartSizing kBlockParts = {kTargetBlocks, kMinPart, false};
const PartSizing kThreadParts = {kTargetThreads, kMinThreadPart, true};

// A row body the split applies to: lets, then a register cell, its initial
// store, the reduction into it and the rest of the row.
struct RowReduction {
  std::vector<const LetStmt *> lets;
  const Allocate *cell = nullptr;
  Stmt init; // the cell's initial store
  const Reduce *reduce = nullptr;
  std::vector<Stmt> rest;
};

// Why a row's reduction cannot be split: the reduction and the reason.
struct NoSplit {
  const Reduce *reduce = nullptr; // none: the row starts with no reduction
  std::string why;
};

// The first reduction of a row body, outside its inner loops (those are the
// threads' work, not the row's), if any.
const Reduce *firstRowReduction(const Stmt &body) {
  class Finder : public IRVisitor {
  public:
    const Reduce *found = nullptr;

  protected:
    void visitReduce(const Reduce &node) override {
      if (!found)
        found = &node;
    }
    void visitFor(const For &) override {}
  } finder;
  finder.visit(body);
  return finder.found;
}

std::expected<RowReduction, NoSplit> rowReduction(const For &loop) {
  RowReduction row;
  const StmtNode *node = skipSingletonBlocks(loop.body);
  std::set<std::string> rowNames = {loop.var};
  while (node && node->kind == StmtNode::Kind::LetStmt) {
    row.lets.push_back(node->as<LetStmt>());
    rowNames.insert(row.lets.back()->var);
    node = skipSingletonBlocks(row.lets.back()->body);
  }
  const Reduce *first = firstRowReduction(loop.body);
  auto notFirst = std::unexpected(
      NoSplit{first, "the row does not start with it (only lets may come before its accumulator)"});
  if (!node || node->kind != StmtNode::Kind::Allocate)
    return notFirst;
  row.cell = node->as<Allocate>();
  if (row.cell->buffer->memory != MemorySpace::Register || !row.cell->buffer->shape.empty())
    return notFirst;
  const auto *block = row.cell->body->as<Block>();
  if (!block || block->stmts.size() < 2)
    return notFirst;
  row.init = block->stmts[0];
  row.reduce = block->stmts[1]->as<Reduce>();
  const auto *init = row.init->as<Store>();
  if (!init || init->buffer != row.cell->buffer || !row.reduce ||
      row.reduce->accumulator != row.cell->buffer || !row.reduce->indices.empty())
    return notFirst;
  if (row.reduce->loops.size() != 1)
    return std::unexpected(NoSplit{row.reduce, "it reduces over " +
                                                   std::to_string(row.reduce->loops.size()) +
                                                   " loops; only a reduction over one is split"});
  if (row.reduce->op.kind == ReduceOperator::Kind::User)
    return std::unexpected(
        NoSplit{row.reduce, "its operator '" + row.reduce->op.userName +
                                "' is a user's; only builtin operators' partials are split"});
  const Reduce::Loop &range = row.reduce->loops.front();
  if (usesAnyVar(range.min, rowNames) || usesAnyVar(range.extent, rowNames))
    return std::unexpected(NoSplit{row.reduce, "its range depends on the row (" + loop.var +
                                                   "); only a range the same for every row is "
                                                   "split"});
  row.rest.assign(block->stmts.begin() + 2, block->stmts.end());
  return row;
}

// `body` inside the row's lets, outermost first.
Stmt withinLets(const RowReduction &row, Stmt body) {
  for (auto let = row.lets.rbegin(); let != row.lets.rend(); ++let)
    body = std::make_shared<LetStmt>((*let)->var, (*let)->value, std::move(body));
  return body;
}

Stmt split(const For &loop, const Stmt &original, const RowReduction &row,
           const PartSizing &sizing) {
  const Reduce &reduce = *row.reduce;
  const Reduce::Loop &range = reduce.loops.front();
  const Buffer &cell = row.cell->buffer;
  ScalarType element = cell->element;
  std::string rowsName = loop.var + ".rows", partsName = loop.var + ".parts";
  std::string lengthName = loop.var + ".length", chunkName = loop.var + ".chunk";
  std::string flatName = loop.var + ".flat", partName = loop.var + ".part";
  std::string startName = loop.var + ".start";
  auto i64 = [](const std::string &name) { return makeVar(ScalarType::I64, name); };
  Expr rows = i64(rowsName), parts = i64(partsName), length = i64(lengthName);
  Expr chunk = i64(chunkName), part = i64(partName), start = i64(startName);
  Expr rowIndex = sub(makeVar(loop.min->type, loop.var), loop.min);

  Buffer partials =
      makeBuffer(cell->name + ".partials", element, {rows, parts}, MemorySpace::Global);
  Buffer partCell = makeBuffer(cell->name + ".part", element, {}, MemorySpace::Register);

  // The first parfor: every (row, part) into its partial.
  // min(chunk, ...) at the top: map_rows_to_blocks reads a row of at most
  // `chunk` points, a length known outside the nest.
  Expr partExtent = minOf(chunk, maxOf(sub(length, start), makeI64(0)));
  Stmt partReduce = std::make_shared<Reduce>(
      partCell, std::vector<Expr>{}, reduce.op, reduce.neutral,
      std::vector<Reduce::Loop>{{range.var, castTo(range.min->type, add(toI64(range.min), start)),
                                 castTo(range.min->type, partExtent)}},
      reduce.valueSetup, reduce.value, reduce.source);
  Stmt partBody =
      makeBlock({store(partCell, {}, reduce.neutral), retargetAccesses(partReduce, cell, partCell),
                 store(partials, {rowIndex, part}, load(partCell))});
  Expr flat = i64(flatName);
  Expr rowOffset = sizing.partSlowest ? rem(flat, rows) : div(flat, parts);
  Expr partIndex = sizing.partSlowest ? div(flat, rows) : rem(flat, parts);
  Stmt perPart = std::make_shared<LetStmt>(
      loop.var, castTo(loop.min->type, add(toI64(loop.min), rowOffset)),
      std::make_shared<LetStmt>(
          partName, partIndex,
          std::make_shared<LetStmt>(
              startName, mul(part, chunk),
              withinLets(row, std::make_shared<Allocate>(partCell, partBody)))));
  Stmt partsLoop = std::make_shared<For>(flatName, makeI64(0), mul(rows, parts), ForKind::Parallel,
                                         0, perPart, loop.source);

  // The rows' parfor, reducing its partials where it reduced the range.
  Stmt combine = std::make_shared<Reduce>(cell, std::vector<Expr>{}, reduce.op, reduce.neutral,
                                          std::vector<Reduce::Loop>{{partName, makeI64(0), parts}},
                                          nullptr, load(partials, {rowIndex, part}), reduce.source);
  std::vector<Stmt> cellBody = {row.init, combine};
  cellBody.insert(cellBody.end(), row.rest.begin(), row.rest.end());
  Stmt rowsLoop = std::make_shared<For>(
      loop.var, loop.min, loop.extent, ForKind::Parallel, 0,
      withinLets(row, std::make_shared<Allocate>(cell, makeBlock(std::move(cellBody)))),
      loop.source);

  Expr byRows = div(makeI64(sizing.targetPairs), maxOf(rows, makeI64(1)));
  Expr byLength = div(length, makeI64(sizing.minPart));
  Stmt chosen = std::make_shared<IfThenElse>(
      greaterOrEqual(parts, makeI64(2)),
      std::make_shared<LetStmt>(
          chunkName, div(add(length, sub(parts, makeI64(1))), parts),
          std::make_shared<Allocate>(partials, makeBlock({partsLoop, rowsLoop}))),
      original);
  Expr nonNegative = makeI64(0);
  return std::make_shared<LetStmt>(
      rowsName, maxOf(toI64(loop.extent), nonNegative),
      std::make_shared<LetStmt>(
          lengthName, maxOf(toI64(range.extent), nonNegative),
          std::make_shared<LetStmt>(partsName, minOf(byRows, byLength), chosen)));
}

class SplitRows : public IRMutator {
public:
  SplitRows(PipelineTarget target, const RemarkReporter &remarks)
      : target_(target), remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::Parallel)
      return IRMutator::visitFor(node, self);
    // Only the outermost parfor is a kernel's grid; the nests inside stay.
    std::expected<RowReduction, NoSplit> row = rowReduction(node);
    if (!row) {
      if (row.error().reduce)
        remarks_.declined(row.error().reduce->source, "the rows of " +
                                                          remarks_.programName(node.var) +
                                                          " are not split: " + row.error().why);
      return self;
    }
    PartSizing parts = sizing(self);
    if (remarks_.enabled()) {
      std::string length = toString(row->reduce->loops.front().extent);
      remarks_.applied(row->reduce->source,
                       "a second version splits each row of " + remarks_.programName(node.var) +
                           " into parts (" + (parts.partSlowest ? "threads" : "blocks") +
                           "), which the host picks when min(" + std::to_string(parts.targetPairs) +
                           " / " + toString(node.extent) + ", " + length + " / " +
                           std::to_string(parts.minPart) + ") is 2 or more");
    }
    return split(node, self, *row, parts);
  }

private:
  // Threads' parts for rows the GPU keeps as threads, blocks' otherwise.
  PartSizing sizing(const Stmt &parfor) const {
    bool threadRows = target_ == PipelineTarget::Gpu && !blockPerRowCondition(parfor);
    return threadRows ? kThreadParts : kBlockParts;
  }

  PipelineTarget target_;
  const RemarkReporter &remarks_;
};

} // namespace

ir::Function splitReductions(ir::Function function, PipelineTarget target,
                             const RemarkReporter &remarks) {
  function.body = SplitRows(target, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
