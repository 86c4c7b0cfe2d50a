// Scalar operations of the interpreter (see Value.h). Integer arithmetic goes
// through the unsigned type of the same width, where overflow is defined to
// wrap, so the signed results are two's complement without undefined
// behaviour.
#include "interp/Value.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace loopc::interp {

namespace {

template <typename T> using Unsigned = std::make_unsigned_t<T>;

template <typename T>
constexpr bool isIntegerType = std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>;
template <typename T>
constexpr bool isFloatType = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <typename T> T wrappingNegate(T a) {
  return static_cast<T>(Unsigned<T>(0) - Unsigned<T>(a));
}

template <typename T> Expected<Value> integerBinary(BinaryOp op, T a, T b, SourceRange range) {
  using U = Unsigned<T>;
  switch (op) {
  case BinaryOp::Add:
    return makeValue(static_cast<T>(U(a) + U(b)));
  case BinaryOp::Sub:
    return makeValue(static_cast<T>(U(a) - U(b)));
  case BinaryOp::Mul:
    return makeValue(static_cast<T>(U(a) * U(b)));
  case BinaryOp::Div:
    if (b == 0)
      return makeError("integer division by zero", range);
    if (b == -1) // the only overflowing case, MIN / -1, wraps to MIN
      return makeValue(wrappingNegate(a));
    return makeValue(static_cast<T>(a / b));
  case BinaryOp::Rem:
    if (b == 0)
      return makeError("integer modulo by zero", range);
    if (b == -1)
      return makeValue(T(0));
    return makeValue(static_cast<T>(a % b));
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

Expected<Value> boolBinary(BinaryOp op, bool a, bool b, SourceRange range) {
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
    return std::fmin(a, valueAs<T>(args[1]));
  case Builtin::Max:
    return std::fmax(a, valueAs<T>(args[1]));
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

Value zeroValue(ScalarType type) {
  return visitScalarType(type, [](auto zero) { return makeValue(zero); });
}

int64_t integerValue(const Value &value) {
  return value.type == ScalarType::I32 ? value.i32 : value.i64;
}

Value integerOfType(ScalarType type, int64_t v) {
  return type == ScalarType::I32 ? makeValue(static_cast<int32_t>(v)) : makeValue(v);
}

Value integerLiteral(ScalarType type, uint64_t literal) {
  return visitScalarType(type, [&](auto tag) {
    using T = decltype(tag);
    return makeValue(static_cast<T>(literal));
  });
}

Value floatLiteral(ScalarType type, double literal) {
  return type == ScalarType::F32 ? makeValue(static_cast<float>(literal)) : makeValue(literal);
}

Expected<Value> applyBinary(BinaryOp op, const Value &lhs, const Value &rhs, SourceRange range) {
  switch (lhs.type) {
  case ScalarType::I32:
    return integerBinary(op, lhs.i32, rhs.i32, range);
  case ScalarType::I64:
    return integerBinary(op, lhs.i64, rhs.i64, range);
  case ScalarType::F32:
    return floatBinary(op, lhs.f32, rhs.f32, range);
  case ScalarType::F64:
    return floatBinary(op, lhs.f64, rhs.f64, range);
  case ScalarType::Bool:
    return boolBinary(op, lhs.boolean, rhs.boolean, range);
  }
  std::unreachable();
}

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

Value combineReduction(ReduceOp::Kind op, const Value &accumulator, const Value &value) {
  const Value args[2] = {accumulator, value};
  switch (op) {
  case ReduceOp::Kind::Add:
    return *applyBinary(BinaryOp::Add, accumulator, value, {});
  case ReduceOp::Kind::Mul:
    return *applyBinary(BinaryOp::Mul, accumulator, value, {});
  case ReduceOp::Kind::Min:
    return applyBuiltin(Builtin::Min, args);
  case ReduceOp::Kind::Max:
    return applyBuiltin(Builtin::Max, args);
  case ReduceOp::Kind::And:
    return makeValue(accumulator.boolean && value.boolean);
  case ReduceOp::Kind::Or:
    return makeValue(accumulator.boolean || value.boolean);
  case ReduceOp::Kind::User: // folded by the tree walk, which calls the fn
    break;
  }
  std::unreachable();
}

} // namespace loopc::interp
