// The tree walk of the reference interpreter (see Interpreter.h). Every
// invocation of a kernel or fn gets a frame with one slot per variable the
// callable declares; a pre-pass (FrameLayout) numbers those variables once per
// callable, so a name costs a pointer-keyed lookup instead of a scope search by
// string. Arrays live in HostArrays: kernel arguments are used in place, local
// arrays are owned by their slot and replaced (zeroed) each time their
// declaration runs, which makes them private to one parfor iteration.
#include "interp/Interpreter.h"

#include "interp/Value.h"
#include "support/Interrupt.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace loopc {

using interp::Value;

namespace {

// The slot numbers of every variable one kernel or fn declares: parameters,
// sizes, locals, and the variables of its loops and redomaps.
class FrameLayout {
public:
  explicit FrameLayout(const KernelDecl &kernel) {
    for (const VarDeclPtr &param : kernel.params)
      add(*param);
    for (const VarDeclPtr &size : kernel.sizes)
      add(*size);
    addFromStmt(*kernel.body);
    buildTable();
  }
  explicit FrameLayout(const FnDecl &fn) {
    for (const VarDeclPtr &param : fn.params)
      add(*param);
    addFromStmt(*fn.body);
    buildTable();
  }

  // Open addressing with linear probing in a table at most half full: a
  // lookup is a multiply and usually one comparison.
  uint32_t slotOf(const VarDecl *decl) const {
    for (size_t i = hash(decl);; i = (i + 1) & mask_) {
      const Entry &entry = table_[i];
      if (entry.decl == decl)
        return entry.slot;
      assert(entry.decl && "a variable the layout pre-pass did not see");
    }
  }
  uint32_t slotCount() const { return slotCount_; }

private:
  struct Entry {
    const VarDecl *decl = nullptr;
    uint32_t slot = 0;
  };

  size_t hash(const VarDecl *decl) const {
    // Fibonacci hashing: the top bits of the product mix every pointer bit.
    return static_cast<size_t>((reinterpret_cast<uint64_t>(decl) * 0x9E3779B97F4A7C15ull) >>
                               shift_);
  }

  // Fills the table once every variable is numbered.
  void buildTable() {
    size_t capacity = 8;
    shift_ = 61;
    while (capacity < 2 * decls_.size()) {
      capacity *= 2;
      --shift_;
    }
    mask_ = capacity - 1;
    table_.assign(capacity, Entry{});
    for (uint32_t slot = 0; slot < decls_.size(); ++slot) {
      size_t i = hash(decls_[slot]);
      while (table_[i].decl)
        i = (i + 1) & mask_;
      table_[i] = Entry{decls_[slot], slot};
    }
    slotCount_ = static_cast<uint32_t>(decls_.size());
    decls_.clear();
  }

  void add(const VarDecl &decl) {
    decls_.push_back(&decl);
    for (const ExprPtr &dim : decl.type.dims)
      addFromExpr(*dim);
  }

  void addFromRange(const Range &range) {
    add(*range.var);
    addFromExpr(*range.lo);
    addFromExpr(*range.hi);
    if (range.step)
      addFromExpr(*range.step);
  }

  void addFromStmt(const Stmt &stmt) {
    switch (stmt.kind) {
    case Stmt::Kind::Block:
      for (const StmtPtr &inner : static_cast<const BlockStmt &>(stmt).stmts)
        addFromStmt(*inner);
      break;
    case Stmt::Kind::Decl: {
      const auto &decl = static_cast<const DeclStmt &>(stmt);
      add(*decl.var);
      if (decl.init)
        addFromExpr(*decl.init);
      break;
    }
    case Stmt::Kind::Assign: {
      const auto &assign = static_cast<const AssignStmt &>(stmt);
      for (const ExprPtr &index : assign.indices)
        addFromExpr(*index);
      addFromExpr(*assign.value);
      break;
    }
    case Stmt::Kind::Scan: {
      const auto &scan = static_cast<const ScanStmt &>(stmt);
      addFromExpr(*scan.neutral);
      addFromRange(scan.ranges.front());
      addFromStmt(*scan.write);
      break;
    }
    case Stmt::Kind::For: {
      const auto &loop = static_cast<const ForStmt &>(stmt);
      addFromRange(loop.range);
      addFromStmt(*loop.body);
      break;
    }
    case Stmt::Kind::Parfor: {
      const auto &parfor = static_cast<const ParforStmt &>(stmt);
      for (const Range &range : parfor.ranges)
        addFromRange(range);
      addFromStmt(*parfor.body);
      break;
    }
    case Stmt::Kind::If: {
      const auto &ifStmt = static_cast<const IfStmt &>(stmt);
      addFromExpr(*ifStmt.cond);
      addFromStmt(*ifStmt.thenBody);
      if (ifStmt.elseBody)
        addFromStmt(*ifStmt.elseBody);
      break;
    }
    case Stmt::Kind::Return:
      addFromExpr(*static_cast<const ReturnStmt &>(stmt).value);
      break;
    case Stmt::Kind::Call:
      for (const ExprPtr &arg : static_cast<const CallStmt &>(stmt).args)
        addFromExpr(*arg);
      break;
    }
  }

  // Only redomaps declare variables inside expressions, but they may sit
  // anywhere in one.
  void addFromExpr(const Expr &expr) {
    switch (expr.kind) {
    case Expr::Kind::IntLit:
    case Expr::Kind::FloatLit:
    case Expr::Kind::BoolLit:
    case Expr::Kind::Name:
      break;
    case Expr::Kind::Index:
      for (const ExprPtr &index : static_cast<const IndexExpr &>(expr).indices)
        addFromExpr(*index);
      break;
    case Expr::Kind::Call:
      for (const ExprPtr &arg : static_cast<const CallExpr &>(expr).args)
        addFromExpr(*arg);
      break;
    case Expr::Kind::Cast:
      addFromExpr(*static_cast<const CastExpr &>(expr).operand);
      break;
    case Expr::Kind::Unary:
      addFromExpr(*static_cast<const UnaryExpr &>(expr).operand);
      break;
    case Expr::Kind::Binary: {
      const auto &binary = static_cast<const BinaryExpr &>(expr);
      addFromExpr(*binary.lhs);
      addFromExpr(*binary.rhs);
      break;
    }
    case Expr::Kind::Conditional: {
      const auto &conditional = static_cast<const ConditionalExpr &>(expr);
      addFromExpr(*conditional.cond);
      addFromExpr(*conditional.thenExpr);
      addFromExpr(*conditional.elseExpr);
      break;
    }
    case Expr::Kind::Redomap: {
      const auto &redomap = static_cast<const RedomapExpr &>(expr);
      addFromExpr(*redomap.neutral);
      for (const Range &range : redomap.ranges)
        addFromRange(range);
      addFromExpr(*redomap.body);
      break;
    }
    }
  }

  std::vector<const VarDecl *> decls_; // in slot order, until buildTable
  std::vector<Entry> table_;
  size_t mask_ = 0;
  unsigned shift_ = 61; // 64 - log2(table size)
  uint32_t slotCount_ = 0;
};

struct Slot {
  Value scalar;
  HostArray *array = nullptr;            // arrays, and scalar outputs (rank 0)
  std::unique_ptr<HostArray> ownedArray; // the storage of a local array
};

// Slot vectors of finished frames, kept for reuse: a fn called in an inner
// loop would otherwise allocate a frame per call.
using SlotPool = std::vector<std::vector<Slot>>;

// The variables of one invocation. Its slots start value-initialized (no
// array, zero scalars), whether freshly allocated or taken from the pool.
class Frame {
public:
  Frame(SlotPool &pool, const FrameLayout &layout) : layout(layout), pool_(pool) {
    if (!pool.empty()) {
      slots = std::move(pool.back());
      pool.pop_back();
    }
    slots.resize(layout.slotCount());
  }
  ~Frame() {
    slots.clear();
    pool_.push_back(std::move(slots));
  }
  Frame(const Frame &) = delete;
  Frame &operator=(const Frame &) = delete;

  const FrameLayout &layout;
  std::vector<Slot> slots;
  Value returnValue;

private:
  SlotPool &pool_;
};

// Whether a statement finished normally or executed `return`.
enum class Flow { Next, Return };

// One argument of a kernel invocation, before it is stored in the frame.
struct BoundArgument {
  HostArray *array = nullptr; // arrays and scalar outputs
  Value scalar;               // scalar inputs
  SourceRange range;          // where a mismatch is reported
  std::string name;           // the array a kernel call passes (empty at entry)
};

// Plain switches rather than visitScalarType: these run for every array
// access, and the compiler inlines them more readily.
Value loadElement(const HostArray &array, size_t offset) {
  switch (array.type) {
  case ScalarType::I32:
    return interp::makeValue(array.data<int32_t>()[offset]);
  case ScalarType::I64:
    return interp::makeValue(array.data<int64_t>()[offset]);
  case ScalarType::F32:
    return interp::makeValue(array.data<float>()[offset]);
  case ScalarType::F64:
    return interp::makeValue(array.data<double>()[offset]);
  case ScalarType::Bool:
    return interp::makeValue(array.data<uint8_t>()[offset] != 0);
  }
  std::unreachable();
}

void storeElement(HostArray &array, size_t offset, const Value &value) {
  switch (array.type) {
  case ScalarType::I32:
    array.data<int32_t>()[offset] = value.i32;
    return;
  case ScalarType::I64:
    array.data<int64_t>()[offset] = value.i64;
    return;
  case ScalarType::F32:
    array.data<float>()[offset] = value.f32;
    return;
  case ScalarType::F64:
    array.data<double>()[offset] = value.f64;
    return;
  case ScalarType::Bool:
    array.data<uint8_t>()[offset] = value.boolean ? 1 : 0;
    return;
  }
  std::unreachable();
}

BinaryOp compoundOperator(AssignOp op) {
  switch (op) {
  case AssignOp::Add:
    return BinaryOp::Add;
  case AssignOp::Sub:
    return BinaryOp::Sub;
  case AssignOp::Mul:
    return BinaryOp::Mul;
  case AssignOp::Div:
    return BinaryOp::Div;
  case AssignOp::Rem:
    return BinaryOp::Rem;
  case AssignOp::Assign:
  case AssignOp::Combine:
    break;
  }
  std::unreachable();
}

// `addend ± a * b`, or `a * b ± addend` when the product comes first,
// rounded once.
Value fusedMultiplyAdd(const Value &a, const Value &b, const Value &addend, bool subtract,
                       bool productFirst) {
  bool negateProduct = subtract && !productFirst, negateAddend = subtract && productFirst;
  const Value args[] = {negateProduct ? interp::applyUnary(UnaryOp::Neg, a) : a, b,
                        negateAddend ? interp::applyUnary(UnaryOp::Neg, addend) : addend};
  return interp::applyBuiltin(Builtin::Fma, args);
}

std::string describeShape(const std::vector<int64_t> &shape) {
  std::string text;
  for (int64_t extent : shape)
    text += "[" + std::to_string(extent) + "]";
  return text.empty() ? "a scalar" : text;
}

std::unexpected<Error> propagate(const Error &error) { return std::unexpected<Error>(error); }

class Executor {
public:
  explicit Executor(const Interpreter::Progress &progress) : progress_(progress) {}
  Status runKernel(const KernelDecl &kernel, KernelArgs &args);
  // The combine statements run (`combine(op) h[k] = e`): no element had more
  // values combined into it, in an order the compiled engines do not share.
  uint64_t combinesRun() const { return combinesRun_; }

private:
  // Makes `frame` current for the lifetime of the scope.
  class FrameScope {
  public:
    FrameScope(Executor &executor, Frame &frame) : executor_(executor), saved_(executor.frame_) {
      executor.frame_ = &frame;
    }
    ~FrameScope() { executor_.frame_ = saved_; }
    FrameScope(const FrameScope &) = delete;
    FrameScope &operator=(const FrameScope &) = delete;

  private:
    Executor &executor_;
    Frame *saved_;
  };

  template <typename Callable> const FrameLayout &layoutOf(const Callable &callable) {
    std::unique_ptr<FrameLayout> &layout = layouts_[&callable];
    if (!layout)
      layout = std::make_unique<FrameLayout>(callable);
    return *layout;
  }
  Slot &slot(const VarDecl *decl) { return frame_->slots[frame_->layout.slotOf(decl)]; }

  Status bindKernelParameters(const KernelDecl &kernel, const std::vector<BoundArgument> &arguments,
                              const std::map<std::string, int64_t> *givenSizes);

  // Statements.
  Expected<Flow> exec(const Stmt &stmt);
  Expected<Flow> execBlock(const BlockStmt &block);
  Status execDecl(const DeclStmt &decl);
  Status execAssign(const AssignStmt &assign);
  Expected<Flow> execIf(const IfStmt &ifStmt);
  Status execKernelCall(const CallStmt &call);
  template <typename Body> Expected<Flow> forEachInRange(const Range &range, Body &&body);
  template <typename Body>
  Expected<Flow> forEachInNest(const std::vector<Range> &ranges, size_t level, Body &&body);

  // Expressions.
  Expected<Value> eval(const Expr &expr);
  Expected<int64_t> evalInteger(const Expr &expr);
  Expected<Value> evalBinary(const BinaryExpr &binary);
  Expected<Value> evalFusedMultiplyAdd(const BinaryExpr &sum, const BinaryExpr &product);
  // `target op= value`: `target = target op value`, fused as evalBinary would.
  Expected<Value> evalCompound(const AssignStmt &assign, const Value &target);
  Expected<Flow> execScan(const ScanStmt &scan);
  Status checkNeutral(const ReduceOp &op, const Value &neutral, const Expr &expr,
                      const std::string &construct);
  // Stores `value` into the array element `assign` targets.
  Status storeTo(const AssignStmt &assign, const Value &value);
  // `accumulator op value` for a redomap or combine operator.
  Expected<Value> evalCombine(const ReduceOp &op, const Value &accumulator, const Expr &valueExpr);
  Expected<Value> evalCall(const CallExpr &call);
  Expected<Value> evalRedomap(const RedomapExpr &redomap);
  Expected<Value> callFn(const FnDecl &fn, std::span<const Value> arguments);
  Expected<size_t> elementOffset(const HostArray &array, const VarDecl &decl,
                                 const std::vector<ExprPtr> &indices, SourceRange range);

  // How far the run is (Interpreter::setProgress): the kernel body's
  // statements share [0, 1) evenly; an outermost loop's iterations divide its
  // statement's share. Reported at most every kProgressInterval.
  void reportProgress(double fraction);
  static constexpr std::chrono::milliseconds kProgressInterval{200};
  const Interpreter::Progress &progress_;
  int loopDepth_ = 0;
  double statementStart_ = 0, statementShare_ = 1;
  std::chrono::steady_clock::time_point lastReport_{};

  Frame *frame_ = nullptr;
  FpContract fpContract_ = FpContract::On; // the running kernel's
  uint64_t combinesRun_ = 0;
  SlotPool slotPool_;
  std::unordered_map<const void *, std::unique_ptr<FrameLayout>> layouts_;
};

// ------------------------------------------------------------ arguments ---

Status Executor::runKernel(const KernelDecl &kernel, KernelArgs &args) {
  if (args.params.size() != kernel.params.size())
    return makeError("kernel '" + kernel.name + "' takes " + std::to_string(kernel.params.size()) +
                         " arguments, but " + std::to_string(args.params.size()) + " were given",
                     kernel.nameRange);
  std::vector<BoundArgument> arguments(kernel.params.size());
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const VarDecl &param = *kernel.params[i];
    HostArray &given = args.params[i];
    if (given.type != param.type.element)
      return makeError("argument '" + param.name + "' has element type " +
                           scalarTypeName(given.type) + ", but the kernel declares " +
                           scalarTypeName(param.type.element),
                       param.range);
    if (given.rank() != param.type.rank())
      return makeError("argument '" + param.name + "' has rank " + std::to_string(given.rank()) +
                           ", but the kernel declares rank " + std::to_string(param.type.rank()),
                       param.range);
    if (given.inDeviceMemory())
      return makeError("'" + param.name + "' is in GPU memory, which the interpreter cannot read: "
                       "run on the GPU, or pass an array in host memory",
                       param.range);
    if (given.elementBytes().size() != given.elementCount() * scalarSize(given.type))
      return makeError("argument '" + param.name + "' holds " + std::to_string(given.elementBytes().size()) +
                           " bytes, which does not match its shape " + describeShape(given.shape),
                       param.range);
    arguments[i].range = param.range;
    if (param.isArray() || param.isScalarOutput())
      arguments[i].array = &given;
    else
      arguments[i].scalar = loadElement(given, 0);
  }
  Frame frame(slotPool_, layoutOf(kernel));
  FrameScope scope(*this, frame);
  fpContract_ = kernel.fpContract;
  if (Status bound = bindKernelParameters(kernel, arguments, &args.sizes); !bound)
    return bound;
  const std::vector<StmtPtr> &statements = kernel.body->stmts;
  for (size_t i = 0; i < statements.size(); ++i) {
    statementShare_ = 1.0 / static_cast<double>(statements.size());
    statementStart_ = static_cast<double>(i) * statementShare_;
    Expected<Flow> flow = exec(*statements[i]);
    if (!flow)
      return propagate(flow.error());
    if (*flow == Flow::Return)
      break;
  }
  if (progress_)
    progress_(1.0);
  return {};
}

void Executor::reportProgress(double fraction) {
  auto now = std::chrono::steady_clock::now();
  if (now - lastReport_ < kProgressInterval)
    return;
  lastReport_ = now;
  progress_(fraction);
}

// Stores the arguments in the current frame (the kernel's), binds every size
// (from `givenSizes` when present, else from the extents of the arrays
// passed), checks every array's shape against its declared type and zeroes
// the `out` parameters.
Status Executor::bindKernelParameters(const KernelDecl &kernel,
                                      const std::vector<BoundArgument> &arguments,
                                      const std::map<std::string, int64_t> *givenSizes) {
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const VarDecl &param = *kernel.params[i];
    Slot &paramSlot = slot(&param);
    if (param.isArray() || param.isScalarOutput()) {
      paramSlot.array = arguments[i].array;
      if (paramSlot.array->rank() != param.type.rank())
        return makeError("'" + param.name + "' expects an array of rank " +
                             std::to_string(param.type.rank()) + ", but got " +
                             describeShape(paramSlot.array->shape),
                         arguments[i].range);
    } else {
      paramSlot.scalar = arguments[i].scalar;
    }
  }

  std::vector<const VarDecl *> boundSizes;
  for (const VarDeclPtr &size : kernel.sizes) {
    if (!givenSizes)
      continue;
    auto given = givenSizes->find(size->name);
    if (given == givenSizes->end())
      continue;
    slot(size.get()).scalar = interp::makeValue(given->second);
    boundSizes.push_back(size.get());
  }
  for (const VarDeclPtr &param : kernel.params) {
    for (size_t d = 0; d < param->type.dims.size(); ++d) {
      const auto *name = param->type.dims[d]->as<NameExpr>();
      if (!name || name->decl->kind != VarDecl::Kind::Size ||
          std::ranges::find(boundSizes, name->decl) != boundSizes.end())
        continue;
      slot(name->decl).scalar = interp::makeValue(slot(param.get()).array->shape[d]);
      boundSizes.push_back(name->decl);
    }
  }
  for (const VarDeclPtr &size : kernel.sizes)
    if (std::ranges::find(boundSizes, size.get()) == boundSizes.end())
      return makeError("size '" + size->name + "' of kernel '" + kernel.name + "' is not bound",
                       size->range);

  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const VarDecl &param = *kernel.params[i];
    if (!param.isArray())
      continue;
    const HostArray &array = *slot(&param).array;
    for (size_t d = 0; d < param.type.dims.size(); ++d) {
      Expected<int64_t> extent = evalInteger(*param.type.dims[d]);
      if (!extent)
        return propagate(extent.error());
      if (*extent != array.shape[d]) {
        std::string needs = arguments[i].name.empty() ? ", but its type needs "
                                                      : ", but parameter '" + param.name +
                                                            "' of '" + kernel.name + "' needs ";
        return makeError("'" + (arguments[i].name.empty() ? param.name : arguments[i].name) +
                             "' has extent " + std::to_string(array.shape[d]) + " in dimension " +
                             std::to_string(d) + needs + std::to_string(*extent),
                         arguments[i].range);
      }
    }
  }

  for (const VarDeclPtr &param : kernel.params)
    if (param->intent == Intent::Out && (param->isArray() || param->isScalarOutput())) {
      auto &bytes = slot(param.get()).array->bytes;
      std::ranges::fill(bytes, 0);
    }
  return {};
}

// ------------------------------------------------------------ statements ---

Expected<Flow> Executor::exec(const Stmt &stmt) {
  auto next = [](Status status) -> Expected<Flow> {
    if (!status)
      return propagate(status.error());
    return Flow::Next;
  };
  switch (stmt.kind) {
  case Stmt::Kind::Block:
    return execBlock(static_cast<const BlockStmt &>(stmt));
  case Stmt::Kind::Decl:
    return next(execDecl(static_cast<const DeclStmt &>(stmt)));
  case Stmt::Kind::Assign:
    return next(execAssign(static_cast<const AssignStmt &>(stmt)));
  case Stmt::Kind::Scan:
    return execScan(static_cast<const ScanStmt &>(stmt));
  case Stmt::Kind::For: {
    const auto &loop = static_cast<const ForStmt &>(stmt);
    return forEachInRange(loop.range, [&] { return execBlock(*loop.body); });
  }
  case Stmt::Kind::Parfor: {
    // Iterations are independent (Sema checked), so running them in order
    // is one of the allowed schedules.
    const auto &parfor = static_cast<const ParforStmt &>(stmt);
    return forEachInNest(parfor.ranges, 0, [&] { return execBlock(*parfor.body); });
  }
  case Stmt::Kind::If:
    return execIf(static_cast<const IfStmt &>(stmt));
  case Stmt::Kind::Return: {
    Expected<Value> value = eval(*static_cast<const ReturnStmt &>(stmt).value);
    if (!value)
      return propagate(value.error());
    frame_->returnValue = *value;
    return Flow::Return;
  }
  case Stmt::Kind::Call:
    return next(execKernelCall(static_cast<const CallStmt &>(stmt)));
  }
  std::unreachable();
}

Expected<Flow> Executor::execBlock(const BlockStmt &block) {
  for (const StmtPtr &stmt : block.stmts) {
    Expected<Flow> flow = exec(*stmt);
    if (!flow || *flow == Flow::Return)
      return flow;
  }
  return Flow::Next;
}

Status Executor::execDecl(const DeclStmt &decl) {
  const VarDecl &var = *decl.var;
  Slot &varSlot = slot(&var);
  if (!var.isArray()) {
    if (!decl.init) {
      varSlot.scalar = interp::zeroValue(var.type.element);
      return {};
    }
    Expected<Value> value = eval(*decl.init);
    if (!value)
      return propagate(value.error());
    varSlot.scalar = *value;
    return {};
  }
  std::vector<int64_t> shape;
  uint64_t bytes = scalarSize(var.type.element);
  for (const ExprPtr &dim : var.type.dims) {
    Expected<int64_t> extent = evalInteger(*dim);
    if (!extent)
      return propagate(extent.error());
    if (*extent < 0)
      return makeError("extent " + std::to_string(*extent) + " of local array '" + var.name +
                           "' is negative",
                       dim->range);
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(*extent), &bytes) ||
        bytes > kMaxLocalArrayBytes)
      return makeError("local array '" + var.name + "' is too large to allocate", var.range);
    shape.push_back(*extent);
  }
  varSlot.ownedArray = std::make_unique<HostArray>(var.type.element, std::move(shape));
  varSlot.array = varSlot.ownedArray.get();
  return {};
}

Status Executor::execAssign(const AssignStmt &assign) {
  const VarDecl &target = *assign.decl;
  Slot &targetSlot = slot(&target);
  if (assign.indices.empty() && !target.isScalarOutput()) {
    if (assign.op != AssignOp::Assign) {
      Expected<Value> result = evalCompound(assign, targetSlot.scalar);
      if (!result)
        return propagate(result.error());
      targetSlot.scalar = *result;
      return {};
    }
    Expected<Value> value = eval(*assign.value);
    if (!value)
      return propagate(value.error());
    targetSlot.scalar = *value;
    return {};
  }

  HostArray &array = *targetSlot.array;
  size_t offset = 0; // a scalar output is element 0 of a rank-0 array
  if (!assign.indices.empty()) {
    Expected<size_t> element = elementOffset(array, target, assign.indices, assign.targetRange);
    if (!element)
      return propagate(element.error());
    offset = *element;
  }
  if (assign.op != AssignOp::Assign) {
    Expected<Value> result = evalCompound(assign, loadElement(array, offset));
    if (!result)
      return propagate(result.error());
    storeElement(array, offset, *result);
    return {};
  }
  Expected<Value> value = eval(*assign.value);
  if (!value)
    return propagate(value.error());
  storeElement(array, offset, *value);
  return {};
}

Status Executor::storeTo(const AssignStmt &assign, const Value &value) {
  HostArray &array = *slot(assign.decl).array;
  Expected<size_t> offset = elementOffset(array, *assign.decl, assign.indices, assign.targetRange);
  if (!offset)
    return propagate(offset.error());
  storeElement(array, *offset, value);
  return {};
}

// A neutral element the checker could not see (a variable's value) is
// checked when the reduction starts (requiredNeutral).
Status Executor::checkNeutral(const ReduceOp &op, const Value &neutral, const Expr &expr,
                              const std::string &construct) {
  std::optional<int> expected = requiredNeutral(op);
  if (!expected || convertValue(neutral, ScalarType::F64).f64 == *expected)
    return {};
  return makeError(wrongNeutralMessage(op, construct), expr.range);
}

// In order, one of the schedules the scan allows.
Expected<Flow> Executor::execScan(const ScanStmt &scan) {
  Expected<Value> accumulator = eval(*scan.neutral);
  if (!accumulator)
    return propagate(accumulator.error());
  if (Status valid = checkNeutral(scan.op, *accumulator, *scan.neutral, "scan"); !valid)
    return propagate(valid.error());
  return forEachInRange(scan.ranges.front(), [&]() -> Expected<Flow> {
    accumulator = evalCombine(scan.op, *accumulator, *scan.write->value);
    if (!accumulator)
      return propagate(accumulator.error());
    if (Status stored = storeTo(*scan.write, *accumulator); !stored)
      return propagate(stored.error());
    return Flow::Next;
  });
}

Expected<Value> Executor::evalCompound(const AssignStmt &assign, const Value &target) {
  if (assign.op == AssignOp::Combine) {
    ++combinesRun_;
    return evalCombine(assign.combineOp, target, *assign.value);
  }
  BinaryOp op = compoundOperator(assign.op);
  if (const BinaryExpr *product = floatProduct(*assign.value);
      product && fpContract_ == FpContract::On && (op == BinaryOp::Add || op == BinaryOp::Sub)) {
    Expected<Value> lhs = eval(*product->lhs);
    if (!lhs)
      return lhs;
    Expected<Value> rhs = eval(*product->rhs);
    if (!rhs)
      return rhs;
    return fusedMultiplyAdd(*lhs, *rhs, target, op == BinaryOp::Sub, false);
  }
  Expected<Value> value = eval(*assign.value);
  if (!value)
    return value;
  return interp::applyBinary(op, target, *value, assign.range);
}

Expected<Flow> Executor::execIf(const IfStmt &ifStmt) {
  Expected<Value> cond = eval(*ifStmt.cond);
  if (!cond)
    return propagate(cond.error());
  if (cond->boolean)
    return execBlock(*ifStmt.thenBody);
  if (ifStmt.elseBody)
    return exec(*ifStmt.elseBody);
  return Flow::Next;
}

// Arrays are passed by reference. A scalar output bound to a scalar variable
// of the caller goes through a rank-0 temporary copied back afterwards.
Status Executor::execKernelCall(const CallStmt &call) {
  const KernelDecl &callee = *call.kernel;
  if (call.args.size() != callee.params.size())
    return makeError("kernel '" + callee.name + "' takes " + std::to_string(callee.params.size()) +
                         " arguments, but " + std::to_string(call.args.size()) + " were given",
                     call.range);
  std::vector<BoundArgument> arguments(callee.params.size());
  std::vector<std::unique_ptr<HostArray>> temporaries;
  std::vector<std::pair<Slot *, const HostArray *>> copyBacks;
  for (size_t i = 0; i < callee.params.size(); ++i) {
    const VarDecl &param = *callee.params[i];
    const Expr &arg = *call.args[i];
    arguments[i].range = arg.range;
    if (!param.isArray() && !param.isScalarOutput()) {
      Expected<Value> value = eval(arg);
      if (!value)
        return propagate(value.error());
      arguments[i].scalar = *value;
      continue;
    }
    const auto *name = arg.as<NameExpr>();
    if (!name)
      return makeError("the argument for '" + param.name + "' must name a variable", arg.range);
    Slot &source = slot(name->decl);
    arguments[i].name = name->name;
    if (name->decl->isArray() || name->decl->isScalarOutput()) {
      arguments[i].array = source.array;
      continue;
    }
    auto temporary = std::make_unique<HostArray>(param.type.element, std::vector<int64_t>{});
    storeElement(*temporary, 0, source.scalar);
    arguments[i].array = temporary.get();
    copyBacks.emplace_back(&source, temporary.get());
    temporaries.push_back(std::move(temporary));
  }

  {
    Frame frame(slotPool_, layoutOf(callee));
    FrameScope scope(*this, frame);
    // A called kernel's multiply-adds round as it says (its arguments as
    // the caller's did, above).
    FpContract callerContract = std::exchange(fpContract_, callee.fpContract);
    if (Status bound = bindKernelParameters(callee, arguments, nullptr); !bound)
      return bound;
    Expected<Flow> flow = execBlock(*callee.body);
    fpContract_ = callerContract;
    if (!flow)
      return propagate(flow.error());
  }
  for (auto [target, temporary] : copyBacks)
    target->scalar = loadElement(*temporary, 0);
  return {};
}

// Runs `body` for every value of `range`, in increasing order. The bounds and
// the step are evaluated once, before the first iteration.
template <typename Body> Expected<Flow> Executor::forEachInRange(const Range &range, Body &&body) {
  Expected<int64_t> lo = evalInteger(*range.lo);
  if (!lo)
    return propagate(lo.error());
  Expected<int64_t> hi = evalInteger(*range.hi);
  if (!hi)
    return propagate(hi.error());
  int64_t step = 1;
  if (range.step) {
    Expected<int64_t> given = evalInteger(*range.step);
    if (!given)
      return propagate(given.error());
    if (*given <= 0)
      return makeError("the step of a range must be positive, but it is " + std::to_string(*given),
                       range.step->range);
    step = *given;
  }
  ScalarType varType = range.var->type.element;
  // Compiled code counts an unstepped range's iterations in its type.
  if (!range.step && varType == ScalarType::I32 && *hi - *lo > std::numeric_limits<int32_t>::max())
    return makeError("the range " + std::to_string(*lo) + ".." + std::to_string(*hi) +
                         " has more iterations than an i32 range may have (2^31 - 1): use i64 "
                         "bounds",
                     range.range);
  Slot &var = slot(range.var.get());
  // An outermost loop of the kernel's body measures the run's progress.
  bool measures = progress_ && loopDepth_ == 0;
  double iterations =
      measures ? static_cast<double>((static_cast<uint64_t>(*hi) - static_cast<uint64_t>(*lo) +
                                      static_cast<uint64_t>(step) - 1) /
                                     static_cast<uint64_t>(step))
               : 0;
  double done = 0;
  for (int64_t i = *lo; i < *hi;) {
    if (interruptRequested())
      return makeError(kInterruptedMessage);
    var.scalar = interp::integerOfType(varType, i);
    ++loopDepth_;
    Expected<Flow> flow = body();
    --loopDepth_;
    if (!flow || *flow == Flow::Return)
      return flow;
    if (measures)
      reportProgress(statementStart_ + statementShare_ * ++done / iterations);
    // Stop before `i + step` could pass hi, which could overflow.
    if (static_cast<uint64_t>(*hi) - static_cast<uint64_t>(i) <= static_cast<uint64_t>(step))
      break;
    i += step;
  }
  return Flow::Next;
}

// Runs `body` for every point of a range nest, outermost range first; inner
// bounds are evaluated afresh for each point of the outer ranges.
template <typename Body>
Expected<Flow> Executor::forEachInNest(const std::vector<Range> &ranges, size_t level,
                                       Body &&body) {
  if (level == ranges.size())
    return body();
  return forEachInRange(ranges[level], [&] { return forEachInNest(ranges, level + 1, body); });
}

// ----------------------------------------------------------- expressions ---

Expected<Value> Executor::eval(const Expr &expr) {
  switch (expr.kind) {
  case Expr::Kind::IntLit:
    return interp::integerLiteral(expr.type, static_cast<const IntLitExpr &>(expr).value);
  case Expr::Kind::FloatLit:
    return interp::floatLiteral(expr.type, static_cast<const FloatLitExpr &>(expr).value);
  case Expr::Kind::BoolLit:
    return interp::makeValue(static_cast<const BoolLitExpr &>(expr).value);
  case Expr::Kind::Name: {
    const VarDecl *decl = static_cast<const NameExpr &>(expr).decl;
    Slot &nameSlot = slot(decl);
    if (decl->isScalarOutput())
      return loadElement(*nameSlot.array, 0);
    return nameSlot.scalar;
  }
  case Expr::Kind::Index: {
    const auto &index = static_cast<const IndexExpr &>(expr);
    const HostArray &array = *slot(index.decl).array;
    Expected<size_t> offset = elementOffset(array, *index.decl, index.indices, index.range);
    if (!offset)
      return propagate(offset.error());
    return loadElement(array, *offset);
  }
  case Expr::Kind::Call:
    return evalCall(static_cast<const CallExpr &>(expr));
  case Expr::Kind::Cast: {
    const auto &cast = static_cast<const CastExpr &>(expr);
    Expected<Value> operand = eval(*cast.operand);
    if (!operand)
      return operand;
    return interp::convertValue(*operand, cast.target);
  }
  case Expr::Kind::Unary: {
    const auto &unary = static_cast<const UnaryExpr &>(expr);
    Expected<Value> operand = eval(*unary.operand);
    if (!operand)
      return operand;
    return interp::applyUnary(unary.op, *operand);
  }
  case Expr::Kind::Binary:
    return evalBinary(static_cast<const BinaryExpr &>(expr));
  case Expr::Kind::Conditional: {
    const auto &conditional = static_cast<const ConditionalExpr &>(expr);
    Expected<Value> cond = eval(*conditional.cond);
    if (!cond)
      return cond;
    return eval(cond->boolean ? *conditional.thenExpr : *conditional.elseExpr);
  }
  case Expr::Kind::Redomap:
    return evalRedomap(static_cast<const RedomapExpr &>(expr));
  }
  std::unreachable();
}

Expected<int64_t> Executor::evalInteger(const Expr &expr) {
  // Indices and bounds are mostly plain variables: read those directly.
  if (const auto *name = expr.as<NameExpr>(); name && !name->decl->isScalarOutput())
    return interp::integerValue(slot(name->decl).scalar);
  Expected<Value> value = eval(expr);
  if (!value)
    return propagate(value.error());
  return interp::integerValue(*value);
}

Expected<Value> Executor::evalFusedMultiplyAdd(const BinaryExpr &sum, const BinaryExpr &product) {
  bool productFirst = &product == sum.lhs.get();
  const Expr &addendExpr = productFirst ? *sum.rhs : *sum.lhs;
  // Left to right, as unfused.
  Expected<Value> addend = productFirst ? Value{} : eval(addendExpr);
  if (!addend)
    return addend;
  Expected<Value> lhs = eval(*product.lhs);
  if (!lhs)
    return lhs;
  Expected<Value> rhs = eval(*product.rhs);
  if (!rhs)
    return rhs;
  if (productFirst && !(addend = eval(addendExpr)))
    return addend;
  return fusedMultiplyAdd(*lhs, *rhs, *addend, sum.op == BinaryOp::Sub, productFirst);
}

Expected<Value> Executor::evalBinary(const BinaryExpr &binary) {
  if (const BinaryExpr *product = fusedProduct(binary.op, *binary.lhs, *binary.rhs);
      product && fpContract_ == FpContract::On)
    return evalFusedMultiplyAdd(binary, *product);
  Expected<Value> lhs = eval(*binary.lhs);
  if (!lhs)
    return lhs;
  if (binary.op == BinaryOp::And && !lhs->boolean)
    return lhs;
  if (binary.op == BinaryOp::Or && lhs->boolean)
    return lhs;
  Expected<Value> rhs = eval(*binary.rhs);
  if (!rhs)
    return rhs;
  return interp::applyBinary(binary.op, *lhs, *rhs, binary.range);
}

Expected<Value> Executor::evalCall(const CallExpr &call) {
  // Builtins and most fns take a few arguments: keep those off the heap.
  constexpr size_t kInlineArguments = 4;
  Value inlineArguments[kInlineArguments];
  std::vector<Value> heapArguments;
  if (call.args.size() > kInlineArguments)
    heapArguments.resize(call.args.size());
  std::span<Value> arguments = heapArguments.empty()
                                   ? std::span<Value>(inlineArguments, call.args.size())
                                   : std::span<Value>(heapArguments);
  for (size_t i = 0; i < call.args.size(); ++i) {
    Expected<Value> value = eval(*call.args[i]);
    if (!value)
      return value;
    arguments[i] = *value;
  }
  if (call.isBuiltin)
    return interp::applyBuiltin(call.builtin, arguments);
  return callFn(*call.fn, arguments);
}

Expected<Value> Executor::callFn(const FnDecl &fn, std::span<const Value> arguments) {
  Frame frame(slotPool_, layoutOf(fn));
  for (size_t i = 0; i < fn.params.size(); ++i)
    frame.slots[frame.layout.slotOf(fn.params[i].get())].scalar = arguments[i];
  FrameScope scope(*this, frame);
  Expected<Flow> flow = execBlock(*fn.body);
  if (!flow)
    return propagate(flow.error());
  if (*flow != Flow::Return)
    return makeError("function '" + fn.name + "' ended without returning a value", fn.range);
  return frame.returnValue;
}

Expected<Value> Executor::evalCombine(const ReduceOp &op, const Value &accumulator,
                                      const Expr &valueExpr) {
  Expected<Value> value = eval(valueExpr);
  if (!value)
    return value;
  if (op.kind != ReduceOp::Kind::User)
    return interp::combineReduction(op.kind, accumulator, *value);
  const Value operands[2] = {accumulator, *value};
  return callFn(*op.userFn, operands);
}

// A float sum or product is folded pairwise (a binary counter of partial
// results: level k holds the combination of 2^k consecutive values), which
// the language allows (the order is unspecified) and which keeps the
// oracle's rounding error growing with log n rather than n: a sequential
// f32 sum of a million positive terms drifts by about 1%, far from what the
// compiled engines' trees compute, and --check would blame them.
Expected<Value> Executor::evalRedomap(const RedomapExpr &redomap) {
  Expected<Value> neutral = eval(*redomap.neutral);
  if (!neutral)
    return neutral;
  if (Status valid = checkNeutral(redomap.op, *neutral, *redomap.neutral, "redomap"); !valid)
    return propagate(valid.error());
  Value accumulator = *neutral;
  bool pairwise = isFloat(neutral->type) && (redomap.op.kind == ReduceOp::Kind::Add ||
                                             redomap.op.kind == ReduceOp::Kind::Mul);
  // Level k holds 2^k values: 64 levels hold any range the loops can count.
  std::array<std::optional<Value>, 64> levels;
  size_t usedLevels = 0;
  Expected<Flow> flow = forEachInNest(redomap.ranges, 0, [&]() -> Expected<Flow> {
    if (!pairwise) {
      Expected<Value> combined = evalCombine(redomap.op, accumulator, *redomap.body);
      if (!combined)
        return propagate(combined.error());
      accumulator = *combined;
      return Flow::Next;
    }
    Expected<Value> value = eval(*redomap.body);
    if (!value)
      return propagate(value.error());
    Value carry = *value;
    for (size_t level = 0;; ++level) {
      usedLevels = std::max(usedLevels, level + 1);
      if (!levels[level]) {
        levels[level] = carry;
        break;
      }
      carry = interp::combineReduction(redomap.op.kind, *levels[level], carry);
      levels[level].reset();
    }
    return Flow::Next;
  });
  if (!flow)
    return propagate(flow.error());
  for (size_t level = usedLevels; level-- > 0;)
    if (levels[level])
      accumulator = interp::combineReduction(redomap.op.kind, accumulator, *levels[level]);
  return accumulator;
}

Expected<size_t> Executor::elementOffset(const HostArray &array, const VarDecl &decl,
                                         const std::vector<ExprPtr> &indices, SourceRange range) {
  assert(indices.size() == array.rank() && "Sema checks the number of indices");
  size_t offset = 0;
  for (size_t d = 0; d < indices.size(); ++d) {
    Expected<int64_t> index = evalInteger(*indices[d]);
    if (!index)
      return propagate(index.error());
    int64_t extent = array.shape[d];
    if (*index < 0 || *index >= extent)
      return makeError("index " + std::to_string(*index) + " out of range for dimension " +
                           std::to_string(d) + " of '" + decl.name + "' (extent " +
                           std::to_string(extent) + ")",
                       range);
    offset = offset * static_cast<size_t>(extent) + static_cast<size_t>(*index);
  }
  return offset;
}

} // namespace

Expected<RunStats> Interpreter::run(const Program &program, const KernelDecl &kernel,
                                    KernelArgs &args) {
  auto start = std::chrono::steady_clock::now();
  Executor executor(progress_);
  if (Status status = executor.runKernel(kernel, args); !status)
    return propagate(status.error());
  RunStats stats;
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  stats.combinesRun = executor.combinesRun();
  return stats;
}

} // namespace loopc
