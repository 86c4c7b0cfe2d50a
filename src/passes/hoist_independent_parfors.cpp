// hoist_independent_parfors (CPU): a serial loop of the host code whose body
// is one parfor nest launches the nest once per iteration, and each launch
// walks again whatever its iterations share with the last one's. When every
// point of the nest touches only its own slice of each array the loop writes,
// the parfor moves out and the serial loop runs inside each point:
//
//   for i in [0, M) {                      parallel for j in [0, N) {
//     parallel for j in [0, N) {             for i in [0, M) {
//       for k in [i + 1, M) {                  for k in [i + 1, M) {
//         B[i][j] += A[k][i] * B[k][j]           B[i][j] += A[k][i] * B[k][j]
//       }                                      }
//       B[i][j] = alpha * B[i][j]              B[i][j] = alpha * B[i][j]
//   }}                                     }}
//
// Each of trmm's M launches streams B's rows below i again; hoisted, a block
// of columns stays in cache across i, with one launch. symm (the same
// shape, C's column block updated at every i) ran about twice as fast; trmm
// ran as fast as before, its B held by the last-level cache either way
// (docs/benchmarks.md, CPU history).
//
// Why it is legal: a slice is the elements whose index in one dimension is
// the point's own variable (`B[*][j]`); when each array the serial loop
// writes is only ever accessed in it through such a slice (the same dimension
// for every access, loads in lets before the nest included), no two points
// touch a common element of a written array, in any iteration of the serial
// loop, and arrays nobody writes read the same whenever they are read. So the
// points do not depend on each other across iterations either, and each point
// still runs the serial loop's iterations in their order.
//
// Not hoisted: a parfor whose bounds move with the serial loop (lu_k's
// `parfor i in k + 1..N`), a body that is more than lets and one nest, an
// array the loop writes that some access reads outside the point's slice
// (a stencil's neighbours), a `combine` or `scan` (they write what other
// points write), and nothing under --bounds-check (below). Arrays private to
// a point (declared in the nest) are its own anyway.
#include "passes/Passes.h"

#include "ir/IRVisitor.h"
#include "passes/analysis/AccessAnalysis.h"
#include "passes/analysis/BoundsProof.h"

#include <algorithm>
#include <optional>
#include <set>

namespace loopc::passes {

using namespace loopc::ir;
using ir::Expr; // not the AST's
using ir::Stmt;

namespace {

// The names of the arrays a statement declares, and whether it combines or
// scans into arrays (AtomicUpdate, Scan: writes shared between points).
class WriteCensus : public IRVisitor {
public:
  std::set<std::string> declared;
  bool sharedWrites = false;

protected:
  void visitAllocate(const Allocate &node) override {
    declared.insert(node.buffer->name);
    IRVisitor::visitAllocate(node);
  }
  void visitAtomicUpdate(const AtomicUpdate &) override { sharedWrites = true; }
  void visitScan(const Scan &) override { sharedWrites = true; }
};

// Whether `index` is exactly the loop variable `var`.
bool isExactly(const AffineIndex &index, const std::string &var) {
  return index.isAffine() && index.coefficients.size() == 1 && index.coefficient(var) == 1 &&
         (!index.rest || (index.rest->as<IntImm>() && index.rest->as<IntImm>()->value == 0));
}

class ParforHoister : public IRMutator {
public:
  ParforHoister(const ReorderableAccesses &reorderable, const RemarkReporter &remarks)
      : reorderable_(reorderable), remarks_(remarks) {}

protected:
  Stmt visitFor(const For &node, const Stmt &self) override {
    // Only the host code's serial loops launch; inside a parfor a loop
    // runs in its thread.
    if (node.forKind == ForKind::Parallel)
      return self;
    // Under bounds checks the first index out of range, in the program's
    // order of steps, is the one reported; hoisted, a later step of one
    // point could fail before an earlier step of another.
    bool reorderable = reorderable_.allowed(self);
    Stmt mutated = IRMutator::visitFor(node, self);
    const auto *serial = mutated->as<For>();
    if (serial->forKind != ForKind::Serial || !reorderable)
      return mutated;
    return hoist(*serial).value_or(mutated);
  }

private:
  // `serial` with the parfor of its body outside it, or none.
  std::optional<Stmt> hoist(const For &serial) const {
    // Lets, then the nest.
    std::vector<const LetStmt *> lets;
    const StmtNode *inner = skipSingletonBlocks(serial.body);
    while (const auto *let = inner->as<LetStmt>()) {
      lets.push_back(let);
      inner = skipSingletonBlocks(let->body);
    }
    const auto *parfor = inner->as<For>();
    if (!parfor || parfor->forKind != ForKind::Parallel)
      return std::nullopt;
    std::string i = remarks_.programName(serial.var);
    auto decline = [&](const std::string &why) {
      remarks_.declined(parfor->source,
                        "not hoisted out of the serial loop over " + i + ": " + why);
      return std::nullopt;
    };
    std::vector<const For *> chain = parallelChain(*parfor);
    std::set<std::string> bound{serial.var};
    for (const LetStmt *let : lets)
      bound.insert(let->var);
    for (const For *loop : chain) {
      if (usesAnyVar(loop->min, bound) || usesAnyVar(loop->extent, bound))
        return decline("its bounds move with " + i);
      bound.insert(loop->var);
    }

    WriteCensus census;
    census.visit(serial.body);
    if (census.sharedWrites)
      return decline("its points combine or scan into shared arrays");
    std::vector<BufferAccess> accesses = collectAccesses(serial.body);
    std::set<std::string> written;
    for (const BufferAccess &access : accesses)
      if (access.isStore && !census.declared.contains(access.buffer->name))
        written.insert(access.buffer->name);
    for (const std::string &array : written)
      for (const For *loop : chain) {
        // The dimensions every access to the array indexes by the point's
        // variable.
        std::optional<std::set<size_t>> slices;
        for (const BufferAccess &access : accesses) {
          if (access.buffer->name != array)
            continue;
          std::set<size_t> dims;
          for (size_t d = 0; d < access.indices.size(); ++d)
            if (isExactly(access.indices[d], loop->var))
              dims.insert(d);
          if (slices)
            std::erase_if(*slices, [&](size_t d) { return !dims.contains(d); });
          else
            slices = dims;
        }
        if (slices && slices->empty())
          return decline("'" + remarks_.programName(array) +
                         "' is accessed outside the slice each " + remarks_.programName(loop->var) +
                         " owns");
      }

    // The lets stay inside, around the nest's body, where the serial
    // variable is bound.
    Stmt body = chain.back()->body;
    for (size_t l = lets.size(); l-- > 0;)
      body = std::make_shared<LetStmt>(lets[l]->var, lets[l]->value, body);
    body = std::make_shared<For>(serial.var, serial.min, serial.extent, ForKind::Serial, 0, body,
                                 serial.source);
    for (size_t c = chain.size(); c-- > 0;) {
      const For &loop = *chain[c];
      body = std::make_shared<For>(loop.var, loop.min, loop.extent, loop.forKind, loop.gpuDim, body,
                                   loop.source);
    }
    remarks_.applied(parfor->source, "hoisted out of the serial loop over " + i +
                                         ": one launch, each point's slices of the arrays "
                                         "written stay in its cache across " +
                                         i);
    return body;
  }

  const ReorderableAccesses &reorderable_;
  const RemarkReporter &remarks_;
};

} // namespace

Function hoistIndependentParfors(Function function, const RemarkReporter &remarks) {
  ReorderableAccesses reorderable(function);
  function.body = ParforHoister(reorderable, remarks).mutate(function.body);
  return function;
}

} // namespace loopc::passes
