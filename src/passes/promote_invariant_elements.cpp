// promote_invariant_elements (CPU): a serial loop that updates one element
// of an array at every iteration, the same element each time (trmm's
// `for k in i + 1..M { B[i][j] += A[k][i] * B[k][j] }`, a triangular solve's
// `for j in 0..i { x[i] -= L[i][j] * x[j] }`), stores it and loads it back
// at every step: LLVM cannot keep it in a register, as the other accesses of
// the array in the loop (B[k][j], x[j]) might be the same element for all
// it knows. Each step then waits for the store's value to come back through
// memory before its arithmetic. When every other access of the array in the
// loop is proven to touch another element, the element lives in a register
// across the loop:
//
//   for k in [i + 1, M) {                   if (M - (i + 1) > 0) {
//     B[i][j] = B[i][j] + A[k][i] * B[k][j]   register f32 B.element
//   }                                         B.element = B[i][j]
//                                             for k in [i + 1, M) {
//                                               B.element = B.element + A[k][i] * B[k][j]
//                                             }
//                                             B[i][j] = B.element
//                                           }
//
// Proven apart (provenApart, AccessAnalysis.h): in some dimension the
// difference of the indices stays at least 1 or at most -1 over the ranges
// of the loop and the loops inside it (k in [i + 1, M) against i; j in
// [0, i) against i; i0 + 1 against i0). Every element of the loop proven
// so gets a register, under one guard (jam_serial_chains leaves loops that
// update several). The loop runs its iterations in their order and the
// elements take the same values: the results are the same bit for bit. The
// guard keeps a loop of no iteration from touching the elements.
// On 2 cores trmm (M = 1000, N = 1200) ran 4.7x faster.
//
// Declined (a remark): another access of the array in the loop not proven
// apart from the element. Not done under --bounds-check (the element's
// first access would move before the loop's other failures), nor where the
// loop holds a barrier, a launch or an update other threads may make (a
// combine, a scan, a reduction into the array).
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"

#include <algorithm>
#include <map>
#include <optional>
#include <ranges>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// What a loop's body holds that rules it out: a barrier, a launch, or an
// update of arrays other than plain loads and stores.
class HoldsSynchronization : public IRVisitor {
public:
  bool found = false;

protected:
  bool finished() const override { return found; }
  void visitBarrier(const Barrier &) override { found = true; }
  void visitLaunch(const Launch &) override { found = true; }
  void visitReduce(const Reduce &) override { found = true; }
  void visitScan(const Scan &) override { found = true; }
  void visitAtomicUpdate(const AtomicUpdate &) override { found = true; }
  void visitWarpShuffle(const WarpShuffle &) override { found = true; }
  void visitAsyncCopy(const AsyncCopy &) override { found = true; }
};

// The loops and lets bound inside a statement, by name.
class Bindings : public IRVisitor {
public:
  std::vector<const For *> loops; // outermost first
  std::set<std::string> names;

protected:
  void visitFor(const For &node) override {
    loops.push_back(&node);
    names.insert(node.var);
    IRVisitor::visitFor(node);
  }
  void visitLetStmt(const LetStmt &node) override {
    names.insert(node.var);
    IRVisitor::visitLetStmt(node);
  }
  void visitAllocate(const ir::Allocate &node) override {
    names.insert(node.buffer->name);
    IRVisitor::visitAllocate(node);
  }
};

// Every Load and Store of `buffer` in a statement.
class AccessesOf : public IRVisitor {
public:
  explicit AccessesOf(const BufferInfo *buffer) : buffer_(buffer) {}
  std::vector<const std::vector<Expr> *> indices;
  std::vector<SourceRange> sources;

protected:
  void visitLoad(const Load &node) override {
    if (node.buffer.get() == buffer_) {
      indices.push_back(&node.indices);
      sources.push_back(node.source);
    }
    IRVisitor::visitLoad(node);
  }
  void visitStore(const Store &node) override {
    if (node.buffer.get() == buffer_) {
      indices.push_back(&node.indices);
      sources.push_back(node.source);
    }
    IRVisitor::visitStore(node);
  }

private:
  const BufferInfo *buffer_;
};

// The element's loads and stores as the register's.
class ToRegister : public IRMutator {
public:
  ToRegister(const BufferInfo *buffer, const std::vector<Expr> &element, Buffer cell)
      : buffer_(buffer), element_(element), cell_(std::move(cell)) {}

protected:
  Expr visitLoad(const Load &node, const Expr &self) override {
    if (isElement(node.buffer.get(), node.indices))
      return std::make_shared<Load>(cell_, std::vector<Expr>{}, node.source);
    return IRMutator::visitLoad(node, self);
  }
  Stmt visitStore(const Store &node, const Stmt &self) override {
    if (!isElement(node.buffer.get(), node.indices))
      return IRMutator::visitStore(node, self);
    return std::make_shared<Store>(cell_, std::vector<Expr>{}, mutate(node.value), node.source,
                                   node.reduction);
  }

private:
  bool isElement(const BufferInfo *buffer, const std::vector<Expr> &indices) const {
    return buffer == buffer_ && std::ranges::equal(indices, element_, sameExpr);
  }
  const BufferInfo *buffer_;
  const std::vector<Expr> &element_;
  Buffer cell_;
};

class Promoter : public IRMutator {
public:
  Promoter(bool boundsChecked, const RemarkReporter &remarks)
      : boundsChecked_(boundsChecked), remarks_(remarks) {}

protected:
  Stmt visitLetStmt(const LetStmt &node, const Stmt &self) override {
    lets_[node.var] = node.value;
    Stmt mutated = IRMutator::visitLetStmt(node, self);
    lets_.erase(node.var);
    return mutated;
  }

  Stmt visitFor(const For &node, const Stmt &self) override {
    Stmt mutated = IRMutator::visitFor(node, self); // inner loops first
    const For &loop = *mutated->as<For>();
    if (loop.forKind != ForKind::Serial || boundsChecked_)
      return mutated;
    return promote(loop).value_or(mutated);
  }

private:
  Expr resolved(const Expr &expr) const { return substituteLets(expr, lets_); }

  // The loop with the elements it updates at every iteration kept in
  // registers, or none.
  std::optional<Stmt> promote(const For &loop) {
    HoldsSynchronization synchronization;
    synchronization.visit(loop.body);
    if (synchronization.found)
      return std::nullopt;
    Bindings inside;
    inside.visit(loop.body);
    // The ranges of the loops inside, innermost first, then the loop's.
    std::vector<LoopRange> ranges;
    for (const For *inner : std::views::reverse(inside.loops))
      ranges.push_back({inner->var, resolved(inner->min), resolved(inner->extent)});
    ranges.push_back({loop.var, resolved(loop.min), resolved(loop.extent)});
    std::set<std::string> bound = inside.names;
    bound.insert(loop.var);

    // Candidates: stores outside the loop's inner loops (in branches too)
    // of an element whose index binds nothing of the loop, which read it.
    std::vector<const Store *> stores;
    std::vector<Stmt> pending{loop.body};
    while (!pending.empty()) {
      Stmt stmt = pending.back();
      pending.pop_back();
      if (const auto *block = stmt->as<ir::Block>()) {
        pending.insert(pending.end(), block->stmts.rbegin(), block->stmts.rend());
      } else if (const auto *branch = stmt->as<IfThenElse>()) {
        if (branch->elseCase)
          pending.push_back(branch->elseCase);
        pending.push_back(branch->thenCase);
      } else if (const auto *let = stmt->as<LetStmt>()) {
        pending.push_back(let->body);
      } else if (const auto *allocate = stmt->as<ir::Allocate>()) {
        pending.push_back(allocate->body);
      } else if (const auto *store = stmt->as<Store>()) {
        stores.push_back(store);
      }
    }
    std::vector<const Store *> promoted;
    for (const Store *store : stores) {
      if (store->buffer->memory == MemorySpace::Register || store->indices.empty() ||
          bound.contains(store->buffer->name))
        continue;
      bool invariant = std::ranges::none_of(store->indices, [&](const Expr &index) {
        return std::ranges::any_of(freeVars(index),
                                   [&](const std::string &name) { return bound.contains(name); });
      });
      AccessesOf reads(store->buffer.get());
      reads.visit(store->value);
      bool readsItself = std::ranges::any_of(reads.indices, [&](const std::vector<Expr> *indices) {
        return std::ranges::equal(*indices, store->indices, sameExpr);
      });
      bool already = std::ranges::any_of(promoted, [&](const Store *other) {
        return other->buffer == store->buffer &&
               std::ranges::equal(other->indices, store->indices, sameExpr);
      });
      if (!invariant || !readsItself || already)
        continue;
      AccessesOf accesses(store->buffer.get());
      accesses.visit(loop.body);
      std::vector<Expr> element;
      for (const Expr &index : store->indices)
        element.push_back(resolved(index));
      std::string array = remarks_.programName(store->buffer->nameInMessages());
      std::string over = remarks_.programName(loop.var);
      auto apart = [&](const std::vector<Expr> *indices) {
        if (std::ranges::equal(*indices, store->indices, sameExpr))
          return true;
        std::vector<Expr> other;
        for (const Expr &index : *indices)
          other.push_back(resolved(index));
        return provenApart(other, element, ranges);
      };
      auto clash = std::ranges::find_if_not(accesses.indices, apart);
      if (clash != accesses.indices.end()) {
        size_t a = clash - accesses.indices.begin();
        remarks_.declined(store->source, "'" + array +
                                             "' not kept in a register across the loop over " +
                                             over + ": the access at line " +
                                             std::to_string(accesses.sources[a].begin.line) +
                                             " is not proven to touch another element");
        continue;
      }
      remarks_.applied(store->source, "'" + array + "' kept in a register across the loop over " +
                                          over +
                                          ": the element it updates at each iteration, "
                                          "which no other access there touches");
      promoted.push_back(store);
    }
    if (promoted.empty())
      return std::nullopt;

    // Each element loaded into its register before the loop and stored
    // back after it, the loop reading and writing the registers.
    Stmt body = loop.body;
    std::vector<Buffer> cells;
    for (const Store *store : promoted) {
      auto cell = std::make_shared<BufferInfo>();
      cell->name = store->buffer->name + ".element" + std::to_string(cells_++);
      cell->programName = store->buffer->nameInMessages();
      cell->element = store->buffer->element;
      cell->memory = MemorySpace::Register;
      cell->isWritten = true;
      body = ToRegister(store->buffer.get(), store->indices, cell).mutate(body);
      cells.push_back(cell);
    }
    std::vector<Stmt> steps;
    for (size_t c = 0; c < promoted.size(); ++c)
      steps.push_back(std::make_shared<Store>(
          cells[c], std::vector<Expr>{},
          std::make_shared<Load>(promoted[c]->buffer, promoted[c]->indices, promoted[c]->source),
          promoted[c]->source));
    steps.push_back(std::make_shared<For>(loop.var, loop.min, loop.extent, loop.forKind,
                                          loop.gpuDim, body, loop.source));
    for (size_t c = 0; c < promoted.size(); ++c)
      steps.push_back(std::make_shared<Store>(promoted[c]->buffer, promoted[c]->indices,
                                              std::make_shared<Load>(cells[c], std::vector<Expr>{}),
                                              promoted[c]->source));
    Stmt kept = makeBlock(std::move(steps));
    for (const Buffer &cell : std::views::reverse(cells))
      kept = std::make_shared<ir::Allocate>(cell, kept);
    Expr runs = makeBinary(BinaryOpKind::Lt, castTo(loop.extent->type, makeI64(0)), loop.extent);
    return std::make_shared<IfThenElse>(runs, kept, nullptr);
  }

  bool boundsChecked_;
  const RemarkReporter &remarks_;
  std::map<std::string, Expr> lets_;
  int cells_ = 0; // registers made so far, for unique names
};

} // namespace

Function promoteInvariantElements(Function function, const RemarkReporter &remarks) {
  function.body = Promoter(function.boundsChecked, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
