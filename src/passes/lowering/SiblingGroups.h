// Sibling reductions (fuse_sibling_reductions, map_rows_to_blocks): the
// reductions over the same loops that follow a reduction in a block, and
// how the statements between them move so the group can run as one (the
// file comment of fuse_sibling_reductions.cpp says when they may).
#pragma once

#include "ir/IR.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace loopc::passes {

// A group of reductions brought together, and the statements around it.
struct SiblingGroup {
  std::vector<ir::Stmt> hoisted;           // scopes opened around the group, outermost first
  std::vector<ir::Stmt> moved;             // statements that run before it, in order
  std::vector<const ir::Reduce *> members; // in program order, two or more
  ir::Stmt rest;                           // what follows the group

  // The statements again: the hoisted scopes around the moved statements,
  // `group` (the members as one) and the rest, `each` applied to the moved
  // statements and the rest.
  ir::Stmt assemble(ir::Stmt group, const std::function<ir::Stmt(const ir::Stmt &)> &each) const;
};

// A reduction after the first that did not join its group, and why.
struct SiblingRefusal {
  const ir::Reduce *candidate;
  std::string why;
};

// The reduction at stmts[p] (a Reduce with no reduction nested in its
// value) and the siblings that can join it from the statements after it,
// entering the scope that ends the list; none when no sibling can. With
// `refusals`, the reductions among those statements that could not join,
// with why.
std::optional<SiblingGroup> gatherSiblings(const std::vector<ir::Stmt> &stmts, size_t p,
                                           std::vector<SiblingRefusal> *refusals = nullptr);

} // namespace loopc::passes
