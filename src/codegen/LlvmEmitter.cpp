// Loop IR to LLVM IR, the target-independent part (see LlvmEmitter.h).
#include "codegen/LlvmEmitter.h"

#include "ir/IRVisitor.h"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>

#include <limits>

namespace loopc::codegen {

using namespace loopc::ir;

LlvmEmitter::LlvmEmitter(llvm::Module &module, Target &target)
    : module_(module), target_(target), builder_(module.getContext()) {}

llvm::Type *LlvmEmitter::valueType(ScalarType type) {
  switch (type) {
  case ScalarType::I32:
    return builder_.getInt32Ty();
  case ScalarType::I64:
    return builder_.getInt64Ty();
  case ScalarType::F32:
    return builder_.getFloatTy();
  case ScalarType::F64:
    return builder_.getDoubleTy();
  case ScalarType::Bool:
    return builder_.getInt1Ty();
  }
  return nullptr;
}

llvm::Type *LlvmEmitter::memoryType(ScalarType type) {
  return type == ScalarType::Bool ? builder_.getInt8Ty() : valueType(type);
}

llvm::Value *LlvmEmitter::toMemory(llvm::Value *value, ScalarType type) {
  return type == ScalarType::Bool ? builder_.CreateZExt(value, builder_.getInt8Ty()) : value;
}

llvm::Value *LlvmEmitter::fromMemory(llvm::Value *stored, ScalarType type) {
  return type == ScalarType::Bool ? builder_.CreateICmpNE(stored, builder_.getInt8(0)) : stored;
}

llvm::Value *LlvmEmitter::bindVar(const std::string &name, llvm::Value *value) {
  auto found = vars_.find(name);
  llvm::Value *previous = found == vars_.end() ? nullptr : found->second;
  if (value)
    vars_[name] = value;
  else if (found != vars_.end())
    vars_.erase(found);
  return previous;
}

llvm::Value *LlvmEmitter::bindBuffer(const BufferInfo *buffer, llvm::Value *storage) {
  auto found = buffers_.find(buffer);
  llvm::Value *previous = found == buffers_.end() ? nullptr : found->second;
  if (storage)
    buffers_[buffer] = storage;
  else if (found != buffers_.end())
    buffers_.erase(found);
  return previous;
}

llvm::Value *LlvmEmitter::lookupBuffer(const BufferInfo &buffer, SourceRange use) {
  auto found = buffers_.find(&buffer);
  if (found != buffers_.end())
    return found->second;
  fail("code generation: buffer '" + buffer.name + "' is not allocated here", use);
  return llvm::PoisonValue::get(builder_.getPtrTy());
}

void LlvmEmitter::fail(std::string message, SourceRange range) {
  if (!error_)
    error_ = Error{std::move(message), range};
}

Status LlvmEmitter::status() const {
  if (error_)
    return std::unexpected(*error_);
  return {};
}

Status LlvmEmitter::finish(const std::string &what, SourceRange range,
                           DeviceErrorSites *sites) const {
  if (auto emitted = status(); !emitted)
    return emitted;
  if (sites)
    *sites = errorSites_;
  std::string problems;
  llvm::raw_string_ostream problemStream(problems);
  if (llvm::verifyModule(module_, &problemStream))
    return makeError(what + " produced invalid LLVM IR: " + problems, range);
  return {};
}

void LlvmEmitter::setDeviceErrorRecord(llvm::Value *record, SourceRange range) {
  errorRecord_ = record;
  errorRange_ = range;
}

void LlvmEmitter::emitDeviceErrorIf(llvm::Value *failed, std::string message,
                                    llvm::ArrayRef<llvm::Value *> values, SourceRange use) {
  if (!errorRecord_) {
    fail("code generation: no device error record for '" + message + "'", errorRange_);
    return;
  }
  errorSites_.push_back({std::move(message), use.valid() ? use : errorRange_});
  llvm::Function *function = builder_.GetInsertBlock()->getParent();
  auto *report = llvm::BasicBlock::Create(context(), "device_error", function);
  auto *resume = llvm::BasicBlock::Create(context(), "device_ok", function);
  builder_.CreateCondBr(failed, report, resume,
                        llvm::MDBuilder(context()).createBranchWeights(1, 1 << 20));
  builder_.SetInsertPoint(report);
  llvm::Value *exchange = builder_.CreateAtomicCmpXchg(
      errorRecord_, builder_.getInt32(0),
      builder_.getInt32(static_cast<uint32_t>(errorSites_.size())), llvm::MaybeAlign(4),
      llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
  if (!values.empty()) {
    // The first failure writes its values; the engine reads them after the run.
    auto *first = llvm::BasicBlock::Create(context(), "device_error_first", function);
    builder_.CreateCondBr(builder_.CreateExtractValue(exchange, 1), first, resume);
    builder_.SetInsertPoint(first);
    for (size_t i = 0; i < values.size() && i < 2; ++i)
      builder_.CreateStore(values[i],
                           builder_.CreateConstInBoundsGEP1_64(builder_.getInt8Ty(), errorRecord_,
                                                               kDeviceErrorValuesOffset + 8 * i));
  }
  builder_.CreateBr(resume);
  builder_.SetInsertPoint(resume);
}

void LlvmEmitter::setBoundsChecks(const ir::Function &function) {
  boundsChecks_ = function.boundsChecked;
  arrayNamesAt_ = function.arrayNamesAt;
  if (boundsChecks_)
    provenInBounds_ = passes::proveAccessesInBounds(function);
}

const std::string &LlvmEmitter::arrayNameAt(const BufferInfo &buffer, SourceRange use) const {
  auto named = arrayNamesAt_.find(use.begin);
  return named == arrayNamesAt_.end() ? buffer.nameInMessages() : named->second;
}

llvm::Value *LlvmEmitter::emitBoundsChecks(const void *site, const BufferInfo &buffer,
                                           const std::vector<ir::Expr> &indices, SourceRange use) {
  // An access code generation or a pass made on its own (a panel's copy, a
  // tree's tile), with no place in the program, is in range by
  // construction, as BoundsProof takes it.
  if (!use.valid())
    return nullptr;
  std::vector<size_t> unproven;
  for (size_t dim = 0; boundsChecks_ && dim < indices.size() && dim < buffer.shape.size(); ++dim)
    if (!provenInBounds_.proven(boundsBody_, site, dim))
      unproven.push_back(dim);
  if (unproven.empty())
    return nullptr;
  // Every index within its extent (unsigned, so negative ones are caught).
  llvm::Value *inBounds = builder_.getTrue();
  for (size_t dim : unproven) {
    llvm::Value *index = emitExprAs(*indices[dim], ScalarType::I64);
    llvm::Value *extent = emitExprAs(*buffer.shape[dim], ScalarType::I64);
    llvm::Value *outside = builder_.CreateICmpUGE(index, extent);
    emitDeviceErrorIf(outside,
                      "index {0} out of range for dimension " + std::to_string(dim) + " of '" +
                          arrayNameAt(buffer, use) + "' (extent {1})",
                      {index, extent}, use);
    inBounds = builder_.CreateAnd(inBounds, builder_.CreateNot(outside));
  }
  return inBounds;
}

llvm::Value *LlvmEmitter::emitAccess(const void *site, const BufferInfo &buffer,
                                     const std::vector<ir::Expr> &indices, SourceRange use,
                                     const std::function<llvm::Value *(llvm::Value *)> &access) {
  llvm::Value *inBounds = emitBoundsChecks(site, buffer, indices, use);
  if (!inBounds)
    return access(elementAddress(buffer, indices, use));
  llvm::Function *function = builder_.GetInsertBlock()->getParent();
  auto *run = llvm::BasicBlock::Create(context(), "in_bounds", function);
  auto *done = llvm::BasicBlock::Create(context(), "access_done", function);
  llvm::BasicBlock *skipped = builder_.GetInsertBlock();
  builder_.CreateCondBr(inBounds, run, done);
  builder_.SetInsertPoint(run);
  llvm::Value *value = access(elementAddress(buffer, indices, use));
  llvm::BasicBlock *ran = builder_.GetInsertBlock();
  builder_.CreateBr(done);
  builder_.SetInsertPoint(done);
  if (!value || value->getType()->isVoidTy())
    return nullptr;
  // A load out of range reads zero.
  llvm::PHINode *merged = builder_.CreatePHI(value->getType(), 2);
  merged->addIncoming(value, ran);
  merged->addIncoming(llvm::Constant::getNullValue(value->getType()), skipped);
  return merged;
}

// ------------------------------------------------------------ addressing ---

// A negative extent counts as 0: an ir::Check before the allocation has
// reported it, and the code after a failed check must stay harmless.
llvm::Value *LlvmEmitter::elementCount(const BufferInfo &buffer) {
  llvm::Value *count = builder_.getInt64(1);
  for (const ir::Expr &extent : buffer.shape) {
    llvm::Value *value = emitExprAs(*extent, ScalarType::I64);
    if (!llvm::isa<llvm::Constant>(value))
      value = builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, value, builder_.getInt64(0));
    count = saturatingMultiply(count, value);
  }
  return count;
}

llvm::Value *LlvmEmitter::saturatingMultiply(llvm::Value *lhs, llvm::Value *rhs) {
  // Constant shapes stay constants: the NVPTX target sizes its arrays from them.
  auto *left = llvm::dyn_cast<llvm::ConstantInt>(lhs);
  auto *right = llvm::dyn_cast<llvm::ConstantInt>(rhs);
  if (left && right) {
    int64_t product = 0;
    if (__builtin_mul_overflow(left->getSExtValue(), right->getSExtValue(), &product))
      product = std::numeric_limits<int64_t>::max();
    return builder_.getInt64(product);
  }
  return builder_.CreateIntrinsic(llvm::Intrinsic::smul_fix_sat, {lhs->getType()},
                                  {lhs, rhs, builder_.getInt32(0)});
}

llvm::Value *LlvmEmitter::elementAddress(const BufferInfo &buffer,
                                         const std::vector<ir::Expr> &indices, SourceRange use,
                                         IndexClamping clamping) {
  llvm::Value *base = lookupBuffer(buffer, use);
  if (indices.size() != buffer.shape.size()) {
    fail("code generation: '" + buffer.name + "' indexed with the wrong number of indices", use);
    return base;
  }
  llvm::Value *offset = builder_.getInt64(0);
  for (size_t dim = 0; dim < indices.size(); ++dim) {
    llvm::Value *index = emitExprAs(*indices[dim], ScalarType::I64);
    if (clamping == IndexClamping::IntoExtents) {
      // Into [0, extent - 1]; an empty array's element 0 (readable bytes
      // the engines give every array).
      llvm::Value *last =
          builder_.CreateSub(emitExprAs(*buffer.shape[dim], ScalarType::I64), builder_.getInt64(1));
      index = builder_.CreateBinaryIntrinsic(
          llvm::Intrinsic::smax, builder_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, index, last),
          builder_.getInt64(0));
    }
    if (dim == 0) {
      offset = index;
      continue;
    }
    const ir::Expr &extent = buffer.shape[dim];
    offset =
        builder_.CreateAdd(builder_.CreateMul(offset, emitExprAs(*extent, ScalarType::I64)), index);
  }
  return builder_.CreateInBoundsGEP(memoryType(buffer.element), base, offset);
}

// ----------------------------------------------------------- expressions ---

llvm::Value *LlvmEmitter::emitExpr(const ir::ExprNode &expr) {
  switch (expr.kind) {
  case ExprNode::Kind::IntImm: {
    auto &imm = *expr.as<IntImm>();
    if (isFloat(expr.type))
      return llvm::ConstantFP::get(valueType(expr.type), static_cast<double>(imm.value));
    return llvm::ConstantInt::getSigned(valueType(expr.type), imm.value);
  }
  case ExprNode::Kind::FloatImm:
    return llvm::ConstantFP::get(valueType(expr.type), expr.as<FloatImm>()->value);
  case ExprNode::Kind::BoolImm:
    return builder_.getInt1(expr.as<BoolImm>()->value);
  case ExprNode::Kind::Var: {
    auto &var = *expr.as<Var>();
    auto found = vars_.find(var.name);
    if (found != vars_.end())
      return found->second;
    fail("code generation: variable '" + var.name + "' is not bound here");
    return llvm::PoisonValue::get(valueType(expr.type));
  }
  case ExprNode::Kind::Load: {
    auto &load = *expr.as<ir::Load>();
    if (load.speculative)
      return fromMemory(target_.emitLoad(*this, *load.buffer, memoryType(expr.type),
                                         elementAddress(*load.buffer, load.indices, load.source,
                                                        IndexClamping::IntoExtents)),
                        expr.type);
    return emitAccess(&load, *load.buffer, load.indices, load.source, [&](llvm::Value *address) {
      return fromMemory(target_.emitLoad(*this, *load.buffer, memoryType(expr.type), address),
                        expr.type);
    });
  }
  case ExprNode::Kind::Unary: {
    auto &unary = *expr.as<Unary>();
    llvm::Value *operand = emitExpr(*unary.operand);
    if (unary.op == UnaryOpKind::Not)
      return builder_.CreateNot(operand);
    if (overflowFlag_ && isInteger(expr.type))
      return emitOverflowChecked(llvm::Intrinsic::ssub_with_overflow,
                                 llvm::ConstantInt::get(operand->getType(), 0), operand);
    return isFloat(expr.type) ? builder_.CreateFNeg(operand) : builder_.CreateNeg(operand);
  }
  case ExprNode::Kind::Binary:
    return emitBinary(*expr.as<Binary>());
  case ExprNode::Kind::Select:
    return emitSelect(*expr.as<ir::Select>());
  case ExprNode::Kind::Cast: {
    auto &cast = *expr.as<Cast>();
    return emitCast(emitExpr(*cast.operand), cast.operand->type, cast.type);
  }
  case ExprNode::Kind::Call:
    return emitCall(*expr.as<ir::Call>());
  }
  return nullptr;
}

llvm::Value *LlvmEmitter::emitExprAs(const ir::ExprNode &expr, ScalarType type) {
  return emitCast(emitExpr(expr), expr.type, type);
}

llvm::Value *LlvmEmitter::emitMinMax(bool isMin, llvm::Value *lhs, llvm::Value *rhs,
                                     ScalarType type) {
  // Floats: IEEE 754-2019's minimumNumber/maximumNumber, as the interpreter
  // (a NaN operand gives the other; -0 < +0). LLVM 19 has no intrinsic for
  // them, and minnum/maxnum may return either of two equal zeros: operands
  // that compare equal give the AND of their bits (max: +0 if either is) or
  // the OR (min: -0 if either is), which is either operand otherwise.
  if (isFloat(type)) {
    llvm::Value *chosen = builder_.CreateBinaryIntrinsic(
        isMin ? llvm::Intrinsic::minnum : llvm::Intrinsic::maxnum, lhs, rhs);
    llvm::Type *bitsType = builder_.getIntNTy(lhs->getType()->getPrimitiveSizeInBits());
    llvm::Value *lhsBits = builder_.CreateBitCast(lhs, bitsType);
    llvm::Value *rhsBits = builder_.CreateBitCast(rhs, bitsType);
    llvm::Value *tie = builder_.CreateBitCast(isMin ? builder_.CreateOr(lhsBits, rhsBits)
                                                    : builder_.CreateAnd(lhsBits, rhsBits),
                                              lhs->getType());
    return builder_.CreateSelect(builder_.CreateFCmpOEQ(lhs, rhs), tie, chosen);
  }
  if (type == ScalarType::Bool)
    return isMin ? builder_.CreateAnd(lhs, rhs) : builder_.CreateOr(lhs, rhs);
  return builder_.CreateBinaryIntrinsic(isMin ? llvm::Intrinsic::smin : llvm::Intrinsic::smax, lhs,
                                        rhs);
}

llvm::Value *LlvmEmitter::emitOverflowChecked(llvm::Intrinsic::ID id, llvm::Value *lhs,
                                              llvm::Value *rhs) {
  llvm::Value *result = builder_.CreateBinaryIntrinsic(id, lhs, rhs);
  llvm::Value *overflowed = builder_.CreateLoad(builder_.getInt1Ty(), overflowFlag_);
  builder_.CreateStore(builder_.CreateOr(overflowed, builder_.CreateExtractValue(result, 1)),
                       overflowFlag_);
  return builder_.CreateExtractValue(result, 0);
}

llvm::Value *LlvmEmitter::emitIntegerDivision(bool isDivision, llvm::Value *lhs, llvm::Value *rhs,
                                              SourceRange source) {
  // A divisor that cannot be 0 or -1 (a constant, `max(s, 1)`) needs no guard.
  llvm::ConstantRange divisors = llvm::computeConstantRange(rhs, /*ForSigned=*/true);
  if (!divisors.contains(llvm::APInt::getZero(divisors.getBitWidth())) &&
      !divisors.contains(llvm::APInt::getAllOnes(divisors.getBitWidth())))
    return isDivision ? builder_.CreateSDiv(lhs, rhs) : builder_.CreateSRem(lhs, rhs);
  llvm::Type *type = rhs->getType();
  llvm::Value *isZero = builder_.CreateICmpEQ(rhs, llvm::ConstantInt::get(type, 0));
  emitDeviceErrorIf(isZero, isDivision ? "integer division by zero" : "integer modulo by zero", {},
                    source);
  llvm::Value *isMinusOne = builder_.CreateICmpEQ(rhs, llvm::ConstantInt::getSigned(type, -1));
  llvm::Value *divisor = builder_.CreateSelect(builder_.CreateOr(isZero, isMinusOne),
                                               llvm::ConstantInt::get(type, 1), rhs);
  // After a division by zero the code goes on with a quotient of 0 (as the
  // remainder is): a loop bounded by it runs no iteration, where x / 1 could
  // run billions before the error is reported.
  if (isDivision)
    return builder_.CreateSelect(isZero, llvm::ConstantInt::get(type, 0),
                                 builder_.CreateSelect(isMinusOne, builder_.CreateNeg(lhs),
                                                       builder_.CreateSDiv(lhs, divisor)));
  return builder_.CreateSelect(isMinusOne, llvm::ConstantInt::get(type, 0),
                               builder_.CreateSRem(lhs, divisor));
}

// `a * b + c`, `c + a * b`, `a * b - c` and `c - a * b` on floats round once,
// as one fused multiply-add, on every engine (docs/language.md; C's
// FP_CONTRACT ON). Without it NVPTX writes `mul.rn` and `add.rn`, which
// ptxas must not fuse, at half the multiply-add rate.
llvm::Value *LlvmEmitter::emitFusedMultiplyAdd(const Binary &sum) {
  std::optional<ir::FusedProduct> fused = ir::fusedProductOf(sum);
  if (!fused)
    return nullptr;
  const Binary *product = fused->product;
  bool productFirst = fused->productFirst;
  llvm::Value *lhs = emitExpr(*product->lhs);
  llvm::Value *rhs = emitExpr(*product->rhs);
  llvm::Value *addend = emitExpr(productFirst ? *sum.rhs : *sum.lhs);
  if (sum.op == BinaryOpKind::Sub) {
    if (productFirst)
      addend = builder_.CreateFNeg(addend);
    else
      lhs = builder_.CreateFNeg(lhs);
  }
  return builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {lhs->getType()}, {lhs, rhs, addend});
}

llvm::Value *LlvmEmitter::emitBinary(const Binary &binary) {
  if (llvm::Value *fused = emitFusedMultiplyAdd(binary))
    return fused;
  llvm::Value *lhs = emitExpr(*binary.lhs);
  llvm::Value *rhs = emitExpr(*binary.rhs);
  ScalarType operandType = binary.lhs->type;
  bool isFp = isFloat(operandType);
  if (overflowFlag_ && isInteger(operandType)) {
    if (binary.op == BinaryOpKind::Add)
      return emitOverflowChecked(llvm::Intrinsic::sadd_with_overflow, lhs, rhs);
    if (binary.op == BinaryOpKind::Sub)
      return emitOverflowChecked(llvm::Intrinsic::ssub_with_overflow, lhs, rhs);
    if (binary.op == BinaryOpKind::Mul)
      return emitOverflowChecked(llvm::Intrinsic::smul_with_overflow, lhs, rhs);
  }
  switch (binary.op) {
  case BinaryOpKind::Add:
    return isFp ? builder_.CreateFAdd(lhs, rhs) : builder_.CreateAdd(lhs, rhs);
  case BinaryOpKind::Sub:
    return isFp ? builder_.CreateFSub(lhs, rhs) : builder_.CreateSub(lhs, rhs);
  case BinaryOpKind::Mul:
    return isFp ? builder_.CreateFMul(lhs, rhs) : builder_.CreateMul(lhs, rhs);
  // C semantics: integer division and remainder truncate toward zero.
  case BinaryOpKind::Div:
    return isFp ? builder_.CreateFDiv(lhs, rhs)
                : emitIntegerDivision(true, lhs, rhs, binary.source);
  case BinaryOpKind::Rem:
    return isFp ? builder_.CreateFRem(lhs, rhs)
                : emitIntegerDivision(false, lhs, rhs, binary.source);
  case BinaryOpKind::Min:
    return emitMinMax(true, lhs, rhs, operandType);
  case BinaryOpKind::Max:
    return emitMinMax(false, lhs, rhs, operandType);
  case BinaryOpKind::And:
    return builder_.CreateAnd(lhs, rhs);
  case BinaryOpKind::Or:
    return builder_.CreateOr(lhs, rhs);
  default:
    break;
  }
  using P = llvm::CmpInst::Predicate;
  struct Predicates {
    P signedInt, unsignedInt, ordered;
  };
  Predicates predicates{};
  switch (binary.op) {
  case BinaryOpKind::Lt:
    predicates = {P::ICMP_SLT, P::ICMP_ULT, P::FCMP_OLT};
    break;
  case BinaryOpKind::Le:
    predicates = {P::ICMP_SLE, P::ICMP_ULE, P::FCMP_OLE};
    break;
  case BinaryOpKind::Gt:
    predicates = {P::ICMP_SGT, P::ICMP_UGT, P::FCMP_OGT};
    break;
  case BinaryOpKind::Ge:
    predicates = {P::ICMP_SGE, P::ICMP_UGE, P::FCMP_OGE};
    break;
  case BinaryOpKind::Eq:
    predicates = {P::ICMP_EQ, P::ICMP_EQ, P::FCMP_OEQ};
    break;
  // As in C, NaN != NaN holds: the unordered predicate.
  case BinaryOpKind::Ne:
    predicates = {P::ICMP_NE, P::ICMP_NE, P::FCMP_UNE};
    break;
  default:
    break;
  }
  if (isFp)
    return builder_.CreateFCmp(predicates.ordered, lhs, rhs);
  // false < true, as bool orders in C.
  return builder_.CreateICmp(
      operandType == ScalarType::Bool ? predicates.unsignedInt : predicates.signedInt, lhs, rhs);
}

llvm::Value *LlvmEmitter::emitCast(llvm::Value *value, ScalarType from, ScalarType to) {
  if (from == to)
    return value;
  llvm::Type *target = valueType(to);
  if (to == ScalarType::Bool) {
    if (isFloat(from))
      return builder_.CreateFCmpUNE(value, llvm::ConstantFP::get(value->getType(), 0.0));
    return builder_.CreateICmpNE(value, llvm::ConstantInt::get(value->getType(), 0));
  }
  if (from == ScalarType::Bool)
    return isFloat(to) ? builder_.CreateUIToFP(value, target) : builder_.CreateZExt(value, target);
  if (isFloat(from) && isFloat(to))
    return builder_.CreateFPCast(value, target);
  // Saturating, NaN to 0: the interpreter's semantics, where C leaves
  // out-of-range conversions undefined.
  if (isFloat(from) && !target_.spellsOutSaturatingConversions())
    return builder_.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {target, value->getType()},
                                    {value});
  if (isFloat(from))
    return emitSaturatingConversion(value, target);
  if (isFloat(to))
    return builder_.CreateSIToFP(value, target);
  return builder_.CreateSExtOrTrunc(value, target);
}

// fptosi.sat spelled out: the value clamped to the integer's range as the
// float type holds it (its top, 2^(bits - 1) - 1, rounds up to a power of
// two that fptosi could not take: the float just below it), then the
// integer's largest value where the float reached the power of two, and 0
// for NaN (which the clamp turned into the bottom).
llvm::Value *LlvmEmitter::emitSaturatingConversion(llvm::Value *value, llvm::Type *target) {
  llvm::Type *floatType = value->getType();
  const llvm::fltSemantics &semantics = floatType->getFltSemantics();
  unsigned bits = target->getIntegerBitWidth();
  llvm::APFloat bottom(semantics), power(semantics);
  bottom.convertFromAPInt(llvm::APInt::getSignedMinValue(bits), true,
                          llvm::APFloat::rmNearestTiesToEven);
  power.convertFromAPInt(llvm::APInt::getOneBitSet(bits + 1, bits - 1), false,
                         llvm::APFloat::rmNearestTiesToEven);
  llvm::APFloat top = power;
  top.next(/*nextDown=*/true);
  llvm::Value *clamped = builder_.CreateBinaryIntrinsic(
      llvm::Intrinsic::minnum,
      builder_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, value,
                                     llvm::ConstantFP::get(floatType, bottom)),
      llvm::ConstantFP::get(floatType, top));
  llvm::Value *converted = builder_.CreateFPToSI(clamped, target);
  llvm::Value *largest = llvm::ConstantInt::get(target, llvm::APInt::getSignedMaxValue(bits));
  converted = builder_.CreateSelect(
      builder_.CreateFCmpOGE(value, llvm::ConstantFP::get(floatType, power)), largest, converted);
  return builder_.CreateSelect(builder_.CreateFCmpUNO(value, value),
                               llvm::ConstantInt::get(target, 0), converted);
}

llvm::Value *LlvmEmitter::emitSelect(const ir::Select &select) {
  llvm::Value *cond = emitExpr(*select.cond);
  if (!mayFault(*select.thenValue) && !mayFault(*select.elseValue))
    return builder_.CreateSelect(cond, emitExpr(*select.thenValue), emitExpr(*select.elseValue));
  // Only the chosen side may run: branch.
  llvm::Function *function = builder_.GetInsertBlock()->getParent();
  auto *thenBlock = llvm::BasicBlock::Create(context(), "select.then", function);
  auto *elseBlock = llvm::BasicBlock::Create(context(), "select.else", function);
  auto *joinBlock = llvm::BasicBlock::Create(context(), "select.join", function);
  builder_.CreateCondBr(cond, thenBlock, elseBlock);
  builder_.SetInsertPoint(thenBlock);
  llvm::Value *thenValue = emitExpr(*select.thenValue);
  llvm::BasicBlock *thenEnd = builder_.GetInsertBlock();
  builder_.CreateBr(joinBlock);
  builder_.SetInsertPoint(elseBlock);
  llvm::Value *elseValue = emitExpr(*select.elseValue);
  llvm::BasicBlock *elseEnd = builder_.GetInsertBlock();
  builder_.CreateBr(joinBlock);
  builder_.SetInsertPoint(joinBlock);
  llvm::PHINode *phi = builder_.CreatePHI(valueType(select.type), 2);
  phi->addIncoming(thenValue, thenEnd);
  phi->addIncoming(elseValue, elseEnd);
  return phi;
}

llvm::Value *LlvmEmitter::emitCall(const ir::Call &call) {
  std::vector<llvm::Value *> args;
  for (const ir::Expr &arg : call.args)
    args.push_back(emitExpr(*arg));
  if (target_.usesLibraryMath(call.builtin))
    return emitLibraryCall(target_.libraryMathName(call.builtin, call.type), call.type, args);
  auto unary = [&](llvm::Intrinsic::ID id) {
    return builder_.CreateUnaryIntrinsic(id, args.at(0));
  };
  switch (call.builtin) {
  case Builtin::Sqrt:
    return unary(llvm::Intrinsic::sqrt);
  case Builtin::Exp:
    return unary(llvm::Intrinsic::exp);
  case Builtin::Log:
    return unary(llvm::Intrinsic::log);
  case Builtin::Sin:
    return unary(llvm::Intrinsic::sin);
  case Builtin::Cos:
    return unary(llvm::Intrinsic::cos);
  case Builtin::Floor:
    return unary(llvm::Intrinsic::floor);
  case Builtin::Ceil:
    return unary(llvm::Intrinsic::ceil);
  case Builtin::Pow:
    return builder_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, args.at(0), args.at(1));
  case Builtin::Fma:
    return builder_.CreateIntrinsic(llvm::Intrinsic::fma, {args.at(0)->getType()},
                                    {args.at(0), args.at(1), args.at(2)});
  case Builtin::Abs:
    if (isFloat(call.type))
      return unary(llvm::Intrinsic::fabs);
    // abs(INT_MIN) wraps to INT_MIN as in C on two's complement machines.
    if (overflowFlag_)
      emitOverflowChecked(llvm::Intrinsic::ssub_with_overflow,
                          llvm::ConstantInt::get(args.at(0)->getType(), 0), args.at(0));
    return builder_.CreateIntrinsic(llvm::Intrinsic::abs, {args.at(0)->getType()},
                                    {args.at(0), builder_.getFalse()});
  case Builtin::Min:
    return emitMinMax(true, args.at(0), args.at(1), call.args.at(0)->type);
  case Builtin::Max:
    return emitMinMax(false, args.at(0), args.at(1), call.args.at(0)->type);
  case Builtin::Tanh:
    return emitLibraryCall(target_.libraryMathName(call.builtin, call.type), call.type, args);
  }
  return nullptr;
}

llvm::Value *LlvmEmitter::emitLibraryCall(const std::string &name, ScalarType type,
                                          const std::vector<llvm::Value *> &args) {
  llvm::Type *mathType = valueType(type);
  std::vector<llvm::Type *> parameterTypes(args.size(), mathType);
  llvm::FunctionCallee function =
      module_.getOrInsertFunction(name, llvm::FunctionType::get(mathType, parameterTypes, false));
  return builder_.CreateCall(function, args);
}

// ------------------------------------------------------------ statements ---

llvm::BranchInst *LlvmEmitter::emitCountedLoop(const std::string &name, llvm::Value *min,
                                               llvm::Value *extent,
                                               const std::function<void(llvm::Value *)> &body) {
  llvm::Function *function = builder_.GetInsertBlock()->getParent();
  llvm::BasicBlock *preheader = builder_.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(context(), name + ".header", function);
  auto *bodyBlock = llvm::BasicBlock::Create(context(), name + ".body", function);
  auto *exit = llvm::BasicBlock::Create(context(), name + ".exit", function);
  llvm::Value *end = builder_.CreateAdd(min, extent, name + ".end");
  builder_.CreateBr(header);
  builder_.SetInsertPoint(header);
  llvm::PHINode *induction = builder_.CreatePHI(min->getType(), 2, name);
  induction->addIncoming(min, preheader);
  builder_.CreateCondBr(builder_.CreateICmpSLT(induction, end), bodyBlock, exit);
  builder_.SetInsertPoint(bodyBlock);
  body(induction);
  llvm::Value *next = builder_.CreateAdd(induction, llvm::ConstantInt::get(min->getType(), 1),
                                         name + ".next", /*HasNUW=*/false, /*HasNSW=*/true);
  induction->addIncoming(next, builder_.GetInsertBlock());
  llvm::BranchInst *backEdge = builder_.CreateBr(header);
  builder_.SetInsertPoint(exit);
  return backEdge;
}

llvm::AllocaInst *LlvmEmitter::createEntryAlloca(llvm::Type *type, llvm::Value *count,
                                                 const std::string &name) {
  llvm::Function *function = builder_.GetInsertBlock()->getParent();
  llvm::IRBuilder<> entry(&function->getEntryBlock(), function->getEntryBlock().begin());
  return entry.CreateAlloca(type, count, name);
}

void LlvmEmitter::emitFor(const ir::For &loop) {
  switch (loop.forKind) {
  case ForKind::GpuBlock:
  case ForKind::GpuThread:
    target_.emitGpuLoop(*this, loop);
    return;
  case ForKind::Unrolled:
    if (emitUnrolled(loop))
      return;
    break;
  case ForKind::Serial:
  case ForKind::Parallel:
  case ForKind::Vectorized:
    // Vectorization and the unrolling of other loops are left to LLVM, which
    // sees constant trip counts; an Unrolled loop asks for full unrolling.
    break;
  }
  llvm::BranchInst *backEdge =
      emitCountedLoop(loop.var, emitExpr(*loop.min), emitExpr(*loop.extent), [&](llvm::Value *var) {
        ScopedBindings scope(*this);
        scope.var(loop.var, var);
        emitStmt(*loop.body);
      });
  if (loop.forKind == ForKind::Unrolled)
    addLoopProperty(backEdge, {llvm::MDString::get(context(), "llvm.loop.unroll.full")});
  // A loop of async copies (a block's rounds of copying a box) stays a
  // loop: unrolled, loop strength reduction kept each copy's address in a
  // register of its own across the stage loop around, and kernels at 128
  // registers spilled (sqdist 64 bytes, cnn_conv's 5 x 5 filters 120).
  if (loop.forKind == ForKind::Serial && containsAsyncCopy(*loop.body))
    addLoopProperty(backEdge, {llvm::MDString::get(context(), "llvm.loop.unroll.disable")});
  if (std::optional<std::string> name = target_.loopName(loop))
    addLoopProperty(backEdge, {llvm::MDString::get(context(), "loopc.loop"),
                               llvm::MDString::get(context(), *name)});
}

// An Unrolled loop of constant bounds: its body once per iteration, the
// variable a constant in each. Unrolled here rather than by LLVM, before any
// loop pass rewrites the addresses as recurrences, an index computed equally
// in two iterations (a window's row at copy r and offset u + 1, and at copy
// r + 1 and offset u: tile_registers) is the same expression on the same
// values, and LLVM loads it once.
bool LlvmEmitter::emitUnrolled(const ir::For &loop) {
  const auto *min = loop.min->as<IntImm>();
  const auto *extent = loop.extent->as<IntImm>();
  if (!min || !extent)
    return false;
  llvm::Type *type = valueType(loop.min->type);
  for (int64_t i = 0; i < extent->value; ++i) {
    ScopedBindings scope(*this);
    scope.var(loop.var, llvm::ConstantInt::get(type, min->value + i, true));
    emitStmt(*loop.body);
  }
  return true;
}

void LlvmEmitter::addLoopProperty(llvm::BranchInst *backEdge,
                                  llvm::ArrayRef<llvm::Metadata *> property) {
  // The loop's properties so far, then the new one.
  std::vector<llvm::Metadata *> properties = {nullptr};
  if (llvm::MDNode *existing = backEdge->getMetadata(llvm::LLVMContext::MD_loop))
    for (unsigned i = 1; i < existing->getNumOperands(); ++i)
      properties.push_back(existing->getOperand(i));
  properties.push_back(llvm::MDNode::get(context(), property));
  llvm::MDNode *loop = llvm::MDNode::getDistinct(context(), properties);
  loop->replaceOperandWith(0, loop);
  backEdge->setMetadata(llvm::LLVMContext::MD_loop, loop);
}

void LlvmEmitter::emitIf(const IfThenElse &branch) {
  llvm::Function *function = builder_.GetInsertBlock()->getParent();
  auto *thenBlock = llvm::BasicBlock::Create(context(), "if.then", function);
  auto *elseBlock =
      branch.elseCase ? llvm::BasicBlock::Create(context(), "if.else", function) : nullptr;
  auto *join = llvm::BasicBlock::Create(context(), "if.end", function);
  builder_.CreateCondBr(emitExpr(*branch.cond), thenBlock, elseBlock ? elseBlock : join);
  builder_.SetInsertPoint(thenBlock);
  emitStmt(*branch.thenCase);
  builder_.CreateBr(join);
  if (elseBlock) {
    builder_.SetInsertPoint(elseBlock);
    emitStmt(*branch.elseCase);
    builder_.CreateBr(join);
  }
  builder_.SetInsertPoint(join);
}

void LlvmEmitter::emitAllocate(const ir::Allocate &allocate) {
  const BufferInfo &buffer = *allocate.buffer;
  llvm::Value *count = elementCount(buffer);
  llvm::Value *storage = target_.allocate(*this, buffer, count);
  auto emitBody = [&] {
    ScopedBindings scope(*this);
    scope.buffer(&buffer, storage);
    emitStmt(*allocate.body);
  };
  if (buffer.memory != MemorySpace::Global && llvm::isa<llvm::Constant>(count)) {
    emitBody();
  } else {
    // Heap storage (a local array of the host code, a CPU thread's array of
    // run-time size past the stack's share) may not be had: the
    // interpreter's error, and the code using it is skipped. Elsewhere the
    // storage is never null and LLVM folds the test away.
    llvm::Value *failed = builder_.CreateAnd(builder_.CreateIsNull(storage),
                                             builder_.CreateICmpNE(count, builder_.getInt64(0)));
    emitUnlessAllocationFailed(failed, buffer, emitBody);
  }
  target_.release(*this, buffer, storage);
}

void LlvmEmitter::emitUnlessAllocationFailed(llvm::Value *failed, const BufferInfo &buffer,
                                             const std::function<void()> &emitUse) {
  emitDeviceErrorIf(failed, buffer.tooLargeMessage(), {}, buffer.declared);
  llvm::Function *function = builder_.GetInsertBlock()->getParent();
  auto *use = llvm::BasicBlock::Create(context(), buffer.name + ".allocated", function);
  auto *after = llvm::BasicBlock::Create(context(), buffer.name + ".done", function);
  builder_.CreateCondBr(failed, after, use);
  builder_.SetInsertPoint(use);
  emitUse();
  builder_.CreateBr(after);
  builder_.SetInsertPoint(after);
}

llvm::Value *LlvmEmitter::emitOperator(const ir::ReduceOperator &op, ScalarType type,
                                       llvm::Value *old, llvm::Value *value) {
  ScopedBindings scope(*this);
  scope.var("atomic.old", old);
  scope.var("atomic.value", value);
  return emitExpr(
      *ir::applyOperator(op, ir::makeVar(type, "atomic.old"), ir::makeVar(type, "atomic.value")));
}

namespace {

// The atomicrmw instruction computing `op` on `type`, when there is one.
std::optional<llvm::AtomicRMWInst::BinOp> atomicInstruction(ir::ReduceOperator::Kind op,
                                                            ScalarType type) {
  using Kind = ir::ReduceOperator::Kind;
  using Rmw = llvm::AtomicRMWInst;
  bool floating = isFloat(type);
  switch (op) {
  case Kind::Add:
    return floating ? Rmw::FAdd : Rmw::Add;
  // Float min and max have none: atomicrmw fmin/fmax is minnum/maxnum, which
  // may pick either of two zeros (emitMinMax orders them); no target used
  // has a native form anyway, so the compare-and-swap loop costs nothing more.
  case Kind::Min:
    return floating ? std::nullopt : std::optional(Rmw::Min);
  case Kind::Max:
    return floating ? std::nullopt : std::optional(Rmw::Max);
  case Kind::And:
    return Rmw::And; // bools are bytes holding 0 or 1
  case Kind::Or:
    return Rmw::Or;
  case Kind::Mul:
  case Kind::User:
    break;
  }
  return std::nullopt;
}

} // namespace

// Memory no other thread reaches meanwhile (a thread's registers; on the
// CPU, a block's shared memory) needs no atomicity. Elsewhere an operator with an
// atomicrmw form becomes one (LLVM expands those the target lacks, such as
// byte-wide or float min on NVPTX, into compare-and-swap loops); the others
// (`*`, user functions) loop here: compute from the value last seen, and
// swap it in if the element still holds it.
void LlvmEmitter::emitAtomicUpdate(const ir::AtomicUpdate &update) {
  SourceRange enclosing = errorRange_;
  if (update.source.valid())
    errorRange_ = update.source;
  // The target's indices are checked before the value is computed, as for
  // a Store: the interpreter's order.
  emitBoundsChecks(&update, *update.buffer, update.indices, update.source);
  ScalarType type = update.buffer->element;
  llvm::Value *value = emitExpr(*update.value);
  emitAccess(&update, *update.buffer, update.indices, update.source, [&](llvm::Value *address) {
    llvm::Type *stored = memoryType(type);
    llvm::Align align(scalarSize(type));
    if (!target_.sharedAtOnce(update.buffer->memory)) {
      llvm::Value *old = fromMemory(builder_.CreateLoad(stored, address), type);
      builder_.CreateStore(toMemory(emitOperator(update.op, type, old, value), type), address);
    } else if (auto instruction = atomicInstruction(update.op.kind, type)) {
      builder_.CreateAtomicRMW(*instruction, address, toMemory(value, type), align,
                               llvm::AtomicOrdering::Monotonic);
    } else {
      llvm::Type *bits = builder_.getIntNTy(8 * scalarSize(type));
      llvm::LoadInst *first = builder_.CreateAlignedLoad(bits, address, align, "atomic.first");
      first->setAtomic(llvm::AtomicOrdering::Monotonic);
      llvm::BasicBlock *entry = builder_.GetInsertBlock();
      llvm::Function *function = entry->getParent();
      auto *retry = llvm::BasicBlock::Create(context(), "atomic.retry", function);
      auto *done = llvm::BasicBlock::Create(context(), "atomic.done", function);
      builder_.CreateBr(retry);
      builder_.SetInsertPoint(retry);
      llvm::PHINode *seen = builder_.CreatePHI(bits, 2, "atomic.seen");
      seen->addIncoming(first, entry);
      llvm::Value *old = fromMemory(builder_.CreateBitCast(seen, stored), type);
      llvm::Value *combined =
          builder_.CreateBitCast(toMemory(emitOperator(update.op, type, old, value), type), bits);
      llvm::Value *exchange = builder_.CreateAtomicCmpXchg(address, seen, combined, align,
                                                           llvm::AtomicOrdering::Monotonic,
                                                           llvm::AtomicOrdering::Monotonic);
      seen->addIncoming(builder_.CreateExtractValue(exchange, 0), builder_.GetInsertBlock());
      builder_.CreateCondBr(builder_.CreateExtractValue(exchange, 1), done, retry);
      builder_.SetInsertPoint(done);
    }
    return nullptr;
  });
  errorRange_ = enclosing;
}

void LlvmEmitter::emitStmt(const ir::StmtNode &stmt) {
  switch (stmt.kind) {
  case StmtNode::Kind::For:
    emitFor(*stmt.as<ir::For>());
    return;
  case StmtNode::Kind::IfThenElse:
    emitIf(*stmt.as<IfThenElse>());
    return;
  case StmtNode::Kind::LetStmt: {
    auto &let = *stmt.as<LetStmt>();
    llvm::Value *value = emitExpr(*let.value);
    if (llvm::isa<llvm::Instruction>(value) && !value->hasName())
      value->setName(let.var);
    ScopedBindings scope(*this);
    scope.var(let.var, value);
    emitStmt(*let.body);
    return;
  }
  case StmtNode::Kind::Store: {
    auto &store = *stmt.as<ir::Store>();
    SourceRange enclosing = errorRange_;
    if (store.source.valid())
      errorRange_ = store.source;
    // The target's indices are checked before the value is computed, as the
    // interpreter does: of several bad accesses, the same one is reported.
    emitBoundsChecks(&store, *store.buffer, store.indices, store.source);
    llvm::Value *combined = emitExpr(*store.value);
    // A builtin operator's combine may be reassociated across iterations,
    // which lets LLVM keep several partial results (vector lanes) for a
    // float sum; a user's operator is an expression whose own order stays
    // (interleave_reductions gives it lanes).
    if (store.reduction && store.reduction->op.kind != ir::ReduceOperator::Kind::User &&
        llvm::isa<llvm::FPMathOperator>(combined))
      if (auto *instruction = llvm::dyn_cast<llvm::Instruction>(combined))
        instruction->setHasAllowReassoc(true);
    llvm::Value *value = toMemory(combined, store.buffer->element);
    emitAccess(&store, *store.buffer, store.indices, store.source, [&](llvm::Value *address) {
      target_.emitStore(*this, *store.buffer, value, address);
      return nullptr;
    });
    errorRange_ = enclosing;
    return;
  }
  case StmtNode::Kind::AtomicUpdate:
    emitAtomicUpdate(*stmt.as<ir::AtomicUpdate>());
    return;
  case StmtNode::Kind::Allocate:
    emitAllocate(*stmt.as<ir::Allocate>());
    return;
  case StmtNode::Kind::Barrier:
    target_.emitBarrier(*this);
    return;
  case StmtNode::Kind::WarpShuffle: {
    auto &shuffle = *stmt.as<ir::WarpShuffle>();
    llvm::Value *exchanged = target_.emitShuffleXor(*this, emitExpr(*shuffle.value),
                                                    shuffle.value->type, shuffle.laneMask);
    builder_.CreateStore(toMemory(exchanged, shuffle.target->element),
                         lookupBuffer(*shuffle.target, SourceRange{}));
    return;
  }
  case StmtNode::Kind::AsyncCopy:
    target_.emitAsyncCopy(*this, *stmt.as<ir::AsyncCopy>());
    return;
  case StmtNode::Kind::AsyncCommit:
    target_.emitAsyncCommit(*this);
    return;
  case StmtNode::Kind::AsyncWait:
    target_.emitAsyncWait(*this, stmt.as<ir::AsyncWait>()->pending);
    return;
  case StmtNode::Kind::Check: {
    auto &check = *stmt.as<ir::Check>();
    std::vector<llvm::Value *> values;
    for (const ir::Expr &value : check.values)
      values.push_back(emitExprAs(*value, ScalarType::I64));
    emitDeviceErrorIf(builder_.CreateNot(emitExpr(*check.condition)), check.message, values,
                      check.source);
    return;
  }
  case StmtNode::Kind::Block:
    for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
      emitStmt(*child);
    return;
  case StmtNode::Kind::Reduce:
    fail("code generation: a Reduce was not lowered by the pass pipeline",
         stmt.as<ir::Reduce>()->source);
    return;
  case StmtNode::Kind::Scan:
    fail("code generation: a Scan was not lowered by the pass pipeline",
         stmt.as<ir::Scan>()->source);
    return;
  case StmtNode::Kind::Launch:
    target_.emitLaunch(*this, *stmt.as<ir::Launch>());
    return;
  }
}

// --------------------------------------------------------------- helpers ---

void Target::emitAsyncCopy(LlvmEmitter &emitter, const ir::AsyncCopy &copy) {
  emitter.fail("code generation: an async copy into '" + copy.target->name +
               "' for a target without them");
}
void Target::emitAsyncCommit(LlvmEmitter &emitter) {
  emitter.fail("code generation: an async commit for a target without them");
}
void Target::emitAsyncWait(LlvmEmitter &emitter, int) {
  emitter.fail("code generation: an async wait for a target without them");
}

llvm::Value *Target::emitLoad(LlvmEmitter &emitter, const ir::BufferInfo &, llvm::Type *type,
                              llvm::Value *address) {
  return emitter.builder().CreateLoad(type, address);
}
void Target::emitStore(LlvmEmitter &emitter, const ir::BufferInfo &, llvm::Value *value,
                       llvm::Value *address) {
  emitter.builder().CreateStore(value, address);
}

void bindScalarSlots(LlvmEmitter &emitter, ScopedBindings &scope,
                     const std::vector<ir::ScalarParam> &scalars, llvm::Value *slots) {
  llvm::IRBuilder<> &builder = emitter.builder();
  for (size_t i = 0; i < scalars.size(); ++i) {
    llvm::Value *slot = builder.CreateConstInBoundsGEP1_64(builder.getInt64Ty(), slots, i);
    llvm::Value *stored = builder.CreateLoad(emitter.memoryType(scalars[i].type), slot);
    llvm::Value *value = emitter.fromMemory(stored, scalars[i].type);
    value->setName(scalars[i].name);
    scope.var(scalars[i].name, value);
  }
}

ScopedBindings::~ScopedBindings() {
  for (auto it = buffers_.rbegin(); it != buffers_.rend(); ++it)
    emitter_.bindBuffer(it->first, it->second);
  for (auto it = vars_.rbegin(); it != vars_.rend(); ++it)
    emitter_.bindVar(it->first, it->second);
}

void ScopedBindings::var(const std::string &name, llvm::Value *value) {
  vars_.emplace_back(name, emitter_.bindVar(name, value));
}

void ScopedBindings::buffer(const BufferInfo *buffer, llvm::Value *storage) {
  buffers_.emplace_back(buffer, emitter_.bindBuffer(buffer, storage));
}

bool mayFault(const ir::ExprNode &expr) {
  switch (expr.kind) {
  case ExprNode::Kind::Load:
    return true;
  case ExprNode::Kind::Unary:
    return mayFault(*expr.as<Unary>()->operand);
  case ExprNode::Kind::Binary: {
    auto &binary = *expr.as<Binary>();
    if (isInteger(binary.type) &&
        (binary.op == BinaryOpKind::Div || binary.op == BinaryOpKind::Rem))
      return true;
    return mayFault(*binary.lhs) || mayFault(*binary.rhs);
  }
  case ExprNode::Kind::Select: {
    auto &select = *expr.as<ir::Select>();
    return mayFault(*select.cond) || mayFault(*select.thenValue) || mayFault(*select.elseValue);
  }
  case ExprNode::Kind::Cast:
    return mayFault(*expr.as<Cast>()->operand);
  case ExprNode::Kind::Call:
    for (const ir::Expr &arg : expr.as<ir::Call>()->args)
      if (mayFault(*arg))
        return true;
    return false;
  default:
    return false;
  }
}

bool containsAsyncCopy(const ir::StmtNode &stmt) {
  switch (stmt.kind) {
  case StmtNode::Kind::AsyncCopy:
    return true;
  case StmtNode::Kind::IfThenElse: {
    auto &branch = *stmt.as<IfThenElse>();
    return containsAsyncCopy(*branch.thenCase) ||
           (branch.elseCase && containsAsyncCopy(*branch.elseCase));
  }
  case StmtNode::Kind::LetStmt:
    return containsAsyncCopy(*stmt.as<LetStmt>()->body);
  case StmtNode::Kind::Block:
    for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
      if (containsAsyncCopy(*child))
        return true;
    return false;
  default:
    return false;
  }
}

bool containsBarrier(const ir::StmtNode &stmt) {
  switch (stmt.kind) {
  case StmtNode::Kind::Barrier:
    return true;
  case StmtNode::Kind::For:
    return containsBarrier(*stmt.as<ir::For>()->body);
  case StmtNode::Kind::IfThenElse: {
    auto &branch = *stmt.as<IfThenElse>();
    return containsBarrier(*branch.thenCase) ||
           (branch.elseCase && containsBarrier(*branch.elseCase));
  }
  case StmtNode::Kind::LetStmt:
    return containsBarrier(*stmt.as<LetStmt>()->body);
  case StmtNode::Kind::Allocate:
    return containsBarrier(*stmt.as<ir::Allocate>()->body);
  case StmtNode::Kind::Block:
    for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
      if (containsBarrier(*child))
        return true;
    return false;
  default:
    return false;
  }
}

} // namespace loopc::codegen
