// Which array indices are in range whatever the run: `--bounds-check` leaves
// their checks out, so the mode costs only where a proof is missing (matmul's
// A[i][k], inside `for k in [0, K)` and the guard `i < M`, needs none).
//
// Every integer index and extent is read as a linear form over atoms (loop
// variables, sizes, lets, and any subterm that is not linear, such as
// `x / 2`). A term that reads an array element has no form: the element may
// be written between a guard and the access, so facts about it are not
// kept. Around an access hold facts, each `form >= 0`: the range of every
// enclosing loop, the conditions of the enclosing ifs (negated in an else;
// `&&` and `||` taken apart), and for each atom `min(a, b)` or `max(a, b)`
// its two cases.
// An index e in dimension d is proven when both `e >= 0` and
// `extent - 1 - e >= 0` follow: a variable at a time, innermost first, is
// cancelled by a positive multiple of a fact that mentions it (Fourier-Motzkin
// elimination, one direction only), until what remains is a non-negative
// constant plus non-negative multiples of sizes, which are never negative.
// The search is bounded; a proof it misses leaves the check in place.
//
// Arithmetic on i32 values is an atom, not a form: it may wrap, and a proof
// about the unwrapped value would be wrong.
#pragma once

#include "ir/IR.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loopc::passes {

// The proofs, by body: the host code's and each kernel's. IR nodes are
// shared, so one access can sit in several places (a reduction's value in
// the host loop and in its tree kernel, a tile's copies): in one body it is
// proven where it is proven at every place.
class ProvenAccesses {
public:
  // Whether index `dim` of `access` (a Load, Store or AtomicUpdate node) in
  // `body` is proven within its extent.
  bool proven(const ir::Stmt &body, const void *access, size_t dim) const;
  void record(const ir::Stmt &body, const void *access, const std::vector<bool> &dims);

  // An index left without a proof: its check stays in the code.
  struct Unproven {
    SourceRange source; // the access in the program
    std::string array;  // its name in messages
    size_t dim;
    std::string index, extent; // printed
  };
  void recordUnproven(Unproven unproven) { unproven_.push_back(std::move(unproven)); }
  const std::vector<Unproven> &unproven() const { return unproven_; }

  // Whether every index of every access in `region` (a part of the
  // function proven) is proven: a pass may then move those accesses, or
  // run them in another order, without hiding an error a check would
  // report, or reporting another first.
  bool allProvenIn(const ir::Stmt &body, const ir::Stmt &region) const;
  bool allProvenIn(const ir::Stmt &body, const ir::Expr &region) const;

private:
  std::map<std::pair<const void *, const void *>, std::vector<bool>> dims_; // by body, access
  std::vector<Unproven> unproven_;
};

// The proofs for every access of `function`'s host code and kernels.
ProvenAccesses proveAccessesInBounds(const ir::Function &function);

// What a pass that moves accesses, or runs them in another order, may
// touch: under bounds checks (Function::boundsChecked) the parts whose
// every access is proven in range, so no check is hidden and the first
// failing one is still the first reported; everything otherwise.
class ReorderableAccesses {
public:
  explicit ReorderableAccesses(const ir::Function &function);
  bool allowed(const ir::Stmt &region) const {
    return !proven_ || proven_->allProvenIn(body_, region);
  }
  bool allowed(const ir::Expr &region) const {
    return !proven_ || proven_->allProvenIn(body_, region);
  }

private:
  std::optional<ProvenAccesses> proven_;
  ir::Stmt body_; // the host code, where the passes before extract_kernels work
};

} // namespace loopc::passes
