// The language's scalar types and math builtins, which the AST, the loop IR
// and the engines all name: here, so that the IR needs nothing of the AST.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace loopc {

enum class ScalarType : uint8_t { I32, I64, F32, F64, Bool };

const char *scalarTypeName(ScalarType type);
// The type `name` spells as the language does ("f32"); none for another name.
std::optional<ScalarType> scalarTypeNamed(std::string_view name);
bool isInteger(ScalarType type);
bool isFloat(ScalarType type);
size_t scalarSize(ScalarType type); // bytes

// Math builtins; min/max/abs apply to integers and floats, the rest to floats.
enum class Builtin : uint8_t {
  Sqrt,
  Exp,
  Log,
  Sin,
  Cos,
  Tanh,
  Abs,
  Min,
  Max,
  Pow,
  Floor,
  Ceil,
  Fma
};
const char *builtinName(Builtin builtin);
// The builtin `name` spells ("sqrt"); none for another name.
std::optional<Builtin> builtinNamed(std::string_view name);
// How many operands it takes: 3 for fma, 2 for min, max and pow, else 1.
size_t builtinArity(Builtin builtin);

} // namespace loopc
