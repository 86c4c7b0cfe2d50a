#include "passes/analysis/Coalescing.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/Evaluate.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

const int64_t kSectorBytes = 32;
const int64_t kWarpLanes = 32;

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

// Whether neighbouring threads, `stride` elements of `elementBytes` apart,
// each touch a 32-byte memory sector of their own: a transaction per thread.
// A short stride (nbody's 3 components of f32) shares sectors, and the cache
// serves the rest from lines the warp brought in.
bool fallsInSectorsOfTheirOwn(const Stride &stride, size_t elementBytes) {
  switch (stride.kind) {
  case Stride::Kind::Symbolic:
    return true; // a row of the program's sizes
  case Stride::Kind::Constant:
    return std::abs(stride.constant) * static_cast<int64_t>(elementBytes) >= kSectorBytes;
  default:
    return false; // reuse, contiguous, or not affine (data decides)
  }
}

// Whether `stmt` is map_rows_to_blocks' block per row: a grid whose block
// index is the row (`let i = i.block`, no thread index in it).
bool isBlockPerRow(const Stmt &stmt) {
  const auto *block = stmt->as<For>();
  const std::string suffix = ".block";
  if (!block || block->forKind != ForKind::GpuBlock || !block->var.ends_with(suffix))
    return false;
  std::string row = block->var.substr(0, block->var.size() - suffix.size());
  class Finder : public IRVisitor {
  public:
    Finder(const std::string &row, const std::string &blockVar) : row_(row), blockVar_(blockVar) {}
    bool found = false;

  protected:
    void visitLetStmt(const LetStmt &node) override {
      std::set<std::string> uses = freeVars(node.value);
      found |= node.var == row_ && uses.contains(blockVar_) && !uses.contains(row_ + ".thread");
      IRVisitor::visitLetStmt(node);
    }

  private:
    const std::string &row_;
    const std::string &blockVar_;
  } finder(row, block->var);
  finder.visit(block->body);
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

  // A thread per row is what map_rows_to_blocks keeps for rows too short
  // for a block (under 64 elements, where its strides are short too): the
  // rows' accesses are coalesced where it matters.
  void visitIfThenElse(const IfThenElse &node) override {
    visit(node.cond);
    visit(node.thenCase);
    if (node.elseCase && !isBlockPerRow(node.thenCase))
      visit(node.elseCase);
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
    // One warning per access in the source (a compound assignment reads and
    // writes at one place; register tiles copy an access).
    struct Strided {
      const BufferAccess *access;
      Stride stride;
      bool read = false, written = false;
    };
    std::vector<BufferAccess> accesses = collectAccesses(xLoop);
    std::map<std::pair<SourceLoc, std::string>, Strided> strided;
    std::vector<std::pair<SourceLoc, std::string>> inOrder;
    for (const BufferAccess &access : accesses) {
      // Not the program's access: a pass's buffer (a reduction's partials).
      bool ofProgram = access.source.valid() && !isPassMadeName(access.buffer->nameInMessages());
      if (access.buffer->memory != MemorySpace::Global || !ofProgram)
        continue;
      Stride stride = strideAlong(access, x->var);
      if (!fallsInSectorsOfTheirOwn(stride, scalarSize(access.buffer->element)))
        continue;
      std::pair<SourceLoc, std::string> key{access.source.begin, access.buffer->name};
      auto [entry, added] = strided.try_emplace(key, Strided{&access, stride});
      if (added)
        inOrder.push_back(key);
      (access.isStore ? entry->second.written : entry->second.read) = true;
    }
    // Loops of the thread shorter than a warp (a border a window's radius
    // wide, which the mapping runs in the thread): an access contiguous
    // only along one could not fill a warp's request whatever the layout,
    // so it gets no warning.
    std::set<std::string> shortLoops;
    class ShortLoops : public IRVisitor {
    public:
      explicit ShortLoops(std::set<std::string> &out) : out_(out) {}

    protected:
      void visitFor(const For &node) override {
        if (std::optional<int64_t> ceiling = constantCeiling(node.extent);
            node.forKind == ForKind::Serial && ceiling && *ceiling < kWarpLanes)
          out_.insert(node.var);
        IRVisitor::visitFor(node);
      }

    private:
      std::set<std::string> &out_;
    } finder(shortLoops);
    finder.visit(xLoop);
    std::string name = remarks_.programName(index);
    for (const auto &key : inOrder) {
      const Strided &entry = strided.at(key);
      const BufferAccess &access = *entry.access;
      const AffineIndex &last = access.indices.back();
      if (std::ranges::any_of(shortLoops, [&](const std::string &loop) {
            return std::abs(last.coefficient(loop)) == 1;
          }))
        continue;
      size_t dimension = 0;
      while (dimension < access.indices.size() &&
             access.indices[dimension].coefficient(x->var) == 0)
        ++dimension;
      std::string how = entry.read && entry.written ? "read and written"
                        : entry.read                ? "read"
                                                    : "written";
      remarks_.warning(access.source,
                       "'" + remarks_.programName(access.buffer->nameInMessages()) + "' is " + how +
                           " uncoalesced: the threads of a warp take consecutive values of " +
                           name + " (grid x), its " + ordinal(dimension) +
                           " index, so they touch elements " + entry.stride.str() +
                           " apart; with " + name +
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
