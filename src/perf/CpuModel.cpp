// The CPU performance model (see CpuModel.h).
#include "perf/CpuModel.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "perf/HostWalk.h"

#include <algorithm>
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
};

using AccessKey = std::tuple<std::string, SourceLoc, bool>; // array, where, a store

std::map<AccessKey, AccessClass> classifyAccesses(const KernelFunc &kernel) {
  class XThread : public IRVisitor {
  public:
    const For *loop = nullptr;
    std::set<const Store *> accumulating; // stores of the element they read, not reductions

  protected:
    void visitFor(const For &node) override {
      if (node.forKind == ForKind::GpuThread && node.gpuDim == 0)
        loop = &node;
      IRVisitor::visitFor(node);
    }
    void visitStore(const Store &node) override {
      if (!node.reduction) {
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
        } reads(node);
        reads.visit(node.value);
        if (reads.found)
          accumulating.insert(&node);
      }
      IRVisitor::visitStore(node);
    }
  } finder;
  finder.visit(kernel.body);
  std::map<AccessKey, AccessClass> classes;
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
  for (const passes::BufferAccess &access : accesses) {
    if (access.buffer->memory != MemorySpace::Global)
      continue;
    std::vector<std::string> innerLoops = innerLoopsOf(access);
    AccessClass kind;
    std::optional<std::string> vectorLoop;
    if (loopsStayInThreads && !innerLoops.empty())
      vectorLoop = innerLoops.back();
    else if (finder.loop)
      vectorLoop = finder.loop->var;
    // An element the innermost loop around it does not move is loaded
    // before that loop (LLVM hoists it), whatever the lanes do.
    bool hoisted =
        !innerLoops.empty() && vectorLoop != innerLoops.back() &&
        passes::strideAlong(access, innerLoops.back()).kind == passes::Stride::Kind::Zero;
    kind.gathered = vectorLoop && !isStream(access, *vectorLoop) && !hoisted;
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
    classes[{access.buffer->nameInMessages(), access.source.begin, access.isStore}] = kind;
  }
  return classes;
}

// Every loop of a kernel, as the code generator keeps it (a loop the model
// walks once, weighted by its trip count).
std::map<std::string, CompiledLoop> everyLoopKept(const KernelFunc &kernel) {
  class Loops : public IRVisitor {
  public:
    std::map<std::string, CompiledLoop> kept;

  protected:
    void visitFor(const For &node) override {
      kept[node.var] = CompiledLoop{.globalLoads = 1, .instructions = 0, .constantTrips = 0};
      IRVisitor::visitFor(node);
    }
  } loops;
  loops.visit(kernel.body);
  return loops.kept;
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
                                     const std::map<AccessKey, AccessClass> &classes);

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
      found =
          predictions_
              .emplace(site.key, predictCpuLaunch(device_, profile, classifyAccesses(site.kernel)))
              .first;
      found->second.launches = 0;
    }
    found->second.launches += times;
  }

private:
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

  // One statement of the host code, run `times` times.
  void store(const Store &node, double times) {
    // How each access walks the innermost loop around the statement.
    enum class Walk { Invariant, Contiguous, Strided };
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
        if (coefficient != 0 && !(d + 1 == indices.size() && coefficient == 1))
          contiguous = false;
      }
      return invariant ? Walk::Invariant : contiguous ? Walk::Contiguous : Walk::Strided;
    };
    struct Access {
      const BufferInfo *buffer;
      Walk walk;
      bool sameAsStored;
    };
    std::vector<Access> accesses;
    class Loads : public IRVisitor {
    public:
      std::vector<const Load *> loads;

    protected:
      void visitLoad(const Load &node) override {
        loads.push_back(&node);
        IRVisitor::visitLoad(node);
      }
    } loads;
    loads.visit(node.value);
    for (const Load *load : loads.loads) {
      bool same = load->buffer == node.buffer && load->indices.size() == node.indices.size() &&
                  std::ranges::equal(load->indices, node.indices, sameExpr);
      accesses.push_back({load->buffer.get(), walkOf(load->indices), same});
    }
    Walk stored = walkOf(node.indices);
    accesses.push_back({node.buffer.get(), stored, false});

    double operations = operationsOf(node.value) + 1;
    // An element updated at every iteration from its own last value is a
    // recurrence, one dependent step after another, unless the operation
    // is a reduction's, which the code generator spreads over vector lanes.
    bool recurrence =
        innermost && stored == Walk::Invariant && !node.reduction &&
        std::ranges::any_of(accesses, [](const Access &access) { return access.sameAsStored; });
    bool vectorized =
        innermost && !recurrence && std::ranges::all_of(accesses, [](const Access &access) {
          return access.walk != Walk::Strided;
        });
    double compute = vectorized ? operations * 2 / (device_.vectorGflopsPerThread * 1e9)
                                : operations / (device_.scalarGopsPerThread * 1e9);
    double latency = recurrence ? device_.dependentOpNs * 1e-9 : 0;
    double memory = 0;
    for (const Access &access : accesses) {
      if (access.walk == Walk::Invariant)
        continue;
      double arrayBytes = footprint(*access.buffer);
      double element = static_cast<double>(scalarSize(access.buffer->element));
      // Down a column of an array the core's L2 cannot hold, each element
      // brings its own cache line.
      double bytes =
          access.walk == Walk::Strided && arrayBytes > static_cast<double>(device_.l2BytesPerThread)
              ? kCacheLineBytes
              : element;
      memory += secondsOf(bytes, bandwidthFor(arrayBytes));
    }
    addHost(compute * times, latency * times, memory * times);
  }

  const CpuDevice &device_;
  std::map<std::string, CpuLaunchPrediction> predictions_;
  CpuProgramPrediction result_;
};

CpuLaunchPrediction predictCpuLaunch(const CpuDevice &device, const KernelProfile &profile,
                                     const std::map<AccessKey, AccessClass> &classes) {
  CpuLaunchPrediction prediction;
  prediction.profile = profile;
  // The lanes' floating-point operations (a warp instruction is 32 of
  // them) at the vector rate (an f64 lane costs two f32 lanes; the index
  // arithmetic the GPU repeats per thread is hoisted out of the lanes here);
  // a gathered element is loaded lane by lane, at the scalar rate; a
  // recurrence waits a dependent operation a step for each vector, and so
  // does each lane's combine into an element (a read-modify-write, which
  // waits for the last one to the same element).
  double laneOperations = (profile.fp32Instructions + 2 * profile.fp64Instructions) * 32;
  double gatheredLoads = 0, lines = 0, rereadBytes = 0, dependentSteps = 0;
  // The arrays' elements once, and where they are held: the level whose
  // size their footprint fits serves every byte moved.
  double footprint = profile.compulsoryReadBytes + profile.compulsoryWriteBytes;
  double bytes = footprint;
  for (const AccessProfile &access : profile.accesses) {
    auto found =
        classes.find({access.array, access.source.begin, access.kind != AccessProfile::Kind::Load});
    if (access.kind == AccessProfile::Kind::Atomic)
      dependentSteps += access.activeLanes;
    if (access.memory != MemorySpace::Global || found == classes.end())
      continue;
    const AccessClass &kind = found->second;
    if (kind.gathered) {
      prediction.vectorized = false;
      gatheredLoads += access.activeLanes;
      lines += access.activeLanes;
    }
    if (kind.columnWalk)
      lines += access.activeLanes / device.vectorLanes;
    if (kind.rereadByLanes)
      rereadBytes += access.activeLanes * access.elementBytes;
    if (kind.recurrence)
      dependentSteps += access.activeLanes / device.vectorLanes;
  }
  // Elements gathered lane by lane, or a column walked, bring a cache line
  // each once the arrays do not fit the core's L2 (each lane's element of a
  // transpose's column is on a page of its own); so do the elements each
  // lane reads again in its own walk.
  if (footprint > static_cast<double>(device.l2BytesPerThread))
    bytes += lines * kCacheLineBytes + rereadBytes;
  double computeOneThread = laneOperations * 2 / (device.vectorGflopsPerThread * 1e9) +
                            gatheredLoads / (device.scalarGopsPerThread * 1e9) +
                            dependentSteps * device.dependentOpNs * 1e-9;
  double memoryOneThread = secondsOf(bytes, device.bandwidthFor(footprint, 1));
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
        secondsOf(bytes, device.bandwidthFor(footprint, static_cast<int>(threads)));
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
