// Index ranges over a block: where the indices of an access land while the
// threads of one GPU block run a region of code. stage_shared asks it for
// the box of an array a block reads (its footprint), which must have a
// constant size so it fits a shared buffer, and an origin that is the same
// for every thread of the block.
//
// An index is described as `min(clampValue, clampBound) + offset`, where the
// offset and the clamp's value are linear forms over terms uniform across the
// block (block indices, sizes, the index of a stage) plus a constant that
// varies over a constant span (thread indices, loops of constant trip count),
// and the clamp (absent for most indices) bounds a value by a uniform limit:
// `min(v, N - 1)`, as tile_registers writes the copies of a thread's tile,
// or as a program clamps a neighbour at an edge. The clamp keeps the span:
// min(x, B) for x in [a, a + s] lies in [min(a, B), min(a, B) + s].
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace loopc::passes {

// `sum(coefficient * term) + constant`, the terms uniform across a block and
// keyed by their printed form, so equal terms written twice combine.
struct LinearForm {
  std::map<std::string, std::pair<ir::Expr, int64_t>> terms;
  int64_t constant = 0;

  bool sameTerms(const LinearForm &other) const;
  bool operator==(const LinearForm &other) const {
    return constant == other.constant && sameTerms(other);
  }
  LinearForm scaled(int64_t factor) const;
  LinearForm plus(const LinearForm &other, int64_t sign) const;
  ir::Expr toExpr() const; // i64
};

// `expr` as a linear form: sums, differences, negations and products by a
// constant taken apart, any other expression a term of its own.
LinearForm linearFormOf(const ir::Expr &expr);

struct IndexRange {
  struct Clamp {
    LinearForm value; // the low end of the clamped value
    int64_t span = 0; // ... which reaches value + span
    LinearForm bound; // uniform
  };
  LinearForm offset; // the low end of the unclamped part
  int64_t span = 0;  // ... which reaches offset + span
  std::optional<Clamp> clamp;

  // The lowest index, uniform across the block, and how far above it the
  // index can land.
  ir::Expr origin() const;
  int64_t totalSpan() const { return span + (clamp ? clamp->span : 0); }
  // Whether a box from one origin can hold both ranges (`unite` then widens
  // the constants and spans to cover both).
  bool sharesOrigin(const IndexRange &other) const;
  void unite(const IndexRange &other);
};

// The variables in scope while walking a thread's code, and what each ranges
// over. Variables bound by none of these are uniform: block indices, sizes,
// scalars, loops around the region with bounds that are uniform themselves.
class RangeScope {
public:
  // A variable ranging over a constant span: a thread index, a loop of
  // constant trip count inside the region.
  void bindRange(const std::string &var, IndexRange range);
  // A variable that varies, but not over a known constant span.
  void bindUnknown(const std::string &var);
  // A let, looked through.
  void bindLet(const std::string &var, ir::Expr value);
  void unbind(const std::string &var);

  // The same for every thread of the block, and safe to evaluate ahead of
  // the program's guards.
  bool isUniform(const ir::Expr &expr) const;
  // `expr` with the lets in scope substituted, so it means the same outside
  // them.
  ir::Expr inlined(const ir::Expr &expr) const;
  std::optional<IndexRange> rangeOf(const ir::Expr &index) const;

private:
  struct Binding {
    enum class Kind : uint8_t { Range, Unknown, Let } kind;
    IndexRange range;
    ir::Expr value;
  };
  std::map<std::string, Binding> bindings_;
};

} // namespace loopc::passes
