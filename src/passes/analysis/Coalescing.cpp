#include "passes/analysis/Coalescing.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"

#include <cstdlib>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// "first", "second", ...: an array's index by position, for messages.
std::string ordinal(size_t position) {
  static const char *const kOrdinals[] = {"first", "second", "third", "fourth"};
  return position < std::size(kOrdinals) ? kOrdinals[position]
                                         : "index " + std::to_string(position + 1);
}

// Whether a let in `stmt` binds `name` (or a register tile's copy of it,
// `j.x1`) from `threadVar`: map_to_gpu's `let j = j.block * 32 + j.thread`,
// by which the program's loop `j` is the one along x. Nests other passes
// build (block trees, a row per block, private histograms) walk their loops
// otherwise and are left out.
bool bindsFromThread(const Stmt &stmt, const std::string &name, const std::string &threadVar) {
  class Finder : public IRVisitor {
  public:
    Finder(const std::string &name, const std::string &threadVar)
        : name_(name), threadVar_(threadVar) {}
    bool found = false;

  protected:
    void visitLetStmt(const LetStmt &node) override {
      bool named = node.var == name_ || node.var.starts_with(name_ + ".");
      found |= named && freeVars(node.value).contains(threadVar_);
      IRVisitor::visitLetStmt(node);
    }

  private:
    const std::string &name_;
    const std::string &threadVar_;
  } finder(name, threadVar);
  finder.visit(stmt);
  return finder.found;
}

class NestFinder : public IRVisitor {
public:
  explicit NestFinder(const RemarkReporter &remarks) : remarks_(remarks) {}

protected:
  void visitFor(const For &node) override {
    if (node.forKind != ForKind::GpuBlock)
      return IRVisitor::visitFor(node);
    checkNest(node);
  }

private:
  void checkNest(const For &nest) {
    // The block and thread loops, with the shared buffers of stage_shared
    // allocated between them; x's loop as a statement, for the access
    // analysis to see its variable as a loop's.
    const For *x = nullptr;
    Stmt xLoop;
    for (Stmt inner = nest.body; inner;) {
      if (const auto *allocate = inner->as<Allocate>()) {
        inner = allocate->body;
        continue;
      }
      const auto *loop = inner->as<For>();
      if (!loop || (loop->forKind != ForKind::GpuBlock && loop->forKind != ForKind::GpuThread))
        break;
      if (loop->forKind == ForKind::GpuThread && loop->gpuDim == 0) {
        x = loop;
        xLoop = inner;
      }
      inner = loop->body;
    }
    const std::string suffix = ".thread";
    if (!x || !x->var.ends_with(suffix))
      return;
    std::string index = x->var.substr(0, x->var.size() - suffix.size());
    if (!bindsFromThread(x->body, index, x->var))
      return;
    for (const BufferAccess &access : collectAccesses(xLoop)) {
      if (access.buffer->memory != MemorySpace::Global)
        continue;
      Stride stride = strideAlong(access, x->var);
      bool neighbouring = stride.kind == Stride::Kind::Zero ||
                          stride.kind == Stride::Kind::Contiguous ||
                          (stride.kind == Stride::Kind::Constant && std::abs(stride.constant) <= 1);
      if (neighbouring || stride.kind == Stride::Kind::Unknown)
        continue;
      size_t dimension = 0;
      while (dimension < access.indices.size() &&
             access.indices[dimension].coefficient(x->var) == 0)
        ++dimension;
      std::string name = remarks_.programName(index);
      remarks_.warning(access.source,
                       "'" + remarks_.programName(access.buffer->nameInMessages()) + "' is " +
                           (access.isStore ? "written" : "read") +
                           " uncoalesced: the threads of a warp take consecutive values of " +
                           name + " (grid x), its " + ordinal(dimension) +
                           " index, so they touch elements " + stride.str() + " apart; with " +
                           name +
                           " as its last index (the loops or the array's layout swapped) a warp "
                           "would touch neighbouring elements");
    }
  }

  const RemarkReporter &remarks_;
};

} // namespace

void warnUncoalescedAccesses(const Function &function, const RemarkReporter &remarks) {
  if (!remarks.enabled())
    return;
  NestFinder finder(remarks);
  finder.visit(function.body);
}

} // namespace loopc::passes
