// The CPU performance model (see CpuModel.h).
#include "perf/CpuModel.h"

#include "ir/IRPrinter.h"
#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/Evaluate.h"
#include "perf/HostWalk.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <optional>
#include <ranges>
#include <set>
#include <tuple>

namespace loopc::perf {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

constexpr double kCacheLineBytes = 64;
constexpr double kPageBytes = 4096;
// The dependent steps of unrolled chains the out-of-order core holds waiting
// at once, fitted on the rows of tests/perf/cpu_measured.tsv (Zen 4's
// floating-point schedulers hold 64 operations): the vectors of a thread loop
// whose body is one chain of 25 multiply-adds (a 5 x 5 filter) overlap 1.6
// at a time, not all of them; chains interleaved in the body (two rows a
// thread) run side by side regardless.
constexpr double kWaitingChainSteps = 40;

using AccessKey = std::tuple<std::string, SourceLoc, bool>; // array, where, a store

// How the CPU runs one access of a kernel (codegen/CpuThreadNest.h): the
// threads of a block along x are a core's vector lanes, the thread loop
// moved inside the thread's loops, unless some access walks along a loop
// inside the thread the elements that differ from thread to thread (a row
// walked by each thread): then the loops stay inside the thread, and LLVM
// vectorizes the innermost one.
struct AccessClass {
  // Neither the same element for all lanes nor consecutive ones along the
  // loop that is vectorized: each lane loads its own element.
  bool gathered = false;
  // Of a gathered access: the block's threads that read consecutive
  // elements of the line one lane's element lies in (its threads along a
  // dimension the access walks contiguously, at most a line's elements),
  // among which that line is shared; and whether each lane's line lies on
  // a page of its own (lanes a page or more apart), which the block's
  // threads then reach through one page walk each.
  double lineSharers = 1;
  double rowRun = 1; // those threads, however many
  bool pagePerLane = false;
  // Walked by the loop inside the thread that runs it with a stride other
  // than 0 or 1, and not along x: each vector's step a new cache line when
  // the arrays are larger than the core's L2.
  bool columnWalk = false;
  // The same elements for every lane, walked by each lane in turn where
  // the loops stay inside the threads: read again by each lane.
  bool rereadByLanes = false;
  // A store of the element it read, at each iteration of a loop inside the
  // thread (not a reduction's): one dependent step after another, through
  // memory.
  bool recurrence = false;
  // Walked down a column by the loop inside the thread while the lanes
  // read along a row, each step a row at least a page further: a column
  // strip (a transposed matrix-vector product's), which streams at the
  // probe's strip rate once the arrays are larger than the last-level
  // cache.
  bool stripWalk = false;
  // The array's bytes at the run's sizes.
  double arrayBytes = 0;
  // Of an access the loop inside the thread moves: the bytes of the lines
  // one walk of that loop touches (its trips times a line, or the lines
  // of the block's lanes where they read along x), after which the walk
  // around it comes back to the same lines; 0 when its trip count is not
  // known.
  double walkBytes = 0;
  // Accumulators updated from their own last value at each iteration of
  // the loop around this access (the first access of that loop carries
  // them): the nanoseconds one step of the slowest waits for the one
  // before it, and how many vectors of such chains are in flight together.
  // `chainScalar`: the loop is the one the lanes would be vectorized along
  // and the update is not a reduction's, so LLVM cannot vectorize it: its
  // lanes' steps run one after another.
  double chainStepNs = 0;
  double chainVectors = 1;
  bool chainScalar = false;
  // The accesses at this place that step chains of their own: the copies of
  // a body jammed with an accumulator each (tile_registers' rows), in each
  // of the loops of that name (its tiles). Past them, the accesses of the
  // place are steps of the same chains (jam_serial_chains' shared steps).
  double chainAccesses = 1;
  // Read along a row by the vectorized loop inside each thread, a run of
  // `runElements` elements at a time, and the next run does not continue
  // where it ended (a row further down, as covariance's threads each read
  // part of every row): every run starts a stream anew, and its first
  // lines wait the cache's latency before the prefetchers run ahead.
  double runElements = 0;
  // How many accesses of the IR share this one's array, place and kind
  // (the profile adds their counts up: `s = s > x[i] ? s : x[i]`'s two).
  double accesses = 1;
};

// What the model reads from a kernel's IR besides its profile: how each
// access runs, and which share of its divisions and square roots LLVM
// computes once (the same value in several lets, as a vector's components
// each repeat `1 / sqrt(r2)`).
struct KernelFacts {
  std::map<AccessKey, AccessClass> classes;
  double dividerShare = 1;
};

// Whether `store` writes the element its value reads (`s = s + v`).
bool readsItsTarget(const Store &store) {
  class ReadsTarget : public IRVisitor {
  public:
    explicit ReadsTarget(const Store &store) : store_(store) {}
    bool found = false;

  protected:
    void visitLoad(const Load &load) override {
      found = found || (load.buffer == store_.buffer &&
                        std::ranges::equal(load.indices, store_.indices, sameExpr));
    }

  private:
    const Store &store_;
  } reads(store);
  reads.visit(store.value);
  return reads.found;
}

// The nanoseconds one step of an accumulation waits for the step before:
// a running maximum or minimum a compare-and-select (a max instruction),
// a sum of products an FMA (LLVM contracts `s + a * b`), anything else a
// dependent addition.
double chainStepNs(const CpuDevice &device, const Store &store) {
  const ExprNode &value = *store.value;
  if (value.kind == ExprNode::Kind::Select)
    return device.dependentMaxNs;
  if (const auto *call = value.as<Call>();
      call && (call->builtin == Builtin::Min || call->builtin == Builtin::Max))
    return device.dependentMaxNs;
  if (const auto *binary = value.as<Binary>();
      binary && (binary->op == BinaryOpKind::Add || binary->op == BinaryOpKind::Sub)) {
    auto product = [](const Expr &operand) {
      const ExprNode *node = operand.get();
      if (const auto *cast = node->as<Cast>())
        node = cast->operand.get();
      const auto *multiply = node->as<Binary>();
      return multiply && multiply->op == BinaryOpKind::Mul;
    };
    if (product(binary->lhs) || product(binary->rhs))
      return device.dependentFmaNs;
  }
  return device.dependentOpNs;
}

// The text of `expr` with the lets it reads replaced by their values: two
// lets that compute the same value read the same.
std::string expanded(const std::string &text, const std::map<std::string, std::string> &lets) {
  auto identifier = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  };
  std::string result;
  for (size_t i = 0; i < text.size();) {
    if (!identifier(text[i])) {
      result += text[i++];
      continue;
    }
    size_t end = i;
    while (end < text.size() && identifier(text[end]))
      ++end;
    std::string word = text.substr(i, end - i);
    auto found = lets.find(word);
    result += found == lets.end() ? word : "(" + found->second + ")";
    i = end;
  }
  return result;
}

KernelFacts classifyKernel(const CpuDevice &device, const KernelFunc &kernel,
                           const LaunchShape &shape, const std::map<std::string, int64_t> &values) {
  auto lookup = [&](const std::string &name) {
    auto found = values.find(name);
    return found == values.end() ? std::nullopt : std::optional<int64_t>(found->second);
  };
  class XThread : public IRVisitor {
  public:
    explicit XThread(const std::map<std::string, int64_t> &values) : bound_(values) {}
    const For *loop = nullptr;
    // Each loop's trip count with the loops and lets around it at the
    // middle of their ranges (a thread in the middle of the grid).
    std::map<std::string, double> trips;
    std::set<const Store *> accumulating; // stores of the element they read, not reductions
    // Registers updated from their own last value, by the loop inside a
    // thread they step along.
    std::vector<std::pair<std::string, const Store *>> chains;
    // The loops of each name holding chains: a tile_registers nest's
    // interior and edge tiles each have theirs, of which a block runs one.
    std::map<std::string, std::set<const For *>> chainLoops;
    // Divisions and square roots by the let-expanded text of their value,
    // and how many there are.
    std::set<std::string> distinctDividers;
    double dividers = 0;
    // Loops inside the x thread loop that LLVM unrolls whole with the
    // loops around them inside the thread: constant trips, at most 64
    // bodies together (codegen/CpuThreadNest.cpp keeps those inside), and
    // the bodies of the loops from the x thread loop down to each.
    std::map<std::string, double> unrolledInThread;
    // The block's thread loops.
    std::vector<const For *> threadLoops;

  protected:
    void visitFor(const For &node) override {
      if (node.forKind == ForKind::GpuThread && node.gpuDim == 0)
        loop = &node;
      if (node.forKind == ForKind::GpuThread)
        threadLoops.push_back(&node);
      auto lookup = [&](const std::string &name) {
        auto found = bound_.find(name);
        return found == bound_.end() ? std::nullopt : std::optional<int64_t>(found->second);
      };
      std::optional<int64_t> min = passes::evaluateInteger(*node.min, lookup);
      std::optional<int64_t> extent = passes::evaluateInteger(*node.extent, lookup);
      if (min && extent) {
        trips[node.var] = static_cast<double>(std::max<int64_t>(*extent, 0));
        bound_[node.var] = *min + std::max<int64_t>(*extent, 0) / 2;
      }
      loops_.push_back(&node);
      if (auto inX = std::ranges::find(loops_, loop); loop && inX != loops_.end()) {
        double bodies = 1;
        for (auto inner = std::next(inX); inner != loops_.end(); ++inner) {
          const auto *trips = (*inner)->extent->as<IntImm>();
          bodies *= trips ? static_cast<double>(trips->value) : 1e9;
        }
        if (bodies <= 64)
          unrolledInThread[node.var] = bodies;
      }
      IRVisitor::visitFor(node);
      loops_.pop_back();
    }
    void visitLetStmt(const LetStmt &node) override {
      auto lookup = [&](const std::string &name) {
        auto found = bound_.find(name);
        return found == bound_.end() ? std::nullopt : std::optional<int64_t>(found->second);
      };
      if (!isFloat(node.value->type))
        if (std::optional<int64_t> value = passes::evaluateInteger(*node.value, lookup))
          bound_[node.var] = *value;
      std::optional<std::string> saved;
      if (auto found = lets_.find(node.var); found != lets_.end())
        saved = found->second;
      lets_[node.var] = expanded(toString(node.value), lets_);
      IRVisitor::visitLetStmt(node);
      if (saved)
        lets_[node.var] = *saved;
      else
        lets_.erase(node.var);
    }
    void visitBinary(const Binary &node) override {
      if (isFloat(node.lhs->type) && (node.op == BinaryOpKind::Div || node.op == BinaryOpKind::Rem))
        divider(node);
      IRVisitor::visitBinary(node);
    }
    void visitCall(const Call &node) override {
      if (node.builtin == Builtin::Sqrt && isFloat(node.type))
        divider(node);
      IRVisitor::visitCall(node);
    }
    void visitStore(const Store &node) override {
      if (readsItsTarget(node)) {
        if (!node.reduction)
          accumulating.insert(&node);
        auto inX = std::ranges::find(loops_, loop);
        if (node.buffer->memory == MemorySpace::Register && loop && inX != loops_.end() &&
            std::next(inX) != loops_.end() && loops_.back()->forKind != ForKind::GpuThread &&
            loops_.back()->forKind != ForKind::GpuBlock) {
          chains.emplace_back(loops_.back()->var, &node);
          chainLoops[loops_.back()->var].insert(loops_.back());
        }
      }
      IRVisitor::visitStore(node);
    }

  private:
    void divider(const ExprNode &node) {
      dividers += 1;
      distinctDividers.insert(expanded(toString(Expr(Expr(), &node)), lets_));
    }
    std::vector<const For *> loops_;
    std::map<std::string, std::string> lets_;
    std::map<std::string, int64_t> bound_;
  } finder(values);
  finder.visit(kernel.body);
  KernelFacts facts;
  if (finder.dividers > 0)
    facts.dividerShare = static_cast<double>(finder.distinctDividers.size()) / finder.dividers;
  std::map<AccessKey, AccessClass> &classes = facts.classes;
  std::set<SourceLoc> accumulatingSources;
  for (const Store *store : finder.accumulating)
    accumulatingSources.insert(store->source.begin);
  std::vector<passes::BufferAccess> accesses = passes::collectAccesses(kernel.body);
  auto isStream = [](const passes::BufferAccess &access, const std::string &loop) {
    passes::Stride::Kind along = passes::strideAlong(access, loop).kind;
    return along == passes::Stride::Kind::Zero || along == passes::Stride::Kind::Contiguous;
  };
  auto innerLoopsOf = [&](const passes::BufferAccess &access) {
    std::vector<std::string> inner;
    auto inside = finder.loop ? std::ranges::find(access.enclosingLoops, finder.loop->var)
                              : access.enclosingLoops.end();
    if (inside != access.enclosingLoops.end())
      inner.assign(std::next(inside), access.enclosingLoops.end());
    return inner;
  };
  bool loopsStayInThreads =
      finder.loop && std::ranges::any_of(accesses, [&](const passes::BufferAccess &access) {
        return !isStream(access, finder.loop->var) &&
               std::ranges::any_of(innerLoopsOf(access), [&](const std::string &loop) {
                 return passes::strideAlong(access, loop).kind == passes::Stride::Kind::Contiguous;
               });
      });
  // The bytes an access moves from one iteration of `loop` to the next.
  auto strideBytes = [&](const passes::BufferAccess &access, const std::string &loop) {
    passes::Stride stride = passes::strideAlong(access, loop);
    double elements = static_cast<double>(stride.constant);
    if (stride.kind == passes::Stride::Kind::Symbolic)
      elements = static_cast<double>(passes::evaluateInteger(*stride.symbolic, lookup).value_or(0));
    return std::abs(elements) * static_cast<double>(scalarSize(access.buffer->element));
  };
  // The accumulators of each loop: the slowest step and how many there are.
  // (A reduction's steps, which LLVM may reassociate, count where the
  // lanes are threads; in a loop that is not vectorized, only the others.)
  struct Chains {
    double stepNs = 0, scalarStepNs = 0;
    std::set<std::string> accumulators;
  };
  std::map<std::string, Chains> chainsByLoop;
  for (const auto &[loop, store] : finder.chains) {
    Chains &chains = chainsByLoop[loop];
    chains.stepNs = std::max(chains.stepNs, chainStepNs(device, *store));
    if (!store->reduction)
      chains.scalarStepNs = std::max(chains.scalarStepNs, chainStepNs(device, *store));
    std::string accumulator = store->buffer->name; // a copy's own (acc.y1), not the program's
    for (const Expr &index : store->indices)
      accumulator += "[" + toString(index) + "]";
    chains.accumulators.insert(accumulator);
  }
  std::set<std::string> chainCarried;
  for (const passes::BufferAccess &access : accesses) {
    if (access.buffer->memory == MemorySpace::Register)
      continue;
    std::vector<std::string> innerLoops = innerLoopsOf(access);
    AccessClass kind;
    double bytes = static_cast<double>(scalarSize(access.buffer->element));
    for (const Expr &extent : access.buffer->shape)
      bytes *= static_cast<double>(
          std::max<int64_t>(passes::evaluateInteger(*extent, lookup).value_or(1), 0));
    kind.arrayBytes = bytes;
    std::optional<std::string> vectorLoop;
    if (loopsStayInThreads && !innerLoops.empty())
      vectorLoop = innerLoops.back();
    else if (finder.loop)
      vectorLoop = finder.loop->var;
    // The accumulators stepping along the loop around this access, counted
    // once for the loop. Where the lanes are threads, the vectors of the
    // thread loop each hold their own (the thread loop runs inside the
    // loop, or around a loop LLVM unrolled); where the loops stay inside
    // the threads and the loop is the vectorized one, a reduction's lanes
    // are spread over vectors LLVM interleaves (no wait), and any other
    // update keeps the loop from vectorizing: one lane's step after
    // another.
    if (!innerLoops.empty() && chainsByLoop.contains(innerLoops.back()) &&
        !chainCarried.contains(innerLoops.back())) {
      const std::string &loop = innerLoops.back();
      chainCarried.insert(loop);
      const Chains &chains = chainsByLoop.at(loop);
      bool alongVectors = loopsStayInThreads && vectorLoop == loop;
      if (!alongVectors) {
        // The thread loop runs around a nest of few constant trips LLVM
        // unrolls into straight-line code (its x threads each keep their
        // accumulator in a register), or inside a loop of the thread: all
        // of the block's threads each step. Their accumulators live in
        // per-thread slots, but LLVM unrolls the vectorized thread loop
        // whole and keeps each vector's slots in a register across the
        // loop (the `.promoted` values of trmm's, dot's and matmul's
        // kernels): a step waits for the operation alone.
        auto unrolledBodies = finder.unrolledInThread.find(loop);
        bool unrolled = unrolledBodies != finder.unrolledInThread.end();
        double threads = unrolled ? static_cast<double>(shape.block[0])
                                  : static_cast<double>(shape.threadsPerBlock());
        kind.chainStepNs = chains.stepNs;
        double accumulators = static_cast<double>(chains.accumulators.size());
        double vectors = std::ceil(threads / device.vectorLanes);
        // Unrolled, a vector's chains are straight-line code: the next
        // vector's overlap them only as far as the core holds their steps.
        if (unrolled)
          vectors = std::min(
              vectors, std::max(1.0, kWaitingChainSteps / (unrolledBodies->second * accumulators)));
        kind.chainVectors = vectors * accumulators;
        kind.chainAccesses = accumulators * static_cast<double>(finder.chainLoops.at(loop).size());
      } else if (chains.scalarStepNs > 0) {
        kind.chainStepNs = chains.scalarStepNs;
        kind.chainScalar = true;
      }
    }
    // Accesses of one array at one place are one line of the profile:
    // what one of them carries, the line carries.
    auto keep = [&](AccessClass kind) {
      AccessKey key{access.buffer->nameInMessages(), access.source.begin, access.isStore};
      if (auto found = classes.find(key); found != classes.end()) {
        const AccessClass &before = found->second;
        kind.accesses = before.accesses + 1;
        if (before.chainStepNs > 0 && kind.chainStepNs == 0) {
          kind.chainStepNs = before.chainStepNs;
          kind.chainVectors = before.chainVectors;
          kind.chainScalar = before.chainScalar;
          kind.chainAccesses = before.chainAccesses;
        }
      }
      classes[key] = kind;
    };
    if (access.buffer->memory != MemorySpace::Global) {
      keep(kind);
      continue;
    }
    // An element the innermost loop around it does not move is loaded
    // before that loop (LLVM hoists it), whatever the lanes do.
    bool hoisted =
        !innerLoops.empty() && vectorLoop != innerLoops.back() &&
        passes::strideAlong(access, innerLoops.back()).kind == passes::Stride::Kind::Zero;
    kind.gathered = vectorLoop && !isStream(access, *vectorLoop) && !hoisted;
    if (kind.gathered) {
      double element = static_cast<double>(scalarSize(access.buffer->element));
      for (const For *thread : finder.threadLoops)
        if (thread != finder.loop &&
            passes::strideAlong(access, thread->var).kind == passes::Stride::Kind::Contiguous)
          kind.rowRun = std::max(kind.rowRun, static_cast<double>(shape.block[thread->gpuDim]));
      kind.lineSharers = std::min(kind.rowRun, kCacheLineBytes / element);
      kind.pagePerLane = strideBytes(access, *vectorLoop) >= kPageBytes;
    }
    kind.columnWalk = !kind.gathered && !innerLoops.empty() && vectorLoop != innerLoops.back() &&
                      !isStream(access, innerLoops.back()) &&
                      passes::strideAlong(access, *vectorLoop).kind == passes::Stride::Kind::Zero;
    kind.rereadByLanes =
        loopsStayInThreads && !innerLoops.empty() &&
        passes::strideAlong(access, finder.loop->var).kind == passes::Stride::Kind::Zero;
    kind.recurrence =
        access.isStore && !innerLoops.empty() &&
        accumulatingSources.contains(access.source.begin) &&
        passes::strideAlong(access, innerLoops.back()).kind == passes::Stride::Kind::Zero;
    if (!innerLoops.empty() && finder.trips.contains(innerLoops.back()) &&
        passes::strideAlong(access, innerLoops.back()).kind != passes::Stride::Kind::Zero) {
      double stepBytes = kCacheLineBytes;
      if (finder.loop &&
          passes::strideAlong(access, finder.loop->var).kind == passes::Stride::Kind::Contiguous)
        stepBytes *=
            std::ceil(static_cast<double>(shape.block[0]) *
                      static_cast<double>(scalarSize(access.buffer->element)) / kCacheLineBytes);
      kind.walkBytes = finder.trips.at(innerLoops.back()) * stepBytes;
    }
    kind.stripWalk =
        !loopsStayInThreads && finder.loop && !innerLoops.empty() &&
        passes::strideAlong(access, finder.loop->var).kind == passes::Stride::Kind::Contiguous &&
        strideBytes(access, innerLoops.back()) >= kPageBytes;
    if (loopsStayInThreads && !access.isStore && !innerLoops.empty() &&
        vectorLoop == innerLoops.back() &&
        passes::strideAlong(access, innerLoops.back()).kind == passes::Stride::Kind::Contiguous &&
        finder.trips.contains(innerLoops.back())) {
      double run = finder.trips.at(innerLoops.back());
      const std::string &around =
          innerLoops.size() >= 2 ? innerLoops[innerLoops.size() - 2] : finder.loop->var;
      double element = static_cast<double>(scalarSize(access.buffer->element));
      // (A run the loop around reads again stays in L1.)
      double next = strideBytes(access, around);
      if (run > 0 && next != 0 && next != run * element)
        kind.runElements = run;
    }
    keep(kind);
  }
  return facts;
}

// Every loop of a kernel, as the code generator keeps it (a loop the model
// walks once, weighted by its trip count).
std::map<std::string, CompiledLoop> everyLoopKept(const KernelFunc &kernel) {
  std::map<std::string, CompiledLoop> kept;
  for (const auto &[loop, key] : ir::loopKeys(kernel.body))
    kept[key] = CompiledLoop{.globalLoads = 1, .instructions = 0, .constantTrips = 0};
  return kept;
}

// The floating-point and integer operations of an expression, loads not
// counted; a math routine counts as 10.
double operationsOf(const Expr &expr) {
  class Count : public IRVisitor {
  public:
    double operations = 0;

  protected:
    void visitBinary(const Binary &node) override {
      operations += 1;
      IRVisitor::visitBinary(node);
    }
    void visitUnary(const Unary &node) override {
      operations += 1;
      IRVisitor::visitUnary(node);
    }
    void visitSelect(const ir::Select &node) override {
      operations += 1;
      IRVisitor::visitSelect(node);
    }
    void visitCall(const Call &node) override {
      operations += node.isMathRoutine() ? 10 : 1;
      IRVisitor::visitCall(node);
    }
  } count;
  count.visit(expr);
  return count.operations;
}

double secondsOf(double bytes, double gbs) { return gbs > 0 ? bytes / (gbs * 1e9) : 0; }

CpuLaunchPrediction predictCpuLaunch(const CpuDevice &device, const KernelProfile &profile,
                                     const KernelFacts &facts);

// The CPU's view of the host code: launches predicted per kernel and
// geometry on the thread pool; the statements between them costed one by
// one (see CpuModel.h).
class CpuHostWalk : public HostWalk {
public:
  CpuHostWalk(const CpuDevice &device, const Function &function,
              const std::map<std::string, int64_t> &values)
      : HostWalk(function, values), device_(device) {}

  CpuProgramPrediction predict() {
    result_.device = device_.description;
    run();
    result_.approximate |= approximate();
    for (const CpuLaunchPrediction &prediction : std::views::values(predictions_)) {
      result_.launches.push_back(prediction);
      result_.seconds += prediction.seconds * prediction.launches;
    }
    std::ranges::stable_sort(result_.launches, {}, [](const CpuLaunchPrediction &launch) {
      return launch.profile.kernel;
    });
    result_.seconds += result_.hostSeconds;
    return result_;
  }

protected:
  // A temporary of the host code starts zeroed: a fill of its bytes.
  void allocated(double bytes, double times) override {
    addHost(0, 0, secondsOf(bytes, bandwidthFor(bytes)) * times);
  }

  void stored(const Store &node, double times) override { store(node, times); }

  void launched(const LaunchSite &site, double times) override {
    auto found = predictions_.find(site.key);
    if (found == predictions_.end()) {
      KernelProfile profile =
          profileKernel(site.kernel, site.shape, site.values, everyLoopKept(site.kernel));
      result_.approximate |= profile.approximate;
      found = predictions_
                  .emplace(site.key, predictCpuLaunch(device_, profile,
                                                      classifyKernel(device_, site.kernel,
                                                                     site.shape, site.values)))
                  .first;
      found->second.launches = 0;
    }
    found->second.launches += times;
  }

private:
  // How an access of a host statement walks the innermost loop around it.
  enum class Walk { Invariant, Contiguous, Strided };
  struct Access {
    const BufferInfo *buffer;
    Walk walk;
    bool sameAsStored;
    const std::vector<Expr> *indices = nullptr;
    // Per loop around the statement, outermost first: whether it moves the
    // element accessed.
    std::vector<bool> movedBy = {};
    // Of a strided walk: whether the loop around the innermost one moves
    // along a row (the next element of the line, nussinov's table[k][j]
    // walked down k for each j), so that each walk reads again the lines
    // the walk before it brought.
    bool linesReadByNextWalk = false;
  };

  double footprint(const BufferInfo &buffer) const {
    double bytes = static_cast<double>(scalarSize(buffer.element));
    for (const Expr &extent : buffer.shape)
      bytes *= static_cast<double>(std::max<int64_t>(evaluate(*extent).value_or(1), 0));
    return bytes;
  }

  double bandwidthFor(double bytes) const { return device_.bandwidthFor(bytes, 1); }

  void addHost(double compute, double latency, double memory) {
    result_.hostComputeSeconds += compute;
    result_.hostLatencySeconds += latency;
    result_.hostMemorySeconds += memory;
    result_.hostSeconds += std::max(compute + latency, memory);
  }

  // The chains of one loop body: its statements (outside inner loops) that
  // update an element the loop does not move from its own last value, and
  // whether there are several whose loads pair up side by side (the same
  // element, or neighbours in a row: one apart in the last index by a
  // constant, as jam_serial_chains' copies of a step read).
  struct ChainGroup {
    int recurrences = 1;
    bool sideBySide = false;
  };

  // What a statement's cost needs that is the same at every execution: its
  // accesses and how the innermost loop around walks each, the loops around
  // that move each (outermost first), its operations, and whether it is a
  // recurrence and of which chains. The walk visits a statement at many
  // points of its loops' ranges (a jammed LU's 16 chains, 177 thousand
  // times at N = 1000), where only the trip counts and ranges change.
  struct StatementShape {
    std::vector<Access> accesses;
    double operations = 0;
    bool recurrence = false;
    // Every access walks a row or stays: LLVM vectorizes the loop unless
    // its run-time overlap check fails.
    bool vectorizable = false;
    const ChainGroup *chains = nullptr;
  };

  const StatementShape &shapeOf(const Store &node) {
    auto [found, inserted] = shapes_.try_emplace({&node, enclosingLoops()});
    if (!inserted)
      return found->second;
    StatementShape &shape = found->second;
    passes::AffineScope scope;
    for (const For *loop : enclosingLoops())
      scope.bindLoop(loop->var);
    for (const auto &[var, value] : enclosingLets())
      scope.bindLet(var, value);
    const For *innermost = enclosingLoops().empty() ? nullptr : enclosingLoops().back();
    auto walkOf = [&](const std::vector<Expr> &indices) {
      if (!innermost)
        return Walk::Invariant;
      bool contiguous = true, invariant = true;
      for (size_t d = 0; d < indices.size(); ++d) {
        passes::AffineIndex index = scope.analyze(indices[d]);
        int64_t coefficient = index.coefficient(innermost->var);
        if (!index.isAffine() && index.dependsOn(innermost->var))
          return Walk::Strided;
        if (coefficient != 0)
          invariant = false;
        // A walk backwards along a row vectorizes too (a reversing
        // shuffle per vector).
        if (coefficient != 0 && !(d + 1 == indices.size() && std::abs(coefficient) == 1))
          contiguous = false;
      }
      return invariant ? Walk::Invariant : contiguous ? Walk::Contiguous : Walk::Strided;
    };
    for (const Load *load : loadsIn(node.value)) {
      bool same = load->buffer == node.buffer && load->indices.size() == node.indices.size() &&
                  std::ranges::equal(load->indices, node.indices, sameExpr);
      shape.accesses.push_back({load->buffer.get(), walkOf(load->indices), same, &load->indices});
    }
    Walk stored = walkOf(node.indices);
    shape.accesses.push_back({node.buffer.get(), stored, false});
    const For *around =
        enclosingLoops().size() >= 2 ? enclosingLoops()[enclosingLoops().size() - 2] : nullptr;
    for (Access &access : shape.accesses) {
      for (const For *loop : enclosingLoops())
        access.movedBy.push_back(access.indices &&
                                 std::ranges::any_of(*access.indices, [&](const Expr &index) {
                                   return scope.analyze(index).dependsOn(loop->var);
                                 }));
      if (access.walk == Walk::Strided && around && access.indices) {
        const std::vector<Expr> &indices = *access.indices;
        bool alongRow = true;
        for (size_t d = 0; d < indices.size(); ++d) {
          passes::AffineIndex index = scope.analyze(indices[d]);
          int64_t wanted = d + 1 == indices.size() ? 1 : 0;
          alongRow &= index.isAffine() && std::abs(index.coefficient(around->var)) == wanted;
        }
        access.linesReadByNextWalk = alongRow;
      }
    }
    shape.operations = operationsOf(node.value) + 1;
    // An element updated at every iteration from its own last value is a
    // recurrence, one dependent step after another, unless the operation
    // is a reduction's, which the code generator spreads over vector lanes.
    shape.recurrence = innermost && stored == Walk::Invariant && !node.reduction &&
                       std::ranges::any_of(shape.accesses, [](const Access &access) {
                         return access.sameAsStored;
                       });
    shape.vectorizable = innermost && !shape.recurrence &&
                         std::ranges::all_of(shape.accesses, [](const Access &access) {
                           return access.walk != Walk::Strided;
                         });
    if (shape.recurrence)
      shape.chains = &chainGroupOf(*innermost);
    return shape;
  }

  // One statement of the host code, run `times` times.
  void store(const Store &node, double times) {
    const StatementShape &shape = shapeOf(node);
    bool vectorized = shape.vectorizable && !overlapCheckFails(node, shape.accesses);
    // Several chains in one loop body (jam_serial_chains runs several
    // iterations' chains together) wait at the same time: one dependent
    // step an iteration for all of them. Where their loads lie side by
    // side, LLVM's SLP vectorizer makes their steps one vector operation,
    // whose loads share cache lines.
    const ChainGroup *chains = shape.chains;
    bool sideBySide = chains && chains->sideBySide;
    // A scalar iteration that is no chain's step issues its loads and its
    // store as instructions beside the arithmetic (an LU's row update whose
    // overlap check fails); a chain's loads issue while its step waits.
    double scalarOperations =
        shape.operations + (shape.recurrence ? 0.0 : static_cast<double>(shape.accesses.size()));
    double compute = vectorized || sideBySide
                         ? shape.operations * 2 / (device_.vectorGflopsPerThread * 1e9)
                         : scalarOperations / (device_.scalarGopsPerThread * 1e9);
    // The chains' steps issue while they wait: an iteration takes the
    // longer of their operations and one dependent step (an FMA's latency
    // for a sum of products, which LLVM contracts).
    double latency =
        shape.recurrence
            ? std::max(0.0, chainStepNs(device_, node) * 1e-9 - compute * chains->recurrences) /
                  chains->recurrences
            : 0;
    double memory = 0;
    for (const Access &access : shape.accesses) {
      if (access.walk == Walk::Invariant)
        continue;
      double arrayBytes = footprint(*access.buffer);
      double element = static_cast<double>(scalarSize(access.buffer->element));
      // Down a column of an array the core's L2 cannot hold, each element
      // brings its own cache line (unless side-by-side chains share it).
      double bytes = access.walk == Walk::Strided && !sideBySide &&
                             arrayBytes > static_cast<double>(device_.l2BytesPerThread)
                         ? kCacheLineBytes
                         : element;
      double stride = access.walk == Walk::Strided && !sideBySide ? kCacheLineBytes : element;
      double held = reuseFootprint(access, stride, arrayBytes);
      if (access.linesReadByNextWalk)
        if (std::optional<int64_t> trips = evaluate(*enclosingLoops().back()->extent))
          held =
              std::min(held, kCacheLineBytes * static_cast<double>(std::max<int64_t>(*trips, 1)));
      memory += secondsOf(bytes, bandwidthFor(held));
    }
    addHost(compute * times, latency * times, memory * times);
  }

  // What an access touches between two reads of one element, which decides
  // the cache that serves it: the bytes of its walk over the loops inside
  // the innermost enclosing loop that does not move it (which carries its
  // reuse: an LU's row A[i][k] re-read for every j); the whole array when
  // every enclosing loop moves it, or a trip count is not known.
  double reuseFootprint(const Access &access, double bytesPerStep, double arrayBytes) const {
    if (!access.indices)
      return arrayBytes;
    double bytes = bytesPerStep;
    const std::vector<const For *> &loops = enclosingLoops();
    for (size_t l = loops.size(); l-- > 0;) {
      if (!access.movedBy[l])
        return std::min(bytes, arrayBytes);
      std::optional<int64_t> trips = evaluate(*loops[l]->extent);
      if (!trips)
        return arrayBytes;
      bytes *= static_cast<double>(std::max<int64_t>(*trips, 1));
    }
    return arrayBytes;
  }

  const ChainGroup &chainGroupOf(const For &loop) {
    auto [found, inserted] = chainGroups_.try_emplace(&loop);
    if (!inserted)
      return found->second;
    class Statements : public IRVisitor {
    public:
      std::vector<const Store *> stores;

    protected:
      void visitFor(const For &) override {}
      void visitStore(const Store &node) override { stores.push_back(&node); }
    } statements;
    statements.visit(loop.body);
    std::vector<const Store *> chains;
    for (const Store *store : statements.stores) {
      bool moves = std::ranges::any_of(
          store->indices, [&](const Expr &index) { return freeVars(index).contains(loop.var); });
      if (!moves && readsStoredElement(*store))
        chains.push_back(store);
    }
    ChainGroup &group = found->second;
    group.recurrences = std::max<int>(1, static_cast<int>(chains.size()));
    auto neighbours = [](const Load &a, const Load &b) {
      if (a.buffer != b.buffer || a.indices.size() != b.indices.size())
        return false;
      for (size_t d = 0; d < a.indices.size(); ++d) {
        if (sameExpr(a.indices[d], b.indices[d]))
          continue;
        // A constant apart: every variable cancels.
        Expr difference = sub(toI64(a.indices[d]), toI64(b.indices[d]));
        passes::AffineScope scope;
        for (const std::string &var : freeVars(difference))
          scope.bindLoop(var);
        passes::AffineIndex apart = scope.analyze(difference);
        if (d + 1 != a.indices.size() || !apart.isAffine() || !apart.coefficients.empty() ||
            (apart.rest && !apart.rest->as<IntImm>()))
          return false;
      }
      return true;
    };
    const int kSideBySideChains = 4;
    if (chains.size() >= kSideBySideChains) {
      std::vector<const Load *> first = loadsIn(chains[0]->value);
      group.sideBySide = std::ranges::all_of(chains, [&](const Store *chain) {
        std::vector<const Load *> loads = loadsIn(chain->value);
        if (loads.size() != first.size())
          return false;
        for (size_t l = 0; l < loads.size(); ++l) {
          bool ownElement =
              loads[l]->buffer == chain->buffer && first[l]->buffer == chains[0]->buffer;
          if (!ownElement && !neighbours(*loads[l], *first[l]))
            return false;
        }
        return true;
      });
    }
    return group;
  }

  // The element offset of `indices` into `buffer`, with the given loop
  // variables at the given values (the others, and lets, as bound now).
  std::optional<int64_t> offsetAt(const BufferInfo &buffer, const std::vector<Expr> &indices,
                                  const std::map<std::string, int64_t> &at) const {
    std::map<std::string, Expr> lets, replacements;
    for (const auto &[var, value] : enclosingLets())
      lets[var] = value;
    for (const auto &[var, value] : at)
      replacements[var] = makeI64(value);
    int64_t offset = 0;
    for (size_t d = 0; d < indices.size(); ++d) {
      std::optional<int64_t> index =
          evaluate(*substitute(substituteLets(indices[d], lets), replacements));
      std::optional<int64_t> extent =
          d < buffer.shape.size() ? evaluate(*buffer.shape[d]) : std::optional<int64_t>(1);
      if (!index || !extent)
        return std::nullopt;
      offset = offset * *extent + *index;
    }
    return offset;
  }

  // Whether LLVM's run-time overlap check sends the vectorized loop around
  // the statement to its scalar version. The check compares the elements
  // the loop stores with those it reads from the same array, and LLVM
  // hoists it out of the loop around: a read's range is widened over that
  // loop's whole range. A read of another element of the row being stored
  // (an LU's pivot `A[i][k]` in `A[i][j] -= A[i][k] * A[k][j]` along j)
  // then always overlaps the stored range, and the loop runs scalar.
  bool overlapCheckFails(const Store &node, const std::vector<Access> &accesses) const {
    const std::vector<const For *> &loops = enclosingLoops();
    if (loops.empty())
      return false;
    const For &inner = *loops.back();
    const For *outer = loops.size() >= 2 ? loops[loops.size() - 2] : nullptr;
    // The first and last values of the inner loop (the outer one at
    // `outerValue`, or as bound now); an empty one's bounds still give the
    // addresses the widened check computes.
    auto innerRange =
        [&](std::optional<int64_t> outerValue) -> std::optional<std::pair<int64_t, int64_t>> {
      std::map<std::string, Expr> replacements;
      if (outerValue)
        replacements[outer->var] = makeI64(*outerValue);
      std::optional<int64_t> min = evaluate(*substitute(inner.min, replacements));
      std::optional<int64_t> extent = evaluate(*substitute(inner.extent, replacements));
      if (!min || !extent)
        return std::nullopt;
      return std::pair{*min, *min + std::max<int64_t>(*extent, 1) - 1};
    };
    auto stored = innerRange(std::nullopt);
    if (!stored)
      return false;
    std::optional<int64_t> storeFirst =
        offsetAt(*node.buffer, node.indices, {{inner.var, stored->first}});
    std::optional<int64_t> storeLast =
        offsetAt(*node.buffer, node.indices, {{inner.var, stored->second}});
    if (!storeFirst || !storeLast)
      return false;
    int64_t storeLow = std::min(*storeFirst, *storeLast),
            storeHigh = std::max(*storeFirst, *storeLast);
    std::vector<std::optional<int64_t>> outerValues = {std::nullopt};
    if (outer) {
      std::optional<int64_t> min = evaluate(*outer->min), extent = evaluate(*outer->extent);
      if (min && extent && *extent > 0)
        outerValues = {*min, *min + *extent - 1};
    }
    for (const Access &access : accesses) {
      if (access.buffer != node.buffer.get() || access.sameAsStored || !access.indices)
        continue;
      std::optional<int64_t> low, high;
      for (std::optional<int64_t> outerValue : outerValues) {
        auto range = innerRange(outerValue);
        if (!range)
          continue;
        for (int64_t innerValue : {range->first, range->second}) {
          std::map<std::string, int64_t> at = {{inner.var, innerValue}};
          if (outerValue)
            at[outer->var] = *outerValue;
          std::optional<int64_t> offset = offsetAt(*access.buffer, *access.indices, at);
          if (!offset)
            return false;
          low = std::min(low.value_or(*offset), *offset);
          high = std::max(high.value_or(*offset), *offset);
        }
      }
      if (low && high && *low <= storeHigh && storeLow <= *high)
        return true;
    }
    return false;
  }

  const CpuDevice &device_;
  std::map<const For *, ChainGroup> chainGroups_;
  std::map<std::pair<const Store *, std::vector<const For *>>, StatementShape> shapes_;
  std::map<std::string, CpuLaunchPrediction> predictions_;
  CpuProgramPrediction result_;
};

CpuLaunchPrediction predictCpuLaunch(const CpuDevice &device, const KernelProfile &profile,
                                     const KernelFacts &facts) {
  CpuLaunchPrediction prediction;
  prediction.profile = profile;
  // The lanes' floating-point operations (a warp instruction is 32 of
  // them) at the vector rate (an f64 lane costs two f32 lanes; the index
  // arithmetic the GPU repeats per thread is hoisted out of the lanes here);
  // a gathered element is loaded lane by lane, at the scalar rate; a
  // recurrence waits a dependent operation a step for each vector, and so
  // does each lane's combine into an element (a read-modify-write, which
  // waits for the last one to the same element).
  // Divisions and square roots go to the divider, a unit of their own far
  // slower than the FMA pipes, which works beside them: the slower of the
  // two bounds. LLVM computes a value several lets repeat once.
  // A math routine (exp, log, ...) is a call of the vector math library
  // for `mathLanes` lanes; exp's time as probed, the others in proportion
  // to their instructions (exp counts 8).
  // The profile counts warp instructions: a block of fewer than 32
  // threads (fuse_with_lag's one thread a chunk, its loops vectorized by
  // LLVM) fills that many lanes of each.
  double lanesPerWarp =
      static_cast<double>(std::clamp<int64_t>(profile.launch.threadsPerBlock(), 1, 32));
  double laneOperations = std::max(profile.fp32Instructions + 2 * profile.fp64Instructions -
                                       profile.dividerInstructions - profile.routineInstructions,
                                   0.0) *
                          lanesPerWarp;
  double routineSeconds = profile.routineInstructions / 8 * lanesPerWarp /
                          std::max(device.mathLanes, 1) * device.vectorExpNs * 1e-9;
  double dividerSeconds =
      (profile.floatDivides * device.vectorDivideNs + profile.squareRoots * device.vectorSqrtNs) *
      facts.dividerShare * 32 / device.vectorLanes * 1e-9;
  // An update of an element the data picks (a histogram's bin) is a
  // scatter whose lanes may collide: LLVM does not vectorize its thread
  // loop, and the operations between the same barriers run at the scalar
  // rate (a division or square root as one of them: the divider overlaps
  // them one lane at a time); privatize_combines' staged rounds leave only
  // the updates there.
  double scatteredLaneOperations = std::max(profile.scatteredInstructions, 0.0) * lanesPerWarp;
  double scalarOperations =
      scatteredLaneOperations + profile.scatteredDividerOperations * facts.dividerShare * 32;
  laneOperations = std::max(laneOperations - scatteredLaneOperations, 0.0);
  if (double divides = profile.floatDivides + profile.squareRoots; divides > 0)
    dividerSeconds *= std::max(1 - profile.scatteredDividerOperations / divides, 0.0);
  bool scatters = std::ranges::any_of(profile.accesses, [](const AccessProfile &access) {
    return access.kind == AccessProfile::Kind::Atomic && !access.addressesKnown;
  });
  if (scatters && scalarOperations >= laneOperations) {
    prediction.vectorized = false;
    prediction.scalarBecause = "updates scattered by data";
  }
  double gatheredLoads = 0, lines = 0, rereadBytes = 0, dependentSteps = 0, chainSeconds = 0;
  // The arrays' elements once, and where they are held: the level whose
  // size their footprint fits serves every byte moved; the part of them a
  // column strip walks, at the strip rate once they exceed the last-level
  // cache.
  double footprint = profile.compulsoryReadBytes + profile.compulsoryWriteBytes;
  double bytes = footprint, stripBytes = 0, runStarts = 0, pageWalks = 0;
  // The lines one walk of the loops inside a thread touches, by all its
  // accesses: what a core holds between two walks over the same lines
  // (covariance's columns, walked again for each of a thread's rows), or
  // the arrays' footprint where a trip count is unknown.
  double walkBytes = 0;
  bool walksKnown = true;
  bool beyondCache = footprint > static_cast<double>(device.lastLevelCacheBytes);
  std::set<std::string> stripArrays;
  for (const AccessProfile &access : profile.accesses) {
    auto found = facts.classes.find(
        {access.array, access.source.begin, access.kind != AccessProfile::Kind::Load});
    if (access.kind == AccessProfile::Kind::Atomic)
      dependentSteps += access.activeLanes;
    if (found == facts.classes.end())
      continue;
    const AccessClass &kind = found->second;
    // An accumulation's steps, one per lane and iteration: where its loop
    // cannot be vectorized, each waits for the one before; else the
    // vectors in flight share the wait.
    if (kind.chainStepNs > 0) {
      if (kind.chainScalar) {
        prediction.vectorized = false;
        prediction.scalarBecause = "an update waits for the last";
      }
      double steps =
          access.activeLanes / kind.accesses * std::min(kind.accesses, kind.chainAccesses);
      double vectorSteps =
          kind.chainScalar ? steps : steps / device.vectorLanes / std::max(kind.chainVectors, 1.0);
      chainSeconds += vectorSteps * kind.chainStepNs * 1e-9;
    }
    if (access.memory != MemorySpace::Global)
      continue;
    walkBytes += kind.walkBytes;
    if (kind.gathered || kind.columnWalk || kind.rereadByLanes)
      walksKnown &= kind.walkBytes > 0;
    if (kind.gathered) {
      prediction.vectorized = false;
      prediction.scalarBecause = "lanes gather";
      gatheredLoads += access.activeLanes;
      lines += access.activeLanes / kind.lineSharers;
      if (kind.pagePerLane && beyondCache)
        pageWalks += access.activeLanes / kind.rowRun;
    }
    if (kind.columnWalk)
      lines += access.activeLanes / device.vectorLanes;
    // An array every lane walks again stays in the core's caches when it
    // fits its L2: only one larger brings its elements again.
    if (kind.rereadByLanes && kind.arrayBytes > static_cast<double>(device.l2BytesPerThread))
      rereadBytes += access.activeLanes * access.elementBytes;
    if (kind.recurrence)
      dependentSteps += access.activeLanes / device.vectorLanes;
    if (kind.runElements > 0 && footprint > static_cast<double>(device.l2BytesPerThread))
      runStarts += access.activeLanes / kind.accesses / kind.runElements;
    if (kind.stripWalk && beyondCache && device.stripGBs > 0 &&
        stripArrays.insert(access.array).second)
      stripBytes += std::min(kind.arrayBytes, access.activeLanes * access.elementBytes);
  }
  bytes -= std::min(stripBytes, bytes);
  // Elements gathered lane by lane, or a column walked, bring a cache line
  // each once the arrays do not fit the core's L2 (each lane's element of a
  // transpose's column is on a page of its own); so do the elements each
  // lane reads again in its own walk.
  double lineBytes = footprint > static_cast<double>(device.l2BytesPerThread)
                         ? lines * kCacheLineBytes + rereadBytes
                         : 0;
  // Where they come from: the level that holds a walk's lines on every
  // core, or the arrays.
  auto lineGBs = [&](int threadCount) {
    double held = walksKnown ? std::min(walkBytes * threadCount, footprint) : footprint;
    return device.bandwidthFor(held, threadCount);
  };
  double operationSeconds = scalarOperations / (device.scalarGopsPerThread * 1e9) +
                            laneOperations * 2 / (device.vectorGflopsPerThread * 1e9);
  double throughputOneThread = std::max(operationSeconds, dividerSeconds) + routineSeconds +
                               gatheredLoads / (device.scalarGopsPerThread * 1e9) +
                               dependentSteps * device.dependentOpNs * 1e-9;
  // Out-of-order execution overlaps the chains' waits with the other
  // work: the longer of the two.
  double computeOneThread = std::max(throughputOneThread, chainSeconds);
  // Runs read from beyond the core's L2 that start anew wait the
  // last-level cache's latency each (its lower bound where they come from
  // DRAM).
  // So does each page walk of a gather whose lanes' rows lie a page or
  // more apart, once the arrays are beyond the last-level cache (their
  // pages beyond what the TLB holds): one per lane's row and block.
  double runStartSeconds = (runStarts + pageWalks) * device.cacheLatencyNs * 1e-9;
  double memoryOneThread = secondsOf(bytes, device.bandwidthFor(footprint, 1)) +
                           secondsOf(lineBytes, lineGBs(1)) +
                           secondsOf(stripBytes, device.stripGBsOneThread) + runStartSeconds;
  double aloneSeconds = std::max(computeOneThread, memoryOneThread);
  double threads = std::clamp<double>(static_cast<double>(profile.launch.blocks()), 1,
                                      static_cast<double>(device.threads));
  prediction.alone = threads == 1 || aloneSeconds < device.inlineBelowMicroseconds * 1e-6;
  if (prediction.alone) {
    prediction.computeSeconds = computeOneThread;
    prediction.memorySeconds = memoryOneThread;
    prediction.overheadSeconds = device.launchAloneMicroseconds * 1e-6;
  } else {
    prediction.computeSeconds = computeOneThread / threads;
    prediction.memorySeconds =
        secondsOf(bytes, device.bandwidthFor(footprint, static_cast<int>(threads))) +
        secondsOf(lineBytes, lineGBs(static_cast<int>(threads))) +
        secondsOf(stripBytes, threads >= device.threads ? device.stripGBs
                                                        : device.stripGBsOneThread * threads) +
        runStartSeconds / threads;
    prediction.overheadSeconds = device.launchSharedMicroseconds * 1e-6;
  }
  double work = std::max(prediction.computeSeconds, prediction.memorySeconds);
  prediction.seconds = work + prediction.overheadSeconds;
  prediction.bound = prediction.overheadSeconds > work                       ? "launch"
                     : prediction.computeSeconds >= prediction.memorySeconds ? "compute"
                                                                             : "memory";
  return prediction;
}

} // namespace

CpuProgramPrediction predictCpuProgram(const CpuDevice &device, const Function &function,
                                       const std::map<std::string, int64_t> &values) {
  return CpuHostWalk(device, function, values).predict();
}

} // namespace loopc::perf
