// The GPU engine's host program (see GpuHostProgram.h).
#include "engine/gpu/GpuHostProgram.h"

#include "codegen/DeviceErrors.h"
#include "support/CrashReport.h"
#include "support/IntegerArithmetic.h"
#include "support/Interrupt.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

namespace loopc::engine {

using namespace loopc::codegen;
using namespace loopc::ir;

Error runtimeError(const runtime::RuntimeError &error, SourceRange range) {
  return Error{error.message, range};
}

HostScalar convert(const HostScalar &value, ScalarType to) {
  if (value.type == to)
    return value;
  if (to == ScalarType::Bool)
    return HostScalar::ofInteger(to, isFloat(value.type) ? value.real != 0 : value.integer != 0);
  if (isFloat(to))
    return HostScalar::ofReal(to, value.asReal());
  if (!isFloat(value.type))
    return HostScalar::ofInteger(to, value.integer);
  // Saturating, NaN to 0, as the code generators convert.
  double real = value.real;
  if (std::isnan(real))
    return HostScalar::ofInteger(to, 0);
  double low = to == ScalarType::I32 ? std::numeric_limits<int32_t>::min()
                                     : static_cast<double>(std::numeric_limits<int64_t>::min());
  double high = to == ScalarType::I32 ? std::numeric_limits<int32_t>::max()
                                      : static_cast<double>(std::numeric_limits<int64_t>::max());
  if (real <= low)
    return HostScalar::ofInteger(to, to == ScalarType::I32 ? std::numeric_limits<int32_t>::min()
                                                           : std::numeric_limits<int64_t>::min());
  if (real >= high)
    return HostScalar::ofInteger(to, to == ScalarType::I32 ? std::numeric_limits<int32_t>::max()
                                                           : std::numeric_limits<int64_t>::max());
  return HostScalar::ofInteger(to, static_cast<int64_t>(real));
}

// The interpreter behind HostProgram.
class HostInterpreter {
public:
  HostInterpreter(const runtime::Runtime &runtime, DevicePool &pool,
                  const std::map<std::string, runtime::Function> &kernels,
                  const std::map<std::string, const KernelFunc *> &kernelInfo)
      : runtime_(runtime), pool_(pool), kernels_(kernels), kernelInfo_(kernelInfo) {}

  void bindVar(const std::string &name, HostScalar value) { vars_[name] = value; }
  void bindBuffer(const BufferInfo *buffer, loopc_device_ptr address) {
    buffers_[buffer] = address;
  }
  // The device error record every launch passes last (DeviceErrors.h).
  void bindErrorRecord(loopc_device_ptr address) { errorRecord_ = address; }
  // The parfor of the latest launch: where a kernel's asynchronous failure,
  // found by a later wait, most likely comes from.
  SourceRange lastLaunch() const { return lastLaunch_; }

  Status run(const StmtNode &stmt) {
    switch (stmt.kind) {
    case StmtNode::Kind::Block:
      for (const ir::Stmt &child : stmt.as<ir::Block>()->stmts)
        if (auto status = run(*child); !status)
          return status;
      return {};
    case StmtNode::Kind::LetStmt: {
      auto &let = *stmt.as<LetStmt>();
      auto value = eval(*let.value);
      if (!value)
        return std::unexpected(value.error());
      auto saved = vars_.find(let.var) == vars_.end() ? std::nullopt
                                                      : std::optional<HostScalar>(vars_[let.var]);
      vars_[let.var] = *value;
      Status status = run(*let.body);
      restore(let.var, saved);
      return status;
    }
    case StmtNode::Kind::For:
      return runFor(*stmt.as<ir::For>());
    case StmtNode::Kind::IfThenElse: {
      auto &branch = *stmt.as<IfThenElse>();
      auto cond = eval(*branch.cond);
      if (!cond)
        return std::unexpected(cond.error());
      if (cond->integer)
        return run(*branch.thenCase);
      return branch.elseCase ? run(*branch.elseCase) : Status{};
    }
    case StmtNode::Kind::Store:
      return runStore(*stmt.as<ir::Store>());
    case StmtNode::Kind::Allocate:
      return runAllocate(*stmt.as<ir::Allocate>());
    case StmtNode::Kind::Launch:
      return runLaunch(*stmt.as<ir::Launch>());
    case StmtNode::Kind::Barrier:
      return makeError("GPU engine: a barrier in host code");
    case StmtNode::Kind::WarpShuffle:
      return makeError("GPU engine: a warp shuffle in host code");
    case StmtNode::Kind::AsyncCopy:
    case StmtNode::Kind::AsyncCommit:
    case StmtNode::Kind::AsyncWait:
      return makeError("GPU engine: an async copy in host code");
    case StmtNode::Kind::Check:
      return runCheck(*stmt.as<ir::Check>());
    case StmtNode::Kind::Reduce:
      return makeError("GPU engine: a Reduce was not lowered by the pass pipeline",
                       stmt.as<ir::Reduce>()->source);
    case StmtNode::Kind::Scan:
      return makeError("GPU engine: a Scan was not lowered by the pass pipeline",
                       stmt.as<ir::Scan>()->source);
    case StmtNode::Kind::AtomicUpdate:
      return makeError("GPU engine: an atomic update in host code",
                       stmt.as<ir::AtomicUpdate>()->source);
    }
    return {};
  }

private:
  void restore(const std::string &name, const std::optional<HostScalar> &saved) {
    if (saved)
      vars_[name] = *saved;
    else
      vars_.erase(name);
  }

  Status runFor(const ir::For &loop) {
    auto min = eval(*loop.min);
    if (!min)
      return std::unexpected(min.error());
    auto extent = eval(*loop.extent);
    if (!extent)
      return std::unexpected(extent.error());
    if (loop.forKind == ForKind::GpuBlock || loop.forKind == ForKind::GpuThread)
      return makeError("GPU engine: a GPU loop outside a kernel", loop.source);
    auto saved = vars_.find(loop.var) == vars_.end() ? std::nullopt
                                                     : std::optional<HostScalar>(vars_[loop.var]);
    Status status;
    for (int64_t i = 0; i < extent->integer && status; ++i) {
      vars_[loop.var] = HostScalar::ofInteger(min->type, min->integer + i);
      status = run(*loop.body);
    }
    restore(loop.var, saved);
    return status;
  }

  Expected<std::vector<int64_t>> evalAll(const std::vector<ir::Expr> &exprs) {
    std::vector<int64_t> values;
    for (const ir::Expr &expr : exprs) {
      auto value = eval(*expr);
      if (!value)
        return std::unexpected(value.error());
      values.push_back(convert(*value, ScalarType::I64).integer);
    }
    return values;
  }

  // The device address of buffer[indices], bounds-checked.
  Expected<loopc_device_ptr> elementAddress(const BufferInfo &buffer,
                                            const std::vector<ir::Expr> &indices, SourceRange use) {
    auto found = buffers_.find(&buffer);
    if (found == buffers_.end())
      return makeError("GPU engine: buffer '" + buffer.name + "' is not allocated here", use);
    auto shape = evalAll(buffer.shape);
    if (!shape)
      return std::unexpected(shape.error());
    auto index = evalAll(indices);
    if (!index)
      return std::unexpected(index.error());
    int64_t offset = 0;
    for (size_t dim = 0; dim < index->size(); ++dim) {
      if ((*index)[dim] < 0 || (*index)[dim] >= (*shape)[dim])
        return makeError("index " + std::to_string((*index)[dim]) + " out of bounds for '" +
                             buffer.name + "'",
                         use);
      offset = offset * (*shape)[dim] + (*index)[dim];
    }
    return found->second + static_cast<loopc_device_ptr>(offset * scalarSize(buffer.element));
  }

  Status runStore(const ir::Store &store) {
    // An element copied from device memory (a reduction's cell into its
    // result) stays on the device: no wait for the kernels, no round trip.
    if (auto *load = store.value->as<ir::Load>();
        load && load->buffer->element == store.buffer->element) {
      auto source = elementAddress(*load->buffer, load->indices, load->source);
      if (!source)
        return std::unexpected(source.error());
      auto destination = elementAddress(*store.buffer, store.indices, store.source);
      if (!destination)
        return std::unexpected(destination.error());
      if (loopc_copy_on_device(runtime_.handle(), *destination, *source,
                               scalarSize(store.buffer->element)) != LOOPC_SUCCESS)
        return makeError(loopc_runtime_last_error(runtime_.handle()), store.source);
      return {};
    }
    auto value = eval(*store.value);
    if (!value)
      return std::unexpected(value.error());
    auto address = elementAddress(*store.buffer, store.indices, store.source);
    if (!address)
      return std::unexpected(address.error());
    unsigned char bytes[8] = {};
    convert(*value, store.buffer->element).store(bytes);
    if (loopc_copy_to_device(runtime_.handle(), *address, bytes,
                             scalarSize(store.buffer->element)) != LOOPC_SUCCESS)
      return makeError(loopc_runtime_last_error(runtime_.handle()), store.source);
    return {};
  }

  // Global temporaries, and the Register cells of kernel-level variables
  // (`var s = alpha;` read by a later parfor as a scalar parameter), live in
  // device memory, where the host program's loads and stores reach them.
  Status runCheck(const ir::Check &check) {
    auto holds = eval(*check.condition);
    if (!holds)
      return std::unexpected(holds.error());
    if (holds->integer)
      return {};
    auto values = evalAll(check.values);
    if (!values)
      return std::unexpected(values.error());
    values->resize(2, 0);
    return makeError(formatDeviceError(check.message, values->data()), check.source);
  }

  Status runAllocate(const ir::Allocate &allocate) {
    const BufferInfo &buffer = *allocate.buffer;
    if (buffer.memory == MemorySpace::Shared)
      return makeError("GPU engine: a shared buffer in host code", buffer.declared);
    auto shape = evalAll(buffer.shape);
    if (!shape)
      return std::unexpected(shape.error());
    // Saturating: a count past the address space is no allocation.
    size_t bytes = scalarSize(buffer.element);
    for (int64_t extent : *shape)
      if (__builtin_mul_overflow(bytes, static_cast<size_t>(std::max<int64_t>(extent, 0)), &bytes))
        bytes = SIZE_MAX;
    if (bytes == SIZE_MAX)
      return makeError(buffer.tooLargeMessage(), buffer.declared);
    auto acquired = pool_.acquire(runtime_, std::max(bytes, kSmallestArrayBytes));
    if (!acquired) {
      Error error = runtimeError(acquired.error(), buffer.declared);
      if (buffer.slicePerThread)
        error.message = buffer.tooLargeMessage() + ": " + error.message;
      return std::unexpected(error);
    }
    runtime::DeviceBuffer *storage = *acquired;
    if (auto cleared = storage->fill(0); !cleared) {
      pool_.release(storage);
      return std::unexpected(runtimeError(cleared.error(), buffer.declared));
    }
    buffers_[&buffer] = storage->address();
    Status status = run(*allocate.body);
    buffers_.erase(&buffer);
    pool_.release(storage);
    return status;
  }

  Status runLaunch(const ir::Launch &launch) {
    auto function = kernels_.find(launch.kernel);
    auto info = kernelInfo_.find(launch.kernel);
    if (function == kernels_.end() || info == kernelInfo_.end())
      return makeError("GPU engine: launch of unknown kernel '" + launch.kernel + "'",
                       launch.source);
    auto grid = evalAll(launch.grid);
    if (!grid)
      return std::unexpected(grid.error());
    auto block = evalAll(launch.block);
    if (!block)
      return std::unexpected(block.error());
    const KernelFunc &kernel = *info->second;
    int64_t geometry[6];
    for (int axis = 0; axis < 3; ++axis) {
      geometry[axis] = axis < static_cast<int>(grid->size()) ? (*grid)[axis] : 1;
      geometry[3 + axis] = axis < static_cast<int>(block->size()) ? (*block)[axis] : 1;
    }
    char reason[256];
    int32_t launches =
        loopc_launch_geometry_check(geometry, kernel.maxThreadsPerBlock, reason, sizeof reason);
    if (launches < 0)
      return makeError("kernel '" + launch.kernel + "' " + reason, launch.source);
    if (launches == 0)
      return {}; // an empty iteration space launches nothing
    runtime::LaunchConfig config;
    config.kernelName = launch.kernel;
    for (int axis = 0; axis < 3; ++axis) {
      config.grid[axis] = static_cast<uint32_t>(geometry[axis]);
      config.block[axis] = static_cast<uint32_t>(geometry[3 + axis]);
    }
    // One 8-byte slot per parameter, each holding the value in its PTX type.
    std::vector<uint64_t> slots(launch.buffers.size() + launch.scalars.size() + 1, 0);
    slots.back() = errorRecord_;
    for (size_t i = 0; i < launch.buffers.size(); ++i) {
      auto found = buffers_.find(launch.buffers[i].get());
      if (found == buffers_.end())
        return makeError("GPU engine: buffer '" + launch.buffers[i]->name +
                             "' is not allocated here",
                         launch.source);
      slots[i] = found->second;
    }
    for (size_t i = 0; i < launch.scalars.size(); ++i) {
      auto value = eval(*launch.scalars[i]);
      if (!value)
        return std::unexpected(value.error());
      ScalarType type = i < kernel.scalars.size() ? kernel.scalars[i].type : value->type;
      convert(*value, type)
          .store(reinterpret_cast<unsigned char *>(&slots[launch.buffers.size() + i]));
    }
    std::vector<void *> params;
    for (uint64_t &slot : slots)
      params.push_back(&slot);
    if (auto launched = runtime_.launch(function->second, config, params); !launched)
      return std::unexpected(runtimeError(launched.error(), launch.source));
    lastLaunch_ = launch.source;
    return {};
  }

  Expected<HostScalar> eval(const ExprNode &expr) {
    switch (expr.kind) {
    case ExprNode::Kind::IntImm:
      return HostScalar::ofInteger(expr.type, expr.as<IntImm>()->value);
    case ExprNode::Kind::FloatImm:
      return HostScalar::ofReal(expr.type, expr.as<FloatImm>()->value);
    case ExprNode::Kind::BoolImm:
      return HostScalar::ofInteger(ScalarType::Bool, expr.as<BoolImm>()->value);
    case ExprNode::Kind::Var: {
      auto found = vars_.find(expr.as<Var>()->name);
      if (found == vars_.end())
        return makeError("GPU engine: variable '" + expr.as<Var>()->name + "' is not bound");
      return found->second;
    }
    case ExprNode::Kind::Load: {
      auto &load = *expr.as<ir::Load>();
      auto address = elementAddress(*load.buffer, load.indices, load.source);
      if (!address)
        return std::unexpected(address.error());
      unsigned char bytes[8] = {};
      if (loopc_copy_to_host(runtime_.handle(), bytes, *address,
                             scalarSize(load.buffer->element)) != LOOPC_SUCCESS)
        return makeError(loopc_runtime_last_error(runtime_.handle()), load.source);
      return HostScalar::load(load.buffer->element, bytes);
    }
    case ExprNode::Kind::Unary: {
      auto &unary = *expr.as<Unary>();
      auto operand = eval(*unary.operand);
      if (!operand)
        return operand;
      if (unary.op == UnaryOpKind::Not)
        return HostScalar::ofInteger(ScalarType::Bool, !operand->integer);
      if (isFloat(expr.type))
        return HostScalar::ofReal(expr.type, -operand->real);
      return HostScalar::ofInteger(
          expr.type, static_cast<int64_t>(0ULL - static_cast<uint64_t>(operand->integer)));
    }
    case ExprNode::Kind::Binary:
      return evalBinary(*expr.as<Binary>());
    case ExprNode::Kind::Select: {
      auto &select = *expr.as<ir::Select>();
      auto cond = eval(*select.cond);
      if (!cond)
        return cond;
      return eval(cond->integer ? *select.thenValue : *select.elseValue);
    }
    case ExprNode::Kind::Cast: {
      auto operand = eval(*expr.as<Cast>()->operand);
      if (!operand)
        return operand;
      return convert(*operand, expr.type);
    }
    case ExprNode::Kind::Call:
      return evalCall(*expr.as<ir::Call>());
    }
    return makeError("GPU engine: unknown expression in host code");
  }

  // `a * b + c`, `c - a * b`, ... on floats round once, as the kernels'
  // code and the interpreter compute them (docs/language.md): one fused
  // multiply-add, its operands evaluated left to right. Nothing when `sum`
  // is not such a sum.
  std::optional<Expected<HostScalar>> evalFusedMultiplyAdd(const Binary &sum) {
    std::optional<ir::FusedProduct> fused = ir::fusedProductOf(sum);
    if (!fused)
      return std::nullopt;
    const Binary *product = fused->product;
    bool productFirst = fused->productFirst;
    Expected<HostScalar> addend = HostScalar{};
    if (!productFirst && !(addend = eval(*sum.lhs)))
      return addend;
    auto lhs = eval(*product->lhs);
    if (!lhs)
      return lhs;
    auto rhs = eval(*product->rhs);
    if (!rhs)
      return rhs;
    if (productFirst && !(addend = eval(*sum.rhs)))
      return addend;
    double a = lhs->real, b = rhs->real, c = addend->real;
    if (sum.op == BinaryOpKind::Sub)
      (productFirst ? c : a) = -(productFirst ? c : a);
    if (sum.type == ScalarType::F32)
      return HostScalar::ofReal(
          sum.type, std::fma(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
    return HostScalar::ofReal(sum.type, std::fma(a, b, c));
  }

  Expected<HostScalar> evalBinary(const Binary &binary) {
    if (auto fused = evalFusedMultiplyAdd(binary))
      return std::move(*fused);
    auto lhs = eval(*binary.lhs);
    if (!lhs)
      return lhs;
    auto rhs = eval(*binary.rhs);
    if (!rhs)
      return rhs;
    ScalarType type = binary.lhs->type;
    auto compare = [&](auto less, auto equal) {
      switch (binary.op) {
      case BinaryOpKind::Lt:
        return less(*lhs, *rhs);
      case BinaryOpKind::Le:
        return less(*lhs, *rhs) || equal(*lhs, *rhs);
      case BinaryOpKind::Gt:
        return less(*rhs, *lhs);
      case BinaryOpKind::Ge:
        return less(*rhs, *lhs) || equal(*lhs, *rhs);
      case BinaryOpKind::Eq:
        return equal(*lhs, *rhs);
      default:
        return !equal(*lhs, *rhs);
      }
    };
    if (isComparison(binary.op)) {
      bool result = isFloat(type)
                        ? compare([](auto &a, auto &b) { return a.real < b.real; },
                                  [](auto &a, auto &b) { return a.real == b.real; })
                        : compare([](auto &a, auto &b) { return a.integer < b.integer; },
                                  [](auto &a, auto &b) { return a.integer == b.integer; });
      return HostScalar::ofInteger(ScalarType::Bool, result);
    }
    if (isFloat(type)) {
      double a = lhs->real, b = rhs->real;
      switch (binary.op) {
      case BinaryOpKind::Add:
        return HostScalar::ofReal(type, a + b);
      case BinaryOpKind::Sub:
        return HostScalar::ofReal(type, a - b);
      case BinaryOpKind::Mul:
        return HostScalar::ofReal(type, a * b);
      case BinaryOpKind::Div:
        return HostScalar::ofReal(type, a / b);
      case BinaryOpKind::Rem:
        return HostScalar::ofReal(type, std::fmod(a, b));
      case BinaryOpKind::Min:
        return HostScalar::ofReal(type, std::fmin(a, b));
      case BinaryOpKind::Max:
        return HostScalar::ofReal(type, std::fmax(a, b));
      default:
        break;
      }
      return makeError("GPU engine: a logical operator on floats in host code");
    }
    // Integers wrap as in the generated code (support/IntegerArithmetic.h),
    // in i64, then to the type's width.
    int64_t a = lhs->integer, b = rhs->integer;
    switch (binary.op) {
    case BinaryOpKind::Add:
      return HostScalar::ofInteger(type, wrappingAdd(a, b));
    case BinaryOpKind::Sub:
      return HostScalar::ofInteger(type, wrappingSubtract(a, b));
    case BinaryOpKind::Mul:
      return HostScalar::ofInteger(type, wrappingMultiply(a, b));
    case BinaryOpKind::Div:
    case BinaryOpKind::Rem: {
      bool divides = binary.op == BinaryOpKind::Div;
      std::optional<int64_t> result = divides ? wrappingDivide(a, b) : wrappingRemainder(a, b);
      if (!result)
        return makeError(divides ? "integer division by zero" : "integer modulo by zero",
                         binary.source);
      return HostScalar::ofInteger(type, *result);
    }
    case BinaryOpKind::Min:
      return HostScalar::ofInteger(type, std::min(lhs->integer, rhs->integer));
    case BinaryOpKind::Max:
      return HostScalar::ofInteger(type, std::max(lhs->integer, rhs->integer));
    case BinaryOpKind::And:
      return HostScalar::ofInteger(type, lhs->integer && rhs->integer);
    case BinaryOpKind::Or:
      return HostScalar::ofInteger(type, lhs->integer || rhs->integer);
    default:
      break;
    }
    return makeError("GPU engine: unknown operator in host code");
  }

  Expected<HostScalar> evalCall(const ir::Call &call) {
    std::vector<HostScalar> args;
    for (const ir::Expr &arg : call.args) {
      auto value = eval(*arg);
      if (!value)
        return value;
      args.push_back(*value);
    }
    ScalarType type = call.type;
    if (!isFloat(type)) {
      switch (call.builtin) {
      case Builtin::Abs:
        return HostScalar::ofInteger(
            type, args[0].integer < 0
                      ? static_cast<int64_t>(0ULL - static_cast<uint64_t>(args[0].integer))
                      : args[0].integer);
      case Builtin::Min:
        return HostScalar::ofInteger(type, std::min(args[0].integer, args[1].integer));
      case Builtin::Max:
        return HostScalar::ofInteger(type, std::max(args[0].integer, args[1].integer));
      default:
        return makeError(std::string("GPU engine: ") + builtinName(call.builtin) +
                         " of an integer in host code");
      }
    }
    double x = args[0].real;
    double y = args.size() > 1 ? args[1].real : 0;
    double result = 0;
    switch (call.builtin) {
    case Builtin::Sqrt:
      result = std::sqrt(x);
      break;
    case Builtin::Exp:
      result = std::exp(x);
      break;
    case Builtin::Log:
      result = std::log(x);
      break;
    case Builtin::Sin:
      result = std::sin(x);
      break;
    case Builtin::Cos:
      result = std::cos(x);
      break;
    case Builtin::Tanh:
      result = std::tanh(x);
      break;
    case Builtin::Abs:
      result = std::fabs(x);
      break;
    case Builtin::Min:
      result = std::fmin(x, y);
      break;
    case Builtin::Max:
      result = std::fmax(x, y);
      break;
    case Builtin::Pow:
      result = std::pow(x, y);
      break;
    case Builtin::Floor:
      result = std::floor(x);
      break;
    case Builtin::Ceil:
      result = std::ceil(x);
      break;
    case Builtin::Fma:
      result = std::fma(x, y, args[2].real);
      break;
    }
    return HostScalar::ofReal(type, result);
  }

  const runtime::Runtime &runtime_;
  DevicePool &pool_;
  const std::map<std::string, runtime::Function> &kernels_;
  const std::map<std::string, const KernelFunc *> &kernelInfo_;
  std::unordered_map<std::string, HostScalar> vars_;
  std::unordered_map<const BufferInfo *, loopc_device_ptr> buffers_;
  loopc_device_ptr errorRecord_ = 0;
  SourceRange lastLaunch_;
};

HostProgram::HostProgram(const runtime::Runtime &runtime, DevicePool &pool,
                         const std::map<std::string, runtime::Function> &kernels,
                         const std::map<std::string, const KernelFunc *> &kernelInfo)
    : interpreter_(std::make_unique<HostInterpreter>(runtime, pool, kernels, kernelInfo)) {}

HostProgram::~HostProgram() = default;

void HostProgram::bindVar(const std::string &name, HostScalar value) {
  interpreter_->bindVar(name, value);
}

void HostProgram::bindBuffer(const BufferInfo *buffer, loopc_device_ptr address) {
  interpreter_->bindBuffer(buffer, address);
}

void HostProgram::bindErrorRecord(loopc_device_ptr address) {
  interpreter_->bindErrorRecord(address);
}

SourceRange HostProgram::lastLaunch() const { return interpreter_->lastLaunch(); }

Status HostProgram::run(const StmtNode &stmt) { return interpreter_->run(stmt); }

} // namespace loopc::engine
