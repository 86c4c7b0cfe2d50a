// Lowering a group of reductions over the same loops as one (shared by
// lower_reductions, whose groups have one member, and
// fuse_sibling_reductions): the loops run once and every member folds its
// value into its own accumulator at each point, so data the members share is
// read once.
#pragma once

#include "ir/IR.h"
#include "ir/IRVisitor.h"
#include "passes/lowering/ReductionTrees.h"

#include <string>
#include <vector>

namespace loopc::passes {

// A mutator that knows whether the node it visits is in host code, where a
// reduction becomes a tree over the device, or inside a parallel loop, where
// it is one thread's serial loop.
class ReductionPlacement : public ir::IRMutator {
protected:
  ir::Stmt visitFor(const ir::For &node, const ir::Stmt &self) override;
  // A reduction's value is computed per point, inside the threads its
  // lowering makes: the reductions nested in it are not in host code.
  ir::Stmt visitReduce(const ir::Reduce &node, const ir::Stmt &self) override;
  bool inHostCode() const { return parallelDepth_ == 0; }

  int parallelDepth_ = 0; // parallel loops around the node
};

// One member: the Reduce (its accumulator, operator and neutral element),
// and its value and value setup, with any reduction nested in the setup
// already lowered (serially) and the loop variables those of the group's
// first member (renamedLoops).
struct GroupMember {
  const ir::Reduce *reduce;
  ir::Stmt valueSetup;
  ir::Expr value;
};

class ReductionGroupLowering {
public:
  // Names made here start with `prefix` and a number, unique per instance.
  // For the GPU pipeline (`forGpu`), a tree's threads walk the points of its
  // leading rectangular loops as one range, and its grid has many waves of
  // blocks (see tree); an in-order walk's grid is sized in whole waves of
  // the GPU's `multiprocessors` (kOrderedBlocksPerSM in ReductionGroups.cpp).
  ReductionGroupLowering(std::string prefix, bool forGpu, int multiprocessors)
      : prefix_(std::move(prefix)), forGpu_(forGpu), multiprocessors_(multiprocessors) {}

  // Inside a parallel loop (one thread's work): a serial loop nest folding
  // each member's values into a register accumulator, each stored back once.
  // Members after the first have their loop variables renamed to the first's.
  ir::Stmt serial(const std::vector<GroupMember> &group);

  // In host code (whole-array reductions): a first kernel gives each thread a
  // strided share of the outermost loop (on the GPU, of the points
  // of the leading loops whose bounds use no variable of the loops before
  // them, in row-major order: neighbouring threads read neighbouring
  // elements of a 2-D array, and every point is spread however few rows
  // there are; on the CPU, with an operator that commutes, of its block's
  // contiguous range of the outermost loop), combines the 256 per-thread
  // values of each member in a block in shared memory by tree halving and
  // writes one partial per block and member; a second, single-block kernel
  // combines each member's partials the same way and folds them into its
  // accumulator. On the CPU, a group whose loops are rectangular and whose
  // values need no loop of their own also gets the serial loop nest, in the
  // host code, which runs instead when its points are few
  // (kSerialReductionWork): a reduction inside a serial loop then costs no
  // launch.
  ir::Stmt tree(const std::vector<GroupMember> &group);

  // What tree does with `reduce`, whose operator does not commute: on the
  // GPU, over one loop, a remark on its walk in pieces; otherwise
  // warnOrderedWalk's warning.
  void reportOrderedWalk(const RemarkReporter &remarks, const ir::Reduce &reduce) const;

private:
  // Whether tree walks a group in order, its first member `first`, in
  // pieces (orderedPieces).
  bool walksInPieces(const ir::Reduce &first, bool inOrder) const;
  // The two kernels of tree.
  ir::Stmt treeKernels(const std::vector<GroupMember> &group);
  std::string fresh(const std::string &base);

  // A GPU thread's in-order walk of its contiguous chunk of a one-loop
  // group's range, piece by piece through shared memory (kOrderedPiece in
  // ReductionGroups.cpp), its partials left in `tiles`; `pieces` gets the
  // shared buffers it uses.
  ir::Stmt orderedPieces(const std::vector<GroupMember> &group,
                         const std::vector<ir::Buffer> &parts, const std::vector<ir::Buffer> &tiles,
                         const ir::Expr &block, const ir::Expr &thread, const ir::Expr &extent,
                         const ir::Expr &chunk, const std::string &prefix,
                         std::vector<ir::Buffer> &pieces);
  ir::Stmt flatWalk(const ir::Reduce &reduce, size_t loops, const ThreadWalk &walk,
                    const std::string &prefix, const std::string &stepVar, ir::Stmt pointBody);

  std::string prefix_;
  bool forGpu_;
  int multiprocessors_;
  int counter_ = 0;
};

// `member` with the loop variables in its value and value setup renamed to
// those of `first` (the two have as many loops).
GroupMember renamedLoops(GroupMember member, const ir::Reduce &first);

} // namespace loopc::passes
