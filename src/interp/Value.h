// The interpreter's scalar values and the operations on them, computed in the
// declared type: i32 arithmetic wraps in 32 bits and f32 arithmetic rounds to
// float after every operation, as compiled code does. Keeping every operator
// here, away from the tree walk, makes the semantic choices easy to audit
// (they are listed in Interpreter.h). The operators every loop iteration uses
// (binary arithmetic, reductions) are inline; the rest are in Value.cpp.
#pragma once

#include "frontend/Ast.h"
#include "support/Error.h"
#include "support/IntegerArithmetic.h"

#include <cmath>
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

namespace loopc::interp {

// A scalar tagged with its type. The tag always agrees with the static type
// Sema gave the expression that produced it.
struct Value {
  ScalarType type = ScalarType::I64;
  union {
    int32_t i32;
    int64_t i64 = 0;
    float f32;
    double f64;
    bool boolean;
  };
};

inline Value makeValue(int32_t v) {
  Value value;
  value.type = ScalarType::I32;
  value.i32 = v;
  return value;
}
inline Value makeValue(int64_t v) {
  Value value;
  value.type = ScalarType::I64;
  value.i64 = v;
  return value;
}
inline Value makeValue(float v) {
  Value value;
  value.type = ScalarType::F32;
  value.f32 = v;
  return value;
}
inline Value makeValue(double v) {
  Value value;
  value.type = ScalarType::F64;
  value.f64 = v;
  return value;
}
inline Value makeValue(bool v) {
  Value value;
  value.type = ScalarType::Bool;
  value.boolean = v;
  return value;
}

template <typename T> T valueAs(const Value &value) {
  if constexpr (std::is_same_v<T, int32_t>)
    return value.i32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return value.i64;
  else if constexpr (std::is_same_v<T, float>)
    return value.f32;
  else if constexpr (std::is_same_v<T, double>)
    return value.f64;
  else
    return value.boolean;
}

// Calls `visitor` with a value-initialized object of the C++ type that
// represents `type` (bool is stored as one byte in arrays).
template <typename Visitor> decltype(auto) visitScalarType(ScalarType type, Visitor &&visitor) {
  switch (type) {
  case ScalarType::I32:
    return visitor(int32_t{});
  case ScalarType::I64:
    return visitor(int64_t{});
  case ScalarType::F32:
    return visitor(float{});
  case ScalarType::F64:
    return visitor(double{});
  case ScalarType::Bool:
    return visitor(bool{});
  }
  std::unreachable();
}

namespace detail {

// Integer arithmetic wraps (support/IntegerArithmetic.h).

template <typename T>
constexpr bool isIntegerType = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
template <typename T>
constexpr bool isFloatType = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <typename T> Expected<Value> integerBinary(BinaryOp op, T a, T b, SourceRange range) {
  switch (op) {
  case BinaryOp::Add:
    return makeValue(wrappingAdd(a, b));
  case BinaryOp::Sub:
    return makeValue(wrappingSubtract(a, b));
  case BinaryOp::Mul:
    return makeValue(wrappingMultiply(a, b));
  case BinaryOp::Div:
    if (std::optional<T> quotient = wrappingDivide(a, b))
      return makeValue(*quotient);
    return makeError("integer division by zero", range);
  case BinaryOp::Rem:
    if (std::optional<T> remainder = wrappingRemainder(a, b))
      return makeValue(*remainder);
    return makeError("integer modulo by zero", range);
  case BinaryOp::Lt:
    return makeValue(a < b);
  case BinaryOp::Le:
    return makeValue(a <= b);
  case BinaryOp::Gt:
    return makeValue(a > b);
  case BinaryOp::Ge:
    return makeValue(a >= b);
  case BinaryOp::Eq:
    return makeValue(a == b);
  case BinaryOp::Ne:
    return makeValue(a != b);
  case BinaryOp::And:
  case BinaryOp::Or:
    break;
  }
  return makeError(std::string("operator ") + binaryOpSpelling(op) + " does not apply to integers",
                   range);
}

template <typename T> Expected<Value> floatBinary(BinaryOp op, T a, T b, SourceRange range) {
  switch (op) {
  case BinaryOp::Add:
    return makeValue(T(a + b));
  case BinaryOp::Sub:
    return makeValue(T(a - b));
  case BinaryOp::Mul:
    return makeValue(T(a * b));
  case BinaryOp::Div:
    return makeValue(T(a / b));
  case BinaryOp::Rem:
    return makeValue(T(std::fmod(a, b)));
  case BinaryOp::Lt:
    return makeValue(a < b);
  case BinaryOp::Le:
    return makeValue(a <= b);
  case BinaryOp::Gt:
    return makeValue(a > b);
  case BinaryOp::Ge:
    return makeValue(a >= b);
  case BinaryOp::Eq:
    return makeValue(a == b);
  case BinaryOp::Ne:
    return makeValue(a != b);
  case BinaryOp::And:
  case BinaryOp::Or:
    break;
  }
  return makeError(std::string("operator ") + binaryOpSpelling(op) + " does not apply to floats",
                   range);
}

inline Expected<Value> boolBinary(BinaryOp op, bool a, bool b, SourceRange range) {
  switch (op) {
  case BinaryOp::Eq:
    return makeValue(a == b);
  case BinaryOp::Ne:
    return makeValue(a != b);
  case BinaryOp::And:
    return makeValue(a && b);
  case BinaryOp::Or:
    return makeValue(a || b);
  default:
    return makeError(std::string("operator ") + binaryOpSpelling(op) + " does not apply to bool",
                     range);
  }
}

} // namespace detail

// The zero of a type (false for bool).
inline Value zeroValue(ScalarType type) {
  return visitScalarType(type, [](auto zero) { return makeValue(zero); });
}

// An integer (i32 or i64) value widened to 64 bits.
inline int64_t integerValue(const Value &value) {
  return value.type == ScalarType::I32 ? value.i32 : value.i64;
}

// The integer `v` as a value of integer type `type` (i32 wraps).
inline Value integerOfType(ScalarType type, int64_t v) {
  return type == ScalarType::I32 ? makeValue(static_cast<int32_t>(v)) : makeValue(v);
}

// An integer literal as a value of the type Sema gave it (any integer or
// float type; i32 wraps).
inline Value integerLiteral(ScalarType type, uint64_t literal) {
  return visitScalarType(type, [&](auto tag) {
    using T = decltype(tag);
    return makeValue(static_cast<T>(literal));
  });
}

// A float literal as a value of type f32 or f64.
inline Value floatLiteral(ScalarType type, double literal) {
  return type == ScalarType::F32 ? makeValue(static_cast<float>(literal)) : makeValue(literal);
}

// `lhs op rhs` for operands of one type; && and || here do not short-circuit
// (the tree walk does). Integer division or modulo by zero is an error at
// `range`. Inline, with the helpers above, because it is the innermost step
// of every loop the interpreter runs.
inline Expected<Value> applyBinary(BinaryOp op, const Value &lhs, const Value &rhs,
                                   SourceRange range) {
  switch (lhs.type) {
  case ScalarType::I32:
    return detail::integerBinary(op, lhs.i32, rhs.i32, range);
  case ScalarType::I64:
    return detail::integerBinary(op, lhs.i64, rhs.i64, range);
  case ScalarType::F32:
    return detail::floatBinary(op, lhs.f32, rhs.f32, range);
  case ScalarType::F64:
    return detail::floatBinary(op, lhs.f64, rhs.f64, range);
  case ScalarType::Bool:
    return detail::boolBinary(op, lhs.boolean, rhs.boolean, range);
  }
  std::unreachable();
}

// IEEE 754-2019's minimumNumber and maximumNumber, the language's `min` and
// `max` on floats: a NaN operand gives the other one, and -0 is below +0, so
// both commute and reductions may combine in any order (std::fmin and
// std::fmax may return either zero).
template <std::floating_point T> T maximumNumber(T a, T b) {
  return a == b ? (std::signbit(a) ? b : a) : std::fmax(a, b);
}
template <std::floating_point T> T minimumNumber(T a, T b) {
  return a == b ? (std::signbit(a) ? a : b) : std::fmin(a, b);
}

Value applyUnary(UnaryOp op, const Value &operand);

// An explicit conversion `T(x)`.
Value convertValue(const Value &value, ScalarType target);

// A math builtin applied to arguments of one type (the types Sema checked).
Value applyBuiltin(Builtin builtin, std::span<const Value> args);

// One step of a redomap fold with a built-in operator (not Kind::User); min
// and max agree with the builtins.
inline Value combineReduction(ReduceOp::Kind op, const Value &accumulator, const Value &value) {
  if (op == ReduceOp::Kind::And)
    return makeValue(accumulator.boolean && value.boolean);
  if (op == ReduceOp::Kind::Or)
    return makeValue(accumulator.boolean || value.boolean);
  return visitScalarType(accumulator.type, [&](auto tag) {
    using T = decltype(tag);
    T a = valueAs<T>(accumulator), b = valueAs<T>(value);
    if constexpr (detail::isIntegerType<T>) {
      switch (op) {
      case ReduceOp::Kind::Add:
        return makeValue(wrappingAdd(a, b));
      case ReduceOp::Kind::Mul:
        return makeValue(wrappingMultiply(a, b));
      case ReduceOp::Kind::Min:
        return makeValue(b < a ? b : a);
      case ReduceOp::Kind::Max:
        return makeValue(a < b ? b : a);
      default:
        std::unreachable();
      }
    } else if constexpr (detail::isFloatType<T>) {
      switch (op) {
      case ReduceOp::Kind::Add:
        return makeValue(T(a + b));
      case ReduceOp::Kind::Mul:
        return makeValue(T(a * b));
      case ReduceOp::Kind::Min:
        return makeValue(minimumNumber(a, b));
      case ReduceOp::Kind::Max:
        return makeValue(maximumNumber(a, b));
      default:
        std::unreachable();
      }
    } else { // Sema admits only && and || on bool
      return accumulator;
    }
  });
}

} // namespace loopc::interp
