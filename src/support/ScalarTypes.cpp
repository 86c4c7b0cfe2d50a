#include "support/ScalarTypes.h"

namespace loopc {

std::optional<ScalarType> scalarTypeNamed(std::string_view name) {
  for (ScalarType type :
       {ScalarType::I32, ScalarType::I64, ScalarType::F32, ScalarType::F64, ScalarType::Bool})
    if (name == scalarTypeName(type))
      return type;
  return std::nullopt;
}

const char *scalarTypeName(ScalarType type) {
  switch (type) {
  case ScalarType::I32:
    return "i32";
  case ScalarType::I64:
    return "i64";
  case ScalarType::F32:
    return "f32";
  case ScalarType::F64:
    return "f64";
  case ScalarType::Bool:
    return "bool";
  }
  return "?";
}

bool isInteger(ScalarType type) { return type == ScalarType::I32 || type == ScalarType::I64; }
bool isFloat(ScalarType type) { return type == ScalarType::F32 || type == ScalarType::F64; }

size_t scalarSize(ScalarType type) {
  switch (type) {
  case ScalarType::I32:
  case ScalarType::F32:
    return 4;
  case ScalarType::I64:
  case ScalarType::F64:
    return 8;
  case ScalarType::Bool:
    return 1;
  }
  return 0;
}

const char *builtinName(Builtin builtin) {
  static const char *const names[] = {"sqrt", "exp", "log", "sin",   "cos",  "tanh", "abs",
                                      "min",  "max", "pow", "floor", "ceil", "fma"};
  return names[static_cast<int>(builtin)];
}

std::optional<Builtin> builtinNamed(std::string_view name) {
  for (int builtin = 0; builtin <= static_cast<int>(Builtin::Fma); ++builtin)
    if (name == builtinName(static_cast<Builtin>(builtin)))
      return static_cast<Builtin>(builtin);
  return std::nullopt;
}

size_t builtinArity(Builtin builtin) {
  switch (builtin) {
  case Builtin::Fma:
    return 3;
  case Builtin::Min:
  case Builtin::Max:
  case Builtin::Pow:
    return 2;
  default:
    return 1;
  }
}

} // namespace loopc
