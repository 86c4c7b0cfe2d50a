// Whether a user's operator commutes as written, for the constructs that
// combine values in no fixed order (`combine`), which only a commutative
// operator gives one answer.
#pragma once

#include "frontend/Ast.h"

#include <optional>

namespace loopc::sema {

// True when `op`'s body (lets and one return, the functions it calls
// inlined) with its two parameters swapped is the same expression up to the
// operand order of commutative operators (`+ * == != && || min max`): then
// op(a, b) = op(b, a) for all values. False when it is not, or when the
// expression is too large to compare (operators calling each other many
// levels deep): such an operator is not known to commute. None when it
// calls itself (recursion, an error of its own).
std::optional<bool> commutesAsWritten(const FnDecl &op);

} // namespace loopc::sema
