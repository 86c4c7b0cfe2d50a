// The two traversal bases every pass and analysis builds on, so a pass only
// overrides the nodes it cares about:
// - IRVisitor walks an IR tree read-only (analyses, the verifier, the printer's
//   helpers); each default visit recurses into the children.
// - IRMutator rebuilds a tree bottom-up; each default visit mutates the
//   children and returns the original node when none changed, so unchanged
//   subtrees stay shared.
// Plus the few generic rewrites built on them (substitution, free variables).
#pragma once

#include "ir/IR.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace loopc::ir {

class IRVisitor {
public:
  virtual ~IRVisitor() = default;
  // Dispatch on the node kind; null is ignored, and so is every node once
  // the visitor is finished.
  void visit(const Expr &expr);
  void visit(const Stmt &stmt);

protected:
  // True once a search has found what it looks for: the rest of the tree is
  // not visited.
  virtual bool finished() const { return false; }

  virtual void visitIntImm(const IntImm &) {}
  virtual void visitFloatImm(const FloatImm &) {}
  virtual void visitBoolImm(const BoolImm &) {}
  virtual void visitVar(const Var &) {}
  virtual void visitLoad(const Load &node);
  virtual void visitUnary(const Unary &node);
  virtual void visitBinary(const Binary &node);
  virtual void visitSelect(const Select &node);
  virtual void visitCast(const Cast &node);
  virtual void visitCall(const Call &node);

  virtual void visitFor(const For &node);
  virtual void visitIfThenElse(const IfThenElse &node);
  virtual void visitLetStmt(const LetStmt &node);
  virtual void visitStore(const Store &node);
  virtual void visitAllocate(const Allocate &node);
  virtual void visitBarrier(const Barrier &) {}
  virtual void visitWarpShuffle(const WarpShuffle &node);
  virtual void visitAsyncCopy(const AsyncCopy &node);
  virtual void visitAsyncCommit(const AsyncCommit &) {}
  virtual void visitAsyncWait(const AsyncWait &) {}
  virtual void visitCheck(const Check &node);
  virtual void visitBlock(const Block &node);
  virtual void visitReduce(const Reduce &node);
  virtual void visitScan(const Scan &node);
  virtual void visitAtomicUpdate(const AtomicUpdate &node);
  virtual void visitLaunch(const Launch &node);
};

class IRMutator {
public:
  virtual ~IRMutator() = default;
  // Dispatch on the node kind; null stays null.
  Expr mutate(const Expr &expr);
  Stmt mutate(const Stmt &stmt);

protected:
  // `self` is the node being visited, returned when nothing changes.
  virtual Expr visitIntImm(const IntImm &, const Expr &self) { return self; }
  virtual Expr visitFloatImm(const FloatImm &, const Expr &self) { return self; }
  virtual Expr visitBoolImm(const BoolImm &, const Expr &self) { return self; }
  virtual Expr visitVar(const Var &, const Expr &self) { return self; }
  virtual Expr visitLoad(const Load &node, const Expr &self);
  virtual Expr visitUnary(const Unary &node, const Expr &self);
  virtual Expr visitBinary(const Binary &node, const Expr &self);
  virtual Expr visitSelect(const Select &node, const Expr &self);
  virtual Expr visitCast(const Cast &node, const Expr &self);
  virtual Expr visitCall(const Call &node, const Expr &self);

  virtual Stmt visitFor(const For &node, const Stmt &self);
  virtual Stmt visitIfThenElse(const IfThenElse &node, const Stmt &self);
  virtual Stmt visitLetStmt(const LetStmt &node, const Stmt &self);
  virtual Stmt visitStore(const Store &node, const Stmt &self);
  virtual Stmt visitAllocate(const Allocate &node, const Stmt &self);
  virtual Stmt visitBarrier(const Barrier &, const Stmt &self) { return self; }
  virtual Stmt visitWarpShuffle(const WarpShuffle &node, const Stmt &self);
  virtual Stmt visitAsyncCopy(const AsyncCopy &node, const Stmt &self);
  virtual Stmt visitAsyncCommit(const AsyncCommit &, const Stmt &self) { return self; }
  virtual Stmt visitAsyncWait(const AsyncWait &, const Stmt &self) { return self; }
  virtual Stmt visitCheck(const Check &node, const Stmt &self);
  virtual Stmt visitBlock(const Block &node, const Stmt &self);
  virtual Stmt visitReduce(const Reduce &node, const Stmt &self);
  virtual Stmt visitScan(const Scan &node, const Stmt &self);
  virtual Stmt visitAtomicUpdate(const AtomicUpdate &node, const Stmt &self);
  virtual Stmt visitLaunch(const Launch &node, const Stmt &self);

  // Mutates each element; true when any changed.
  bool mutateAll(const std::vector<Expr> &in, std::vector<Expr> &out);
};

// A mutator that knows the values of the lets around the node it visits,
// so an index compares and analyses the same whatever lets name its parts.
class LetTrackingMutator : public IRMutator {
protected:
  Stmt visitLetStmt(const LetStmt &node, const Stmt &self) override;
  // `expr` with the lets in scope replaced by their values.
  Expr resolved(const Expr &expr) const;
  const std::map<std::string, Expr> &lets() const { return lets_; }

private:
  std::map<std::string, Expr> lets_;
};

// Replaces free occurrences of the named variables (bindings of the same name
// inside shadow them, though names are unique within a function).
Expr substitute(const Expr &expr, const std::map<std::string, Expr> &replacements);
Stmt substitute(const Stmt &stmt, const std::map<std::string, Expr> &replacements);

// `lhs op rhs` for a reduction operator (a user operator's inlined body).
Expr applyOperator(const ReduceOperator &op, Expr lhs, Expr rhs);

// True when `stmt` reads the variable `name` (names are unique within a
// function, so any occurrence is a free one); stops at the first.
bool mentionsVar(const Stmt &stmt, const std::string &name);

// Names of the variables a statement binds: its loops' (For, Reduce, Scan)
// and lets'.
std::set<std::string> boundNames(const Stmt &stmt);

// `expr` with the variables `lets` binds replaced by their values, again
// until none is left (a let's value may read an earlier let).
Expr substituteLets(Expr expr, const std::map<std::string, Expr> &lets);

// Names of the variables an expression or statement reads without binding them.
std::set<std::string> freeVars(const Expr &expr);
std::set<std::string> freeVars(const Stmt &stmt);

// True when `expr` reads any variable of `names`.
bool usesAnyVar(const Expr &expr, const std::set<std::string> &names);

// A name for each loop of `stmt` that no other loop of it has: its variable
// and its place among the loops in preorder (`k.stage#3`). Copies of a loop
// that passes make for a nest's interior and edge tiles keep its variable;
// the NVPTX target names each loop of a kernel with this so that what LLVM
// made of each copy can be told apart (codegen/LoopCensus.h).
std::map<const For *, std::string> loopKeys(const Stmt &stmt);

// The loads in `expr`, in order (an index's loads after the load it
// indexes).
std::vector<const Load *> loadsIn(const Expr &expr);

// Whether `store`'s value reads the element it stores (`x[i] = x[i] + v`):
// an update from the element's last value.
bool readsStoredElement(const Store &store);

// The buffers `expr` loads from.
std::set<const BufferInfo *> buffersRead(const Expr &expr);

// `stmt` with its loads, stores and atomic updates of `from` made to `to`,
// each at the indices `reindex` makes of its own (the same when empty).
Stmt retargetAccesses(const Stmt &stmt, const Buffer &from, const Buffer &to,
                      const std::function<std::vector<Expr>(std::vector<Expr>)> &reindex = {});

// `stmt` with every name it binds (loop variables, lets, the arrays it
// allocates) followed by `suffix`, and their uses with it: a copy that can
// sit beside the original in one function, whose names are unique.
Stmt renameBindings(const Stmt &stmt, const std::string &suffix);

// The loads, arithmetic, calls and stores of a statement: what a copy of it
// adds to a kernel, for a pass's code-size budget (a math routine counts for
// the many instructions it inlines).
size_t codeSize(const Stmt &stmt);

// True when `stmt` calls a math routine (Call::isMathRoutine).
bool callsMathRoutine(const Stmt &stmt);

// True when `stmt` holds what orders threads or hands work to them: a
// barrier, a launch, a reduction, a scan, an atomic update, a warp shuffle
// or an async copy (passes that reorder a loop's statements leave these
// alone).
bool synchronizes(const Stmt &stmt);

// True when `stmt` holds a loop of `kind`.
bool containsLoopOf(const Stmt &stmt, ForKind kind);

// `stmt` without the Blocks of one statement around it.
const StmtNode *skipSingletonBlocks(const Stmt &stmt);

// The perfect nest of Parallel loops `top` heads (a parfor of several
// variables), outermost first; the body is the last one's.
std::vector<const For *> parallelChain(const For &top);

// True when the two expressions are the same tree: same kinds, types,
// values, names, operators and buffers (by identity).
bool sameExpr(const Expr &a, const Expr &b);

// `stmt` with every Parallel loop in it Serial: iterations one after another,
// as inside one GPU thread.
Stmt serializeParallelLoops(const Stmt &stmt);

// Places `tail` where the scope of `setup` ends: LetStmts and Allocates along
// the last statements of `setup` enclose it, so `tail` sees their bindings.
// This is how Reduce::value is read after Reduce::valueSetup.
Stmt appendAtTail(const Stmt &setup, const Stmt &tail);

} // namespace loopc::ir
