// Finds barriers and shared memory in a statement (BlockCooperation.h).
#include "passes/analysis/BlockCooperation.h"

#include "ir/IRVisitor.h"

namespace loopc::passes {

using namespace loopc::ir;
using ir::Stmt;

namespace {

class BlockCooperation : public IRVisitor {
public:
  bool found = false;

protected:
  void visitBarrier(const Barrier &) override { found = true; }
  void visitAllocate(const Allocate &node) override {
    found |= node.buffer->memory == MemorySpace::Shared;
    IRVisitor::visitAllocate(node);
  }
  void visitLoad(const Load &node) override {
    found |= node.buffer->memory == MemorySpace::Shared;
    IRVisitor::visitLoad(node);
  }
  void visitStore(const Store &node) override {
    found |= node.buffer->memory == MemorySpace::Shared;
    IRVisitor::visitStore(node);
  }
  void visitAtomicUpdate(const AtomicUpdate &node) override {
    found |= node.buffer->memory == MemorySpace::Shared;
    IRVisitor::visitAtomicUpdate(node);
  }
};

} // namespace

bool cooperatesAcrossThreads(const Stmt &stmt) {
  BlockCooperation cooperation;
  cooperation.visit(stmt);
  return cooperation.found;
}

} // namespace loopc::passes
