#include "passes/lowering/ElementsInRegisters.h"

#include "ir/IRVisitor.h"

#include <algorithm>
#include <ranges>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

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

} // namespace

// The loop with the elements it updates at every iteration kept in
// registers, or none.
std::optional<Stmt> keepElementsInRegisters(const For &loop, const RegisterElements &how) {
  auto resolved = [&](const Expr &expr) { return how.resolve ? how.resolve(expr) : expr; };
  if (synchronizes(loop.body))
    return std::nullopt;
  Bindings inside;
  inside.visit(loop.body);
  // The ranges of the loops inside, innermost first, then the loop's.
  std::vector<LoopRange> ranges;
  for (const For *inner : std::views::reverse(inside.loops))
    ranges.push_back({inner->var, resolved(inner->min), resolved(inner->extent)});
  ranges.push_back({loop.var, resolved(loop.min), resolved(loop.extent)});
  ranges.insert(ranges.end(), how.around.begin(), how.around.end());
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
    bool already = std::ranges::any_of(promoted, [&](const Store *other) {
      return other->buffer == store->buffer &&
             std::ranges::equal(other->indices, store->indices, sameExpr);
    });
    if (!invariant || !readsStoredElement(*store) || already)
      continue;
    AccessesOf accesses(store->buffer.get());
    accesses.visit(loop.body);
    std::vector<Expr> element;
    for (const Expr &index : store->indices)
      element.push_back(resolved(index));
    std::string array = how.remarks.programName(store->buffer->nameInMessages());
    std::string over = how.remarks.programName(loop.var);
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
      how.remarks.declined(store->source, "'" + array +
                                              "' not kept in a register across the loop over " +
                                              over + ": the access at line " +
                                              std::to_string(accesses.sources[a].begin.line) +
                                              " is not proven to touch another element");
      continue;
    }
    how.remarks.applied(store->source, "'" + array + "' kept in a register across the loop over " +
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
    cell->name = store->buffer->name + "." + how.stem + std::to_string((*how.made)++);
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
  steps.push_back(std::make_shared<For>(loop.var, loop.min, loop.extent, loop.forKind, loop.gpuDim,
                                        body, loop.source));
  for (size_t c = 0; c < promoted.size(); ++c)
    steps.push_back(std::make_shared<Store>(promoted[c]->buffer, promoted[c]->indices,
                                            std::make_shared<Load>(cells[c], std::vector<Expr>{}),
                                            promoted[c]->source));
  Stmt kept = makeBlock(std::move(steps));
  for (const Buffer &cell : std::views::reverse(cells))
    kept = std::make_shared<ir::Allocate>(cell, kept);
  Expr runs = lessThan(castTo(loop.extent->type, makeI64(0)), loop.extent);
  return std::make_shared<IfThenElse>(runs, kept, nullptr);
}

} // namespace loopc::passes
