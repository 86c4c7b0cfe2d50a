// The language's integer arithmetic, in one place for every part of loopc
// that computes it outside generated code: the interpreter, the simplifier's
// constant folding, the GPU engine's host evaluator, and the evaluation of
// extents and trip counts (docs/language.md, "Integers").
//
// Programs wrap: two's complement, no undefined overflow; division truncates
// toward zero, MIN / -1 wraps to MIN and x % -1 is 0; a zero divisor has no
// result (the caller reports it). Extents and trip counts are exact instead:
// a result past the type's range has none either.
#pragma once

#include <concepts>
#include <optional>
#include <type_traits>

namespace loopc {

template <std::signed_integral T> T wrappingAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(a) + U(b));
}
template <std::signed_integral T> T wrappingSubtract(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(a) - U(b));
}
template <std::signed_integral T> T wrappingMultiply(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(a) * U(b));
}
template <std::signed_integral T> T wrappingNegate(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - U(a));
}
// None for a zero divisor.
template <std::signed_integral T> std::optional<T> wrappingDivide(T a, T b) {
  if (b == 0)
    return std::nullopt;
  if (b == -1) // the only overflowing case, MIN / -1, wraps to MIN
    return wrappingNegate(a);
  return static_cast<T>(a / b);
}
template <std::signed_integral T> std::optional<T> wrappingRemainder(T a, T b) {
  if (b == 0)
    return std::nullopt;
  if (b == -1)
    return T(0);
  return static_cast<T>(a % b);
}

// Exact: none where the result is past T's range (or the divisor is zero).
template <std::signed_integral T> std::optional<T> exactAdd(T a, T b) {
  T result;
  return __builtin_add_overflow(a, b, &result) ? std::nullopt : std::optional<T>(result);
}
template <std::signed_integral T> std::optional<T> exactSubtract(T a, T b) {
  T result;
  return __builtin_sub_overflow(a, b, &result) ? std::nullopt : std::optional<T>(result);
}
template <std::signed_integral T> std::optional<T> exactMultiply(T a, T b) {
  T result;
  return __builtin_mul_overflow(a, b, &result) ? std::nullopt : std::optional<T>(result);
}
template <std::signed_integral T> std::optional<T> exactDivide(T a, T b) {
  if (b == -1 && a == wrappingNegate(a) && a != 0) // MIN / -1
    return std::nullopt;
  return wrappingDivide(a, b);
}
template <std::signed_integral T> std::optional<T> exactRemainder(T a, T b) {
  if (b == -1 && a == wrappingNegate(a) && a != 0) // MIN % -1, whose quotient overflows
    return std::nullopt;
  return wrappingRemainder(a, b);
}

} // namespace loopc
