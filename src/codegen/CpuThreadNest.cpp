// Threads of a block on one CPU core: loop fission at barriers and thread
// loops moved inside sequential loops (see CpuThreadNest.h).
#include "codegen/CpuThreadNest.h"

#include "codegen/CpuScratch.h"

#include "codegen/LlvmEmitter.h"
#include "codegen/Optimize.h"
#include "ir/IRVisitor.h"
#include "ir/KernelNest.h"
#include "passes/analysis/AccessAnalysis.h"

#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace loopc::codegen {

using namespace loopc::ir;

namespace {

// No load, no call, nothing that can fault: recomputing it wherever it is
// needed costs a few instructions and cannot fail where the original would
// not have run.
bool isCheap(const ExprNode &expr) {
  switch (expr.kind) {
  case ExprNode::Kind::Load:
  case ExprNode::Kind::Call:
    return false;
  case ExprNode::Kind::Unary:
    return isCheap(*expr.as<Unary>()->operand);
  case ExprNode::Kind::Cast:
    return isCheap(*expr.as<Cast>()->operand);
  case ExprNode::Kind::Binary: {
    auto &binary = *expr.as<Binary>();
    return !mayFault(binary) && isCheap(*binary.lhs) && isCheap(*binary.rhs);
  }
  case ExprNode::Kind::Select: {
    auto &select = *expr.as<ir::Select>();
    return isCheap(*select.cond) && isCheap(*select.thenValue) && isCheap(*select.elseValue);
  }
  default:
    return true;
  }
}

// Whether an expression mentions one of the names whose value differs
// between the threads of a block.
class MentionsVarying : public IRVisitor {
public:
  explicit MentionsVarying(const std::multiset<std::string> &varying) : varying_(varying) {}
  bool found = false;

protected:
  void visitVar(const Var &node) override { found = found || varying_.contains(node.name); }

private:
  const std::multiset<std::string> &varying_;
};

// Whether an integer division by a value other than a constant runs under a
// condition: inside a branch, a select (whose sides run only when chosen),
// or anywhere when `underMask` (the threads being emitted are masked).
//
// LLVM 19's loop vectorizer miscompiles a loop-invariant division in a block
// it predicates: it computes the division only when the first vector lane is
// active and uses the result for every lane (found by
// tests/random_programs_test.cpp). Thread loops holding one are not
// vectorized.
class ConditionalDivision : public IRVisitor {
public:
  explicit ConditionalDivision(bool underMask) : conditional_(underMask) {}
  bool found = false;

protected:
  void visitIfThenElse(const IfThenElse &node) override {
    visit(node.cond);
    ++conditional_;
    visit(node.thenCase);
    visit(node.elseCase);
    --conditional_;
  }
  void visitSelect(const ir::Select &node) override {
    visit(node.cond);
    ++conditional_;
    visit(node.thenValue);
    visit(node.elseValue);
    --conditional_;
  }
  void visitBinary(const Binary &node) override {
    bool division = node.op == BinaryOpKind::Div || node.op == BinaryOpKind::Rem;
    if (conditional_ > 0 && division && isInteger(node.type) && !node.rhs->as<IntImm>())
      found = true;
    IRVisitor::visitBinary(node);
  }

private:
  int conditional_;
};

// Loops LLVM unrolls completely: constant trip counts whose nest runs at
// most this many bodies. Left inside their thread they become straight-line
// code in the thread loop, which then vectorizes across threads with the
// accumulator in a register.
constexpr int64_t kUnrolledBodies = 64;

// The number of bodies `stmt` holds when every loop in it has a constant
// trip count, else nothing: the code once LLVM has unrolled them, both sides
// of each branch; with `oneSide`, the bodies a thread runs, the larger side
// of each branch.
std::optional<int64_t> constantBodies(const StmtNode &stmt, bool oneSide = false) {
  auto inside = [oneSide](const ir::Stmt &child) -> std::optional<int64_t> {
    return child ? constantBodies(*child, oneSide) : std::optional<int64_t>(0);
  };
  switch (stmt.kind) {
  case StmtNode::Kind::For: {
    auto &loop = *stmt.as<For>();
    auto *trips = loop.extent->as<IntImm>();
    std::optional<int64_t> body = inside(loop.body);
    if (!trips || !body)
      return std::nullopt;
    return std::max<int64_t>(trips->value, 0) * *body;
  }
  case StmtNode::Kind::IfThenElse: {
    auto thenBodies = inside(stmt.as<IfThenElse>()->thenCase);
    auto elseBodies = inside(stmt.as<IfThenElse>()->elseCase);
    if (!thenBodies || !elseBodies)
      return std::nullopt;
    return oneSide ? std::max(*thenBodies, *elseBodies) : *thenBodies + *elseBodies;
  }
  case StmtNode::Kind::LetStmt:
    return inside(stmt.as<LetStmt>()->body);
  case StmtNode::Kind::Allocate:
    return inside(stmt.as<ir::Allocate>()->body);
  case StmtNode::Kind::Block: {
    int64_t total = 0;
    for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts) {
      std::optional<int64_t> bodies = inside(child);
      if (!bodies)
        return std::nullopt;
      total += *bodies;
    }
    return total;
  }
  default:
    return 1;
  }
}

// Chooses the sequential loops that run with the thread loop inside them,
// outermost first: a loop left inside its thread keeps the loops inside it
// there too.
class InterchangeChoice : public IRVisitor {
public:
  InterchangeChoice(const std::vector<passes::BufferAccess> &accesses, std::string threadVar)
      : accesses_(accesses), threadVar_(std::move(threadVar)) {}
  std::set<const For *> chosen;
  // Some loop stays inside its thread because it walks a row there.
  bool rowsInThreads = false;

protected:
  void visitFor(const For &loop) override {
    bool sequential = loop.forKind == ForKind::Serial || loop.forKind == ForKind::Unrolled;
    if (sequential && !containsBarrier(*loop.body)) {
      std::optional<int64_t> unrolled = constantBodies(loop);
      // A loop around a thread's own vector lanes (a `vectorized` loop)
      // stays too: the lanes, not the threads, are its vector dimension.
      bool rowOfItsOwn = passes::gathersAcrossThreads(accesses_, loop.var, threadVar_);
      rowsInThreads = rowsInThreads || rowOfItsOwn;
      if ((unrolled && *unrolled <= kUnrolledBodies) || rowOfItsOwn ||
          containsLoopOf(loop.body, ForKind::Vectorized))
        return;
      chosen.insert(&loop);
    }
    visit(loop.body);
  }

private:
  const std::vector<passes::BufferAccess> &accesses_;
  std::string threadVar_;
};

// Emits one thread nest: statements that need no splitting run inside one
// thread loop; barriers, chosen loops and the statements around them are
// taken apart (see the file comment of CpuThreadNest.h).
class ThreadNestScheduler {
public:
  ThreadNestScheduler(LlvmEmitter &emitter, const std::vector<const ir::For *> &nest)
      : emitter_(emitter), builder_(emitter.builder()) {
    threadCount_ = builder_.getInt64(1);
    for (const ir::For *loop : nest) {
      llvm::Value *min = emitter.emitExpr(*loop->min);
      llvm::Value *extent = emitter.emitExpr(*loop->extent);
      ThreadLoop thread{
          loop->var, loop->min->type, min, extent, min, builder_.CreateAdd(min, extent)};
      threadCount_ = builder_.CreateMul(
          threadCount_, emitter.emitCast(thread.extent, thread.type, ScalarType::I64));
      loops_.push_back(thread);
      threadBox_.push_back(loop);
      const auto *constantExtent = loop->extent->as<IntImm>();
      hasThreads_ = hasThreads_ && constantExtent && constantExtent->value > 0;
      varying_.insert(loop->var);
      affine_.bindLoop(loop->var);
      boundInNest_.insert(loop->var);
    }
    // Consecutive threads of the innermost loop become vector lanes.
    const ir::StmtNode &body = *nest.back()->body;
    auto accesses = passes::collectAccesses(ir::Stmt(ir::Stmt(), nest.front()));
    InterchangeChoice choice(accesses, nest.back()->var);
    choice.visit(nest.back()->body);
    interchanged_ = std::move(choice.chosen);
    if (choice.rowsInThreads)
      preferNoGathers(*builder_.GetInsertBlock()->getParent());
    markSplit(body);
  }

  // The per-thread arrays live as long as the nest (run once per block).
  void emit(const ir::StmtNode &body) {
    withStackScope([&] { split(body); });
  }

private:
  // A per-thread quantity: emits its value for the thread whose linear index
  // is given, with that thread's loop variables and earlier values bound.
  using PerThread = std::function<llvm::Value *(llvm::Value *thread)>;

  struct ThreadLoop {
    std::string var;
    ScalarType type;
    llvm::Value *min, *extent;
    // The threads the code being emitted runs for: [min, min + extent)
    // narrowed by the guards around it (see Clip).
    llvm::Value *begin, *end;
  };
  // A guard that holds exactly for the threads whose `loop` variable is
  // below `bound` (Upper) or at least `bound` (Lower), an i64 expression of
  // names bound outside the nest, or for all threads or none (Uniform:
  // `bound` is then the condition itself): `if (x < W)` with x = x.block *
  // 32 + x.thread narrows x.thread to below W - x.block * 32. Narrowing the
  // thread loop instead of testing each thread leaves a loop LLVM vectorizes.
  struct Clip {
    enum class Kind : uint8_t { Upper, Lower, Uniform };
    size_t loop;
    Kind kind;
    ir::Expr bound;
  };
  // A guard comparison `coefficients . threads + rest op 0` (Lt, Le, Gt or
  // Ge), each coefficient that of a thread loop (its index in loops_).
  struct AffineGuard {
    BinaryOpKind op;
    std::vector<std::pair<size_t, int64_t>> coefficients;
    ir::Expr rest;
  };
  // Which threads an edge block (one a clip narrows) may run beyond those
  // its clip admits, computing what no store keeps (splitEdge): `rows`, the
  // threads of every loop but x, each index but x held to the clipped range
  // (they compute what a thread of the edge computes); `lanes`, x's threads
  // too, its index left as it is (what they read is proven inside what they
  // read it from, and decides no control flow).
  struct EdgeSpeculation {
    bool rows = true;
    bool lanes = true;
  };
  // What a statement does besides computing a thread's own values.
  struct Effects {
    bool beyondThread = false; // stores outside the thread, atomics, checks
    bool exchanges = false;    // barriers, shuffles, async copies
    // The thread's own arrays it stores into, and those it allocates.
    std::set<const BufferInfo *> registersWritten, registersAllocated;
  };
  struct PerThreadValue {
    std::string var;
    PerThread value;
  };
  struct PerThreadBuffer {
    const BufferInfo *buffer;
    llvm::Value *storage;
    llvm::Value *elementCount;
  };

  // Records the statements that cannot run inside one thread loop: those
  // holding a barrier or a chosen loop.
  bool markSplit(const StmtNode &stmt) {
    bool needed = false;
    auto visit = [&](const ir::Stmt &child) {
      if (child && markSplit(*child))
        needed = true;
    };
    switch (stmt.kind) {
    case StmtNode::Kind::Barrier:
      needed = true;
      break;
    case StmtNode::Kind::For: {
      auto &loop = *stmt.as<For>();
      needed = interchanged_.contains(&loop);
      // A loop left inside its thread keeps everything in it there: an if
      // in it must not become a clip, which would pull the loop out.
      bool staysInThread = !needed && !containsBarrier(*loop.body);
      loopsInThread_ += staysInThread;
      // A loop around a barrier runs once for the block (splitLoop): its
      // variable is the same in every thread, a name a clip's bound or a
      // let evaluated once may use (privatize_combines' staged rounds).
      bool uniform = containsBarrier(*loop.body);
      if (!uniform) {
        affine_.bindLoop(loop.var);
        boundInNest_.insert(loop.var);
      }
      conditional_ += !uniform;
      visit(loop.body);
      conditional_ -= !uniform;
      if (!uniform)
        affine_.unbind(loop.var);
      loopsInThread_ -= staysInThread;
      break;
    }
    case StmtNode::Kind::IfThenElse: {
      auto &branch = *stmt.as<IfThenElse>();
      std::optional<std::vector<Clip>> clips;
      if (loopsInThread_ == 0)
        clips = clipsOf(branch);
      if (clips) {
        clips_[&branch] = std::move(*clips);
        needed = true;
      } else if (loopsInThread_ == 0 && branch.elseCase && !mayFault(*branch.cond) &&
                 !mentionsNestNames(*branch.cond)) {
        // The same side for every thread (tile_registers' interior and edge
        // tiles): tested once, each side its own thread loop, rather than
        // both sides run under a mask in one.
        needed = true;
      } else if (loopsInThread_ == 0) {
        if (auto guards = affineGuardsOf(branch))
          affineGuards_[&branch] = std::move(*guards);
      }
      ++conditional_;
      visit(branch.thenCase);
      visit(branch.elseCase);
      --conditional_;
      if (clips_.contains(&branch) && containsInterchangedLoop(*branch.thenCase))
        edgeSpeculation_[&branch] = edgeSpeculationOf(*branch.thenCase);
      break;
    }
    case StmtNode::Kind::LetStmt: {
      auto &let = *stmt.as<LetStmt>();
      affine_.bindLet(let.var, let.value);
      // A let of names from outside the nest is evaluated once (splitLet).
      // So is one that may fault (a division) where every thread of the
      // block evaluates it: once faults exactly where they would. Not one
      // that loads: a thread's own registers, or memory another writes.
      bool once = !mentionsNestNames(*let.value) &&
                  (!mayFault(*let.value) ||
                   (hasThreads_ && conditional_ == 0 && loadsIn(let.value).empty()));
      if (!once)
        boundInNest_.insert(let.var);
      else if (mayFault(*let.value))
        evaluatedOnce_.insert(&let);
      visit(let.body);
      affine_.unbind(let.var);
      break;
    }
    case StmtNode::Kind::Allocate:
      visit(stmt.as<ir::Allocate>()->body);
      break;
    case StmtNode::Kind::Block:
      for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
        visit(child);
      break;
    default:
      break;
    }
    if (needed)
      split_.insert(&stmt);
    return needed;
  }

  // The clips equivalent to `branch`'s condition, when it has no else and
  // its condition is a conjunction of comparisons each affine in one thread
  // variable with coefficient 1 or -1.
  std::optional<std::vector<Clip>> clipsOf(const IfThenElse &branch) const {
    std::optional<std::vector<const Binary *>> comparisons = comparisonsOf(branch);
    if (!comparisons)
      return std::nullopt;
    std::vector<Clip> clips;
    for (const Binary *comparison : *comparisons) {
      std::optional<Clip> clip = clipOf(*comparison);
      if (!clip)
        return std::nullopt;
      clips.push_back(*clip);
    }
    return clips;
  }

  // The operands of the conjunction that is `branch`'s condition (each a
  // binary operation other than `&&`), when the branch has no else.
  static std::optional<std::vector<const Binary *>> comparisonsOf(const IfThenElse &branch) {
    if (branch.elseCase)
      return std::nullopt;
    // Right to left: the order the clips narrow the thread loops in.
    std::vector<ir::Expr> conjuncts = ir::conjunctsOf(branch.cond);
    std::vector<const Binary *> comparisons;
    for (auto cond = conjuncts.rbegin(); cond != conjuncts.rend(); ++cond) {
      const auto *binary = (*cond)->as<Binary>();
      if (!binary)
        return std::nullopt;
      comparisons.push_back(binary);
    }
    return comparisons;
  }

  std::optional<Clip> clipOf(const Binary &comparison) const {
    if (!mentionsNestNames(comparison) && !mayFault(comparison))
      return Clip{0, Clip::Kind::Uniform, ir::Expr(ir::Expr(), &comparison)};
    BinaryOpKind op = comparison.op;
    if ((op != BinaryOpKind::Lt && op != BinaryOpKind::Le && op != BinaryOpKind::Gt &&
         op != BinaryOpKind::Ge) ||
        !isInteger(comparison.lhs->type))
      return std::nullopt;
    // lhs - rhs = coefficient * thread + rest
    passes::AffineIndex difference = affine_.analyze(sub(comparison.lhs, comparison.rhs));
    if (!difference.isAffine() || difference.coefficients.size() != 1)
      return std::nullopt;
    auto [var, coefficient] = *difference.coefficients.begin();
    auto loop = std::ranges::find(loops_, var, &ThreadLoop::var);
    if (loop == loops_.end() || (coefficient != 1 && coefficient != -1))
      return std::nullopt;
    ir::Expr rest = difference.rest ? difference.rest : makeI64(0);
    if (mentionsNestNames(*rest) || mayFault(*rest))
      return std::nullopt;
    // With t the thread variable and c = coefficient: c * t + rest op 0.
    // c = 1: t op -rest; c = -1: t (op mirrored) rest.
    ir::Expr pivot = coefficient == 1 ? sub(makeI64(0), rest) : rest;
    if (coefficient == -1)
      op = op == BinaryOpKind::Lt   ? BinaryOpKind::Gt
           : op == BinaryOpKind::Le ? BinaryOpKind::Ge
           : op == BinaryOpKind::Gt ? BinaryOpKind::Lt
                                    : BinaryOpKind::Le;
    auto plusOne = [](ir::Expr value) { return add(std::move(value), makeI64(1)); };
    size_t index = static_cast<size_t>(loop - loops_.begin());
    switch (op) {
    case BinaryOpKind::Lt: // t < pivot
      return Clip{index, Clip::Kind::Upper, pivot};
    case BinaryOpKind::Le: // t < pivot + 1
      return Clip{index, Clip::Kind::Upper, plusOne(pivot)};
    case BinaryOpKind::Gt: // t >= pivot + 1
      return Clip{index, Clip::Kind::Lower, plusOne(pivot)};
    default: // t >= pivot
      return Clip{index, Clip::Kind::Lower, pivot};
    }
  }

  // `expr` (a clip's bound) with its i64 negations, additions, subtractions
  // and multiplications saturating at the i64 limits instead of wrapping: the
  // bound is the program's comparison rearranged (`i < i64(t)` becomes
  // i.thread < i64(t) - i.block * 32), which may overflow where the program
  // computes nothing that does (t = -inf: i64(t) is INT64_MIN). A saturated
  // bound lies far outside the thread range, as the exact one does.
  llvm::Value *emitSaturating(const ExprNode &expr) {
    if (const auto *negation = expr.as<ir::Unary>();
        negation && negation->op == ir::UnaryOpKind::Neg && expr.type == ScalarType::I64)
      return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::ssub_sat, builder_.getInt64(0),
                                            emitSaturating(*negation->operand));
    const auto *binary = expr.as<Binary>();
    if (!binary || expr.type != ScalarType::I64 ||
        (binary->op != BinaryOpKind::Add && binary->op != BinaryOpKind::Sub &&
         binary->op != BinaryOpKind::Mul))
      return emitter_.emitExpr(expr);
    llvm::Value *lhs = emitSaturating(*binary->lhs), *rhs = emitSaturating(*binary->rhs);
    switch (binary->op) {
    case BinaryOpKind::Add:
      return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_sat, lhs, rhs);
    case BinaryOpKind::Sub:
      return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::ssub_sat, lhs, rhs);
    default:
      return emitter_.saturatingMultiply(lhs, rhs);
    }
  }

  bool mentionsNestNames(const ExprNode &expr) const {
    MentionsVarying mentions(boundInNest_);
    mentions.visit(ir::Expr(ir::Expr(), &expr));
    return mentions.found;
  }

  void split(const StmtNode &stmt) {
    if (!split_.contains(&stmt)) {
      ConditionalDivision division(!masks_.empty());
      division.visit(ir::Stmt(ir::Stmt(), &stmt));
      if (!edgeThreads_.empty() && effectsOf(stmt).beyondThread) {
        runOnEdgeThreads([&] {
          forEachThread([&](llvm::Value *) { emitter_.emitStmt(stmt); }, division.found);
        });
        return;
      }
      forEachThread([&](llvm::Value *) { emitter_.emitStmt(stmt); }, division.found);
      return;
    }
    switch (stmt.kind) {
    case StmtNode::Kind::Barrier:
      return; // the boundary between two thread loops
    case StmtNode::Kind::Block: {
      std::vector<ir::Stmt> region;
      auto flush = [&] {
        if (!region.empty())
          split(ir::Block(region));
        region.clear();
      };
      for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts) {
        if (!split_.contains(child.get())) {
          region.push_back(child);
          continue;
        }
        flush();
        split(*child);
      }
      flush();
      return;
    }
    case StmtNode::Kind::For:
      splitLoop(*stmt.as<For>());
      return;
    case StmtNode::Kind::IfThenElse:
      splitBranch(*stmt.as<IfThenElse>());
      return;
    case StmtNode::Kind::LetStmt:
      splitLet(*stmt.as<LetStmt>());
      return;
    case StmtNode::Kind::Allocate:
      splitAllocate(*stmt.as<ir::Allocate>());
      return;
    default:
      emitter_.fail("CPU code generation: unexpected statement around a barrier");
      return;
    }
  }

  // The same value in every thread, and safe to evaluate once for the block.
  bool isUniform(const ir::Expr &expr) const { return !mayFault(*expr) && !variesByThread(expr); }

  // Whether `expr` names a value that differs between the threads.
  bool variesByThread(const ir::Expr &expr) const {
    MentionsVarying mentions(varying_);
    mentions.visit(expr);
    return mentions.found;
  }

  void splitLoop(const For &loop) {
    if (loop.forKind == ForKind::GpuThread || loop.forKind == ForKind::GpuBlock) {
      emitter_.fail("CPU code generation: a barrier inside a nested GPU loop", loop.source);
      return;
    }
    // Around a barrier the bounds are block-uniform (read from thread 0);
    // uniform bounds need no per-thread trip counts either.
    if (containsBarrier(*loop.body) || (isUniform(loop.min) && isUniform(loop.extent))) {
      llvm::Value *min, *extent;
      {
        ScopedBindings uniform(emitter_);
        bindThreadZero(uniform);
        min = emitter_.emitExpr(*loop.min);
        extent = emitter_.emitExpr(*loop.extent);
      }
      emitter_.emitCountedLoop(loop.var, min, extent, [&](llvm::Value *var) {
        withStackScope([&] {
          ScopedBindings scope(emitter_);
          scope.var(loop.var, var);
          split(*loop.body);
        });
      });
      return;
    }
    interchangeLoop(loop);
  }

  // `for k: for thread: body` where each thread's own iterations are
  // min(thread) + k for k below its trip count: the iterations every active
  // thread runs first, then the remaining ones guarded per thread.
  void interchangeLoop(const For &loop) {
    llvm::Type *type = emitter_.valueType(loop.min->type);
    PerThread minOf = perThread(*loop.min);
    PerThread tripsOf = perThread(*loop.extent);
    auto *zero = llvm::ConstantInt::get(type, 0);
    llvm::Value *fewestSlot =
        emitter_.createEntryAlloca(type, builder_.getInt64(1), "trips.fewest");
    llvm::Value *mostSlot = emitter_.createEntryAlloca(type, builder_.getInt64(1), "trips.most");
    builder_.CreateStore(
        llvm::ConstantInt::get(type, llvm::APInt::getSignedMaxValue(type->getIntegerBitWidth())),
        fewestSlot);
    builder_.CreateStore(zero, mostSlot);
    forEachThread([&](llvm::Value *thread) {
      llvm::Value *trips =
          builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, tripsOf(thread), zero);
      builder_.CreateStore(builder_.CreateBinaryIntrinsic(
                               llvm::Intrinsic::smin, builder_.CreateLoad(type, fewestSlot), trips),
                           fewestSlot);
      builder_.CreateStore(builder_.CreateBinaryIntrinsic(
                               llvm::Intrinsic::smax, builder_.CreateLoad(type, mostSlot), trips),
                           mostSlot);
    });
    llvm::Value *most = builder_.CreateLoad(type, mostSlot, "trips.most");
    llvm::Value *fewest =
        builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, builder_.CreateLoad(type, fewestSlot),
                                       most, nullptr, "trips.fewest");

    varying_.insert(loop.var);
    auto runIterations = [&](llvm::Value *first, llvm::Value *count, bool guarded) {
      emitter_.emitCountedLoop(loop.var, first, count, [&](llvm::Value *iteration) {
        withStackScope([&] {
          values_.push_back({loop.var, [this, minOf, iteration](llvm::Value *thread) {
                               return builder_.CreateAdd(minOf(thread), iteration);
                             }});
          if (guarded)
            masks_.push_back([this, tripsOf, iteration](llvm::Value *thread) {
              return builder_.CreateICmpSLT(iteration, tripsOf(thread));
            });
          split(*loop.body);
          if (guarded)
            masks_.pop_back();
          values_.pop_back();
        });
      });
    };
    runIterations(zero, fewest, /*guarded=*/false);
    runIterations(fewest, builder_.CreateSub(most, fewest), /*guarded=*/true);
    varying_.erase(varying_.find(loop.var));
  }

  // `if (cond) emitThen() else emitElse()`, its blocks named `name.then`,
  // `name.else`, `name.end`.
  void branchOn(llvm::Value *cond, const std::string &name, const std::function<void()> &emitThen,
                const std::function<void()> &emitElse) {
    llvm::Function *function = builder_.GetInsertBlock()->getParent();
    auto *thenBlock = llvm::BasicBlock::Create(emitter_.context(), name + ".then", function);
    auto *elseBlock = llvm::BasicBlock::Create(emitter_.context(), name + ".else", function);
    auto *join = llvm::BasicBlock::Create(emitter_.context(), name + ".end", function);
    builder_.CreateCondBr(cond, thenBlock, elseBlock);
    builder_.SetInsertPoint(thenBlock);
    emitThen();
    builder_.CreateBr(join);
    builder_.SetInsertPoint(elseBlock);
    emitElse();
    builder_.CreateBr(join);
    builder_.SetInsertPoint(join);
  }

  void splitBranch(const IfThenElse &branch) {
    if (containsBarrier(branch) || isUniform(branch.cond)) {
      llvm::Value *cond;
      {
        ScopedBindings uniform(emitter_);
        bindThreadZero(uniform);
        cond = emitter_.emitExpr(*branch.cond);
      }
      branchOn(
          cond, "uniform", [&] { split(*branch.thenCase); },
          [&] {
            if (branch.elseCase)
              split(*branch.elseCase);
          });
      return;
    }
    if (auto clips = clips_.find(&branch); clips != clips_.end()) {
      std::vector<ThreadLoop> unclipped = loops_;
      for (const Clip &clip : clips->second) {
        ThreadLoop &loop = loops_[clip.loop];
        if (clip.kind == Clip::Kind::Uniform) {
          loop.end = builder_.CreateSelect(emitter_.emitExpr(*clip.bound), loop.end, loop.begin);
          continue;
        }
        // In i64, kept within [begin, end] before narrowing to the loop's
        // type: a bound past i32 (`i <= m` with m = INT32_MAX gives m + 1)
        // would wrap.
        llvm::Value *bound = emitSaturating(*clip.bound);
        llvm::Value *begin = emitter_.emitCast(loop.begin, loop.type, ScalarType::I64);
        llvm::Value *end = emitter_.emitCast(loop.end, loop.type, ScalarType::I64);
        auto within = [&](llvm::Value *value) {
          llvm::Value *clamped = builder_.CreateBinaryIntrinsic(
              llvm::Intrinsic::smax,
              builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, value, end), begin);
          return emitter_.emitCast(clamped, ScalarType::I64, loop.type);
        };
        if (clip.kind == Clip::Kind::Upper)
          loop.end = within(bound);
        else
          loop.begin = within(bound);
      }
      if (!containsInterchangedLoop(*branch.thenCase)) {
        split(*branch.thenCase);
        loops_ = std::move(unclipped);
        return;
      }
      // Around a loop with the thread loops inside it, blocks inside the
      // range (all of them but the last along each dimension) run the thread
      // loops at their constant full extents: LLVM then unrolls them and
      // keeps each thread's accumulator in a vector register across the
      // loop (matmul ran several times faster). Only the blocks at the edges
      // run the clipped loops. Without such a loop the copy does not pay
      // (transpose ran slower with it).
      llvm::Value *whole = builder_.getTrue();
      for (size_t i = 0; i < loops_.size(); ++i)
        whole = builder_.CreateAnd(
            whole, builder_.CreateAnd(builder_.CreateICmpEQ(loops_[i].begin, unclipped[i].begin),
                                      builder_.CreateICmpEQ(loops_[i].end, unclipped[i].end)));
      std::vector<ThreadLoop> clipped = loops_;
      branchOn(
          whole, "clip",
          [&] {
            loops_ = unclipped;
            split(*branch.thenCase);
          },
          [&] {
            loops_ = clipped;
            splitEdge(branch, unclipped);
          });
      loops_ = std::move(unclipped);
      return;
    }
    // A guard relating several thread indices (a triangle's `j <= i`) is
    // taken whole by most blocks: where it holds for every thread of the
    // block, the then-case runs unmasked (its loops then keep the block's
    // accumulators in registers, as a clip's whole blocks do); where it holds
    // for none, nothing runs; only the blocks it cuts test each thread.
    if (auto tests = blockTestsOf(branch)) {
      branchOn(
          tests->everyThread, "every_thread", [&] { split(*branch.thenCase); },
          [&] {
            branchOn(
                tests->noThread, "no_thread", [] {}, [&] { splitPerThread(branch); });
          });
      return;
    }
    splitPerThread(branch);
  }

  // An edge block of a clip around an interchanged loop: with the clip's
  // threads alone its loops run at the counts the clip leaves, which LLVM
  // neither unrolls nor keeps in registers (matmul's edge blocks ran nine
  // times slower than its others, a tenth of its time at 1000 x 1000). Where
  // edgeSpeculationOf allows, the block runs every thread instead, as the
  // whole blocks do, with the indices but x held to the clip's range (the
  // threads past it compute again what the last rows compute) and x's lanes
  // past it computing what no store keeps; the code with effects beyond its
  // thread (the stores) runs on the clip's threads alone. `loops_` are the
  // clipped loops; `unclipped` those of the whole block.
  void splitEdge(const IfThenElse &branch, const std::vector<ThreadLoop> &unclipped) {
    auto speculation = edgeSpeculation_.find(&branch);
    if (speculation == edgeSpeculation_.end() || !speculation->second.rows || !masks_.empty() ||
        !edgeThreads_.empty()) {
      split(*branch.thenCase);
      return;
    }
    llvm::Value *someThread = builder_.getTrue();
    for (const ThreadLoop &loop : loops_)
      someThread = builder_.CreateAnd(someThread, builder_.CreateICmpSLT(loop.begin, loop.end));
    llvm::Value *allowed = someThread;
    if (!speculation->second.lanes) {
      const ThreadLoop &x = loops_.back(), &wholeX = unclipped.back();
      allowed = builder_.CreateAnd(allowed,
                                   builder_.CreateAnd(builder_.CreateICmpEQ(x.begin, wholeX.begin),
                                                      builder_.CreateICmpEQ(x.end, wholeX.end)));
    }
    std::vector<ThreadLoop> clipped = loops_;
    branchOn(
        allowed, speculation->second.lanes ? "edge_lanes" : "edge_rows",
        [&] {
          edgeThreads_ = clipped;
          holdToEdge_ = true;
          loops_ = unclipped;
          split(*branch.thenCase);
          loops_ = clipped;
          holdToEdge_ = false;
          edgeThreads_.clear();
        },
        [&] { split(*branch.thenCase); });
  }

  // Emits code with effects beyond its thread, met while an edge block runs
  // every thread, for the edge's threads alone: each thread of the whole
  // block tests its own indices against the clip's range. The loops keep
  // their constant counts, so that LLVM still keeps the thread's values in
  // registers, and makes the stores of the lanes past the clip masked ones.
  void runOnEdgeThreads(const std::function<void()> &emit) {
    masks_.push_back([this](llvm::Value *) {
      llvm::Value *inside = builder_.getTrue();
      for (size_t i = 0; i < loops_.size(); ++i) {
        llvm::Value *var = emitter_.emitExpr(ir::Var(loops_[i].type, loops_[i].var));
        inside = builder_.CreateAnd(
            inside, builder_.CreateAnd(builder_.CreateICmpSGE(var, edgeThreads_[i].begin),
                                       builder_.CreateICmpSLT(var, edgeThreads_[i].end)));
      }
      return inside;
    });
    bool held = std::exchange(holdToEdge_, false);
    emit();
    holdToEdge_ = held;
    masks_.pop_back();
  }

  // The value a thread loop's variable takes in the code being emitted: its
  // own, or, while an edge block runs every thread, for every loop but x,
  // the nearest inside the edge's range.
  llvm::Value *heldToEdge(size_t depth, llvm::Value *var) {
    if (!holdToEdge_ || depth + 1 == loops_.size())
      return var;
    const ThreadLoop &edge = edgeThreads_[depth];
    llvm::Value *last = builder_.CreateSub(edge.end, llvm::ConstantInt::get(var->getType(), 1));
    return builder_.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin,
        builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, var, edge.begin), last);
  }

  // Threads disagree: each side runs for the threads that take it.
  void splitPerThread(const IfThenElse &branch) {
    PerThread cond = perThread(*branch.cond);
    masks_.push_back(cond);
    split(*branch.thenCase);
    masks_.pop_back();
    if (branch.elseCase) {
      masks_.push_back(
          [this, cond](llvm::Value *thread) { return builder_.CreateNot(cond(thread)); });
      split(*branch.elseCase);
      masks_.pop_back();
    }
  }

  // Whether a guard holds for every thread of the block, and whether it is
  // known to hold for none (then nothing need run).
  struct BlockTests {
    llvm::Value *everyThread, *noThread;
  };

  // The tests of `branch`'s affine guards (affineGuardsOf), if it has them
  // and no masks are around it: a comparison holds for all threads (for
  // none) when it does at the corner of the threads' box that makes its
  // side largest (smallest).
  std::optional<BlockTests> blockTestsOf(const IfThenElse &branch) {
    auto guards = affineGuards_.find(&branch);
    if (guards == affineGuards_.end() || !masks_.empty())
      return std::nullopt;
    llvm::Value *every = builder_.getTrue(), *none = builder_.getFalse();
    llvm::Value *zero = builder_.getInt64(0);
    for (const AffineGuard &guard : guards->second) {
      llvm::Value *smallest = emitSaturating(*guard.rest), *largest = smallest;
      for (auto [loop, coefficient] : guard.coefficients) {
        const ThreadLoop &thread = loops_[loop];
        llvm::Value *first = emitter_.emitCast(thread.begin, thread.type, ScalarType::I64);
        llvm::Value *last = builder_.CreateSub(
            emitter_.emitCast(thread.end, thread.type, ScalarType::I64), builder_.getInt64(1));
        llvm::Value *scale = builder_.getInt64(coefficient);
        llvm::Value *atFirst = emitter_.saturatingMultiply(first, scale);
        llvm::Value *atLast = emitter_.saturatingMultiply(last, scale);
        smallest = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_sat, smallest,
                                                  coefficient > 0 ? atFirst : atLast);
        largest = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::sadd_sat, largest,
                                                 coefficient > 0 ? atLast : atFirst);
      }
      llvm::Value *holdsForAll, *holdsForNone;
      switch (guard.op) {
      case BinaryOpKind::Lt: // lhs - rhs < 0
        holdsForAll = builder_.CreateICmpSLT(largest, zero);
        holdsForNone = builder_.CreateICmpSGE(smallest, zero);
        break;
      case BinaryOpKind::Le:
        holdsForAll = builder_.CreateICmpSLE(largest, zero);
        holdsForNone = builder_.CreateICmpSGT(smallest, zero);
        break;
      case BinaryOpKind::Gt:
        holdsForAll = builder_.CreateICmpSGT(smallest, zero);
        holdsForNone = builder_.CreateICmpSLE(largest, zero);
        break;
      default: // Ge
        holdsForAll = builder_.CreateICmpSGE(smallest, zero);
        holdsForNone = builder_.CreateICmpSLT(largest, zero);
        break;
      }
      every = builder_.CreateAnd(every, holdsForAll);
      none = builder_.CreateOr(none, holdsForNone);
    }
    return BlockTests{every, none};
  }

  // `branch`'s condition as comparisons `lhs - rhs op 0`, each affine in the
  // thread variables (integer coefficients, at least one; the rest the same
  // for every thread), when it is a conjunction of such and the branch has
  // no else.
  std::optional<std::vector<AffineGuard>> affineGuardsOf(const IfThenElse &branch) const {
    std::optional<std::vector<const Binary *>> comparisons = comparisonsOf(branch);
    if (!comparisons)
      return std::nullopt;
    std::vector<AffineGuard> guards;
    for (const Binary *comparison : *comparisons) {
      BinaryOpKind op = comparison->op;
      if ((op != BinaryOpKind::Lt && op != BinaryOpKind::Le && op != BinaryOpKind::Gt &&
           op != BinaryOpKind::Ge) ||
          !isInteger(comparison->lhs->type) || mayFault(*comparison))
        return std::nullopt;
      passes::AffineIndex difference = affine_.analyze(sub(comparison->lhs, comparison->rhs));
      if (!difference.isAffine() || difference.coefficients.empty())
        return std::nullopt;
      AffineGuard guard{op, {}, difference.rest ? difference.rest : makeI64(0)};
      if (mentionsNestNames(*guard.rest) || mayFault(*guard.rest))
        return std::nullopt;
      for (auto [var, coefficient] : difference.coefficients) {
        auto loop = std::ranges::find(loops_, var, &ThreadLoop::var);
        if (loop == loops_.end())
          return std::nullopt; // a loop inside the nest, not a thread index
        guard.coefficients.emplace_back(static_cast<size_t>(loop - loops_.begin()), coefficient);
      }
      guards.push_back(std::move(guard));
    }
    return guards;
  }

  bool containsInterchangedLoop(const StmtNode &stmt) const {
    class Finder : public IRVisitor {
    public:
      explicit Finder(const std::set<const For *> &loops) : loops_(loops) {}
      bool found = false;

    protected:
      void visitFor(const For &loop) override {
        found |= loops_.contains(&loop);
        IRVisitor::visitFor(loop);
      }

    private:
      const std::set<const For *> &loops_;
    } finder(interchanged_);
    finder.visit(ir::Stmt(ir::Stmt(), &stmt));
    return finder.found;
  }

  static Effects effectsOf(const StmtNode &stmt) {
    class Finder : public IRVisitor {
    public:
      Effects effects;

    protected:
      void visitStore(const Store &node) override {
        if (node.buffer->memory == MemorySpace::Register)
          effects.registersWritten.insert(node.buffer.get());
        else
          effects.beyondThread = true;
        IRVisitor::visitStore(node);
      }
      void visitAllocate(const ir::Allocate &node) override {
        if (node.buffer->memory == MemorySpace::Register)
          effects.registersAllocated.insert(node.buffer.get());
        IRVisitor::visitAllocate(node);
      }
      void visitAtomicUpdate(const AtomicUpdate &node) override {
        effects.beyondThread = true;
        IRVisitor::visitAtomicUpdate(node);
      }
      void visitCheck(const Check &node) override {
        effects.beyondThread = true;
        IRVisitor::visitCheck(node);
      }
      void visitBarrier(const Barrier &) override { effects.exchanges = true; }
      void visitWarpShuffle(const WarpShuffle &) override { effects.exchanges = true; }
      void visitAsyncCopy(const AsyncCopy &) override { effects.exchanges = true; }
      void visitAsyncCommit(const AsyncCommit &) override { effects.exchanges = true; }
      void visitAsyncWait(const AsyncWait &) override { effects.exchanges = true; }
      void visitReduce(const Reduce &) override { effects.exchanges = true; }
      void visitScan(const Scan &) override { effects.exchanges = true; }
      void visitLaunch(const Launch &) override { effects.exchanges = true; }
    } finder;
    finder.visit(ir::Stmt(ir::Stmt(), &stmt));
    return finder.effects;
  }

  // What the edge blocks of a clip whose then-case is `body` may run,
  // walking it as `split` takes it apart: each piece it leaves whole runs
  // either on the clip's threads (it has effects beyond its thread) or on
  // every thread. The first kind must write no thread's own array (a piece
  // of the second kind would read it where only the clip's threads wrote);
  // the second may write only the arrays the then-case allocates (the
  // threads past the clip must leave what outlives it as it was); nothing
  // may exchange values between threads. For x's lanes past the
  // clip, which read what no thread of the edge reads, every piece run on
  // every thread must also read only what is proven in range for any lane
  // and base no control flow on x or on what memory holds, and divide by no
  // value that may be zero.
  EdgeSpeculation edgeSpeculationOf(const StmtNode &body) {
    EdgeSpeculation speculation;
    std::set<const BufferInfo *> allocated;
    checkEdgePieces(body, allocated, speculation);
    speculation.lanes = speculation.lanes && speculation.rows;
    return speculation;
  }

  // `allocated`: the thread's own arrays the then-case allocates around
  // `stmt`.
  void checkEdgePieces(const StmtNode &stmt, std::set<const BufferInfo *> &allocated,
                       EdgeSpeculation &speculation) {
    if (!split_.contains(&stmt)) {
      Effects effects = effectsOf(stmt);
      bool ownWrites = std::ranges::all_of(effects.registersWritten, [&](const BufferInfo *array) {
        return allocated.contains(array) || effects.registersAllocated.contains(array);
      });
      if (effects.exchanges || (effects.beyondThread && !effects.registersWritten.empty()) ||
          (!effects.beyondThread && !ownWrites))
        speculation.rows = false;
      else if (!effects.beyondThread && !lanesMayRun(stmt))
        speculation.lanes = false;
      return;
    }
    switch (stmt.kind) {
    case StmtNode::Kind::Block:
      for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
        checkEdgePieces(*child, allocated, speculation);
      return;
    case StmtNode::Kind::For: {
      const For &loop = *stmt.as<For>();
      speculation.lanes = speculation.lanes && !dependsOnLanes(loop.min) &&
                          !dependsOnLanes(loop.extent) && !dividesUnsafely(*loop.min) &&
                          !dividesUnsafely(*loop.extent);
      affine_.bindLoop(loop.var);
      checkEdgePieces(*loop.body, allocated, speculation);
      affine_.unbind(loop.var);
      return;
    }
    case StmtNode::Kind::IfThenElse: {
      const IfThenElse &branch = *stmt.as<IfThenElse>();
      speculation.lanes =
          speculation.lanes && !dependsOnLanes(branch.cond) && !dividesUnsafely(*branch.cond);
      checkEdgePieces(*branch.thenCase, allocated, speculation);
      if (branch.elseCase)
        checkEdgePieces(*branch.elseCase, allocated, speculation);
      return;
    }
    case StmtNode::Kind::LetStmt: {
      const LetStmt &let = *stmt.as<LetStmt>();
      speculation.lanes = speculation.lanes && lanesMayRead(let.value);
      bindEdgeLet(let);
      checkEdgePieces(*let.body, allocated, speculation);
      unbindEdgeLet(let);
      return;
    }
    case StmtNode::Kind::Allocate: {
      const ir::Allocate &allocate = *stmt.as<ir::Allocate>();
      for (const ir::Expr &extent : allocate.buffer->shape)
        speculation.lanes = speculation.lanes && !dependsOnLanes(extent);
      allocated.insert(allocate.buffer.get());
      checkEdgePieces(*allocate.body, allocated, speculation);
      return;
    }
    default:
      speculation.rows = false;
      return;
    }
  }

  // Walks code run on every thread of an edge block, finding whatever x's
  // lanes past the clip may not do (see edgeSpeculationOf).
  class LaneWalk : public IRVisitor {
  public:
    explicit LaneWalk(ThreadNestScheduler &scheduler) : scheduler_(scheduler) {}
    bool allowed = true;

  protected:
    bool finished() const override { return !allowed; }
    void visitFor(const For &loop) override {
      allowed = allowed && !scheduler_.dependsOnLanes(loop.min) &&
                !scheduler_.dependsOnLanes(loop.extent);
      visit(loop.min);
      visit(loop.extent);
      scheduler_.affine_.bindLoop(loop.var);
      visit(loop.body);
      scheduler_.affine_.unbind(loop.var);
    }
    void visitIfThenElse(const IfThenElse &branch) override {
      allowed = allowed && !scheduler_.dependsOnLanes(branch.cond);
      IRVisitor::visitIfThenElse(branch);
    }
    void visitSelect(const ir::Select &select) override {
      allowed = allowed && !scheduler_.dependsOnLanes(select.cond);
      IRVisitor::visitSelect(select);
    }
    void visitLetStmt(const LetStmt &let) override {
      visit(let.value);
      scheduler_.bindEdgeLet(let);
      visit(let.body);
      scheduler_.unbindEdgeLet(let);
    }
    void visitAllocate(const ir::Allocate &allocate) override {
      for (const ir::Expr &extent : allocate.buffer->shape)
        allowed = allowed && !scheduler_.dependsOnLanes(extent);
      IRVisitor::visitAllocate(allocate);
    }
    void visitLoad(const Load &load) override {
      allowed = allowed && scheduler_.laneMayLoad(load);
      IRVisitor::visitLoad(load);
    }
    void visitStore(const Store &store) override {
      for (const ir::Expr &index : store.indices)
        allowed = allowed && !scheduler_.dependsOnLanes(index);
      IRVisitor::visitStore(store);
    }
    void visitBinary(const Binary &binary) override {
      allowed = allowed && !dividesUnsafely(binary);
      IRVisitor::visitBinary(binary);
    }

  private:
    ThreadNestScheduler &scheduler_;
  };

  bool lanesMayRun(const StmtNode &piece) {
    LaneWalk walk(*this);
    walk.visit(ir::Stmt(ir::Stmt(), &piece));
    return walk.allowed;
  }
  bool lanesMayRead(const ir::Expr &expr) {
    LaneWalk walk(*this);
    walk.visit(expr);
    return walk.allowed;
  }

  // An integer division whose divisor may be zero (or -1, whose quotient of
  // the smallest integer overflows): a lane past a clip may hold any value.
  static bool dividesUnsafely(const Binary &binary) {
    if (!isInteger(binary.type) ||
        (binary.op != BinaryOpKind::Div && binary.op != BinaryOpKind::Rem))
      return false;
    const auto *divisor = binary.rhs->as<IntImm>();
    return !divisor || divisor->value == 0 || divisor->value == -1;
  }
  static bool dividesUnsafely(const ExprNode &expr) {
    class Finder : public IRVisitor {
    public:
      bool found = false;

    protected:
      void visitBinary(const Binary &binary) override {
        found = found || dividesUnsafely(binary);
        IRVisitor::visitBinary(binary);
      }
    } finder;
    finder.visit(ir::Expr(ir::Expr(), &expr));
    return finder.found;
  }

  // Whether `expr`'s value may differ between x's lanes past a clip and the
  // lanes it admits: it depends on x, or reads memory (directly or through a
  // let), which such a lane may have filled with anything.
  bool dependsOnLanes(const ir::Expr &expr) const {
    if (!loadsIn(expr).empty() || usesAnyVar(expr, lanesLoadedLets_))
      return true;
    return affine_.analyze(expr).dependsOn(loops_.back().var);
  }

  // A lane past a clip may load an element whose indices do not depend on
  // x (every lane of the edge loads it too), or one of an array of constant
  // extents inside which the index stays for every thread of the block.
  bool laneMayLoad(const Load &load) const {
    const BufferInfo &buffer = *load.buffer;
    for (size_t d = 0; d < load.indices.size(); ++d) {
      const ir::Expr &index = load.indices[d];
      if (!loadsIn(index).empty() || usesAnyVar(index, lanesLoadedLets_))
        return false;
      passes::AffineIndex form = affine_.analyze(index);
      if (!form.dependsOn(loops_.back().var))
        continue;
      if (buffer.memory == MemorySpace::Register || !form.isAffine() || d >= buffer.shape.size())
        return false;
      int64_t lowest = 0, highest = 0;
      for (const auto &[var, coefficient] : form.coefficients) {
        auto thread = std::ranges::find(threadBox_, var, &For::var);
        if (thread == threadBox_.end())
          return false;
        const auto *min = (*thread)->min->as<IntImm>();
        const auto *trips = (*thread)->extent->as<IntImm>();
        if (!min || !trips || trips->value < 1)
          return false;
        int64_t first = coefficient * min->value;
        int64_t last = coefficient * (min->value + trips->value - 1);
        lowest += std::min(first, last);
        highest += std::max(first, last);
      }
      ir::Expr rest = form.rest ? form.rest : makeI64(0);
      if (!passes::provenNotPositive(sub(makeI64(0), add(rest, makeI64(lowest)))) ||
          !passes::provenNotPositive(
              sub(add(rest, makeI64(highest)), sub(toI64(buffer.shape[d]), makeI64(1)))))
        return false;
    }
    return true;
  }

  // Lets walked while checking an edge: bound for affine forms, and
  // remembered when their value reads memory.
  void bindEdgeLet(const LetStmt &let) {
    affine_.bindLet(let.var, let.value);
    if (!loadsIn(let.value).empty() || usesAnyVar(let.value, lanesLoadedLets_))
      lanesLoadedLets_.insert(let.var);
  }
  void unbindEdgeLet(const LetStmt &let) {
    affine_.unbind(let.var);
    lanesLoadedLets_.erase(let.var);
  }

  void splitLet(const LetStmt &let) {
    if (isUniform(let.value) || evaluatedOnce_.contains(&let)) {
      ScopedBindings scope(emitter_);
      scope.var(let.var, emitter_.emitExpr(*let.value));
      split(*let.body);
      return;
    }
    values_.push_back({let.var, perThread(*let.value)});
    varying_.insert(let.var);
    split(*let.body);
    varying_.erase(varying_.find(let.var));
    values_.pop_back();
  }

  void splitAllocate(const ir::Allocate &allocate) {
    const BufferInfo &buffer = *allocate.buffer;
    llvm::Value *count;
    {
      ScopedBindings uniform(emitter_);
      bindThreadZero(uniform);
      count = emitter_.elementCount(buffer);
    }
    if (buffer.memory != MemorySpace::Register) {
      // Shared (and Global) storage is one per block, as on the GPU.
      llvm::Value *storage = emitter_.target().allocate(emitter_, buffer, count);
      {
        ScopedBindings scope(emitter_);
        scope.buffer(&buffer, storage);
        split(*allocate.body);
      }
      emitter_.target().release(emitter_, buffer, storage);
      return;
    }
    // Extents that differ between threads (`var t: f32[i + 1]`): each
    // thread's slot is as large as the largest thread's array.
    if (std::ranges::any_of(buffer.shape,
                            [&](const ir::Expr &extent) { return variesByThread(extent); })) {
      llvm::Value *largest =
          emitter_.createEntryAlloca(builder_.getInt64Ty(), nullptr, buffer.name + ".largest");
      builder_.CreateStore(builder_.getInt64(0), largest);
      forEachThread([&](llvm::Value *) {
        llvm::Value *own = emitter_.elementCount(buffer);
        llvm::Value *known = builder_.CreateLoad(builder_.getInt64Ty(), largest);
        builder_.CreateStore(builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, known, own),
                             largest);
      });
      count = builder_.CreateLoad(builder_.getInt64Ty(), largest);
    }
    llvm::Type *elementType = emitter_.memoryType(buffer.element);
    llvm::Value *total = emitter_.saturatingMultiply(count, threadCount_);
    ScratchStorage scratch(emitter_, elementType, scalarSize(buffer.element), total,
                           buffer.name + ".per_thread", /*zeroed=*/false);
    ++stackAllocations_;
    // The block's slots together may be more than the heap has (each
    // thread's array is at most kMaxLocalArrayBytes).
    emitter_.emitUnlessAllocationFailed(scratch.failed(), buffer, [&] {
      builder_.CreateMemSet(
          scratch.pointer(), builder_.getInt8(0),
          builder_.CreateMul(total, builder_.getInt64(scalarSize(buffer.element))),
          llvm::MaybeAlign(scalarSize(buffer.element)));
      buffers_.push_back({&buffer, scratch.pointer(), count});
      split(*allocate.body);
      buffers_.pop_back();
    });
    // On the stack, the slots stay until the enclosing stack scope ends
    // (withStackScope), as they did before heap slots existed: restoring the
    // stack here broke the sibling reductions of a row kernel (packed.loop in
    // tests/programs/science), whose later stack slots outlive this scope.
    scratch.release(emitter_, /*restoreStack=*/false);
  }

  // Runs `body` between a stack save and restore when it allocates
  // per-thread arrays, so that loops around it reuse the same stack.
  void withStackScope(const std::function<void()> &body) {
    llvm::CallInst *save = builder_.CreateStackSave();
    size_t allocationsBefore = stackAllocations_;
    body();
    if (stackAllocations_ == allocationsBefore)
      save->eraseFromParent();
    else
      builder_.CreateStackRestore(save);
  }

  // `expr` per thread: recomputed where cheap, else evaluated once per
  // active thread into a per-thread array.
  PerThread perThread(const ExprNode &expr) {
    if (isCheap(expr))
      return [this, &expr](llvm::Value *) { return emitter_.emitExpr(expr); };
    llvm::Type *slotType = emitter_.memoryType(expr.type);
    llvm::Value *slots = builder_.CreateAlloca(slotType, threadCount_, "per_thread");
    ++stackAllocations_;
    ConditionalDivision division(!masks_.empty());
    division.visit(ir::Expr(ir::Expr(), &expr));
    forEachThread(
        [&](llvm::Value *thread) {
          llvm::Value *value = emitter_.toMemory(emitter_.emitExpr(expr), expr.type);
          builder_.CreateStore(value, builder_.CreateInBoundsGEP(slotType, slots, thread));
        },
        division.found);
    return [this, slotType, slots, type = expr.type](llvm::Value *thread) {
      llvm::Value *slot = builder_.CreateInBoundsGEP(slotType, slots, thread);
      return emitter_.fromMemory(builder_.CreateLoad(slotType, slot), type);
    };
  }

  // Emits one thread loop nest around `body`, with the current thread's
  // values and buffers bound, for the threads all masks admit; `body` gets
  // the linear thread index. `conditionalDivision`: see ConditionalDivision.
  void forEachThread(const std::function<void(llvm::Value *)> &body,
                     bool conditionalDivision = false) {
    ScopedBindings scope(emitter_);
    emitNest(0, builder_.getInt64(0), scope, body, conditionalDivision);
  }

  void emitNest(size_t depth, llvm::Value *outerIndex, ScopedBindings &scope,
                const std::function<void(llvm::Value *)> &body, bool conditionalDivision) {
    if (depth == loops_.size()) {
      emitThread(outerIndex, scope, body);
      return;
    }
    const ThreadLoop &loop = loops_[depth];
    llvm::Value *count = builder_.CreateSub(loop.end, loop.begin);
    llvm::BranchInst *backEdge =
        emitter_.emitCountedLoop(loop.var, loop.begin, count, [&](llvm::Value *var) {
          ScopedBindings inner(emitter_);
          inner.var(loop.var, heldToEdge(depth, var));
          llvm::Value *offset =
              emitter_.emitCast(builder_.CreateSub(var, loop.min), loop.type, ScalarType::I64);
          llvm::Value *extent = emitter_.emitCast(loop.extent, loop.type, ScalarType::I64);
          llvm::Value *index = builder_.CreateAdd(builder_.CreateMul(outerIndex, extent), offset);
          emitNest(depth + 1, index, inner, body, conditionalDivision);
        });
    if (conditionalDivision && depth + 1 == loops_.size())
      disableVectorization(backEdge);
    // The rows of an edge block running every thread (splitEdge) unrolled
    // as a whole block's are: their held indices would otherwise make LLVM
    // vectorize across rows, gathering, instead of along x.
    auto constantRange = [](const ThreadLoop &inner) {
      return llvm::isa<llvm::ConstantInt>(inner.begin) && llvm::isa<llvm::ConstantInt>(inner.end);
    };
    if (holdToEdge_ && depth + 1 < loops_.size() &&
        std::all_of(loops_.begin() + static_cast<std::ptrdiff_t>(depth), loops_.end(),
                    constantRange))
      emitter_.addLoopProperty(backEdge,
                               {llvm::MDString::get(emitter_.context(), "llvm.loop.unroll.full")});
  }

  void disableVectorization(llvm::BranchInst *backEdge) {
    llvm::LLVMContext &context = emitter_.context();
    emitter_.addLoopProperty(backEdge,
                             {llvm::MDString::get(context, "llvm.loop.vectorize.enable"),
                              llvm::ConstantAsMetadata::get(llvm::ConstantInt::getFalse(context))});
  }

  void emitThread(llvm::Value *thread, ScopedBindings &scope,
                  const std::function<void(llvm::Value *)> &body) {
    for (const PerThreadValue &value : values_)
      scope.var(value.var, value.value(thread));
    for (const PerThreadBuffer &buffer : buffers_)
      scope.buffer(buffer.buffer, builder_.CreateInBoundsGEP(
                                      emitter_.memoryType(buffer.buffer->element), buffer.storage,
                                      builder_.CreateMul(thread, buffer.elementCount)));
    if (masks_.empty()) {
      body(thread);
      return;
    }
    llvm::Value *active = nullptr;
    for (const PerThread &mask : masks_) {
      llvm::Value *admitted = mask(thread);
      active = active ? builder_.CreateAnd(active, admitted) : admitted;
    }
    llvm::Function *function = builder_.GetInsertBlock()->getParent();
    auto *run = llvm::BasicBlock::Create(emitter_.context(), "thread.active", function);
    auto *next = llvm::BasicBlock::Create(emitter_.context(), "thread.next", function);
    builder_.CreateCondBr(active, run, next);
    builder_.SetInsertPoint(run);
    body(thread);
    builder_.CreateBr(next);
    builder_.SetInsertPoint(next);
  }

  // Uniform control flow reads per-thread values of thread 0 (all agree).
  void bindThreadZero(ScopedBindings &scope) {
    for (const ThreadLoop &loop : loops_)
      scope.var(loop.var, loop.min);
    for (const PerThreadValue &value : values_)
      scope.var(value.var, value.value(builder_.getInt64(0)));
    for (const PerThreadBuffer &buffer : buffers_)
      scope.buffer(buffer.buffer, buffer.storage);
  }

  LlvmEmitter &emitter_;
  llvm::IRBuilder<> &builder_;
  llvm::Value *threadCount_;
  bool hasThreads_ = true; // every thread loop of the nest runs a constant, positive count
  int conditional_ = 0;    // markSplit's depth in ifs and loops some threads may skip
  std::set<const LetStmt *> evaluatedOnce_; // lets that may fault, evaluated once (markSplit)
  std::vector<ThreadLoop> loops_;
  std::set<const For *> interchanged_;
  std::map<const IfThenElse *, std::vector<Clip>> clips_;
  // The nest's thread loops, for their constant extents.
  std::vector<const For *> threadBox_;
  // What the edge blocks of a clip around an interchanged loop may run
  // (markSplit; see splitEdge).
  std::map<const IfThenElse *, EdgeSpeculation> edgeSpeculation_;
  // While an edge block runs every thread (splitEdge): the threads its clip
  // admits, to which the code with effects beyond its thread is narrowed and
  // the thread indices but x are held.
  std::vector<ThreadLoop> edgeThreads_;
  bool holdToEdge_ = false;
  // While checking an edge: the lets in scope whose value reads memory.
  std::set<std::string> lanesLoadedLets_;
  // The guards of branches no clip covers, affine in several thread
  // variables (a triangle's `j <= i`), tested once per block (blockTestsOf).
  std::map<const IfThenElse *, std::vector<AffineGuard>> affineGuards_;
  // Affine forms over the thread variables (and the loops inside), looking
  // through lets, while marking; with the names bound inside the nest.
  passes::AffineScope affine_;
  std::multiset<std::string> boundInNest_;
  int loopsInThread_ = 0; // while marking: loops around that stay inside their thread
  std::set<const StmtNode *> split_;
  // Names bound inside the nest whose value differs between threads.
  std::multiset<std::string> varying_;
  std::vector<PerThreadValue> values_;
  size_t stackAllocations_ = 0; // per-thread arrays made so far
  std::vector<PerThreadBuffer> buffers_;
  // Conditions a thread must meet to run the code being emitted.
  std::vector<PerThread> masks_;
};

// Whether a statement allocates memory that the threads of a block share.
class AllocatesShared : public IRVisitor {
public:
  bool found = false;

protected:
  void visitAllocate(const ir::Allocate &node) override {
    found = found || node.buffer->memory != MemorySpace::Register;
    IRVisitor::visitAllocate(node);
  }
};

// The x block and thread loops of a row sweep as one thread loop across the
// blocks [firstBlock, firstBlock + blocks) of the row (see RowSweep::row), or
// null when the body reads either index in another form than
// `x.block * size + x.thread`, or the indices are i32 (the row's length,
// blocks times size, could then overflow).
ir::Stmt blocksAsOneLoop(const For &xBlock, const For &xThread, const ir::Expr &firstBlock,
                         const ir::Expr &blocks) {
  const auto *size = xThread.extent->as<IntImm>();
  const auto *blockMin = xBlock.min->as<IntImm>();
  const auto *threadMin = xThread.min->as<IntImm>();
  if (!size || !blockMin || blockMin->value != 0 || !threadMin || threadMin->value != 0 ||
      threadMin->type != ScalarType::I64)
    return nullptr;
  class Flatten : public IRMutator {
  public:
    Flatten(const For &xBlock, const For &xThread, int64_t size)
        : block_(xBlock.var), thread_(xThread.var), row_(xThread.var + ".row"), size_(size) {}
    const std::string &rowVar() const { return row_; }

  protected:
    ir::Expr visitBinary(const Binary &node, const ir::Expr &self) override {
      if (node.op == BinaryOpKind::Add &&
          (isFlatIndex(node.lhs, node.rhs) || isFlatIndex(node.rhs, node.lhs)))
        return makeVar(node.type, row_);
      return IRMutator::visitBinary(node, self);
    }

  private:
    // `blockTerm + threadTerm` is x.block * size + x.thread.
    bool isFlatIndex(const ir::Expr &blockTerm, const ir::Expr &threadTerm) const {
      const auto *product = blockTerm->as<Binary>();
      const auto *thread = threadTerm->as<Var>();
      if (!product || product->op != BinaryOpKind::Mul || !thread || thread->name != thread_)
        return false;
      const auto *block = product->lhs->as<Var>();
      const auto *factor = product->rhs->as<IntImm>();
      return block && block->name == block_ && factor && factor->value == size_;
    }
    std::string block_, thread_, row_;
    int64_t size_;
  } flatten(xBlock, xThread, size->value);
  ir::Stmt body = flatten.mutate(xThread.body);
  std::set<std::string> used = freeVars(body);
  if (used.contains(xBlock.var) || used.contains(xThread.var))
    return nullptr;
  return std::make_shared<For>(flatten.rowVar(), mul(firstBlock, xThread.extent),
                               mul(blocks, xThread.extent), ForKind::GpuThread, 0, body,
                               xThread.source);
}

} // namespace

std::optional<RowSweep> rowSweepOf(const ir::KernelFunc &kernel) {
  std::optional<ir::KernelNest> nest = ir::kernelNestAt(kernel.body);
  if (!nest || nest->blocks.back()->gpuDim != 0)
    return std::nullopt;
  const std::vector<const For *> &grid = nest->blocks, &threads = nest->threads;
  if (grid.size() == 1 && threads.size() != 1)
    return std::nullopt;
  if (threads.empty() || threads.back()->gpuDim != 0 || containsBarrier(*kernel.body))
    return std::nullopt;
  AllocatesShared shared;
  shared.visit(kernel.body);
  // A thread's loops must be small windows that LLVM unrolls (a 5 x 5
  // filter's): their rows, a few rows of the input, stay in cache from one
  // output row to the next along the sweep, which streams them in order (the
  // block order read them as a dozen short pieces of rows at once, and
  // conv2d_5x5 ran slower so). A longer loop reads rows that the block's
  // tile keeps in cache while its rows reuse them.
  std::optional<int64_t> bodies = constantBodies(*threads.back()->body, /*oneSide=*/true);
  if (shared.found || !bodies || *bodies > kUnrolledBodies)
    return std::nullopt;
  // Across the rows of a 2-D grid, an access strided along x is better read
  // in the blocks' tiles. A 1-D span runs its points in the blocks' order, so
  // any access may (durbin's mirrored `y[k - i - 1]`).
  for (const passes::BufferAccess &access : passes::collectAccesses(nest->threadNest)) {
    passes::Stride::Kind along = passes::strideAlong(access, threads.back()->var).kind;
    if (grid.size() > 1 && along != passes::Stride::Kind::Zero &&
        along != passes::Stride::Kind::Contiguous)
      return std::nullopt;
  }
  if (grid.size() + threads.size() !=
      2 + static_cast<size_t>(
              std::ranges::count_if(grid, [](const For *l) { return l->gpuDim > 0; }) +
              std::ranges::count_if(threads, [](const For *l) { return l->gpuDim > 0; })))
    return std::nullopt; // one x loop of each kind
  if (grid.size() == 1) {
    ir::Stmt span = blocksAsOneLoop(*grid.back(), *threads.back(),
                                    makeVar(ScalarType::I64, RowSweep::kSpanFirst),
                                    makeVar(ScalarType::I64, RowSweep::kSpanCount));
    if (!span)
      return std::nullopt; // its blocks run one by one
    return RowSweep{{}, grid.back(), threads.back(), span, /*spansBlocks=*/true};
  }
  RowSweep sweep{
      {},
      grid.back(),
      threads.back(),
      blocksAsOneLoop(*grid.back(), *threads.back(), makeI64(0), toI64(grid.back()->extent))};
  // Rows in memory order: along each dimension, the block index before the
  // thread index within the block (index = block * size + thread).
  for (int dim = 2; dim >= 1; --dim)
    for (const std::vector<const For *> *loops : {&grid, &threads})
      for (const For *loop : *loops)
        if (loop->gpuDim == dim)
          sweep.rows.push_back(loop);
  return sweep;
}

bool runsColumnByColumn(const ir::KernelFunc &kernel) {
  std::optional<ir::KernelNest> nest = ir::kernelNestAt(kernel.body);
  if (!nest || !nest->blockAlong(1))
    return false;
  const For *x = nest->threadAlong(0), *y = nest->threadAlong(1);
  if (!x || !y || nest->threads.back() != x)
    return false;
  auto accesses = passes::collectAccesses(nest->threadNest);
  InterchangeChoice choice(accesses, x->var);
  choice.visit(x->body);
  for (const passes::BufferAccess &access : accesses) {
    if (access.isStore || access.buffer->memory != MemorySpace::Global ||
        passes::strideAlong(access, y->var).kind != passes::Stride::Kind::Zero ||
        passes::strideAlong(access, x->var).kind == passes::Stride::Kind::Zero)
      continue;
    for (const For *loop : choice.chosen)
      if (std::ranges::find(access.enclosingLoops, loop->var) != access.enclosingLoops.end() &&
          passes::strideAlong(access, loop->var).kind != passes::Stride::Kind::Zero)
        return true;
  }
  return false;
}

void emitCpuThreadNest(LlvmEmitter &emitter, const std::vector<const ir::For *> &nest) {
  ThreadNestScheduler(emitter, nest).emit(*nest.back()->body);
}

} // namespace loopc::codegen
