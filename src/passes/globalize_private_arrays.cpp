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
// cannot size a buffer before the launch; those arrays are left to code
// generation, which reports them.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionTrees.h"

#include <algorithm>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

class PrivateArrayPlacer : public IRMutator {
protected:
  Stmt visitFor(const For &loop, const Stmt &self) override {
    bool mapped = loop.forKind == ForKind::GpuBlock || loop.forKind == ForKind::GpuThread;
    if (!mapped && gpuLoops_.empty())
      return IRMutator::visitFor(loop, self); // host code
    bool outermost = gpuLoops_.empty();
    if (mapped)
      gpuLoops_.push_back(&loop);
    boundInKernel_.insert(loop.var);
    Stmt result = IRMutator::visitFor(loop, self);
    if (mapped)
      gpuLoops_.pop_back();
    if (!outermost)
      return result;
    // The kernel's globalized arrays, allocated by the host around it.
    for (const Buffer &buffer : globalized_)
      result = std::make_shared<Allocate>(buffer, result);
    globalized_.clear();
    boundInKernel_.clear();
    return result;
  }

  Stmt visitLetStmt(const LetStmt &node, const Stmt &self) override {
    if (!gpuLoops_.empty())
      boundInKernel_.insert(node.var);
    return IRMutator::visitLetStmt(node, self);
  }

  Stmt visitAllocate(const Allocate &node, const Stmt &self) override {
    const Buffer &local = node.buffer;
    bool sizedAtRun =
        std::ranges::any_of(local->shape, [](const Expr &extent) { return !extent->as<IntImm>(); });
    bool knownAtLaunch = std::ranges::none_of(local->shape, [&](const Expr &extent) {
      return !buffersRead(extent).empty() || usesAnyVar(extent, boundInKernel_);
    });
    if (gpuLoops_.empty() || local->memory != MemorySpace::Register || !sizedAtRun ||
        !knownAtLaunch)
      return IRMutator::visitAllocate(node, self);
    // The thread's slot: its index in the grid, the GPU loops flattened.
    Expr slot, slots;
    for (const For *loop : gpuLoops_) {
      Expr index = toI64(makeVar(loop->min->type, loop->var)), extent = toI64(loop->extent);
      slot = slot ? add(mul(slot, extent), index) : index;
      slots = slots ? mul(slots, extent) : extent;
    }
    std::vector<Expr> shape = local->shape;
    shape.push_back(slots);
    Buffer global = makeBuffer(local->name, local->element, shape, MemorySpace::Global);
    global->declared = local->declared;
    global->isWritten = true;
    globalized_.push_back(global);
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
  std::vector<const For *> gpuLoops_;   // the GPU loops around the walk, outermost first
  std::set<std::string> boundInKernel_; // names the kernel binds: unknown at launch
  std::vector<Buffer> globalized_;      // the arrays of the kernel being walked
};

} // namespace

Function globalizePrivateArrays(Function function) {
  function.body = PrivateArrayPlacer().mutate(function.body);
  return function;
}

} // namespace loopc::passes
