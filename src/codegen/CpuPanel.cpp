// Panels of a column of blocks, packed per worker (see CpuPanel.h).
#include "codegen/CpuPanel.h"

#include "codegen/CpuThreadNest.h"
#include "ir/IRVisitor.h"
#include "ir/KernelNest.h"
#include "passes/analysis/AccessAnalysis.h"

#include <algorithm>
#include <limits>
#include <set>

namespace loopc::codegen {

using namespace loopc::ir;
using ir::Expr;
using ir::Stmt;

namespace {

// The constant value of an affine remainder (null is 0), if it is one.
std::optional<int64_t> constantRest(const Expr &rest) {
  if (!rest)
    return 0;
  if (auto *value = rest->as<IntImm>())
    return value->value;
  return std::nullopt;
}

// The first element of the array's rows that the current column's panel
// holds: `xBlock * blockWidth + firstOffset`.
Expr panelStart(const ColumnPanel &panel) {
  Expr block = toI64(makeVar(panel.xBlock->min->type, panel.xBlock->var));
  return add(mul(block, makeI64(panel.blockWidth)), makeI64(panel.firstOffset));
}

// Loads of the panel's array, redirected to its copy.
class PanelReads : public IRMutator {
public:
  explicit PanelReads(const ColumnPanel &panel) : panel_(panel) {}

protected:
  Expr visitLoad(const Load &node, const Expr &self) override {
    Expr mutated = IRMutator::visitLoad(node, self);
    auto *load = mutated->as<Load>();
    if (load->buffer != panel_.array)
      return mutated;
    std::vector<Expr> indices = load->indices;
    indices.back() = sub(toI64(indices.back()), panelStart(panel_));
    // No place in the program: a panel is made only where every access is
    // proven in range (or unchecked), and reads of the copy are not checked.
    return std::make_shared<Load>(panel_.packed, std::move(indices));
  }

private:
  const ColumnPanel &panel_;
};

// Whether the accesses (all to one array) read a panel as ColumnPanel
// describes, some leading index moving along a loop (a panel, not one row);
// `lowest` and `highest` get the range of their constant offsets.
bool readsPanel(const std::vector<const passes::BufferAccess *> &accesses,
                const std::set<std::string> &parallelVars, const For &xBlock, const For &xThread,
                int64_t blockWidth, int64_t &lowest, int64_t &highest) {
  bool alongLoop = false;
  for (const passes::BufferAccess *access : accesses) {
    if (access->isStore)
      return false;
    for (const passes::AffineIndex &index : access->indices)
      if (!index.isAffine())
        return false;
    for (size_t d = 0; d + 1 < access->indices.size(); ++d)
      for (const auto &[var, coefficient] : access->indices[d].coefficients) {
        if (parallelVars.contains(var))
          return false;
        alongLoop = true;
      }
    const passes::AffineIndex &last = access->indices.back();
    std::optional<int64_t> offset = constantRest(last.rest);
    if (!offset || last.coefficients.size() != 2 || last.coefficient(xThread.var) != 1 ||
        last.coefficient(xBlock.var) != blockWidth)
      return false;
    lowest = std::min(lowest, *offset);
    highest = std::max(highest, *offset);
  }
  return alongLoop;
}

} // namespace

std::optional<ColumnPanel> columnPanelOf(const KernelFunc &kernel) {
  if (!runsColumnByColumn(kernel))
    return std::nullopt;
  std::optional<ir::KernelNest> nest = ir::kernelNestAt(kernel.body);
  const For *xBlock = nest->blockAlong(0), *xThread = nest->threadAlong(0);
  if (!xBlock || !xThread)
    return std::nullopt;
  auto *width = xThread->extent->as<IntImm>();
  auto *threadMin = xThread->min->as<IntImm>();
  if (!width || !threadMin || threadMin->value != 0)
    return std::nullopt;
  std::set<std::string> parallelVars;
  for (const std::vector<const For *> *loops : {&nest->blocks, &nest->threads})
    for (const For *loop : *loops)
      parallelVars.insert(loop->var);

  std::vector<passes::BufferAccess> accesses = passes::collectAccesses(kernel.body);
  for (const Buffer &array : kernel.buffers) {
    if (array->memory != MemorySpace::Global || array->shape.size() < 2)
      continue;
    std::vector<const passes::BufferAccess *> ofArray;
    for (const passes::BufferAccess &access : accesses)
      if (access.buffer == array)
        ofArray.push_back(&access);
    int64_t lowest = std::numeric_limits<int64_t>::max();
    int64_t highest = std::numeric_limits<int64_t>::min();
    if (ofArray.empty() ||
        !readsPanel(ofArray, parallelVars, *xBlock, *xThread, width->value, lowest, highest))
      continue;
    ColumnPanel panel{array,        xBlock,
                      width->value, width->value + (highest - lowest),
                      lowest,       std::make_shared<BufferInfo>()};
    panel.packed->name = array->name + ".panel";
    panel.packed->element = array->element;
    panel.packed->shape.assign(array->shape.begin(), array->shape.end() - 1);
    panel.packed->shape.push_back(makeI64(panel.rowLength));
    return panel;
  }
  return std::nullopt;
}

Stmt readFromPanel(const ColumnPanel &panel, const Stmt &blockBody) {
  return PanelReads(panel).mutate(blockBody);
}

Stmt copyPanel(const ColumnPanel &panel) {
  // for each leading index: for offset in [first, last):
  //   packed[..][offset] = array[..][start + offset]
  // with [first, last) the offsets whose columns lie inside the array, so the
  // row copy is one contiguous, unguarded loop (a guard per element cost
  // matmul a tenth of its time). A row wholly inside the array, as all but the
  // edge columns' are, is copied at its constant length, which LLVM makes a
  // few vector moves rather than a call to memcpy. Offsets outside are
  // zeroed: the lanes of an edge block past the array's last column read
  // them for values no store keeps (CpuThreadNest.cpp, splitEdge), and what
  // an earlier column or the allocation left there might be a subnormal,
  // which slows every multiply-add it enters many times over.
  const std::vector<Expr> &shape = panel.array->shape;
  std::vector<Expr> leading;
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    leading.push_back(makeVar(ScalarType::I64, panel.packed->name + ".row" + std::to_string(d)));
  Expr offset = makeVar(ScalarType::I64, panel.packed->name + ".offset");
  Expr start = panelStart(panel);
  Expr first = maxOf(makeI64(0), sub(makeI64(0), start));
  Expr last = minOf(makeI64(panel.rowLength), sub(toI64(shape.back()), start));
  Expr count = maxOf(sub(last, first), makeI64(0));
  std::vector<Expr> source = leading, target = leading;
  source.push_back(add(start, offset));
  target.push_back(offset);
  Stmt element =
      std::make_shared<Store>(panel.packed, target, std::make_shared<Load>(panel.array, source));
  Stmt zero = std::make_shared<Store>(panel.packed, target, zeroOf(panel.array->element));
  auto loopOver = [&](Expr from, Expr length, Stmt body) -> Stmt {
    return std::make_shared<For>(offset->as<Var>()->name, from, length, ForKind::Serial, 0,
                                 std::move(body));
  };
  Stmt edgeRow = makeBlock(
      {loopOver(makeI64(0), minOf(first, makeI64(panel.rowLength)), zero),
       loopOver(first, count, element),
       loopOver(maxOf(last, first),
                maxOf(sub(makeI64(panel.rowLength), maxOf(last, first)), makeI64(0)), zero)});
  Stmt copy = std::make_shared<IfThenElse>(equal(count, makeI64(panel.rowLength)),
                                           loopOver(makeI64(0), makeI64(panel.rowLength), element),
                                           edgeRow);
  for (size_t d = leading.size(); d-- > 0;)
    copy = std::make_shared<For>(leading[d]->as<Var>()->name, makeI64(0), toI64(shape[d]),
                                 ForKind::Serial, 0, copy);
  return copy;
}

} // namespace loopc::codegen
