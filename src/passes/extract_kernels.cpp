// extract_kernels: splits device code from host code. Each outermost GpuBlock
// loop nest becomes a KernelFunc; in its place the host code gets a Launch
// whose grid and block extents are the extents of the GpuBlock and GpuThread
// loops (expressions of the sizes, evaluated on the host). The kernel's
// parameters are what the nest uses from outside it: global buffers, and
// scalars (free variables, and register cells of the host code such as a
// kernel-level `var`, passed by value). Serial loops, lets and allocations of
// global temporaries around the nests stay in the host body.
// Last in the pipeline: code generation reads kernels and launches from here.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"

#include <map>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// A kernel whose threads keep this many 32-bit register words (a register
// tile's accumulators; an f64 or i64 takes two) asks ptxas for the occupancy
// kMinThreadsPerSM, and one keeping kVeryManyRegisterWords (an 8 x 4 f32 or
// a 4 x 4 f64 tile) for one block of threads per SM, where each may use up
// to 255 registers; unless its tile reduces along one loop, reads its
// operands from shared memory only, its stages pipelined, and keeps at
// most kStagedRegisterWords (see the launch bounds below).
const int64_t kManyRegisterWords = 8;
const int64_t kVeryManyRegisterWords = 32;
const int64_t kStagedRegisterWords = 64;
const int kStagedReductionLoops = 2;
const int64_t kMinThreadsPerSM = 512;

// What a GPU nest uses from outside itself, in order of first use.
class OutsideUses : public IRVisitor {
public:
  std::vector<Buffer> buffers;
  std::vector<ScalarParam> scalars;
  std::set<const BufferInfo *> stored;
  // The most 32-bit words of register buffers live at once (allocated around
  // one another) in the kernel.
  int64_t registerWords = 0;
  // Whether stores into register buffers (a tile's accumulators) read
  // shared memory, and whether they read global memory; the most loops
  // (other than the grid's) around one of them that reads memory.
  bool registersReadShared = false, registersReadGlobal = false;
  int registerUpdateLoops = 0;
  bool copiesAsync = false; // fills shared memory by async copies

  // Extents of the first GpuBlock / GpuThread loop of each dimension.
  Expr grid[3], block[3];

protected:
  void visitVar(const Var &node) override {
    if (bound_.contains(node.name) || seenScalars_.contains(node.name))
      return;
    seenScalars_.insert(node.name);
    scalars.push_back({node.name, node.type});
  }
  void visitLoad(const Load &node) override {
    use(node.buffer);
    IRVisitor::visitLoad(node);
  }
  void visitStore(const Store &node) override {
    use(node.buffer);
    stored.insert(node.buffer.get());
    if (node.buffer->memory == MemorySpace::Register)
      for (const Load *load : loadsIn(node.value)) {
        registersReadShared |= load->buffer->memory == MemorySpace::Shared;
        registersReadGlobal |= load->buffer->memory == MemorySpace::Global;
        registerUpdateLoops = std::max(registerUpdateLoops, loops_);
      }
    IRVisitor::visitStore(node);
  }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    use(node.buffer);
    stored.insert(node.buffer.get());
    IRVisitor::visitAtomicUpdate(node);
  }
  void visitAsyncCopy(const AsyncCopy &node) override {
    copiesAsync = true;
    use(node.source);
    use(node.target);
    stored.insert(node.target.get());
    IRVisitor::visitAsyncCopy(node);
  }
  void visitAllocate(const Allocate &node) override {
    for (const Expr &extent : node.buffer->shape)
      visit(extent);
    allocated_.insert(node.buffer.get());
    int64_t words = 0;
    if (node.buffer->memory == MemorySpace::Register) {
      words = std::max<int64_t>(1, static_cast<int64_t>(scalarSize(node.buffer->element)) / 4);
      for (const Expr &extent : node.buffer->shape)
        if (const auto *constant = extent->as<IntImm>())
          words *= constant->value;
    }
    liveRegisterWords_ += words;
    registerWords = std::max(registerWords, liveRegisterWords_);
    visit(node.body);
    liveRegisterWords_ -= words;
  }
  void visitFor(const For &node) override {
    visit(node.min);
    visit(node.extent);
    Expr *slot = node.forKind == ForKind::GpuBlock    ? &grid[node.gpuDim]
                 : node.forKind == ForKind::GpuThread ? &block[node.gpuDim]
                                                      : nullptr;
    if (slot && !*slot)
      *slot = node.extent;
    bound_.insert(node.var);
    int serial = slot ? 0 : 1;
    loops_ += serial;
    visit(node.body);
    loops_ -= serial;
  }
  void visitLetStmt(const LetStmt &node) override {
    visit(node.value);
    bound_.insert(node.var);
    visit(node.body);
  }

private:
  void use(const Buffer &buffer) {
    if (allocated_.contains(buffer.get()) || seenBuffers_.contains(buffer.get()))
      return;
    seenBuffers_.insert(buffer.get());
    buffers.push_back(buffer);
    // Row-major addressing needs the extents, even those the body never
    // names (`C` in w[i][j] of a w: [R][C]).
    for (const Expr &extent : buffer->shape)
      visit(extent);
  }
  std::set<std::string> bound_, seenScalars_;
  std::set<const BufferInfo *> allocated_, seenBuffers_;
  int64_t liveRegisterWords_ = 0;
  int loops_ = 0; // around the node visited, other than the grid's
};

// The blocks per SM a kernel asks ptxas to fit (its minctasm; 0 for none).
// Given only maxntid, ptxas on sm_80 budgets registers for as many blocks
// as fit and spilled a 16-accumulator register tile at 48 registers.
// Asking for 512 threads per SM (16 warps, enough to hide latency with
// the independent work of a tile) lets it use up to 128 registers. Other
// kernels keep ptxas's choice: given the room, it spent registers on a
// memory-bound reduction (31 -> 56) that occupancy needs more.
// A tile reducing along one loop (matmul's k, cut in stages: two loops)
// with its operands in shared memory reads them a step at a time, one
// 128-bit load per 4 of them (stage_shared's layouts), each used at once:
// up to 64 words of accumulators fit at 128 registers beside them (an
// 8 x 8 f32 tile: 128 registers, no spills, two blocks of 256 threads
// per SM where one ran). Operands read from global memory stay in flight
// longer (cnn_conv's 8 x 8 tile spilled 1376 bytes at 128 registers),
// and so do those of a window of several loops unrolled together (its
// input and filter staged at K = 3: 400 bytes). Copies into shared
// memory through registers hold their values and addresses beside the
// tile: the stages must be pipelined, copied by async copies (the 8 x 8
// tile at pipeline_depth=1 spilled 28 bytes, with copies_in_flight=8 84).
// At pipeline_depth=3 it still spills 100 to 136 bytes, in its edge
// tile: there A's rows, clamped, are no provable neighbours, so the box
// stays row-major and a thread holds 4 k of each of its 8 rows.
int blocksPerSMToAsk(const OutsideUses &uses, int64_t threads) {
  if (threads <= 0 || uses.registerWords < kManyRegisterWords)
    return 0;
  bool operandsStreamFromShared = uses.registersReadShared && !uses.registersReadGlobal &&
                                  uses.registerUpdateLoops <= kStagedReductionLoops &&
                                  uses.copiesAsync;
  bool manyThreads = uses.registerWords < kVeryManyRegisterWords ||
                     (operandsStreamFromShared && uses.registerWords <= kStagedRegisterWords);
  int64_t threadsPerSM = manyThreads ? kMinThreadsPerSM : threads;
  return static_cast<int>(std::max<int64_t>(1, threadsPerSM / threads));
}

// The threads of a block of the nest (an unmapped dimension has one), 0
// when their count is not a constant.
int64_t threadsPerBlock(const OutsideUses &uses) {
  int64_t threads = 1;
  for (const Expr &extent : uses.block) {
    const auto *imm = extent ? extent->as<IntImm>() : nullptr;
    threads = !extent ? threads : imm ? threads * imm->value : 0;
  }
  return threads;
}

// Reads of host register cells inside a kernel become reads of a scalar
// parameter of the same name.
class CellsToScalars : public IRMutator {
public:
  explicit CellsToScalars(const std::set<const BufferInfo *> &cells) : cells_(cells) {}

protected:
  Expr visitLoad(const Load &node, const Expr &self) override {
    if (!cells_.contains(node.buffer.get()))
      return IRMutator::visitLoad(node, self);
    return makeVar(node.buffer->element, node.buffer->name);
  }

private:
  const std::set<const BufferInfo *> &cells_;
};

class KernelExtractor : public IRMutator {
public:
  explicit KernelExtractor(Function &function) : function_(function) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    if (node.forKind != ForKind::GpuBlock)
      return IRMutator::visitFor(node, self);
    OutsideUses uses;
    uses.visit(self);
    KernelFunc kernel;
    kernel.name = function_.name + "_kernel" + std::to_string(function_.kernels.size());
    kernel.source = node.source;
    kernel.scalars = uses.scalars;
    std::vector<Expr> scalarArgs;
    for (const ScalarParam &scalar : uses.scalars)
      scalarArgs.push_back(makeVar(scalar.type, scalar.name));
    std::set<const BufferInfo *> cells;
    std::vector<Buffer> bufferArgs;
    for (const Buffer &buffer : uses.buffers) {
      if (buffer->memory == MemorySpace::Register && buffer->shape.empty() &&
          !uses.stored.contains(buffer.get())) {
        cells.insert(buffer.get());
        kernel.scalars.push_back({buffer->name, buffer->element});
        scalarArgs.push_back(std::make_shared<Load>(buffer, std::vector<Expr>{}));
        continue;
      }
      kernel.buffers.push_back(buffer);
      bufferArgs.push_back(buffer);
    }
    kernel.body = CellsToScalars(cells).mutate(self);
    std::vector<Expr> grid, block;
    for (int d = 0; d < 3; ++d) {
      // An unmapped dimension has one block of one thread.
      grid.push_back(uses.grid[d] ? toI64(uses.grid[d]) : makeI64(1));
      block.push_back(uses.block[d] ? toI64(uses.block[d]) : makeI64(1));
    }
    int64_t threads = threadsPerBlock(uses);
    kernel.maxThreadsPerBlock = static_cast<int>(threads);
    kernel.minBlocksPerSM = blocksPerSMToAsk(uses, threads);
    function_.kernels.push_back(std::move(kernel));
    return std::make_shared<Launch>(function_.kernels.back().name, std::move(grid),
                                    std::move(block), std::move(bufferArgs), std::move(scalarArgs),
                                    node.source);
  }

private:
  Function &function_;
};

} // namespace

int blocksPerSMToAsk(const Stmt &nest) {
  OutsideUses uses;
  uses.visit(nest);
  return blocksPerSMToAsk(uses, threadsPerBlock(uses));
}

Function extractKernels(Function function) {
  function.body = KernelExtractor(function).mutate(function.body);
  return function;
}

} // namespace loopc::passes
