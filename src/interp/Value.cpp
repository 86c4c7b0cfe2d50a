// The colder scalar operations of the interpreter (see Value.h): unary
// operators, conversions and math builtins.
#include "interp/Value.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace loopc::interp {

namespace {

using detail::isFloatType;
using detail::isIntegerType;

// Truncation toward zero that saturates instead of overflowing; NaN gives 0.
template <typename I, typename F> I saturatingFloatToInteger(F x) {
  constexpr F lowest = static_cast<F>(std::numeric_limits<I>::min()); // -2^(n-1), exact
  if (std::isnan(x))
    return 0;
  if (x <= lowest)
    return std::numeric_limits<I>::min();
  if (x >= -lowest)
    return std::numeric_limits<I>::max();
  return static_cast<I>(x);
}

template <typename To> To convertTo(const Value &value) {
  return visitScalarType(value.type, [&](auto fromTag) -> To {
    using From = decltype(fromTag);
    From from = valueAs<From>(value);
    if constexpr (std::is_same_v<To, bool>)
      return from != From(0);
    else if constexpr (isIntegerType<To> && isFloatType<From>)
      return saturatingFloatToInteger<To>(from);
    else // integer narrowing wraps (C++20), the rest is exact or rounds
      return static_cast<To>(from);
  });
}

template <typename T> T floatBuiltin(Builtin builtin, std::span<const Value> args) {
  T a = valueAs<T>(args[0]);
  switch (builtin) {
  case Builtin::Sqrt:
    return std::sqrt(a);
  case Builtin::Exp:
    return std::exp(a);
  case Builtin::Log:
    return std::log(a);
  case Builtin::Sin:
    return std::sin(a);
  case Builtin::Cos:
    return std::cos(a);
  case Builtin::Tanh:
    return std::tanh(a);
  case Builtin::Floor:
    return std::floor(a);
  case Builtin::Ceil:
    return std::ceil(a);
  case Builtin::Abs:
    return std::fabs(a);
  case Builtin::Min:
    return minimumNumber(a, valueAs<T>(args[1]));
  case Builtin::Max:
    return maximumNumber(a, valueAs<T>(args[1]));
  case Builtin::Pow:
    return std::pow(a, valueAs<T>(args[1]));
  case Builtin::Fma:
    return std::fma(a, valueAs<T>(args[1]), valueAs<T>(args[2]));
  }
  std::unreachable();
}

template <typename T> T integerBuiltin(Builtin builtin, std::span<const Value> args) {
  T a = valueAs<T>(args[0]);
  switch (builtin) {
  case Builtin::Abs:
    return a < 0 ? wrappingNegate(a) : a;
  case Builtin::Min:
    return std::min(a, valueAs<T>(args[1]));
  case Builtin::Max:
    return std::max(a, valueAs<T>(args[1]));
  default: // Sema admits only abs, min and max on integers
    std::unreachable();
  }
}

// The C++ types of these overloads must be the float ones, or f32 math would
// silently run in double precision.
static_assert(std::is_same_v<decltype(std::pow(1.0f, 1.0f)), float>);
static_assert(std::is_same_v<decltype(std::fma(1.0f, 1.0f, 1.0f)), float>);

} // namespace

Value applyUnary(UnaryOp op, const Value &operand) {
  if (op == UnaryOp::Not)
    return makeValue(!operand.boolean);
  return visitScalarType(operand.type, [&](auto tag) {
    using T = decltype(tag);
    T a = valueAs<T>(operand);
    if constexpr (isIntegerType<T>)
      return makeValue(wrappingNegate(a));
    else if constexpr (isFloatType<T>)
      return makeValue(T(-a));
    else // Sema rejects negating a bool
      return makeValue(a);
  });
}

Value convertValue(const Value &value, ScalarType target) {
  return visitScalarType(target, [&](auto tag) {
    using T = decltype(tag);
    return makeValue(convertTo<T>(value));
  });
}

Value applyBuiltin(Builtin builtin, std::span<const Value> args) {
  return visitScalarType(args[0].type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (isFloatType<T>)
      return makeValue(floatBuiltin<T>(builtin, args));
    else if constexpr (isIntegerType<T>)
      return makeValue(integerBuiltin<T>(builtin, args));
    else // Sema admits no builtin on bool
      return args[0];
  });
}

} // namespace loopc::interp
