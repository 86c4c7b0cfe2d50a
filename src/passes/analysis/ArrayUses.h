// What the passes that remove a program's temporaries (fuse_producers,
// drop_overwritten_fills) ask of an array: which statements write it whole,
// and where it is read and written.
#pragma once

#include "ir/IR.h"
#include "ir/IRVisitor.h"

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace loopc::passes {

// 0, 0.0 or false.
bool isZeroConstant(const ir::Expr &value);

// A statement writing each element of a global array: a nest of parallel
// loops over [0, extent) of every dimension in order whose innermost body
// stores to the array at the loop variables, unconditionally.
struct FullWrite {
  const ir::Store *store = nullptr;
  std::vector<std::string> loopVars; // outermost first
  // The lets between the loops and the store, outermost first, when the
  // body is only lets and the store (`isExpression`); otherwise the store is
  // one of several statements of the body.
  std::vector<std::pair<std::string, ir::Expr>> lets;
  bool isExpression = false;
};
// `stmt` as a full write of `array`; with no array, of the array its body's
// only store (after lets) writes.
std::optional<FullWrite> fullWrite(const ir::Stmt &stmt, const ir::BufferInfo *array = nullptr);

// The arrays a statement writes: stores, atomic updates, reductions' and
// scans' targets.
std::set<const ir::BufferInfo *> writtenArrays(const ir::Stmt &stmt);

// Every read and write of one array within a statement, with what surrounds
// each read.
class ArrayUses : public ir::IRVisitor {
public:
  explicit ArrayUses(const ir::BufferInfo *array) : array_(array) {}

  struct Read {
    const ir::Load *load;
    std::vector<std::string> loopVars; // of the parallel and reduction loops around it
    bool underSerialLoop = false;      // a serial loop (or a scan) around it
    std::set<std::string> binders;     // names bound on the way to it
  };
  std::vector<Read> reads;
  int writes = 0; // stores, atomic updates, reductions and scans into it, launches given it

protected:
  void visitLoad(const ir::Load &node) override;
  void visitFor(const ir::For &node) override;
  void visitLetStmt(const ir::LetStmt &node) override;
  void visitReduce(const ir::Reduce &node) override;
  void visitScan(const ir::Scan &node) override;
  void visitStore(const ir::Store &node) override;
  void visitAtomicUpdate(const ir::AtomicUpdate &node) override;
  void visitLaunch(const ir::Launch &node) override;

private:
  void countWrite(const ir::BufferInfo &buffer);

  const ir::BufferInfo *array_;
  std::vector<std::string> loopVars_;
  int serialDepth_ = 0;
  std::set<std::string> binders_;
};

} // namespace loopc::passes
