// The one translator from Loop IR to LLVM IR, shared by the CPU and NVPTX
// code generators: typed expressions with C semantics, row-major addressing
// in i64, loops, conditionals, lets and allocations. Whatever depends on
// where the code runs (GPU loop kinds, memory spaces, barriers, library math,
// launches) is delegated to a Target.
//
// The emitter writes into the function and insertion point its caller set up
// (the target creates entry and kernel functions and binds their parameters).
// Failures (an unbound variable, a Reduce that reached code generation) are
// internal errors of the passes; the first is kept and reported by status().
#pragma once

#include "codegen/DeviceErrors.h"
#include "codegen/Target.h"
#include "ir/IR.h"
#include "passes/analysis/BoundsProof.h"
#include "support/Error.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>

namespace loopc::codegen {

class LlvmEmitter {
public:
  LlvmEmitter(llvm::Module &module, Target &target);

  llvm::Module &module() { return module_; }
  llvm::LLVMContext &context() { return module_.getContext(); }
  llvm::IRBuilder<> &builder() { return builder_; }
  Target &target() { return target_; }

  // Registers (i1 for bool) and memory (i8 for bool) representations.
  llvm::Type *valueType(ScalarType type);
  llvm::Type *memoryType(ScalarType type);
  llvm::Value *toMemory(llvm::Value *value, ScalarType type);
  llvm::Value *fromMemory(llvm::Value *stored, ScalarType type);

  // Name and buffer bindings. bindVar/bindBuffer return the previous binding
  // so callers can restore it (see ScopedBindings).
  llvm::Value *bindVar(const std::string &name, llvm::Value *value);
  llvm::Value *bindBuffer(const ir::BufferInfo *buffer, llvm::Value *storage);
  llvm::Value *lookupBuffer(const ir::BufferInfo &buffer, SourceRange use);

  llvm::Value *emitExpr(const ir::ExprNode &expr);
  // `expr` converted to `type` (indices and extents to i64).
  llvm::Value *emitExprAs(const ir::ExprNode &expr, ScalarType type);
  llvm::Value *emitCast(llvm::Value *value, ScalarType from, ScalarType to);
  void emitStmt(const ir::StmtNode &stmt);

  // The number of elements of `buffer` (1 for a scalar cell), as i64; a
  // count past INT64_MAX is INT64_MAX, which no allocation can have, rather
  // than a wrapped small one.
  llvm::Value *elementCount(const ir::BufferInfo &buffer);
  // When `failed` (storage for `buffer` not had), the interpreter's "too
  // large to allocate" error, and `emitUse` (the code using the storage) is
  // skipped.
  void emitUnlessAllocationFailed(llvm::Value *failed, const ir::BufferInfo &buffer,
                                  const std::function<void()> &emitUse);
  // lhs * rhs (non-negative i64), INT64_MAX where it would overflow.
  llvm::Value *saturatingMultiply(llvm::Value *lhs, llvm::Value *rhs);
  // The address of buffer[indices] in row-major order; with IntoExtents,
  // each index first clamped into [0, extent - 1] (a speculative load's).
  enum class IndexClamping { None, IntoExtents };
  llvm::Value *elementAddress(const ir::BufferInfo &buffer, const std::vector<ir::Expr> &indices,
                              SourceRange use, IndexClamping clamping = IndexClamping::None);
  // Runs `access` on the address of buffer[indices] and returns what it
  // returns. With bounds checks on, an index outside its extent is a device
  // error (quoting the index and the extent) and the access is skipped: a
  // load then reads zero.
  // `site` is the Load, Store or AtomicUpdate node: its indices proven in
  // range (setBoundsChecks) are not checked.
  // The device errors of the indices of buffer[indices] not proven in range
  // (bounds checks on); the condition that all are in range, or null when
  // nothing was checked.
  llvm::Value *emitBoundsChecks(const void *site, const ir::BufferInfo &buffer,
                                const std::vector<ir::Expr> &indices, SourceRange use);
  llvm::Value *emitAccess(const void *site, const ir::BufferInfo &buffer,
                          const std::vector<ir::Expr> &indices, SourceRange use,
                          const std::function<llvm::Value *(llvm::Value *address)> &access);
  // Checks every array access (emitAccess) from now on, except the indices
  // proven in range in `function` (passes::proveAccessesInBounds), naming
  // each array as the program does where the access is (arrayNamesAt).
  void setBoundsChecks(const ir::Function &function);
  // The body (the host code's or a kernel's) emitted from now on, whose
  // proofs the bounds checks read.
  void setBoundsCheckBody(const ir::Stmt &body) { boundsBody_ = body; }
  // Whether every access in `region` of that body goes unchecked: bounds
  // checks are off, or each index is proven in range.
  bool accessesUncheckedIn(const ir::Stmt &region) const {
    return !boundsChecks_ || provenInBounds_.allProvenIn(boundsBody_, region);
  }

  // A counted loop `for var in [min, min + extent)`; `body` is called with the
  // insertion point inside the loop and the induction variable. Returns the
  // back edge, where loop metadata goes.
  bool emitUnrolled(const ir::For &loop);
  llvm::BranchInst *emitCountedLoop(const std::string &name, llvm::Value *min, llvm::Value *extent,
                                    const std::function<void(llvm::Value *)> &body);
  // Gives the loop ending in `backEdge` an `llvm.loop` property, such as
  // {"llvm.loop.unroll.full"} or {"llvm.loop.vectorize.enable", false}.
  void addLoopProperty(llvm::BranchInst *backEdge, llvm::ArrayRef<llvm::Metadata *> property);
  // A stack slot in the entry block of the current function.
  llvm::AllocaInst *createEntryAlloca(llvm::Type *type, llvm::Value *count,
                                      const std::string &name);

  // The device-side error channel (DeviceErrors.h): `record` points to the
  // error record in the function being emitted; `range` is reported for
  // failures outside any assignment.
  void setDeviceErrorRecord(llvm::Value *record, SourceRange range);
  // When `failed` holds at run time, records a new site with `message` (at
  // `use`, else the current assignment) in the error record, with up to two
  // i64 `values` for the message's "{0}" and "{1}".
  void emitDeviceErrorIf(llvm::Value *failed, std::string message,
                         llvm::ArrayRef<llvm::Value *> values = {}, SourceRange use = {});
  const DeviceErrorSites &deviceErrorSites() const { return errorSites_; }

  // While `flag` (an i1 in memory) is set, integer +, -, *, negation and
  // abs that overflow their type set it to true (the result still wraps, as
  // in C): a CPU library's argument checks evaluate extents this way, where
  // a wrapped product (2^32 * 2^32 = 0) would pass for a small one. Null
  // turns it off.
  void setOverflowFlag(llvm::Value *flag) { overflowFlag_ = flag; }

  // Records an internal error (the first one wins).
  void fail(std::string message, SourceRange range = {});
  Status status() const;
  // Ends the emission of the module: the first internal error if any, else
  // the module verified by LLVM (`what` names the code generator in the
  // message); the device-error sites go to `sites` when given.
  Status finish(const std::string &what, SourceRange range, DeviceErrorSites *sites) const;

private:
  llvm::Value *emitSaturatingConversion(llvm::Value *value, llvm::Type *target);
  llvm::Value *emitBinary(const ir::Binary &binary);
  llvm::Value *emitFusedMultiplyAdd(const ir::Binary &sum); // null when `sum` is not one
  llvm::Value *emitSelect(const ir::Select &select);
  llvm::Value *emitCall(const ir::Call &call);
  // A call of the math function `name` whose parameters and result are `type`.
  llvm::Value *emitLibraryCall(const std::string &name, ScalarType type,
                               const std::vector<llvm::Value *> &args);
  // Never traps: a zero divisor is a device error (the result is then
  // unused), a divisor of -1 wraps (INT_MIN / -1 is INT_MIN, the remainder 0).
  llvm::Value *emitIntegerDivision(bool isDivision, llvm::Value *lhs, llvm::Value *rhs,
                                   SourceRange source);
  llvm::Value *emitMinMax(bool isMin, llvm::Value *lhs, llvm::Value *rhs, ScalarType type);
  // lhs `id` rhs for an arithmetic intrinsic with overflow (sadd, ssub,
  // smul), its overflow bit or'ed into the overflow flag.
  llvm::Value *emitOverflowChecked(llvm::Intrinsic::ID id, llvm::Value *lhs, llvm::Value *rhs);
  void emitFor(const ir::For &loop);
  void emitIf(const ir::IfThenElse &branch);
  void emitAllocate(const ir::Allocate &allocate);
  void emitAtomicUpdate(const ir::AtomicUpdate &update);
  // `old op value` for a reduction operator, on register values.
  llvm::Value *emitOperator(const ir::ReduceOperator &op, ScalarType type, llvm::Value *old,
                            llvm::Value *value);
  // The name of `buffer` in messages about the access beginning at `use`.
  const std::string &arrayNameAt(const ir::BufferInfo &buffer, SourceRange use) const;

  llvm::Module &module_;
  Target &target_;
  llvm::IRBuilder<> builder_;
  std::unordered_map<std::string, llvm::Value *> vars_;
  std::unordered_map<const ir::BufferInfo *, llvm::Value *> buffers_;
  std::optional<Error> error_;
  llvm::Value *errorRecord_ = nullptr;
  llvm::Value *overflowFlag_ = nullptr; // setOverflowFlag
  bool boundsChecks_ = false;
  passes::ProvenAccesses provenInBounds_;
  ir::Stmt boundsBody_;
  std::map<SourceLoc, std::string> arrayNamesAt_; // ir::Function::arrayNamesAt
  SourceRange errorRange_;                        // the assignment being emitted, else the function
  DeviceErrorSites errorSites_;
};

// Restores the variable and buffer bindings made through it when destroyed,
// so a scope (a loop body, a let) leaves the emitter as it found it.
class ScopedBindings {
public:
  explicit ScopedBindings(LlvmEmitter &emitter) : emitter_(emitter) {}
  ScopedBindings(const ScopedBindings &) = delete;
  ScopedBindings &operator=(const ScopedBindings &) = delete;
  ~ScopedBindings();

  void var(const std::string &name, llvm::Value *value);
  void buffer(const ir::BufferInfo *buffer, llvm::Value *storage);

private:
  LlvmEmitter &emitter_;
  std::vector<std::pair<std::string, llvm::Value *>> vars_;
  std::vector<std::pair<const ir::BufferInfo *, llvm::Value *>> buffers_;
};

// Binds each scalar of a slot array (8 bytes per scalar, each holding the
// value in its own type) to its name.
void bindScalarSlots(LlvmEmitter &emitter, ScopedBindings &scope,
                     const std::vector<ir::ScalarParam> &scalars, llvm::Value *slots);

// True when evaluating `expr` may fault (a load, an integer division), so it
// must not be evaluated speculatively.
bool mayFault(const ir::ExprNode &expr);
bool containsBarrier(const ir::StmtNode &stmt);

// True when `stmt` holds an ir::AsyncCopy outside any loop of its own.
bool containsAsyncCopy(const ir::StmtNode &stmt);

} // namespace loopc::codegen
