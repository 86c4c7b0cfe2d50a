// globalize_private_arrays (GPU): a GPU thread has no heap, and its local
// memory is sized when the kernel is compiled, so an array private to a
// parfor iteration whose extents only the run knows (`var d: f32[K]` with K
// a size) lives in global memory instead: the host allocates it around the
// kernel with one slice per thread of the grid, the slice index the last
// dimension (neighbouring threads at neighbouring addresses, so the threads
// of a warp reading the same element of their slices read one segment), and
// each thread zeroes its slice where the program declares the array, as the
// language starts local arrays at zero:
//
//   gpu_block.x for b in [0, B) {          global f32 d[K][B * 256]
//     gpu_thread.x for t in [0, 256) {     gpu_block.x for b in [0, B) {
//       register f32 d[K]                    gpu_thread.x for t in [0, 256) {
//       ... d[c] ...                           for d.0 in [0, K): d[d.0][b * 256 + t] = 0
//                                              ... d[c][b * 256 + t] ...
//
// The program's dimensions keep their numbers and extents, so a bounds
// check reports an index as it would for the private array. Extents that
// depend on values bound inside the kernel (a row's length read from data)
// cannot size a buffer before the launch, nor a thread's local memory: the
// pass refuses the program there, located at the array, so every engine of
// the GPU pipeline (`--device gpu-on-cpu` too, whose CPU could allocate
// them) refuses it alike. A host `var` read in an extent (directly or
// through the lowering's lets) is known: no iteration may write it.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionTrees.h"

#include <algorithm>
#include <optional>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

class PrivateArrayPlacer : public IRMutator {
public:
  // The first private array the GPU can size neither at the launch nor at
  // compile time, as the error reported for it.
  const std::optional<Error> &refused() const { return refused_; }

protected:
  Stmt visitFor(const For &loop, const Stmt &self) override {
    bool mapped = loop.forKind == ForKind::GpuBlock || loop.forKind == ForKind::GpuThread;
    if (!mapped && gpuLoops_.empty())
      return IRMutator::visitFor(loop, self); // host code
    bool outermost = gpuLoops_.empty();
    if (mapped)
      gpuLoops_.push_back(&loop);
    kernel_.bound.insert(loop.var);
    Stmt result = IRMutator::visitFor(loop, self);
    if (mapped)
      gpuLoops_.pop_back();
    if (!outermost)
      return result;
    // The kernel's globalized arrays, allocated by the host around it.
    for (const Buffer &buffer : kernel_.globalized)
      result = std::make_shared<Allocate>(buffer, result);
    for (const auto &[name, value] : kernel_.launchLets)
      result = std::make_shared<LetStmt>(name, value, result);
    kernel_ = {};
    return result;
  }

  Stmt visitLetStmt(const LetStmt &node, const Stmt &self) override {
    if (!gpuLoops_.empty()) {
      // A let of values known at the launch (the lowering's `let
      // e.extent0 = w`) stands for its value there.
      Expr value = substitute(node.value, kernel_.launchValues);
      if (knownAtLaunch(value))
        kernel_.launchValues[node.var] = value;
      else
        kernel_.bound.insert(node.var);
    }
    return IRMutator::visitLetStmt(node, self);
  }

  Stmt visitAllocate(const Allocate &node, const Stmt &self) override {
    if (!gpuLoops_.empty())
      kernel_.allocated.insert(node.buffer.get());
    const Buffer &local = node.buffer;
    bool sizedAtRun =
        std::ranges::any_of(local->shape, [](const Expr &extent) { return !extent->as<IntImm>(); });
    std::vector<Expr> atLaunch; // the extents in the host's terms
    for (const Expr &extent : local->shape)
      atLaunch.push_back(substitute(extent, kernel_.launchValues));
    if (gpuLoops_.empty() || local->memory != MemorySpace::Register || !sizedAtRun)
      return IRMutator::visitAllocate(node, self);
    if (!std::ranges::all_of(atLaunch, [&](const Expr &extent) { return knownAtLaunch(extent); })) {
      refuseUnsizable(*local);
      return IRMutator::visitAllocate(node, self);
    }
    // The thread's slot: its index in the grid, the GPU loops flattened.
    Expr slot, slots;
    for (const For *loop : gpuLoops_) {
      Expr index = toI64(makeVar(loop->min->type, loop->var)), extent = toI64(loop->extent);
      slot = slot ? add(mul(slot, extent), index) : index;
      slots = slots ? mul(slots, extent) : extent;
    }
    // Host scalars read once before the launch, the kernel taking the value
    // (a kernel cannot read the host's cells, and its bounds checks read the
    // extents).
    std::vector<Expr> shape;
    for (size_t d = 0; d < atLaunch.size(); ++d) {
      if (buffersRead(atLaunch[d]).empty()) {
        shape.push_back(atLaunch[d]);
        continue;
      }
      std::string name = local->name + ".launch" + std::to_string(d);
      kernel_.launchLets.emplace_back(name, atLaunch[d]);
      shape.push_back(makeVar(atLaunch[d]->type, name));
    }
    shape.push_back(slots);
    Buffer global = makeBuffer(local->name, local->element, shape, MemorySpace::Global);
    global->declared = local->declared;
    global->programName = local->programName;
    global->slicePerThread = true;
    global->isWritten = true;
    kernel_.globalized.push_back(global);
    // Zero the slice, one loop per dimension of the program's array.
    std::vector<Expr> indices;
    for (size_t d = 0; d < local->shape.size(); ++d)
      indices.push_back(makeVar(ScalarType::I64, local->name + "." + std::to_string(d)));
    indices.push_back(slot);
    Stmt fill = store(global, indices, zeroOf(local->element));
    for (size_t d = local->shape.size(); d-- > 0;)
      fill = std::make_shared<For>(local->name + "." + std::to_string(d), makeI64(0),
                                   toI64(local->shape[d]), ForKind::Serial, 0, fill);
    Stmt body = retargetAccesses(mutate(node.body), local, global, [&](std::vector<Expr> indices) {
      indices.push_back(slot);
      return indices;
    });
    return makeBlock({fill, body});
  }

private:
  void refuseUnsizable(const BufferInfo &local) {
    if (!refused_)
      refused_ = Error{"on the GPU, the extents of the private array '" + local.nameInMessages() +
                           "' must be known when its kernel launches (built from sizes, scalar "
                           "parameters and values computed before the parfor); here they depend "
                           "on a value computed or read inside the parfor",
                       local.declared};
  }

  // A scalar of the host code (a `var` before the parfor), which no
  // iteration may write: the host reads it at the launch, as the kernel does.
  bool isHostScalar(const BufferInfo &buffer) const {
    return buffer.memory == MemorySpace::Register && buffer.shape.empty() &&
           !kernel_.allocated.contains(&buffer);
  }
  // Whether the host can evaluate `expr` before the launch.
  bool knownAtLaunch(const Expr &expr) const {
    return !usesAnyVar(expr, kernel_.bound) &&
           std::ranges::all_of(buffersRead(expr),
                               [&](const BufferInfo *read) { return isHostScalar(*read); });
  }

  std::vector<const For *> gpuLoops_; // the GPU loops around the walk, outermost first
  // What the walk of one kernel (an outermost GPU loop) found.
  struct Kernel {
    std::set<std::string> bound;                          // names it binds: unknown at launch
    std::set<const BufferInfo *> allocated;               // buffers it allocates
    std::map<std::string, Expr> launchValues;             // its lets known at launch
    std::vector<std::pair<std::string, Expr>> launchLets; // host lets around it
    std::vector<Buffer> globalized;                       // its arrays given slices
  } kernel_;
  std::optional<Error> refused_;
};

} // namespace

Expected<Function> globalizePrivateArrays(Function function) {
  PrivateArrayPlacer placer;
  function.body = placer.mutate(function.body);
  if (placer.refused())
    return std::unexpected(*placer.refused());
  return function;
}

} // namespace loopc::passes
