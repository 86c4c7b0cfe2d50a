// The interpreter's scalar values and the operations on them, computed in the
// declared type: i32 arithmetic wraps in 32 bits and f32 arithmetic rounds to
// float after every operation, as compiled code does. Keeping every operator
// here, away from the tree walk, makes the semantic choices easy to audit
// (they are listed in Interpreter.h).
#pragma once

#include "frontend/Ast.h"
#include "support/Error.h"

#include <cstdint>
#include <span>
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

// The zero of a type (false for bool).
Value zeroValue(ScalarType type);

// An integer (i32 or i64) value widened to 64 bits.
int64_t integerValue(const Value &value);

// The integer `v` as a value of integer type `type` (i32 wraps).
Value integerOfType(ScalarType type, int64_t v);

// An integer literal as a value of the type Sema gave it (any integer or
// float type; i32 wraps).
Value integerLiteral(ScalarType type, uint64_t literal);

// A float literal as a value of type f32 or f64.
Value floatLiteral(ScalarType type, double literal);

// `lhs op rhs` for operands of one type; && and || here do not short-circuit
// (the tree walk does). Integer division or modulo by zero is an error at
// `range`.
Expected<Value> applyBinary(BinaryOp op, const Value &lhs, const Value &rhs, SourceRange range);

Value applyUnary(UnaryOp op, const Value &operand);

// An explicit conversion `T(x)`.
Value convertValue(const Value &value, ScalarType target);

// A math builtin applied to arguments of one type (the types Sema checked).
Value applyBuiltin(Builtin builtin, std::span<const Value> args);

// One step of a redomap fold with a built-in operator (not Kind::User).
Value combineReduction(ReduceOp::Kind op, const Value &accumulator, const Value &value);

} // namespace loopc::interp
