// combine_in_warps: a block's tree reduction (lowering/ReductionTrees.h:
// eight halving steps over a tile of 256 partials in shared memory, one
// barrier after each) becomes two levels with one barrier between them:
//  - each warp combines its 32 partials in registers by butterfly shuffles
//    (ir::WarpShuffle: five exchanges, neither shared memory nor a barrier),
//    and its first thread stores the warp's total into its own slot of the
//    tile (tile[32 * w]);
//  - after the barrier every thread folds the eight warp totals, in the same
//    order in every thread, into a register, which the statements after the
//    tree read instead of tile[0].
// Seven barriers fewer per tree, and 8 shared-memory round trips fewer, which
// is what a block tree costs in a short reduction (a softmax row runs two).
// GPU pipeline only: the CPU, whose threads are loops, has no shuffles (a
// GPU kernel run there exchanges through shared memory instead,
// codegen/CpuWarpShuffles.h). A tree whose tile the statements after it
// write, or read elsewhere than tile[0], is left as it is.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionTrees.h"

#include <algorithm>
#include <map>
#include <optional>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

constexpr int64_t kWarpSize = 32;
constexpr int64_t kWarps = kReductionThreads / kWarpSize;
constexpr int kHalvingSteps = 8; // log2(kReductionThreads)
static_assert(int64_t{1} << kHalvingSteps == kReductionThreads);

bool isConstant(const Expr &expr, int64_t value) {
  const auto *constant = expr->as<IntImm>();
  return constant && constant->value == value;
}

bool isVar(const Expr &expr, const std::string &name) {
  const auto *var = expr->as<Var>();
  return var && var->name == name;
}

// `thread + offset` (just `thread` for 0), as treeHalving writes indices.
bool isThreadPlus(const Expr &expr, const std::string &thread, int64_t offset) {
  if (offset == 0)
    return isVar(expr, thread);
  const auto *sum = expr->as<Binary>();
  return sum && sum->op == BinaryOpKind::Add && isVar(sum->lhs, thread) &&
         isConstant(sum->rhs, offset);
}

// Replaces the loads tile[thread] and tile[thread + offset] of a halving
// step's combine by two expressions: the member's operator applied to them.
class OperandReplacer : public IRMutator {
public:
  OperandReplacer(const BufferInfo *tile, std::string thread, int64_t offset, Expr lhs, Expr rhs)
      : tile_(tile), thread_(std::move(thread)), offset_(offset), lhs_(std::move(lhs)),
        rhs_(std::move(rhs)) {}

protected:
  Expr visitLoad(const Load &node, const Expr &self) override {
    if (node.buffer.get() == tile_ && node.indices.size() == 1) {
      if (isThreadPlus(node.indices[0], thread_, 0))
        return lhs_;
      if (isThreadPlus(node.indices[0], thread_, offset_))
        return rhs_;
    }
    return IRMutator::visitLoad(node, self);
  }

private:
  const BufferInfo *tile_;
  std::string thread_;
  int64_t offset_;
  Expr lhs_, rhs_;
};

// One tile of a tree: `combine` is the first halving step's stored value,
// from which the operator applied to any two values is rebuilt.
struct TreeMember {
  Buffer tile;
  Expr combine;
};

// The members of the halving steps at stmts[first...] over `thread`, when
// those 16 statements are a tree as treeHalving writes it.
std::optional<std::vector<TreeMember>> matchTree(const std::vector<Stmt> &stmts, size_t first,
                                                 const std::string &thread) {
  if (first + 2 * kHalvingSteps > stmts.size())
    return std::nullopt;
  std::vector<TreeMember> members;
  for (int step = 0; step < kHalvingSteps; ++step) {
    int64_t half = kReductionThreads >> (step + 1);
    const auto *branch = stmts[first + 2 * step]->as<IfThenElse>();
    if (!branch || branch->elseCase || !stmts[first + 2 * step + 1]->as<Barrier>())
      return std::nullopt;
    const auto *condition = branch->cond->as<Binary>();
    if (!condition || condition->op != BinaryOpKind::Lt || !isVar(condition->lhs, thread) ||
        !isConstant(condition->rhs, half))
      return std::nullopt;
    std::vector<Stmt> stores = {branch->thenCase};
    if (const auto *block = branch->thenCase->as<Block>())
      stores = block->stmts;
    if (step > 0 && stores.size() != members.size())
      return std::nullopt;
    for (size_t m = 0; m < stores.size(); ++m) {
      const auto *store = stores[m]->as<Store>();
      if (!store || store->buffer->memory != MemorySpace::Shared || store->indices.size() != 1 ||
          !isThreadPlus(store->indices[0], thread, 0) || store->buffer->shape.size() != 1 ||
          !isConstant(store->buffer->shape[0], kReductionThreads))
        return std::nullopt;
      if (step == 0) {
        members.push_back({store->buffer, store->value});
        continue;
      }
      // Every step applies the first step's operator to its own operands.
      const TreeMember &member = members[m];
      Expr expected =
          OperandReplacer(member.tile.get(), thread, kReductionThreads / 2,
                          load(member.tile, {makeVar(ScalarType::I64, thread)}),
                          load(member.tile, {add(makeVar(ScalarType::I64, thread), makeI64(half))}))
              .mutate(member.combine);
      if (store->buffer != member.tile || !sameExpr(store->value, expected))
        return std::nullopt;
    }
  }
  return members;
}

// The member's operator applied to two values.
Expr combineOf(const TreeMember &member, const std::string &thread, Expr lhs, Expr rhs) {
  return OperandReplacer(member.tile.get(), thread, kReductionThreads / 2, std::move(lhs),
                         std::move(rhs))
      .mutate(member.combine);
}

// Finds what the statements after a tree do with its tiles: whether they
// write one, or read one elsewhere than at [0].
class TileUses : public IRVisitor {
public:
  explicit TileUses(const std::vector<TreeMember> &members) : members_(members) {}
  bool conflicts = false;

protected:
  void visitLoad(const Load &node) override {
    if (isMember(node.buffer) && !isConstant(node.indices[0], 0))
      conflicts = true;
    IRVisitor::visitLoad(node);
  }
  void visitStore(const Store &node) override {
    conflicts |= isMember(node.buffer);
    IRVisitor::visitStore(node);
  }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    conflicts |= isMember(node.buffer);
    IRVisitor::visitAtomicUpdate(node);
  }

private:
  bool isMember(const Buffer &buffer) const {
    for (const TreeMember &member : members_)
      if (member.tile == buffer)
        return true;
    return false;
  }
  const std::vector<TreeMember> &members_;
};

// tile[0] read as the register holding the tree's total.
class TotalReader : public IRMutator {
public:
  explicit TotalReader(std::vector<std::pair<Buffer, Buffer>> totals)
      : totals_(std::move(totals)) {}

protected:
  Expr visitLoad(const Load &node, const Expr &self) override {
    for (const auto &[tile, total] : totals_)
      if (node.buffer == tile)
        return load(total);
    return IRMutator::visitLoad(node, self);
  }

private:
  std::vector<std::pair<Buffer, Buffer>> totals_;
};

bool containsThreadLoop(const Stmt &stmt) {
  class Finder : public IRVisitor {
  public:
    bool found = false;

  protected:
    void visitFor(const For &node) override {
      found |= node.forKind == ForKind::GpuThread;
      IRVisitor::visitFor(node);
    }
  } finder;
  finder.visit(stmt);
  return finder.found;
}

class WarpCombiner : public RemarkingMutator {
public:
  explicit WarpCombiner(const RemarkReporter &remarks) : RemarkingMutator(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::GpuThread)
      return RemarkingMutator::visitFor(node, self);
    // The tree's thread index is a lane's position only in a block of one
    // dimension: a thread loop along x of 256 threads, with none around it
    // or inside it.
    bool oneDimensional = threadLoops_ == 0 && node.gpuDim == 0 &&
                          isConstant(node.extent, kReductionThreads) && isConstant(node.min, 0) &&
                          !containsThreadLoop(node.body);
    std::string enclosing = thread_;
    SourceRange enclosingSource = source_;
    thread_ = oneDimensional ? node.var : "";
    source_ = node.source;
    ++threadLoops_;
    Stmt result = RemarkingMutator::visitFor(node, self);
    --threadLoops_;
    thread_ = enclosing;
    source_ = enclosingSource;
    return result;
  }

  Stmt visitBlock(const Block &node, const Stmt &self) override {
    Stmt mutated = RemarkingMutator::visitBlock(node, self);
    const auto *block = mutated->as<Block>();
    if (thread_.empty() || !block)
      return mutated;
    return makeBlock(combineTrees(block->stmts));
  }

private:
  // `stmts` with each tree among them (not inside them: those were done
  // first) combined in warps, the statements after one read its totals.
  std::vector<Stmt> combineTrees(const std::vector<Stmt> &stmts) const {
    for (size_t first = 0; first < stmts.size(); ++first) {
      auto members = matchTree(stmts, first, thread_);
      if (!members)
        continue;
      std::vector<Stmt> after(stmts.begin() + first + 2 * kHalvingSteps, stmts.end());
      TileUses uses(*members);
      for (const Stmt &stmt : after)
        uses.visit(stmt);
      if (uses.conflicts) {
        reporter().declined(source_, "the block tree stays in shared memory: the statements after "
                                     "it write its tile, or read it elsewhere than its total");
        continue;
      }
      reporter().applied(
          source_,
          "the block tree" +
              (members->size() == 1
                   ? std::string()
                   : " of " + countOf(static_cast<int64_t>(members->size()), "reduction")) +
              " combines in warps: 5 register shuffles and 1 barrier "
              "instead of " +
              std::to_string(kHalvingSteps) + " halving steps with a barrier each");
      std::vector<Stmt> combined(stmts.begin(), stmts.begin() + first);
      combined.push_back(warpTree(*members, combineTrees(after)));
      return combined;
    }
    return stmts;
  }

  // The tree's registers live only as long as they are needed: a lane value
  // per member and a partner per element type (the members exchange one after
  // the other) through the shuffles, a total per member after them, so the
  // kernel's register count (extract_kernels' occupancy hint) stays that of
  // its own values.
  Stmt warpTree(const std::vector<TreeMember> &members, const std::vector<Stmt> &after) const {
    Expr thread = makeVar(ScalarType::I64, thread_);
    std::vector<Buffer> shuffleRegisters, totalRegisters;
    std::map<ScalarType, Buffer> partners;
    std::vector<std::pair<Buffer, Buffer>> totals;
    std::vector<Stmt> start, publish, fold;
    std::vector<std::vector<Stmt>> exchanges(5);
    auto newRegister = [](const Buffer &tile, const std::string &suffix) {
      return makeBuffer(tile->name + suffix, tile->element, {}, MemorySpace::Register);
    };
    for (const TreeMember &member : members) {
      const Buffer &tile = member.tile;
      Buffer lane = newRegister(tile, ".lane"), total = newRegister(tile, ".total");
      shuffleRegisters.push_back(lane);
      totalRegisters.push_back(total);
      Buffer &partner = partners[tile->element];
      if (!partner) {
        partner = newRegister(tile, ".partner");
        partner->isWritten = true;
        shuffleRegisters.push_back(partner);
      }
      totals.push_back({tile, total});
      start.push_back(store(lane, {}, load(tile, {thread})));
      int step = 0;
      for (int mask = kWarpSize / 2; mask >= 1; mask /= 2, ++step) {
        exchanges[step].push_back(std::make_shared<WarpShuffle>(partner, load(lane), mask));
        exchanges[step].push_back(
            store(lane, {}, combineOf(member, thread_, load(lane), load(partner))));
      }
      publish.push_back(store(tile, {thread}, load(lane)));
      // One statement per warp: nesting the combines into one expression
      // would copy an operator that uses an operand twice (a log-sum-exp)
      // 2^7 times or more.
      fold.push_back(store(total, {}, load(tile, {makeI64(0)})));
      for (int64_t warp = 1; warp < kWarps; ++warp)
        fold.push_back(store(
            total, {},
            combineOf(member, thread_, load(total), load(tile, {makeI64(warp * kWarpSize)}))));
    }
    std::vector<Stmt> shuffles = start;
    for (const std::vector<Stmt> &exchange : exchanges)
      shuffles.insert(shuffles.end(), exchange.begin(), exchange.end());
    Expr firstLane = equal(rem(thread, makeI64(kWarpSize)), makeI64(0));
    shuffles.push_back(std::make_shared<IfThenElse>(firstLane, makeBlock(publish)));
    std::vector<Stmt> folding = fold;
    TotalReader reader(totals);
    for (const Stmt &stmt : after)
      folding.push_back(reader.mutate(stmt));
    return makeBlock({allocating(shuffleRegisters, makeBlock(std::move(shuffles))),
                      std::make_shared<Barrier>(),
                      allocating(totalRegisters, makeBlock(std::move(folding)))});
  }

  static Stmt allocating(const std::vector<Buffer> &buffers, Stmt body) {
    for (size_t i = buffers.size(); i-- > 0;)
      body = std::make_shared<Allocate>(buffers[i], body);
    return body;
  }

  std::string thread_; // the tree's thread index where a tree may be; else empty
  SourceRange source_; // the innermost thread loop's: the reduction or row its trees are for
  int threadLoops_ = 0;
};

} // namespace

Function combineInWarps(Function function, const RemarkReporter &remarks) {
  function.body = WarpCombiner(remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
