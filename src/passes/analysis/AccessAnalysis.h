// Affine access analysis: the first of the analyses the middle-end passes
// share. Every index of a Load or Store is written as `sum(c_v * v) + rest`
// over the loop variables around it (integer coefficients, `rest` a
// loop-invariant ir::Expr), looking through the Lets that bind affine values
// (`let i = i.block * 32 + i.thread` from map_to_gpu, `let i = 1 + 2 * i.t`
// from stepped ranges). From that form a pass asks, per buffer access and
// loop, whether the access depends on the loop at all (reuse across its
// iterations) and its stride in elements along the loop in the flattened
// row-major layout (coalescing and vectorization). Passes decide from these
// questions rather than pattern-matching index expressions themselves, so all
// of them agree on what "contiguous" means.
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace loopc::passes {

// One integer index expression as an affine form over loop variables.
struct AffineIndex {
  // Loop variable -> its coefficient; only non-zero entries.
  std::map<std::string, int64_t> coefficients;
  // The loop-invariant remainder, an i64 expression (null means 0). Only
  // meaningful when the index is affine.
  ir::Expr rest;
  // Loop variables the index depends on in a way that is not affine
  // (`i / 2`, `i * j`, `idx[i]`): along them the stride is unknown.
  std::set<std::string> nonAffineVars;

  bool isAffine() const { return nonAffineVars.empty(); }
  int64_t coefficient(const std::string &loopVar) const;
  bool dependsOn(const std::string &loopVar) const;
};

// Tracks the loops and lets in scope while walking a statement, so indices
// can be analysed where they occur. Variables bound by neither (sizes, scalar
// parameters, loops outside the walked statement) are invariant atoms.
class AffineScope {
public:
  void bindLoop(const std::string &var);
  // Lets are looked through: `var` stands for the form of `value`.
  void bindLet(const std::string &var, const ir::Expr &value);
  void unbind(const std::string &var);

  AffineIndex analyze(const ir::Expr &index) const;
  const std::set<std::string> &loopVars() const { return loopVars_; }

private:
  std::set<std::string> loopVars_;
  std::map<std::string, AffineIndex> lets_; // only lets that depend on a loop
};

// A Load or Store of an array element found in a statement.
struct BufferAccess {
  ir::Buffer buffer;
  bool isStore = false;
  std::vector<AffineIndex> indices; // one per dimension
  // Loops bound inside the walked statement around the access (For and
  // Reduce loops), outermost first.
  std::vector<std::string> enclosingLoops;
  SourceRange source;
  const ir::Load *load = nullptr; // the node, for a load
};

// Every Load and Store in `stmt`, in program order (a Store's value before
// the Store itself). A Reduce contributes the loads of its value (inside its
// loops) and a store of its accumulator (outside them).
std::vector<BufferAccess> collectAccesses(const ir::Stmt &stmt);

// The distance in elements between the addresses an access touches in two
// consecutive iterations of one loop, in the flattened row-major layout of
// its buffer (`sum over dimensions of coefficient * product of the inner
// extents`).
struct Stride {
  enum class Kind : uint8_t {
    Zero,       // the access does not depend on the loop (reuse)
    Contiguous, // exactly one element: consecutive iterations, consecutive addresses
    Constant,   // a known number of elements other than 0 and 1 (`constant`)
    Symbolic,   // depends on the program's sizes (`symbolic`), e.g. a row of N
    Unknown,    // the index is not affine in the loop variable
  };
  Kind kind = Kind::Zero;
  int64_t constant = 0; // for Constant (and 0 / 1 for Zero / Contiguous)
  ir::Expr symbolic;    // for Symbolic: an i64 expression of the sizes

  std::string str() const; // `0`, `1`, `4`, `N`, `unknown`
};

Stride strideAlong(const BufferAccess &access, const std::string &loopVar);

// Whether `difference`, an integer expression, is a constant of at most 0
// whatever its variables (sizes, loop variables and lets are atoms of its
// affine form: only a difference in which they cancel is proven).
bool provenNotPositive(const ir::Expr &difference);

// The values a loop variable takes, [min, min + extent), for the proofs
// below.
struct LoopRange {
  std::string var;
  ir::Expr min;
  ir::Expr extent;
};

// Whether an integer expression stays at least `least` (at most `most`)
// while each variable of `ranges` lies in its range. `ranges` goes from the
// innermost loop out: a range's bounds may use the variables after it, not
// those before. Each variable in turn is replaced by the end of its range
// that makes the expression smallest (largest), down to an expression whose
// variables cancel: Fourier-Motzkin elimination where every bound is one
// expression. `i - k` is at least 1 for k in [0, i); `(i0 + 2) - N` at most
// -1 for i0 in [0, N - 3).
bool provenAtLeast(const ir::Expr &value, int64_t least, const std::vector<LoopRange> &ranges);
bool provenAtMost(const ir::Expr &value, int64_t most, const std::vector<LoopRange> &ranges);

// Whether `difference` is never 0 there (at most -1 or at least 1).
bool provenNonZero(const ir::Expr &difference, const std::vector<LoopRange> &ranges);

// Whether two accesses of one array touch different elements while the
// variables of `ranges` lie in them: in some dimension the difference of
// their indices is provenNonZero.
bool provenApart(const std::vector<ir::Expr> &indices, const std::vector<ir::Expr> &others,
                 const std::vector<LoopRange> &ranges);

// Whether running `loopVar`'s loop outside the loop over `threadVar` (the
// innermost thread loop of a CPU thread nest) would turn an access that
// streams along the loop into a gather across threads (a row walked by each
// thread: vector lanes across threads would be rows apart). The CPU keeps
// such loops inside their thread (codegen/CpuThreadNest.cpp).
bool gathersAcrossThreads(const std::vector<BufferAccess> &accesses, const std::string &loopVar,
                          const std::string &threadVar);

} // namespace loopc::passes
