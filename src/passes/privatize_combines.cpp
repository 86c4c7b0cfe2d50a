// privatize_combines: a histogram per block in shared memory (both pipelines;
// on the CPU a block's shared memory belongs to one core, so its updates need
// no atomics at all: samples/histogram ran more than ten times faster there,
// as fast as C with private bins per OpenMP thread; docs/benchmarks.md).
// A parfor whose iterations `combine` into a small global array (a
// histogram's bins) makes one global atomic per iteration, and when the
// array is small, many iterations hit the same element at once: the memory
// system serializes them. Here each block keeps a private copy of such an
// array in shared memory, where atomics are cheap and contend only within
// the block: the block fills it with an identity of the operator, its
// threads combine into it, and it then combines each element it changed into
// the global array, once per block instead of once per iteration.
//
// For that to pay, a block must cover many iterations: the nest (a perfect,
// rectangular nest of parallel loops, flattened into one index) runs as a
// grid-stride loop over a bounded grid (kBlocksPerSM; on the CPU, each block
// through a range of its own: overIterations). Sizes are symbolic, so
// the host picks at run time: the private copies are allocated at a fixed
// capacity (their share of the shared-memory budget) and used when every
// array fits and its elements, times the blocks, are no more than the
// iterations (else the merge would outweigh what it saves); otherwise
// map_to_gpu maps the original nest. Only arrays the nest touches through
// combines alone, with one builtin operator (a user operator has no known
// neutral element), are privatized, and only when the combines are the
// body's work: a body with a redomap, or a loop without a combine in it, is
// left to the passes that tile such work (tile_registers, stage_shared).
#include "passes/Passes.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "passes/analysis/ArrayUses.h"
#include "passes/analysis/BoundsProof.h"
#include "passes/lowering/ReductionTrees.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// Threads per block, and the most blocks of the grid-stride loop. On the
// GPU, kBlocksPerSM a multiprocessor: a grid of whole waves wherever an SM
// holds that many of them, so that no partial wave doubles the time of a
// walk whose blocks all take as long (1024 blocks at 6 an SM were 1.29
// waves of an H100); the blocks it holds beyond them stay idle, their
// loads in flight made up for by roundsAhead. On the CPU, blocks are tasks
// of its thread pool.
const int64_t kThreads = 256;
const int64_t kBlocksPerSM = 4;
const int64_t kMaxBlocksCpu = 1024;
// A private copy with room for fewer elements is not worth a kernel version.
const int64_t kMinCapacity = 32;

// How the nest uses each array, in order of first use: through combines
// with one operator only, or otherwise.
class CombineUses : public IRVisitor {
public:
  struct Use {
    Buffer buffer;
    std::optional<ReduceOperator::Kind> op;
    bool otherwise = false; // loaded, stored, or combined with several operators
    SourceRange firstCombine;
    std::string userOperator; // the name of a user's operator it is combined with
  };
  std::vector<Use> uses;

protected:
  void visitLoad(const Load &node) override {
    useOf(node.buffer).otherwise = true;
    IRVisitor::visitLoad(node);
  }
  void visitStore(const Store &node) override {
    useOf(node.buffer).otherwise = true;
    IRVisitor::visitStore(node);
  }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    Use &use = useOf(node.buffer);
    if (use.op && *use.op != node.op.kind)
      use.otherwise = true;
    use.op = node.op.kind;
    if (!use.firstCombine.valid())
      use.firstCombine = node.source;
    if (node.op.kind == ReduceOperator::Kind::User)
      use.userOperator = node.op.userName;
    IRVisitor::visitAtomicUpdate(node);
  }

private:
  Use &useOf(const Buffer &buffer) {
    for (Use &use : uses)
      if (use.buffer == buffer)
        return use;
    return uses.emplace_back(Use{buffer, std::nullopt, false, {}, ""});
  }
};

// Whether a body has work beside its combines: a redomap, or a loop that
// makes no combine.
class OtherWork : public IRVisitor {
public:
  bool found = false;

protected:
  void visitReduce(const Reduce &) override { found = true; }
  void visitFor(const For &node) override {
    bool outer = combines_;
    combines_ = false;
    IRVisitor::visitFor(node);
    found |= !combines_;
    combines_ = outer || combines_;
  }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    combines_ = true;
    IRVisitor::visitAtomicUpdate(node);
  }

private:
  bool combines_ = false;
};

// The neutral element of a builtin operator on `type`.
Expr neutralElement(ReduceOperator::Kind op, ScalarType type) {
  bool floating = isFloat(type);
  double infinity = std::numeric_limits<double>::infinity();
  int64_t largest = type == ScalarType::I32 ? std::numeric_limits<int32_t>::max()
                                            : std::numeric_limits<int64_t>::max();
  int64_t smallest = type == ScalarType::I32 ? std::numeric_limits<int32_t>::min()
                                             : std::numeric_limits<int64_t>::min();
  switch (op) {
  case ReduceOperator::Kind::Add:
    return zeroOf(type);
  case ReduceOperator::Kind::Mul:
    return floating ? std::make_shared<FloatImm>(type, 1.0) : makeInt(type, 1);
  case ReduceOperator::Kind::Min:
    return floating ? std::make_shared<FloatImm>(type, infinity) : makeInt(type, largest);
  case ReduceOperator::Kind::Max:
    return floating ? std::make_shared<FloatImm>(type, -infinity) : makeInt(type, smallest);
  case ReduceOperator::Kind::And:
    return std::make_shared<BoolImm>(true);
  case ReduceOperator::Kind::Or:
    return std::make_shared<BoolImm>(false);
  case ReduceOperator::Kind::User:
    break;
  }
  return nullptr;
}

// The value a block's private copy starts from: an identity of the
// operator, changing no value it is combined with, so that the merge may
// skip an element the block left at it. The neutral elements are not that
// for floats: +0.0 turns a global -0.0 into +0.0, and +inf a NaN (which
// minimumNumber skips) into +inf; -0.0 and NaN change nothing.
Expr privateIdentity(ReduceOperator::Kind op, ScalarType type) {
  if (isFloat(type) && op == ReduceOperator::Kind::Add)
    return std::make_shared<FloatImm>(type, -0.0);
  if (isFloat(type) && (op == ReduceOperator::Kind::Min || op == ReduceOperator::Kind::Max))
    return std::make_shared<FloatImm>(type, std::numeric_limits<double>::quiet_NaN());
  return neutralElement(op, type);
}

// Whether `value` is not privateIdentity(op, type), which `!=` cannot tell
// for -0.0 (equal to +0.0) and NaN (unequal to itself).
Expr differsFromIdentity(const Expr &value, ReduceOperator::Kind op, ScalarType type) {
  if (isFloat(type) && op == ReduceOperator::Kind::Add) {
    Expr one = std::make_shared<FloatImm>(type, 1.0), zero = zeroOf(type);
    // 1 / -0.0 is -inf.
    return logicalOr(notEqual(value, zero), greaterThan(div(one, value), zeroOf(type)));
  }
  if (isFloat(type) && (op == ReduceOperator::Kind::Min || op == ReduceOperator::Kind::Max))
    return equal(value, value);
  return notEqual(value, neutralElement(op, type));
}

Expr product(const std::vector<Expr> &factors) {
  Expr result = makeI64(1);
  for (const Expr &factor : factors)
    result = mul(result, factor);
  return result;
}

// The product of `factors` when they are all constants.
std::optional<int64_t> constantProduct(const std::vector<Expr> &factors) {
  int64_t result = 1;
  for (const Expr &factor : factors) {
    const auto *constant = factor->as<IntImm>();
    if (!constant || constant->value < 0 ||
        (constant->value && result > INT64_MAX / constant->value))
      return std::nullopt;
    result *= constant->value;
  }
  return result;
}

// A global array and its private copy in shared memory.
struct Privatized {
  Buffer global;
  Buffer local;
  ReduceOperator::Kind op;
  Expr elements;       // of the global array, i64
  SourceRange combine; // the first combine into it
};

// The position of `indices` in the row-major order of `shape` (both i64).
Expr flatIndex(const std::vector<Expr> &indices, const std::vector<Expr> &shape) {
  Expr flat = makeI64(0);
  for (size_t d = 0; d < indices.size(); ++d)
    flat = add(mul(flat, shape[d]), toI64(indices[d]));
  return flat;
}

// Under bounds checks, what a combine's indices into the global array
// need: the private copy is shaped otherwise (one flat row, room for more
// elements), so each index not proven in range is checked against the
// global array's extent, as an access to it would be, and the update is
// made only when all are in range.
struct IndexChecks {
  const ProvenAccesses *proven = nullptr; // null: no bounds checks
  ir::Stmt body;                          // the host code proven
  const std::map<SourceLoc, std::string> *arrayNamesAt = nullptr;
  const RemarkReporter *remarks = nullptr; // says which indices stay checked
};

// The combines into privatized arrays, sent to their private copies.
class ToPrivateCopies : public IRMutator {
public:
  ToPrivateCopies(const std::vector<Privatized> &arrays, const IndexChecks &checks)
      : arrays_(arrays), checks_(checks) {}
  std::set<const Check *> made; // the checks of the combines' indices

protected:
  Stmt visitAtomicUpdate(const AtomicUpdate &node, const Stmt &self) override {
    Stmt mutated = IRMutator::visitAtomicUpdate(node, self);
    const auto &update = *mutated->as<AtomicUpdate>();
    for (const Privatized &array : arrays_)
      if (array.global == update.buffer)
        return toPrivateCopy(node, update, array);
    return mutated;
  }

private:
  Stmt toPrivateCopy(const AtomicUpdate &original, const AtomicUpdate &update,
                     const Privatized &array) {
    std::vector<Expr> indices = update.indices;
    std::vector<Stmt> checks;
    Expr inRange;
    std::vector<std::pair<std::string, Expr>> lets;
    for (size_t d = 0; d < indices.size(); ++d) {
      if (!checks_.proven || checks_.proven->proven(checks_.body, &original, d))
        continue;
      // Evaluated once: an index may read memory (a key).
      std::string name = array.global->name + ".index" + std::to_string(d) + "." +
                         std::to_string(checkedIndices_++);
      lets.emplace_back(name, toI64(indices[d]));
      Expr index = makeVar(ScalarType::I64, name);
      indices[d] = index;
      const Expr &extent = array.global->shape[d];
      Expr holds = logicalAnd(greaterOrEqual(index, makeI64(0)), lessThan(index, toI64(extent)));
      checks.push_back(std::make_shared<Check>(
          holds,
          "index {0} out of range for dimension " + std::to_string(d) + " of '" +
              nameAt(update.source, *array.global) + "' (extent {1})",
          std::vector<Expr>{index, toI64(extent)}, update.source));
      made.insert(checks.back()->as<Check>());
      inRange = inRange ? logicalAnd(inRange, holds) : holds;
      if (checks_.remarks)
        checks_.remarks->declined(update.source,
                                  "index " + toString(original.indices[d]) + " of '" +
                                      nameAt(update.source, *array.global) + "' (dimension " +
                                      std::to_string(d) + ") checked at run time: not proven " +
                                      "within [0, " + toString(extent) + ")");
    }
    Stmt privateUpdate = std::make_shared<AtomicUpdate>(
        array.local, std::vector<Expr>{flatIndex(indices, array.global->shape)}, update.op,
        update.value, update.source);
    if (!inRange)
      return privateUpdate;
    checks.push_back(std::make_shared<IfThenElse>(inRange, privateUpdate, nullptr));
    Stmt result = makeBlock(std::move(checks));
    for (auto let = lets.rbegin(); let != lets.rend(); ++let)
      result = std::make_shared<LetStmt>(let->first, let->second, result);
    return result;
  }

  // The program's name for the array an access at `source` writes.
  std::string nameAt(SourceRange source, const BufferInfo &buffer) const {
    if (checks_.arrayNamesAt)
      if (auto named = checks_.arrayNamesAt->find(source.begin);
          named != checks_.arrayNamesAt->end())
        return named->second;
    return buffer.nameInMessages();
  }

  const std::vector<Privatized> &arrays_;
  const IndexChecks &checks_;
  int checkedIndices_ = 0;
};

// On the CPU, a block's threads run one after the other on one core, as a
// loop over the threads that LLVM vectorizes, but not across a combine into
// a private copy: the elements the lanes update may collide, so the whole
// body, the work that finds where a value goes as well as the update, stays
// scalar (and branches on each iteration's conditions). Staged, each round
// of kThreads iterations runs in two loops split at a barrier: the first
// computes each combine's element and value into a buffer of the round's
// (the element a trash slot past the copy's extent when the iteration makes
// no update), and vectorizes with its conditions as masks; the second makes
// the updates, a scalar loop of loads and adds. samples/histogram's bins
// (a division, a rounding, two comparisons a value) took about a third of
// the time staged (docs/benchmarks.md, CPU history).
// A body with a loop in it (a combine per step) or an atomic into an array
// that keeps its global atomics is not staged; nor are more combines than
// kMaxStaged, whose buffers would outgrow the gain.
const int kMaxStaged = 4;

// A combine of the body, made from its staging buffers.
struct StagedUpdate {
  Buffer local; // the private copy, with its trash slot at `trash`
  int64_t trash;
  ReduceOperator op;
  Buffer elements; // shared i64[kThreads]: where each thread's update goes
  Buffer values;   // shared [kThreads], or null when the value is a constant
  Expr element;    // what the combine's own elements and values were
  Expr value;
};

// A bounds check of the body (a combine's index under --bounds-check), made
// after the barrier from what the first loop stored: whether it failed and
// the values its message quotes. Tested in the first loop, a check's report
// would keep it from vectorizing. Only the checks of the combines' indices
// (ToPrivateCopies'), and only where every load of the body is proven
// (loadsProven): else the check stays in the first loop, before the loads it
// precedes in the program.
struct StagedCheck {
  Buffer failed; // shared i32[kThreads], 1 where it failed
  std::vector<Buffer> values;
  const Check *check;
};

// Whether every load of `body` (the parfor's, its combines sent to their
// private copies) is proven in range, so that none reports an error: a
// staged check, reported after the barrier, then reports the first error of
// its iteration as the program would (a combine's target before its value).
bool loadsProven(const Stmt &body, const IndexChecks &checks) {
  class Loads : public IRVisitor {
  public:
    explicit Loads(const IndexChecks &checks) : checks_(checks) {}
    bool proven = true;

  protected:
    void visitLoad(const Load &node) override {
      for (size_t d = 0; d < node.indices.size(); ++d)
        proven = proven && (node.buffer->memory != MemorySpace::Global || !node.source.valid() ||
                            checks_.proven->proven(checks_.body, &node, d));
      IRVisitor::visitLoad(node);
    }

  private:
    const IndexChecks &checks_;
  } loads(checks);
  if (checks.proven)
    loads.visit(body);
  return loads.proven;
}

// On the GPU a thread of the grid-stride walk (overIterations) waits for a
// round's loads before its combines, and LLVM keeps the next round's loads
// behind the atomics (it cannot tell them apart): one round trip to memory
// a round, which the few warps an SM holds do not hide (samples/histogram,
// 2^28 values into 256 bins, ran at about a third of the copy rate on an
// H100: docs/benchmarks.md, GPU history).
// So a thread walks kRoundsAhead rounds at a time: first the loads that
// every round makes, whatever its data, into registers for all of them,
// then the rounds' bodies reading them there.
const int64_t kRoundsAhead = 4;

// The loads that every execution of `body` makes (a GPU thread's round):
// those outside the body's branches and loops (an `if`'s condition, not its
// sides; a select's condition, not its values) of global arrays the body
// does not write, at indices computed from variables bound outside the body
// without loads. Distinct by their printed form, in order of appearance.
class LoadsEveryRoundMakes : public IRVisitor {
public:
  explicit LoadsEveryRoundMakes(const Stmt &body)
      : bound_(boundNames(body)), written_(writtenArrays(body)) {
    visit(body);
  }
  std::vector<Expr> loads;

protected:
  void visitLoad(const Load &node) override {
    bool fromVariables = std::ranges::all_of(node.indices, [&](const Expr &index) {
      return loadsIn(index).empty() && !usesAnyVar(index, bound_);
    });
    if (node.buffer->memory == MemorySpace::Global && !written_.contains(node.buffer.get()) &&
        fromVariables) {
      auto self = std::make_shared<Load>(node);
      if (printed_.insert(toString(self)).second)
        loads.push_back(self);
      return;
    }
    IRVisitor::visitLoad(node);
  }
  void visitSelect(const Select &node) override { visit(node.cond); }
  void visitIfThenElse(const IfThenElse &node) override { visit(node.cond); }
  void visitFor(const For &) override {}
  void visitCheck(const Check &) override {}

private:
  std::set<std::string> bound_;
  std::set<const BufferInfo *> written_;
  std::set<std::string> printed_;
};

// The body of a round whose loads `loads` were made into `registers`, at
// `ahead`: each read there.
class ReadAhead : public IRMutator {
public:
  ReadAhead(const std::vector<Expr> &loads, const std::vector<Buffer> &registers, Expr ahead)
      : registers_(registers), ahead_(std::move(ahead)) {
    for (size_t k = 0; k < loads.size(); ++k)
      index_[toString(loads[k])] = k;
  }

protected:
  Expr visitLoad(const Load &node, const Expr &self) override {
    if (auto found = index_.find(toString(self)); found != index_.end())
      return load(registers_[found->second], {ahead_});
    return IRMutator::visitLoad(node, self);
  }

private:
  const std::vector<Buffer> &registers_;
  Expr ahead_;
  std::map<std::string, size_t> index_;
};

// Why a body's combines cannot be staged, or nothing.
class WhyNotStaged : public IRVisitor {
public:
  WhyNotStaged(const std::vector<Privatized> &arrays, const RemarkReporter &remarks)
      : arrays_(arrays), remarks_(remarks) {}
  std::optional<std::string> of(const Stmt &body) {
    visit(body);
    if (!why_ && combines_ > kMaxStaged)
      why_ = std::to_string(combines_) + " combines, more than " + std::to_string(kMaxStaged);
    return why_;
  }

protected:
  void visitFor(const For &) override { why_ = "a loop in the body"; }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    ++combines_;
    if (std::ranges::none_of(arrays_,
                             [&](const Privatized &array) { return array.global == node.buffer; }))
      why_ =
          "'" + remarks_.programName(node.buffer->nameInMessages()) + "' keeps its global atomics";
    IRVisitor::visitAtomicUpdate(node);
  }

private:
  const std::vector<Privatized> &arrays_;
  const RemarkReporter &remarks_;
  std::optional<std::string> why_;
  int combines_ = 0;
};

// The combines into private copies, replaced by stores of their elements
// and values into the round's staging buffers. Consecutive combines of one
// block with the same element (bin_stats' sum and largest of one key) or
// the same value share a buffer: they are made under the same conditions.
class ToStagedUpdates : public IRMutator {
public:
  // `stagedChecks`: the checks of the combines' indices to make after the
  // barrier (none where a load of the body may fail: see loadsProven).
  ToStagedUpdates(const std::vector<Privatized> &arrays, Expr thread,
                  std::set<const Check *> stagedChecks)
      : arrays_(arrays), thread_(std::move(thread)), stagedChecks_(std::move(stagedChecks)) {}
  std::vector<StagedUpdate> staged;
  std::vector<StagedCheck> checks;

  // The distinct staging buffers, in order of first use.
  std::vector<Buffer> buffers() const {
    std::vector<Buffer> distinct;
    for (const StagedUpdate &update : staged)
      for (const Buffer &buffer : {update.elements, update.values})
        if (buffer && std::ranges::find(distinct, buffer) == distinct.end())
          distinct.push_back(buffer);
    for (const StagedCheck &check : checks) {
      distinct.push_back(check.failed);
      std::ranges::copy(check.values, std::back_inserter(distinct));
    }
    return distinct;
  }

protected:
  Stmt visitCheck(const Check &node, const Stmt &self) override {
    if (!stagedChecks_.contains(&node))
      return self;
    std::string prefix = "check" + std::to_string(checks.size());
    // An i32 flag: the CPU's code has no masked byte stores (AVX512BW).
    StagedCheck staged{
        makeBuffer(prefix + ".failed", ScalarType::I32, {makeI64(kThreads)}, MemorySpace::Shared),
        {},
        &node};
    std::vector<Stmt> stores{store(
        staged.failed, {thread_},
        ir::select(node.condition, makeInt(ScalarType::I32, 0), makeInt(ScalarType::I32, 1)))};
    for (size_t i = 0; i < node.values.size(); ++i) {
      staged.values.push_back(makeBuffer(prefix + ".value" + std::to_string(i),
                                         node.values[i]->type, {makeI64(kThreads)},
                                         MemorySpace::Shared));
      stores.push_back(store(staged.values.back(), {thread_}, node.values[i]));
    }
    checks.push_back(staged);
    return makeBlock(std::move(stores));
  }
  Stmt visitBlock(const Block &node, const Stmt &) override {
    std::vector<Stmt> stmts;
    std::vector<size_t> run; // the staged updates of the consecutive combines so far
    for (const Stmt &stmt : node.stmts) {
      if (const auto *update = stmt->as<AtomicUpdate>(); update && isPrivate(*update)) {
        stmts.push_back(stage(*update, run));
        continue;
      }
      run.clear();
      stmts.push_back(mutate(stmt));
    }
    return makeBlock(std::move(stmts));
  }
  Stmt visitAtomicUpdate(const AtomicUpdate &node, const Stmt &self) override {
    std::vector<size_t> run;
    return isPrivate(node) ? stage(node, run) : self;
  }

private:
  bool isPrivate(const AtomicUpdate &update) const {
    return std::ranges::any_of(
        arrays_, [&](const Privatized &array) { return array.local == update.buffer; });
  }

  Stmt stage(const AtomicUpdate &node, std::vector<size_t> &run) {
    Expr element = toI64(node.indices[0]);
    int64_t trash = node.buffer->shape.front()->as<IntImm>()->value - 1;
    bool constant =
        node.value->as<IntImm>() || node.value->as<FloatImm>() || node.value->as<BoolImm>();
    StagedUpdate update{node.buffer, trash, node.op, nullptr, nullptr, element, node.value};
    for (size_t earlier : run) {
      const StagedUpdate &other = staged[earlier];
      if (other.trash == trash && sameExpr(other.element, element))
        update.elements = other.elements;
      if (!constant && other.values && other.values->element == node.value->type &&
          sameExpr(other.value, node.value))
        update.values = other.values;
    }
    std::string prefix = node.buffer->name + ".staged" + std::to_string(staged.size());
    std::vector<Stmt> stores;
    if (!update.elements) {
      update.elements = makeBuffer(prefix + ".element", ScalarType::I64, {makeI64(kThreads)},
                                   MemorySpace::Shared);
      stores.push_back(store(update.elements, {thread_}, element));
    }
    if (!constant && !update.values) {
      update.values =
          makeBuffer(prefix + ".value", node.value->type, {makeI64(kThreads)}, MemorySpace::Shared);
      stores.push_back(store(update.values, {thread_}, node.value));
    }
    run.push_back(staged.size());
    staged.push_back(update);
    return makeBlock(std::move(stores));
  }

  const std::vector<Privatized> &arrays_;
  Expr thread_;
  std::set<const Check *> stagedChecks_;
};

class CombinePrivatizer : public IRMutator {
public:
  CombinePrivatizer(const PassParameters &parameters, PipelineTarget target, int multiprocessors,
                    const IndexChecks &checks, const RemarkReporter &remarks)
      : parameters_(parameters), target_(target),
        maxBlocks_(target == PipelineTarget::Cpu ? kMaxBlocksCpu : kBlocksPerSM * multiprocessors),
        checks_(checks), remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::Parallel)
      return IRMutator::visitFor(node, self);
    return privatize(node, self);
  }

private:
  Stmt privatize(const For &top, const Stmt &nest) {
    // The perfect nest of parallel loops; inner bounds may not use outer
    // variables, so the iterations flatten into one index.
    std::vector<const For *> chain{&top};
    std::set<std::string> chainVars{top.var};
    while (const auto *inner = chain.back()->body->as<For>()) {
      if (inner->forKind != ForKind::Parallel || usesAnyVar(inner->min, chainVars) ||
          usesAnyVar(inner->extent, chainVars))
        break;
      chain.push_back(inner);
      chainVars.insert(inner->var);
    }
    const Stmt &body = chain.back()->body;
    CombineUses uses;
    uses.visit(body);
    // A nest that combines into no global array is nothing to this pass.
    auto globalCombines = [](const CombineUses::Use &use) {
      return use.buffer->memory == MemorySpace::Global && use.op;
    };
    if (std::ranges::none_of(uses.uses, globalCombines))
      return nest;
    OtherWork otherWork;
    otherWork.visit(body);
    if (otherWork.found) {
      remarks_.declined(top.source, "no private copies: the nest does more than combine (a "
                                    "redomap, or a loop without a combine), work left to the "
                                    "tiling passes");
      return nest;
    }
    std::vector<Privatized> arrays;
    for (const CombineUses::Use &use : uses.uses) {
      if (!globalCombines(use))
        continue;
      std::string quoted = "'" + remarks_.programName(use.buffer->nameInMessages()) + "'";
      if (use.otherwise)
        remarks_.declined(use.firstCombine,
                          quoted + " keeps its global atomics: the nest also reads or stores it, "
                                   "or combines into it with more than one operator");
      else if (*use.op == ReduceOperator::Kind::User)
        remarks_.declined(use.firstCombine, quoted + " keeps its global atomics: its operator '" +
                                                use.userOperator +
                                                "' is a user's, with no known neutral element");
      else
        arrays.push_back(
            {use.buffer, nullptr, *use.op, product(use.buffer->shape), use.firstCombine});
    }
    // The budget is shared equally; an array known to exceed its share keeps
    // its global atomics (the others' shares then only grow).
    const int64_t budget = parameters_.sharedKiB * 1024;
    auto capacityOf = [&](const Privatized &array) {
      return budget / static_cast<int64_t>(arrays.size()) /
             static_cast<int64_t>(scalarSize(array.global->element));
    };
    std::erase_if(arrays, [&](const Privatized &array) {
      std::optional<int64_t> known = constantProduct(array.global->shape);
      if (!known || *known <= capacityOf(array))
        return false;
      remarks_.declined(array.combine,
                        "'" + remarks_.programName(array.global->nameInMessages()) +
                            "' keeps its global atomics: its " + std::to_string(*known) +
                            " elements are more than the " + std::to_string(capacityOf(array)) +
                            " its share of shared_kib=" + std::to_string(parameters_.sharedKiB) +
                            " holds");
      return true;
    });
    if (arrays.empty())
      return nest;
    std::optional<std::string> whyNotStaged;
    if (target_ == PipelineTarget::Cpu) {
      whyNotStaged = WhyNotStaged(arrays, remarks_).of(body);
      if (whyNotStaged)
        remarks_.declined(top.source, "combines not staged (" + *whyNotStaged +
                                          "): each iteration's work stays scalar");
    }
    bool staged = target_ == PipelineTarget::Cpu && !whyNotStaged;
    Expr fits;
    std::set<std::string> tests; // arrays of one shape need one test
    for (Privatized &array : arrays) {
      int64_t capacity = capacityOf(array);
      if (capacity < kMinCapacity) {
        remarks_.declined(top.source, "no private copies: " + std::to_string(arrays.size()) +
                                          " arrays would share shared_kib=" +
                                          std::to_string(parameters_.sharedKiB) + ", " +
                                          std::to_string(capacity) + " elements each, fewer than " +
                                          std::to_string(kMinCapacity));
        return nest;
      }
      // Staged, one more element: the trash slot.
      array.local = makeBuffer(array.global->name + ".private", array.global->element,
                               {makeI64(capacity + (staged ? 1 : 0))}, MemorySpace::Shared);
      Expr fitsHere = lessOrEqual(array.elements, makeI64(capacity));
      if (tests.insert(toString(fitsHere)).second)
        fits = fits ? logicalAnd(fits, fitsHere) : fitsHere;
    }

    std::vector<Expr> extents;
    for (const For *loop : chain)
      extents.push_back(maxOf(toI64(loop->extent), makeI64(0)));
    std::string iterationsVar = top.var + ".iterations", blocksVar = top.var + ".blocks";
    Expr iterations = makeVar(ScalarType::I64, iterationsVar);
    Expr blocks = makeVar(ScalarType::I64, blocksVar);
    Expr merged = makeI64(0);
    for (const Privatized &array : arrays)
      merged = add(merged, array.elements);
    Expr worthIt = lessOrEqual(mul(merged, blocks), iterations);

    std::string blockVar = top.var + ".block", threadVar = top.var + ".thread";
    Expr block = makeVar(ScalarType::I64, blockVar), thread = makeVar(ScalarType::I64, threadVar);
    std::vector<Stmt> steps;
    std::vector<Expr> loadsAhead;
    for (const Privatized &array : arrays)
      steps.push_back(overElements(array, thread, top.var + ".fill", [&](const Expr &element) {
        return store(array.local, {element}, privateIdentity(array.op, array.global->element));
      }));
    steps.push_back(std::make_shared<Barrier>());
    ToPrivateCopies toPrivateCopies(arrays, checks_);
    Stmt privateBody = toPrivateCopies.mutate(body);
    ToStagedUpdates staging(arrays, thread,
                            loadsProven(body, checks_) ? toPrivateCopies.made
                                                       : std::set<const Check *>{});
    if (staged) {
      Stmt stagedBody = staging.mutate(privateBody);
      steps.push_back(stagedOverIterations(chain, extents, stagedBody, staging.staged,
                                           staging.checks, block, thread, blocks, iterations));
    } else {
      bool cpu = target_ == PipelineTarget::Cpu;
      if (!cpu && loadsProven(body, checks_))
        loadsAhead = LoadsEveryRoundMakes(serializeParallelLoops(privateBody)).loads;
      steps.push_back(overIterations(chain, extents, privateBody, block, thread, blocks, iterations,
                                     checks_.proven != nullptr, cpu, loadsAhead));
    }
    steps.push_back(std::make_shared<Barrier>());
    for (const Privatized &array : arrays)
      steps.push_back(overElements(array, thread, top.var + ".merge", [&](const Expr &element) {
        return mergeElement(array, element);
      }));
    Stmt kernel =
        std::make_shared<For>(threadVar, makeI64(0), makeI64(kThreads), ForKind::GpuThread, 0,
                              makeBlock(std::move(steps)), top.source);
    std::vector<Buffer> stagingBuffers = staging.buffers();
    for (auto buffer = stagingBuffers.rbegin(); buffer != stagingBuffers.rend(); ++buffer)
      kernel = std::make_shared<Allocate>(*buffer, kernel);
    for (auto array = arrays.rbegin(); array != arrays.rend(); ++array)
      kernel = std::make_shared<Allocate>(array->local, kernel);
    kernel = std::make_shared<For>(blockVar, makeI64(0), blocks, ForKind::GpuBlock, 0, kernel,
                                   top.source);
    for (const Privatized &array : arrays)
      remarks_.applied(
          array.combine,
          "'" + remarks_.programName(array.global->nameInMessages()) +
              "' gets a copy per block in shared memory (room for " +
              std::to_string(capacityOf(array)) + " " + scalarTypeName(array.global->element) +
              "), which the host picks when it fits and its elements times the "
              "blocks (at most " +
              std::to_string(maxBlocks_) + ") are at most the iterations" +
              (staged ? "; its combines staged, " + std::to_string(kThreads) +
                            " iterations at a time: a vector loop finds where they "
                            "go, a scalar loop makes them"
                      : "") +
              (loadsAhead.empty() ? ""
                                  : "; a thread's iterations " + std::to_string(kRoundsAhead) +
                                        " at a time, their loads of " + arraysRead(loadsAhead) +
                                        " issued first, all in flight together"));
    Stmt choice = std::make_shared<IfThenElse>(logicalAnd(fits, worthIt), kernel, nest);
    Expr blockCount =
        minOf(div(add(iterations, makeI64(kThreads - 1)), makeI64(kThreads)), makeI64(maxBlocks_));
    return std::make_shared<LetStmt>(iterationsVar, product(extents),
                                     std::make_shared<LetStmt>(blocksVar, blockCount, choice));
  }

  // The arrays `loads` read, quoted by their program names.
  std::string arraysRead(const std::vector<Expr> &loads) const {
    std::vector<std::string> names;
    for (const Expr &read : loads) {
      std::string name =
          "'" + remarks_.programName(read->as<Load>()->buffer->nameInMessages()) + "'";
      if (std::ranges::find(names, name) == names.end())
        names.push_back(name);
    }
    std::string list;
    for (size_t k = 0; k < names.size(); ++k)
      list += (k == 0 ? "" : k + 1 == names.size() ? " and " : ", ") + names[k];
    return list;
  }

  // `each(e)` for the elements e of `array`'s global extent, strided over the
  // threads of the block.
  static Stmt overElements(const Privatized &array, const Expr &thread, const std::string &name,
                           const std::function<Stmt(const Expr &)> &each) {
    std::string stepVar = name + ".round";
    Expr element = add(thread, mul(makeVar(ScalarType::I64, stepVar), makeI64(kThreads)));
    return std::make_shared<For>(
        stepVar, makeI64(0), stridedTripCount(thread, array.elements, makeI64(kThreads)),
        ForKind::Serial, 0,
        std::make_shared<LetStmt>(name, element, each(makeVar(ScalarType::I64, name))));
  }

  // The block's result for one element, combined into the global array
  // unless it is the private identity (the block left it, or its values
  // combined to it: either way the global value would not change).
  static Stmt mergeElement(const Privatized &array, const Expr &element) {
    std::vector<Expr> indices;
    Expr rest = element;
    const std::vector<Expr> &shape = array.global->shape;
    for (size_t d = shape.size(); d-- > 0;) {
      indices.insert(indices.begin(), d == 0 ? rest : rem(rest, shape[d]));
      rest = div(rest, shape[d]);
    }
    ScalarType type = array.global->element;
    std::string valueVar = array.local->name + ".value";
    Expr value = makeVar(type, valueVar);
    ReduceOperator op;
    op.kind = array.op;
    Expr changed = differsFromIdentity(value, array.op, type);
    Stmt update = std::make_shared<AtomicUpdate>(array.global, indices, op, value);
    return std::make_shared<LetStmt>(valueVar, load(array.local, {element}),
                                     std::make_shared<IfThenElse>(changed, update));
  }

  // `body` with the nest's variables bound to the point whose flat
  // iteration index is `flat` (the innermost loop varying fastest).
  static Stmt atPoint(const std::vector<const For *> &chain, const std::vector<Expr> &extents,
                      const Expr &flat, Stmt body) {
    Expr inner = makeI64(1);
    for (size_t d = chain.size(); d-- > 0;) {
      const For &loop = *chain[d];
      Expr position = d == 0 ? div(flat, inner) : rem(div(flat, inner), extents[d]);
      Expr value = add(toI64(loop.min), position);
      body = std::make_shared<LetStmt>(loop.var, castTo(loop.min->type, value), body);
      inner = mul(inner, extents[d]);
    }
    return body;
  }

  // The body at every point of the nest, the flat iteration index striding
  // over all threads of the grid, or with `blockRanges`, over the threads of
  // the block through a range of the iterations of its own; given
  // `loadsAhead` (on the GPU, where no load of the body can fail: the
  // loads every round makes), a thread's rounds kRoundsAhead at a time
  // (roundsAhead). On the GPU the
  // blocks running together then read neighbouring elements at every step;
  // on the CPU a block is a core's unit of work, whose contiguous range is a
  // stream the prefetcher follows (the histogram at 2^24 values, 256 bins,
  // ran faster in ranges than striding: docs/benchmarks.md, CPU history).
  static Stmt overIterations(const std::vector<const For *> &chain,
                             const std::vector<Expr> &extents, Stmt body, const Expr &block,
                             const Expr &thread, const Expr &blocks, const Expr &iterations,
                             bool boundsChecked, bool blockRanges,
                             const std::vector<Expr> &loadsAhead) {
    const For &top = *chain.front();
    std::string flatVar = top.var + ".flat", stepVar = top.var + ".round";
    Expr flat = makeVar(ScalarType::I64, flatVar);
    body = serializeParallelLoops(body);
    Expr first = add(mul(block, makeI64(kThreads)), thread);
    Expr stride = mul(blocks, makeI64(kThreads));
    if (!loadsAhead.empty())
      return roundsAhead(chain, extents, body, loadsAhead, first, stride, iterations);
    body = atPoint(chain, extents, flat, body);
    // Under bounds checks, what the trip count means, said where the
    // proof of the body's indices can read it (it cannot divide by the
    // stride); one comparison a point.
    if (boundsChecked)
      body = std::make_shared<IfThenElse>(lessThan(flat, iterations), body);
    Expr trips;
    if (blockRanges) {
      // Rounds of kThreads iterations a block: the block's first, then the
      // next kThreads, up to the iterations' end.
      Expr rounds = div(add(iterations, sub(stride, makeI64(1))), stride);
      first = add(mul(mul(block, rounds), makeI64(kThreads)), thread);
      stride = makeI64(kThreads);
      trips = minOf(rounds, stridedTripCount(first, iterations, stride));
    } else {
      trips = stridedTripCount(first, iterations, stride);
    }
    body = std::make_shared<LetStmt>(
        flatVar, add(first, mul(makeVar(ScalarType::I64, stepVar), stride)), body);
    return std::make_shared<For>(stepVar, makeI64(0), trips, ForKind::Serial, 0, body, top.source);
  }

  // A GPU thread's rounds of overIterations (the first at `first`, the next
  // `stride` further), kRoundsAhead at a time: `loads`, which every round
  // makes (LoadsEveryRoundMakes), made for each round into registers, then
  // each round's body reading them there. Each round tests that it is one
  // of the thread's, also what the bounds proof reads.
  static Stmt roundsAhead(const std::vector<const For *> &chain, const std::vector<Expr> &extents,
                          const Stmt &body, const std::vector<Expr> &loads, const Expr &first,
                          const Expr &stride, const Expr &iterations) {
    const For &top = *chain.front();
    std::string batchVar = top.var + ".batch", aheadVar = top.var + ".ahead";
    std::string flatVar = top.var + ".flat";
    Expr batch = makeVar(ScalarType::I64, batchVar), ahead = makeVar(ScalarType::I64, aheadVar);
    Expr flat = makeVar(ScalarType::I64, flatVar);
    std::vector<Buffer> registers;
    std::vector<Stmt> fetches;
    for (size_t k = 0; k < loads.size(); ++k) {
      registers.push_back(makeBuffer(top.var + ".loaded" + std::to_string(k), loads[k]->type,
                                     {makeI64(kRoundsAhead)}, MemorySpace::Register));
      fetches.push_back(store(registers.back(), {ahead}, loads[k]));
    }
    auto eachRound = [&](Stmt stmt) {
      Expr round = add(mul(batch, makeI64(kRoundsAhead)), ahead);
      Stmt inRange = std::make_shared<IfThenElse>(lessThan(flat, iterations),
                                                  atPoint(chain, extents, flat, stmt));
      return std::make_shared<For>(
          aheadVar, makeI64(0), makeI64(kRoundsAhead), ForKind::Unrolled, 0,
          std::make_shared<LetStmt>(flatVar, add(first, mul(round, stride)), inRange), top.source);
    };
    Stmt batchBody = makeBlock({eachRound(makeBlock(std::move(fetches))),
                                eachRound(ReadAhead(loads, registers, ahead).mutate(body))});
    for (auto buffer = registers.rbegin(); buffer != registers.rend(); ++buffer)
      batchBody = std::make_shared<Allocate>(*buffer, batchBody);
    Expr trips = stridedTripCount(first, iterations, stride);
    return std::make_shared<For>(batchVar, makeI64(0),
                                 div(add(trips, makeI64(kRoundsAhead - 1)), makeI64(kRoundsAhead)),
                                 ForKind::Serial, 0, batchBody, top.source);
  }

  // overIterations' block ranges, with the combines of `body` staged (see
  // ToStagedUpdates): a block's rounds are one loop uniform over its threads,
  // each round two thread loops split at a barrier, the first computing
  // where the round's combines go (the trash slot where an iteration makes
  // none), the second making them.
  static Stmt stagedOverIterations(const std::vector<const For *> &chain,
                                   const std::vector<Expr> &extents, Stmt body,
                                   const std::vector<StagedUpdate> &staged,
                                   const std::vector<StagedCheck> &checks, const Expr &block,
                                   const Expr &thread, const Expr &blocks, const Expr &iterations) {
    const For &top = *chain.front();
    std::string flatVar = top.var + ".flat", stepVar = top.var + ".round";
    Expr flat = makeVar(ScalarType::I64, flatVar);
    // Uniform, bound once a block (a division checked for zero in a thread
    // loop keeps it from vectorizing).
    std::string roundsVar = top.var + ".rounds", startVar = top.var + ".start";
    Expr rounds = makeVar(ScalarType::I64, roundsVar);
    Expr blockFirst = makeVar(ScalarType::I64, startVar);
    Expr round = makeVar(ScalarType::I64, stepVar);
    Expr inRange = lessThan(flat, iterations);
    auto atThread = [&](Stmt stmt) {
      return std::make_shared<LetStmt>(
          flatVar, add(add(blockFirst, mul(round, makeI64(kThreads))), thread), stmt);
    };

    // Where no combine is made, its element is the trash slot, which then
    // takes an identity of the operator, a defined value.
    std::vector<Stmt> computed;
    for (const StagedCheck &check : checks)
      computed.push_back(store(check.failed, {thread}, makeInt(ScalarType::I32, 0)));
    std::set<const BufferInfo *> cleared;
    for (const StagedUpdate &update : staged) {
      if (cleared.insert(update.elements.get()).second)
        computed.push_back(store(update.elements, {thread}, makeI64(update.trash)));
      if (update.values && cleared.insert(update.values.get()).second)
        computed.push_back(store(update.values, {thread},
                                 privateIdentity(update.op.kind, update.values->element)));
    }
    computed.push_back(body);
    // The lets outside the test: LLVM's vectorizer does not take a division
    // by a run-time extent under a mask (see CpuThreadNest).
    Stmt compute = std::make_shared<IfThenElse>(inRange, makeBlock(std::move(computed)));
    compute = atPoint(chain, extents, flat, compute);

    // The updates are this pass's accesses, with no place in the program:
    // each element is the trash slot or one the combine's own checks let
    // through, in range by construction.
    std::vector<Stmt> updates;
    for (const StagedCheck &check : checks) {
      std::vector<Expr> values;
      for (const Buffer &value : check.values)
        values.push_back(load(value, {thread}));
      updates.push_back(
          std::make_shared<Check>(equal(load(check.failed, {thread}), makeInt(ScalarType::I32, 0)),
                                  check.check->message, std::move(values), check.check->source));
    }
    for (const StagedUpdate &update : staged)
      updates.push_back(std::make_shared<AtomicUpdate>(
          update.local, std::vector<Expr>{load(update.elements, {thread})}, update.op,
          update.values ? load(update.values, {thread}) : update.value));
    Stmt make = std::make_shared<IfThenElse>(inRange, makeBlock(std::move(updates)));

    Stmt roundBody = makeBlock({atThread(compute), std::make_shared<Barrier>(), atThread(make),
                                std::make_shared<Barrier>()});
    Expr trips = minOf(rounds, stridedTripCount(blockFirst, iterations, makeI64(kThreads)));
    Stmt loop = std::make_shared<For>(stepVar, makeI64(0), trips, ForKind::Serial, 0, roundBody,
                                      top.source);
    Expr stride = mul(blocks, makeI64(kThreads));
    return std::make_shared<LetStmt>(
        roundsVar, div(add(iterations, sub(stride, makeI64(1))), stride),
        std::make_shared<LetStmt>(startVar, mul(mul(block, rounds), makeI64(kThreads)), loop));
  }

  const PassParameters &parameters_;
  const PipelineTarget target_;
  const int64_t maxBlocks_;
  const IndexChecks &checks_;
  const RemarkReporter &remarks_;
};

} // namespace

Function privatizeCombines(Function function, const PassParameters &parameters,
                           PipelineTarget target, int multiprocessors,
                           const RemarkReporter &remarks) {
  std::optional<ProvenAccesses> proven;
  if (function.boundsChecked)
    proven = proveAccessesInBounds(function);
  IndexChecks checks{proven ? &*proven : nullptr, function.body, &function.arrayNamesAt, &remarks};
  function.body =
      CombinePrivatizer(parameters, target, multiprocessors, checks, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
