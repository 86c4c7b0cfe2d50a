// The GPU engine (see GpuEngine.h).
//
// The host program is interpreted here rather than JIT-compiled for the CPU.
// After extract_kernels it is tiny (serial loops, scalar lets, allocations of
// global temporaries, launches, and loads and stores of the rank-0 cells
// through which top-level reductions pass their results), and every step of
// it is a driver call that costs microseconds, so compiling it would buy
// nothing and would tie the GPU path to the CPU JIT and a callback ABI into
// the runtime. Interpreting keeps launches, geometry checks and error messages
// in one readable place.
#include "engine/gpu/GpuEngine.h"

#include "codegen/NvptxTarget.h"
#include "lower/Lower.h"
#include "passes/Pipeline.h"
#include "support/CrashReport.h"
#include "support/IntegerArithmetic.h"
#include "support/Interrupt.h"

#include <loopc/generated.h>
#include <loopc/runtime.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

namespace loopc::engine {

using namespace loopc::codegen;

using namespace loopc::ir;

namespace {

// An array with no elements still gets a few zeroed bytes, not a null
// address: a kernel may read its element 0 without using the value
// (stage_shared's copies clamp their indices into the array and pick 0 after
// the load; the code after a recorded fault reads index 0), as the CPU
// engine's empty arrays do.
constexpr size_t kSmallestArrayBytes = 16;

// Device memory for the host program's temporaries (reduction partials,
// kernel-level variables), kept from one run to the next: cuMemAlloc costs
// tens of microseconds and cuMemFree waits for the device, which would put
// both inside every timed run. A buffer is reused for a request of the same
// size; when none fits, the idle ones (sizes of earlier runs) are freed first,
// so the pool holds no more than one run needs.
class DevicePool {
public:
  runtime::Result<runtime::DeviceBuffer *> acquire(const runtime::Runtime &runtime, size_t bytes) {
    for (auto &entry : entries_)
      if (!entry->inUse && entry->buffer.size() == bytes) {
        entry->inUse = true;
        return &entry->buffer;
      }
    std::erase_if(entries_, [](const auto &entry) { return !entry->inUse; });
    auto buffer = runtime.allocate(bytes);
    if (!buffer)
      return std::unexpected(buffer.error());
    entries_.push_back(std::make_unique<Entry>(Entry{std::move(*buffer), true}));
    return &entries_.back()->buffer;
  }

  void release(const runtime::DeviceBuffer *buffer) {
    for (auto &entry : entries_)
      if (&entry->buffer == buffer)
        entry->inUse = false;
  }

private:
  struct Entry {
    runtime::DeviceBuffer buffer;
    bool inUse;
  };
  std::vector<std::unique_ptr<Entry>> entries_;
};

} // namespace

struct GpuEngine::State {
  runtime::Runtime runtime;
  DevicePool pool; // after the runtime: freed before it goes
};

struct GpuEngine::Compiled {
  ir::Function function;
  runtime::Module module;
  std::map<std::string, runtime::Function> kernels; // by KernelFunc::name
  std::map<std::string, const KernelFunc *> kernelInfo;
  DeviceErrorSites errorSites;
};

namespace {

Error runtimeError(const runtime::RuntimeError &error, SourceRange range = {}) {
  return Error{error.message, range};
}

// A scalar of the host program: integers (and bools) in `integer`, floats in
// `real`, kept in the precision of `type`.
struct HostScalar {
  ScalarType type = ScalarType::I64;
  int64_t integer = 0;
  double real = 0;

  static HostScalar ofInteger(ScalarType type, int64_t value) {
    HostScalar scalar{type};
    if (type == ScalarType::I32)
      value = static_cast<int32_t>(value);
    if (type == ScalarType::Bool)
      value = value != 0;
    if (isFloat(type))
      return ofReal(type, static_cast<double>(value));
    scalar.integer = value;
    return scalar;
  }
  static HostScalar ofReal(ScalarType type, double value) {
    HostScalar scalar{type};
    scalar.real = type == ScalarType::F32 ? static_cast<double>(static_cast<float>(value)) : value;
    return scalar;
  }
  double asReal() const { return isFloat(type) ? real : static_cast<double>(integer); }

  // In its memory representation (bool as one byte).
  void store(unsigned char *bytes) const {
    switch (type) {
    case ScalarType::I32: {
      int32_t value = static_cast<int32_t>(integer);
      std::memcpy(bytes, &value, sizeof value);
      return;
    }
    case ScalarType::I64:
      std::memcpy(bytes, &integer, sizeof integer);
      return;
    case ScalarType::F32: {
      float value = static_cast<float>(real);
      std::memcpy(bytes, &value, sizeof value);
      return;
    }
    case ScalarType::F64:
      std::memcpy(bytes, &real, sizeof real);
      return;
    case ScalarType::Bool:
      bytes[0] = integer != 0;
      return;
    }
  }
  static HostScalar load(ScalarType type, const unsigned char *bytes) {
    switch (type) {
    case ScalarType::I32: {
      int32_t value;
      std::memcpy(&value, bytes, sizeof value);
      return ofInteger(type, value);
    }
    case ScalarType::I64: {
      int64_t value;
      std::memcpy(&value, bytes, sizeof value);
      return ofInteger(type, value);
    }
    case ScalarType::F32: {
      float value;
      std::memcpy(&value, bytes, sizeof value);
      return ofReal(type, value);
    }
    case ScalarType::F64: {
      double value;
      std::memcpy(&value, bytes, sizeof value);
      return ofReal(type, value);
    }
    case ScalarType::Bool:
      return ofInteger(type, bytes[0] != 0);
    }
    return {};
  }
};

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

// Runs the host body of a Function against device buffers.
class HostProgram {
public:
  HostProgram(const runtime::Runtime &runtime, DevicePool &pool,
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

// The newest architecture LLVM 19 generates for that the device runs.
std::string gpuFor(const loopc_device_info &info) {
  int capability = info.compute_capability_major * 10 + info.compute_capability_minor;
  for (int known : {90, 89, 87, 86, 80, 75})
    if (capability >= known)
      return "sm_" + std::to_string(known);
  return "sm_" + std::to_string(capability);
}

// The architecture the kernels of `runtime`'s device are compiled for.
std::string gpuOf(const runtime::Runtime &runtime) {
  auto info = runtime.info();
  return info ? gpuFor(*info) : kDefaultGpu;
}

} // namespace

namespace {

passes::PipelineOptions gpuPipeline(passes::PassChoices choices, const runtime::Runtime &runtime) {
  passes::PipelineOptions options;
  options.target = passes::PipelineTarget::Gpu;
  options.choices = std::move(choices);
  options.computeCapability = computeCapabilityOf(gpuOf(runtime));
  if (auto info = runtime.info(); info && info->multiprocessor_count > 0)
    options.multiprocessors = info->multiprocessor_count;
  return options;
}

} // namespace

GpuEngine::GpuEngine(std::unique_ptr<State> state, passes::PassChoices choices)
    : state_(std::move(state)), gpu_(gpuOf(state_->runtime)),
      cache_(gpuPipeline(std::move(choices), state_->runtime)) {
  auto info = state_->runtime.info();
  device_ = (info ? std::string(info->name) : std::string("unknown GPU")) + " (" + gpu_ + ")";
}

GpuEngine::~GpuEngine() {
  // Modules are unloaded before the runtime closes.
  cache_.clear();
}

Expected<std::unique_ptr<Engine>> GpuEngine::create(passes::PassChoices choices) {
  auto runtime = runtime::Runtime::open(runtime::DeviceKind::Cuda);
  if (!runtime)
    return makeError(runtime.error().message);
  return std::unique_ptr<Engine>(new GpuEngine(
      std::make_unique<State>(State{std::move(*runtime), DevicePool{}}), std::move(choices)));
}

Status GpuEngine::load(Compiled &entry, const KernelDecl &kernel) {
  if (!entry.function.kernels.empty()) {
    auto ptx = compileToPtx(entry.function, gpu_, &entry.errorSites);
    if (!ptx)
      return std::unexpected(ptx.error());
    auto module = state_->runtime.loadPtx(*ptx, entry.function.name);
    if (!module)
      return std::unexpected(runtimeError(module.error(), kernel.range));
    entry.module = std::move(*module);
  }
  for (const KernelFunc &device : entry.function.kernels) {
    auto function = entry.module.function(device.name);
    if (!function)
      return std::unexpected(runtimeError(function.error(), device.source));
    entry.kernels[device.name] = *function;
    entry.kernelInfo[device.name] = &device;
  }
  return {};
}

Expected<RunStats> GpuEngine::run(const Program &program, const KernelDecl &kernel,
                                  KernelArgs &args) {
  auto compiled =
      cache_.get(program, kernel, args.sizes, [&](Compiled &entry) { return load(entry, kernel); });
  if (!compiled)
    return std::unexpected(compiled.error());
  const Compiled &code = **compiled;
  const ir::Function &function = code.function;
  auto bound = bindFunctionArguments(kernel, function, args, "GPU");
  if (!bound)
    return std::unexpected(bound.error());
  RunningKernel running(kernel.name, name());
  const runtime::Runtime &runtime = state_->runtime;
  HostProgram host(runtime, state_->pool, code.kernels, code.kernelInfo);

  std::vector<runtime::DeviceBuffer> deviceBuffers;
  std::vector<std::pair<size_t, size_t>> outputs; // argument, device buffer
  for (size_t i = 0; i < function.buffers.size(); ++i) {
    const ir::Buffer &buffer = function.buffers[i];
    size_t param = bound->bufferParams[i];
    HostArray &array = args.params[param];
    if (array.inDeviceMemory()) { // the caller's GPU array, used where it is
      if (kernel.params[param]->intent == Intent::Out && array.elementCount() > 0)
        if (auto zeroed =
                runtime.fill(array.deviceAddress, 0, array.elementCount() * scalarSize(array.type));
            !zeroed)
          return std::unexpected(runtimeError(zeroed.error(), buffer->declared));
      host.bindBuffer(buffer.get(), array.deviceAddress);
      continue;
    }
    std::span<unsigned char> elements = array.elementBytes();
    auto storage = runtime.allocate(std::max(elements.size(), kSmallestArrayBytes));
    if (!storage)
      return std::unexpected(runtimeError(storage.error(), buffer->declared));
    runtime::Result<> stored = elements.empty()
                                   ? storage->fill(0)
                                   : storage->copyFromHost(elements.data(), elements.size());
    if (!stored)
      return std::unexpected(runtimeError(stored.error(), buffer->declared));
    host.bindBuffer(buffer.get(), storage->address());
    if (buffer->isWritten || kernel.params[param]->intent == Intent::Out)
      outputs.emplace_back(param, deviceBuffers.size());
    deviceBuffers.push_back(std::move(*storage));
  }
  // The caller's GPU arrays may still be being written by its own work in
  // the context (another library's stream): it ends before the launches.
  if (std::ranges::any_of(args.params, &HostArray::inDeviceMemory))
    if (auto finished = runtime.synchronize(); !finished)
      return std::unexpected(runtimeError(finished.error(), kernel.range));
  auto errorStorage = runtime.allocate(sizeof(DeviceErrorRecord));
  if (!errorStorage)
    return std::unexpected(runtimeError(errorStorage.error(), kernel.range));
  if (auto cleared = errorStorage->fill(0); !cleared)
    return std::unexpected(runtimeError(cleared.error(), kernel.range));
  host.bindErrorRecord(errorStorage->address());
  for (size_t i = 0; i < function.scalars.size(); ++i)
    host.bindVar(function.scalars[i].name,
                 HostScalar::load(function.scalars[i].type,
                                  reinterpret_cast<const unsigned char *>(&bound->scalarSlots[i])));

  auto start = runtime.createEvent();
  auto stop = runtime.createEvent();
  if (!start || !stop)
    return std::unexpected(runtimeError(!start ? start.error() : stop.error(), kernel.range));
  if (auto recorded = start->record(); !recorded)
    return std::unexpected(runtimeError(recorded.error(), kernel.range));
  if (auto status = host.run(*function.body); !status)
    return std::unexpected(status.error());
  // A kernel's failure surfaces at the first wait after its launch; the
  // runtime's message names the kernel, the range points at its parfor.
  SourceRange waited = host.lastLaunch().valid() ? host.lastLaunch() : kernel.range;
  if (auto recorded = stop->record(); !recorded)
    return std::unexpected(runtimeError(recorded.error(), waited));
  if (auto synchronized = runtime.synchronize(); !synchronized)
    return std::unexpected(runtimeError(synchronized.error(), waited));
  auto milliseconds = stop->elapsedSince(*start);
  if (!milliseconds)
    return std::unexpected(runtimeError(milliseconds.error(), waited));
  DeviceErrorRecord errorRecord;
  if (auto copied = errorStorage->copyToHost(&errorRecord, sizeof errorRecord); !copied)
    return std::unexpected(runtimeError(copied.error(), waited));
  if (auto status = deviceErrorStatus(errorRecord, code.errorSites); !status)
    return std::unexpected(status.error());
  // Interrupted: the launches ran to their end, and their results go.
  if (interruptRequested())
    return makeError(kInterruptedMessage);

  for (auto [index, buffer] : outputs) {
    HostArray &array = args.params[index];
    std::span<unsigned char> elements = array.elementBytes();
    if (elements.empty())
      continue;
    if (auto copied = deviceBuffers[buffer].copyToHost(elements.data(), elements.size()); !copied)
      return std::unexpected(runtimeError(copied.error(), kernel.range));
  }
  RunStats stats;
  stats.seconds = *milliseconds / 1000.0;
  return stats;
}

} // namespace loopc::engine
