// Keeping in registers the elements a serial loop updates at every
// iteration (promote_invariant_elements.cpp says why and when), shared by
// that pass and jam_serial_chains, whose proofs use the ranges of the loops
// it makes around the loop.
#pragma once

#include "ir/IR.h"
#include "passes/Remarks.h"
#include "passes/analysis/AccessAnalysis.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace loopc::passes {

struct RegisterElements {
  // The ranges of loops around the loop that the proofs may use, innermost
  // first.
  std::vector<LoopRange> around;
  // The lets in scope looked through (none when empty).
  std::function<ir::Expr(const ir::Expr &)> resolve;
  // The registers are named `<array>.<stem><n>`, n counting up from *made.
  std::string stem;
  int *made = nullptr;
  // Where each element kept, or not, is reported.
  RemarkReporter remarks;
};

// `loop` with every element it updates at every iteration, which no other
// access in it is proven to touch, kept in a register across it: loaded
// before the loop and stored after it, under a guard that the loop runs at
// all. None when no element qualifies.
std::optional<ir::Stmt> keepElementsInRegisters(const ir::For &loop, const RegisterElements &how);

} // namespace loopc::passes
