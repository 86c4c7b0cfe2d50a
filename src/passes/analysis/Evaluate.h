// Integer evaluation of Loop IR expressions from the values of their
// variables: extents, trip counts, conditions and indices, for the analyses
// that count a kernel's work (WorkCount) and model its speed (src/perf). The
// arithmetic is the compiled code's (i64, C's truncating division); float
// arithmetic, loads and variables the lookup does not know give nullopt, as
// do a division by zero and a result past i64 (no extent or trip count of a
// run can be one).
#pragma once

#include "ir/IR.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace loopc::passes {

using VariableLookup = std::function<std::optional<int64_t>(const std::string &name)>;

std::optional<int64_t> evaluateInteger(const ir::ExprNode &expr, const VariableLookup &lookup);

// The same where the variables are the sizes `values` gives (a run's).
std::optional<int64_t> evaluateInteger(const ir::ExprNode &expr,
                                       const std::map<std::string, int64_t> &values);

// A constant `expr` never exceeds where its form shows one: a constant, the
// min of anything with one, the max of two with one (a border of a window's
// radius, `min(W - 0, max(0, 1))`, as partition_borders writes it).
std::optional<int64_t> constantCeiling(const ir::Expr &expr);

} // namespace loopc::passes
