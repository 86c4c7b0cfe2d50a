// The Loop IR verifier (Verifier.h): one walk over the host body and each
// kernel, tracking the variables and buffers in scope and the GPU context
// (inside a block, inside a thread loop, under thread-dependent control).
#include "ir/Verifier.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"

#include <map>
#include <set>

namespace loopc::ir {

namespace {

class Verifier : public IRVisitor {
public:
  Verifier(const Function &function, const VerifyOptions &options)
      : function_(function), options_(options) {}

  std::string problem; // the first one found
  SourceRange where;

  void verifyBody(const Stmt &body, const std::vector<Buffer> &buffers,
                  const std::vector<ScalarParam> &scalars, bool inKernel) {
    vars_.clear();
    buffers_.clear();
    threadVars_.clear();
    inKernel_ = inKernel;
    for (const Buffer &buffer : buffers)
      buffers_.insert(buffer.get());
    for (const ScalarParam &scalar : scalars)
      vars_[scalar.name].push_back(scalar.type);
    visit(body);
  }

protected:
  void visitVar(const Var &node) override {
    auto found = vars_.find(node.name);
    if (found == vars_.end() || found->second.empty())
      return fail("variable '" + node.name + "' is used outside the scope that binds it");
    if (found->second.back() != node.type)
      fail("variable '" + node.name + "' is used as " + scalarTypeName(node.type) +
           " but bound as " + scalarTypeName(found->second.back()));
  }

  void visitLoad(const Load &node) override {
    checkAccess(*node.buffer, node.indices, "load of");
    if (node.type != node.buffer->element)
      fail("load of '" + node.buffer->name + "' has the wrong type");
    IRVisitor::visitLoad(node);
  }

  void visitUnary(const Unary &node) override {
    if (node.op == UnaryOpKind::Not && node.operand->type != ScalarType::Bool)
      fail("'!' of a non-bool operand: " + toString(node.operand));
    if (node.op == UnaryOpKind::Neg && node.operand->type == ScalarType::Bool)
      fail("negation of a bool: " + toString(node.operand));
    IRVisitor::visitUnary(node);
  }

  void visitBinary(const Binary &node) override {
    // Printed only for a message: printing every node would cost the square
    // of an expression's size.
    auto text = [&] {
      return toString(node.lhs) + " " + binaryOpName(node.op) + " " + toString(node.rhs);
    };
    if (node.lhs->type != node.rhs->type)
      fail(std::string("operands of '") + binaryOpName(node.op) + "' have different types (" +
           scalarTypeName(node.lhs->type) + " and " + scalarTypeName(node.rhs->type) + ") in " +
           text());
    bool logical = node.op == BinaryOpKind::And || node.op == BinaryOpKind::Or;
    if (logical && node.lhs->type != ScalarType::Bool)
      fail("logical operator on non-bool operands in " + text());
    if (!logical && !isComparison(node.op) && node.lhs->type == ScalarType::Bool)
      fail("arithmetic on bool operands in " + text());
    IRVisitor::visitBinary(node);
  }

  void visitSelect(const Select &node) override {
    if (node.cond->type != ScalarType::Bool)
      fail("select condition is not bool: " + toString(node.cond));
    if (node.thenValue->type != node.elseValue->type)
      fail("select branches have different types");
    IRVisitor::visitSelect(node);
  }

  void visitFor(const For &node) override {
    visit(node.min);
    visit(node.extent);
    if (!isInteger(node.min->type) || node.min->type != node.extent->type)
      failAt("loop bounds must be integers of one type in", node);
    bool isThread = node.forKind == ForKind::GpuThread;
    bool isBlock = node.forKind == ForKind::GpuBlock;
    if (isThread && blockDepth_ == 0)
      failAt("a gpu_thread loop outside any gpu_block loop:", node);
    if (isBlock && threadDepth_ > 0)
      failAt("a gpu_block loop inside a gpu_thread loop:", node);
    if ((isThread || isBlock) && (node.gpuDim < 0 || node.gpuDim > 2))
      failAt("a GPU loop dimension must be 0, 1 or 2:", node);
    bool divergent = !isThread && threadDependent(node.min, node.extent);
    blockDepth_ += isBlock;
    threadDepth_ += isThread;
    divergentDepth_ += divergent;
    if (isThread)
      threadVars_.insert(node.var);
    bind(node.var, node.min->type, [&] { visit(node.body); });
    if (isThread)
      threadVars_.erase(node.var);
    blockDepth_ -= isBlock;
    threadDepth_ -= isThread;
    divergentDepth_ -= divergent;
  }

  void visitIfThenElse(const IfThenElse &node) override {
    visit(node.cond);
    if (node.cond->type != ScalarType::Bool)
      fail("if condition is not bool: " + toString(node.cond));
    bool divergent = threadDependent(node.cond, nullptr);
    divergentDepth_ += divergent;
    visit(node.thenCase);
    visit(node.elseCase);
    divergentDepth_ -= divergent;
  }

  void visitLetStmt(const LetStmt &node) override {
    visit(node.value);
    bool dependent = threadDependent(node.value, nullptr);
    if (dependent)
      threadVars_.insert(node.var);
    bind(node.var, node.value->type, [&] { visit(node.body); });
    if (dependent)
      threadVars_.erase(node.var);
  }

  void visitStore(const Store &node) override {
    checkAccess(*node.buffer, node.indices, "store to");
    if (node.value->type != node.buffer->element)
      failAt(std::string("stored value has type ") + scalarTypeName(node.value->type) +
                 ", the buffer holds " + scalarTypeName(node.buffer->element) + ":",
             node);
    IRVisitor::visitStore(node);
  }

  void visitScan(const Scan &node) override {
    if (options_.scansLowered)
      return failAt("a scan after lower_scans:", node);
    visit(node.neutral);
    ScalarType type = node.target->element;
    if (node.neutral->type != type)
      failAt("the neutral element's type differs from the target's in", node);
    visit(node.loop.min);
    visit(node.loop.extent);
    if (node.op.kind == ReduceOperator::Kind::User) {
      if (!node.op.combine)
        return failAt("a user scan operator without a combining expression:", node);
      bind(node.op.lhsVar, type,
           [&] { bind(node.op.rhsVar, type, [&] { visit(node.op.combine); }); });
    }
    // The element and the value are read at the end of valueSetup.
    Stmt write = std::make_shared<Store>(node.target, node.indices, node.value);
    bind(node.loop.var, node.loop.min->type, [&] { visit(appendAtTail(node.valueSetup, write)); });
  }

  void visitAtomicUpdate(const AtomicUpdate &node) override {
    checkAccess(*node.buffer, node.indices, "atomic update of");
    ScalarType type = node.buffer->element;
    if (node.value->type != type)
      failAt(std::string("combined value has type ") + scalarTypeName(node.value->type) +
                 ", the buffer holds " + scalarTypeName(type) + ":",
             node);
    for (const Expr &index : node.indices)
      visit(index);
    visit(node.value);
    if (node.op.kind == ReduceOperator::Kind::User) {
      if (!node.op.combine)
        return failAt("a user operator without a combining expression:", node);
      bind(node.op.lhsVar, type,
           [&] { bind(node.op.rhsVar, type, [&] { visit(node.op.combine); }); });
    }
  }

  void visitAllocate(const Allocate &node) override {
    for (const Expr &extent : node.buffer->shape) {
      visit(extent);
      if (!isInteger(extent->type))
        fail("extent of '" + node.buffer->name + "' is not an integer");
    }
    if (node.buffer->memory == MemorySpace::Shared && blockDepth_ == 0 && !inKernel_)
      fail("shared buffer '" + node.buffer->name + "' allocated outside any gpu_block loop");
    buffers_.insert(node.buffer.get());
    visit(node.body);
    buffers_.erase(node.buffer.get());
  }

  void visitBarrier(const Barrier &) override {
    if (blockDepth_ == 0 && !inKernel_)
      fail("barrier outside any gpu_block loop");
    else if (divergentDepth_ > 0)
      fail("barrier under control flow that depends on the thread (not block-uniform)");
  }

  // Async copies and their groups run on GPU threads only, global into
  // shared memory, in the widths cp.async moves.
  void visitAsyncCopy(const AsyncCopy &node) override {
    IRVisitor::visitAsyncCopy(node);
    checkAccess(*node.target, node.targetIndices, "async copy into");
    checkAccess(*node.source, node.sourceIndices, "async copy from");
    std::string text = node.target->name + " <- " + node.source->name;
    if (threadDepth_ == 0 && !inKernel_)
      fail("an async copy outside any gpu_thread loop: " + text);
    if (node.target->memory != MemorySpace::Shared || node.source->memory != MemorySpace::Global)
      fail("an async copy not from global into shared memory: " + text);
    if (node.target->element != node.source->element)
      fail("an async copy between arrays of different element types: " + text);
    if (node.bytes() != 4 && node.bytes() != 8 && node.bytes() != 16)
      fail("an async copy of " + std::to_string(node.bytes()) +
           " bytes (4, 8 or 16 are copied): " + text);
    if (node.targetIndices.empty() || node.sourceIndices.empty())
      fail("an async copy of a scalar: " + text);
    if (!isInteger(node.valid->type))
      fail("an async copy whose count of valid elements is not an integer: " + text);
  }
  void visitAsyncCommit(const AsyncCommit &) override {
    if (threadDepth_ == 0 && !inKernel_)
      fail("an async commit outside any gpu_thread loop");
  }
  void visitAsyncWait(const AsyncWait &node) override {
    if (threadDepth_ == 0 && !inKernel_)
      fail("an async wait outside any gpu_thread loop");
    if (node.pending < 0 || node.pending > 7)
      fail("an async wait for " + std::to_string(node.pending) +
           " pending groups (0 to 7 are waited for)");
  }

  void visitCheck(const Check &node) override {
    IRVisitor::visitCheck(node);
    if (node.condition->type != ScalarType::Bool)
      fail("a check whose condition is not bool: " + toString(node.condition));
    if (node.values.size() > 2)
      fail("a check quoting more than two values");
    for (const Expr &value : node.values)
      if (!isInteger(value->type))
        fail("a check quoting a value that is not an integer: " + toString(value));
  }

  void visitWarpShuffle(const WarpShuffle &node) override {
    checkAccess(*node.target, {}, "shuffle into");
    auto text = [&] {
      return node.target->name + " = shuffle_xor(" + toString(node.value) + ", " +
             std::to_string(node.laneMask) + ")";
    };
    if (node.target->memory != MemorySpace::Register)
      fail("a shuffle into a buffer outside registers: " + text());
    if (node.value->type != node.target->element)
      fail("a shuffle whose value's type differs from its target's: " + text());
    if (node.laneMask < 1 || node.laneMask > 16 || (node.laneMask & (node.laneMask - 1)) != 0)
      fail("a shuffle's lane mask must be 1, 2, 4, 8 or 16: " + text());
    if (threadDepth_ == 0)
      fail("a shuffle outside any gpu_thread loop: " + text());
    else if (divergentDepth_ > 0)
      fail("a shuffle under control flow that depends on the thread (not block-uniform): " +
           text());
    visit(node.value);
  }

  void visitReduce(const Reduce &node) override {
    if (options_.reductionsLowered)
      return failAt("a reduce after lower_reductions:", node);
    for (const Expr &index : node.indices)
      visit(index);
    visit(node.neutral);
    if (node.neutral->type != node.accumulator->element)
      failAt("the neutral element's type differs from the accumulator's in", node);
    if (node.op.kind == ReduceOperator::Kind::User) {
      ScalarType type = node.accumulator->element;
      if (!node.op.combine)
        return failAt("a user reduction operator without a combining expression:", node);
      bind(node.op.lhsVar, type,
           [&] { bind(node.op.rhsVar, type, [&] { visit(node.op.combine); }); });
      if (node.op.combine->type != type)
        failAt("the combining expression's type differs from the accumulator's in", node);
    }
    // The value is read at the end of valueSetup, as the accumulation would.
    Stmt accumulate = std::make_shared<Store>(node.accumulator, node.indices, node.value);
    visitReduceLoops(node, 0, appendAtTail(node.valueSetup, accumulate));
  }

  void visitLaunch(const Launch &node) override {
    if (inKernel_ || blockDepth_ > 0)
      return failAt("a launch inside device code:", node);
    IRVisitor::visitLaunch(node);
    const KernelFunc *kernel = nullptr;
    for (const KernelFunc &candidate : function_.kernels)
      if (candidate.name == node.kernel)
        kernel = &candidate;
    if (!kernel)
      return failAt("a launch of an unknown kernel:", node);
    if (kernel->buffers.size() != node.buffers.size() ||
        kernel->scalars.size() != node.scalars.size())
      return failAt("a launch whose arguments do not match the kernel's parameters:", node);
    if (node.grid.size() != 3 || node.block.size() != 3)
      return failAt("a launch needs 3 grid and 3 block extents:", node);
    for (size_t i = 0; i < node.scalars.size(); ++i)
      if (node.scalars[i]->type != kernel->scalars[i].type)
        return failAt("launch argument '" + kernel->scalars[i].name + "' has the wrong type:",
                      node);
    for (const Buffer &buffer : node.buffers)
      if (!buffers_.contains(buffer.get()))
        return failAt("a launch passes buffer '" + buffer->name + "' outside its scope:", node);
  }

private:
  void fail(const std::string &message) {
    if (problem.empty())
      problem = message;
  }
  void failAt(const std::string &message, const StmtNode &node) {
    if (!problem.empty())
      return;
    // describe() takes a shared pointer; a non-owning one suffices here.
    Stmt alias(std::shared_ptr<const StmtNode>{}, &node);
    problem = message + " " + describe(alias);
    if (const auto *loop = node.as<For>())
      where = loop->source;
  }

  template <typename F> void bind(const std::string &name, ScalarType type, F &&inside) {
    std::vector<ScalarType> &bound = vars_[name];
    bound.push_back(type);
    inside();
    vars_[name].pop_back();
  }

  void visitReduceLoops(const Reduce &node, size_t level, const Stmt &body) {
    if (level == node.loops.size())
      return visit(body);
    const Reduce::Loop &loop = node.loops[level];
    visit(loop.min);
    visit(loop.extent);
    if (!isInteger(loop.min->type) || loop.min->type != loop.extent->type)
      failAt("reduction loop bounds must be integers of one type in", node);
    bind(loop.var, loop.min->type, [&] { visitReduceLoops(node, level + 1, body); });
  }

  void checkAccess(const BufferInfo &buffer, const std::vector<Expr> &indices, const char *what) {
    if (!buffers_.contains(&buffer))
      fail(std::string(what) + " buffer '" + buffer.name + "' outside its scope");
    if (indices.size() != buffer.shape.size())
      fail(std::string(what) + " '" + buffer.name + "' with " + std::to_string(indices.size()) +
           " indices; its rank is " + std::to_string(buffer.shape.size()));
    for (const Expr &index : indices)
      if (!isInteger(index->type))
        fail(std::string(what) + " '" + buffer.name + "' with a non-integer index " +
             toString(index));
  }

  // Whether the value may differ between the threads of a block: it reads a
  // thread loop variable (or a let derived from one), or per-thread storage.
  bool threadDependent(const Expr &a, const Expr &b) {
    if (threadDepth_ == 0)
      return false;
    for (const Expr &expr : {a, b}) {
      if (!expr)
        continue;
      if (usesAnyVar(expr, threadVars_))
        return true;
      class RegisterLoads : public IRVisitor {
      public:
        bool found = false;

      protected:
        void visitLoad(const Load &node) override {
          found |= node.buffer->memory == MemorySpace::Register;
          IRVisitor::visitLoad(node);
        }
      } registers;
      registers.visit(expr);
      if (registers.found)
        return true;
    }
    return false;
  }

  const Function &function_;
  const VerifyOptions &options_;
  std::map<std::string, std::vector<ScalarType>> vars_;
  std::set<const BufferInfo *> buffers_;
  std::set<std::string> threadVars_;
  bool inKernel_ = false;
  int blockDepth_ = 0, threadDepth_ = 0, divergentDepth_ = 0;
};

} // namespace

Status verifyFunction(const Function &function, const std::string &pass,
                      const VerifyOptions &options) {
  Verifier verifier(function, options);
  verifier.verifyBody(function.body, function.buffers, function.scalars, false);
  std::string context = "the host code of '" + function.name + "'";
  for (const KernelFunc &kernel : function.kernels) {
    if (!verifier.problem.empty())
      break;
    context = "kernel '" + kernel.name + "'";
    verifier.verifyBody(kernel.body, kernel.buffers, kernel.scalars, true);
  }
  if (verifier.problem.empty())
    return {};
  std::string after = pass.empty() ? "" : " after pass '" + pass + "'";
  return makeError("invalid IR" + after + " in " + context + ": " + verifier.problem,
                   verifier.where.valid() ? verifier.where : function.source);
}

} // namespace loopc::ir
